"""Gymnasium 0.29 and 1.x read one way: autoreset modes, final observations and infos, episode statistics.

Subjects pin their own Gymnasium, and probes run in the subject's interpreter, so every probe must read both
generations of the vector API. Where they differ (checked against Gymnasium's own documentation and source
of ``gymnasium.vector.SyncVectorEnv`` and ``RecordEpisodeStatistics`` in 0.29.1 and 1.x):

==========================  ===========================================  ===========================================
                            0.29.x                                       1.x
==========================  ===========================================  ===========================================
autoreset                   one mode, in the step an episode ends (what  ``metadata["autoreset_mode"]``, an
                            1.x calls same-step); no metadata entry      ``AutoresetMode``: NEXT_STEP (the default),
                                                                         SAME_STEP or DISABLED
final observation           ``info["final_observation"]``: an object     SAME_STEP: ``info["final_obs"]``, an object
                            array (None where no episode ended), mask    array from SyncVectorEnv (a dense (N, ...)
                            ``info["_final_observation"]``               array from some vector envs), mask
                                                                         ``info["_final_obs"]``
final info                  ``info["final_info"]``: an object array of   SAME_STEP: ``info["final_info"]``: a dict of
                            each ended environment's info dict (None     (N,)-arrays (the infos batched like any info,
                            elsewhere), mask ``info["_final_info"]``     with their own ``_key`` masks), mask
                                                                         ``info["_final_info"]``
RecordEpisodeStatistics     one wrapper. Around a vector env: top-level  ``wrappers.RecordEpisodeStatistics`` (one
(``r``, ``l``, ``t``)       ``info["episode"]`` of (N,)-arrays with mask env: scalars) and ``wrappers.vector.
                            ``info["_episode"]``. Around each sub-env    RecordEpisodeStatistics`` (top-level
                            of a SyncVectorEnv: the stats of an ended    ``info["episode"]`` + ``info["_episode"]``).
                            episode are in its ``final_info`` dict       Per sub-env under NEXT_STEP: top level too;
                            (``final_info[i]["episode"]``)               under SAME_STEP: ``info["final_info"]
                                                                         ["episode"]`` with ``final_info["_episode"]``
==========================  ===========================================  ===========================================

Imports numpy and the standard library at module level; gymnasium lazily (it runs in subjects' processes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

SAME_STEP = "same_step"
NEXT_STEP = "next_step"
DISABLED = "disabled"

FINAL_OBS_KEYS: tuple[str, ...] = ("final_obs", "final_observation")
"""The final observation's key in 1.x and in 0.29 (each with a ``_``-prefixed mask)."""


def gymnasium_version() -> tuple[int, int]:
    """``(major, minor)`` of the Gymnasium importable here (``(0, 0)`` when there is none)."""
    try:
        import gymnasium
    except ImportError:
        return (0, 0)
    match = re.match(r"(\d+)\.(\d+)", str(getattr(gymnasium, "__version__", "")))
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def legacy_vector_api() -> bool:
    """True under Gymnasium < 1.0, whose vector envs reset in the step an episode ends and hand the last
    observation and info over as ``final_observation`` / ``final_info`` object arrays."""
    return gymnasium_version() < (1, 0)


def same_step_mode() -> Any:
    """What a same-step vector env puts in ``metadata["autoreset_mode"]``.

    ``gymnasium.vector.AutoresetMode.SAME_STEP`` under 1.x, whose wrappers (``vector.RecordEpisodeStatistics``)
    insist on the enum; the string ``"SameStep"`` under 0.29, which has no enum and reads no such entry.
    """
    try:
        from gymnasium.vector import AutoresetMode
    except ImportError:
        return "SameStep"
    return AutoresetMode.SAME_STEP


def autoreset_mode_of(env: Any) -> str:
    """``same_step``, ``next_step`` or ``disabled`` for a vector env.

    A vector env that does not say is taken as its Gymnasium's default: ``next_step`` under 1.x, and
    ``same_step`` under 0.29 (its only behaviour).
    """
    mode = (getattr(env, "metadata", None) or {}).get("autoreset_mode")
    if mode is None:
        return SAME_STEP if legacy_vector_api() else NEXT_STEP
    text = str(getattr(mode, "value", mode)).lower().replace("_", "").replace("-", "")
    return {"samestep": SAME_STEP, "nextstep": NEXT_STEP, "disabled": DISABLED}.get(text, NEXT_STEP)


# ---------------------------------------------------------------------------------------------------------
# Reading an info dict
# ---------------------------------------------------------------------------------------------------------


def _mask(value: Any, num_envs: int) -> np.ndarray | None:
    """A ``(num_envs,)`` bool mask, or None when ``value`` is not one."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype == object or arr.size != num_envs:
        return None
    return arr.reshape(num_envs).astype(bool)


def _per_env(value: Any, num_envs: int) -> list[Any] | None:
    """``value`` as one entry per environment (a list, tuple or array of length ``num_envs``), else None."""
    if isinstance(value, np.ndarray):
        return list(value) if value.ndim >= 1 and value.shape[0] == num_envs else None
    if isinstance(value, list | tuple):
        return list(value) if len(value) == num_envs else None
    return None


def final_observations(info: Mapping[str, Any], num_envs: int) -> tuple[np.ndarray, list[Any]]:
    """Each environment's final observation, where the step handed one over.

    Reads ``final_obs`` (1.x, object or dense array) and ``final_observation`` (0.29, object array) with
    their masks; without a mask, an entry counts where it is not None.

    Returns:
        ``(mask (num_envs,) bool, observations)``: ``observations[i]`` is the final observation of
        environment ``i`` (as stored) where ``mask[i]``, else None.
    """
    for key in FINAL_OBS_KEYS:
        if key not in info:
            continue
        entries = _per_env(info[key], num_envs)
        if entries is None:
            continue
        mask = _mask(info.get(f"_{key}"), num_envs)
        if mask is None:
            mask = np.array([e is not None for e in entries], dtype=bool)
        return mask, [e if m else None for e, m in zip(entries, mask, strict=True)]
    return np.zeros(num_envs, dtype=bool), [None] * num_envs


def unbatch(info: Mapping[str, Any], index: int, num_envs: int) -> dict[str, Any]:
    """Environment ``index``'s own info from a batched (1.x-style) info dict.

    Every ``key`` whose ``_key`` mask is False at ``index`` is left out; nested dicts are unbatched the same
    way; a value that is not batched over ``num_envs`` is kept as it is.
    """
    out: dict[str, Any] = {}
    for key, value in info.items():
        if str(key).startswith("_"):
            continue
        mask = _mask(info.get(f"_{key}"), num_envs)
        if mask is not None and not mask[index]:
            continue
        if isinstance(value, Mapping):
            out[key] = unbatch(value, index, num_envs)
            continue
        entries = _per_env(value, num_envs)
        out[key] = entries[index] if entries is not None else value
    return out


def final_infos(info: Mapping[str, Any], num_envs: int) -> list[dict[str, Any] | None]:
    """Each environment's final info (the info of the step that ended its episode), where one was handed over.

    Reads both layouts of ``info["final_info"]``: 0.29's object array of dicts, and 1.x's dict of batched
    arrays (un-batched per environment with :func:`unbatch`). The ``_final_info`` mask decides which entries
    count when present.

    Returns:
        ``num_envs`` entries: a dict where an episode ended and its info was handed over, else None.
    """
    final = info.get("final_info")
    out: list[dict[str, Any] | None] = [None] * num_envs
    if final is None:
        return out
    mask = _mask(info.get("_final_info"), num_envs)
    if isinstance(final, Mapping):
        for i in range(num_envs):
            if mask is None or mask[i]:
                out[i] = unbatch(final, i, num_envs)
        return out
    entries = _per_env(final, num_envs)
    if entries is None:
        return out
    for i, item in enumerate(entries):
        if isinstance(item, Mapping) and (mask is None or mask[i]):
            out[i] = dict(item)
    return out


def _numeric(value: Any) -> float | None:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf" or arr.size != 1:
        return None
    return float(arr.reshape(-1)[0])


def _batched_stats(
    episode: Mapping[str, Any], mask: np.ndarray | None, num_envs: int, done: np.ndarray
) -> list[dict[str, float]]:
    """Per environment, the numeric entries of a batched ``episode`` dict where ``mask`` (else ``done``)."""
    out: list[dict[str, float]] = [{} for _ in range(num_envs)]
    where = mask if mask is not None else np.asarray(done, dtype=bool).reshape(num_envs)
    for key, values in episode.items():
        if str(key).startswith("_"):
            continue
        arr = np.asarray(values)
        if arr.dtype.kind not in "biuf":
            continue
        if arr.ndim == 0:
            arr = np.full(num_envs, arr.item())
        arr = arr.reshape(-1)
        if len(arr) != num_envs:
            continue
        for i in np.flatnonzero(where):
            out[i][str(key)] = float(arr[i])
    return out


def episode_stats(info: Mapping[str, Any], num_envs: int, done: np.ndarray) -> list[dict[str, float]]:
    """Per environment, the numeric episode statistics reported in ``info`` this step, in any layout.

    Reads, in this order (an earlier layout wins for a key both report):

    1. top-level ``info["episode"]``: (N,)-arrays masked by ``info["_episode"]`` (a vector
       ``RecordEpisodeStatistics`` in 0.29 or 1.x, per-sub-env ones under 1.x NEXT_STEP, the built-in
       arena), or scalars for a single environment (masked by ``done``);
    2. ``info["final_info"]`` as 0.29's object array: ``final_info[i]["episode"]``;
    3. ``info["final_info"]`` as 1.x's batched dict (SAME_STEP): ``final_info["episode"]`` masked by
       ``final_info["_episode"]`` and ``info["_final_info"]``.

    Args:
        info: What the step returned.
        num_envs: Environments in the step (1 for a single env).
        done: ``(num_envs,)`` bool, the episodes that ended this step (the fallback mask).

    Returns:
        ``num_envs`` dicts (empty where nothing was reported), e.g. ``{"r": -512.3, "l": 200.0, "t": 0.41}``.
    """
    done = np.asarray(done, dtype=bool).reshape(num_envs)
    out: list[dict[str, float]] = [{} for _ in range(num_envs)]
    episode = info.get("episode")
    if isinstance(episode, Mapping):
        mask = _mask(info.get("_episode"), num_envs)
        out = _batched_stats(episode, mask, num_envs, done)
    final = info.get("final_info")
    if isinstance(final, Mapping):
        inner = final.get("episode")
        if isinstance(inner, Mapping):
            mask = _mask(final.get("_episode"), num_envs)
            outer = _mask(info.get("_final_info"), num_envs)
            if mask is None:
                mask = outer
            elif outer is not None:
                mask = mask & outer
            for i, stats in enumerate(_batched_stats(inner, mask, num_envs, done)):
                for key, value in stats.items():
                    out[i].setdefault(key, value)
    elif final is not None:
        for i, item in enumerate(final_infos(info, num_envs)):
            if item is None or not isinstance(item.get("episode"), Mapping):
                continue
            for key, value in item["episode"].items():
                number = _numeric(value)
                if number is not None:
                    out[i].setdefault(str(key), number)
    return out


# ---------------------------------------------------------------------------------------------------------
# Writing an info dict (environments rlaudit builds, such as the probe environments)
# ---------------------------------------------------------------------------------------------------------


def same_step_info(
    final_obs: np.ndarray, ended: np.ndarray, episode: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """The info of a same-step vector env's step on which episodes ended, in the installed Gymnasium's layout.

    Args:
        final_obs: ``(N, ...)`` the last observation of every environment (read where ``ended``).
        ended: ``(N,)`` bool, the environments whose episode ended.
        episode: Statistics of the ended episodes, each ``(N,)`` (``r``, ``l``, ...; read where ``ended``).

    Returns:
        0.29: ``final_observation`` / ``final_info`` object arrays (None elsewhere), each ended environment's
        final info holding ``{"episode": {key: (1,) array}}`` as a ``RecordEpisodeStatistics`` around each
        sub-env writes it, with their masks. 1.x: ``final_obs`` (dense) and ``_final_obs``, top-level
        ``episode`` / ``_episode`` as a vector ``RecordEpisodeStatistics`` writes them, and ``final_info`` /
        ``_final_info`` holding the same statistics batched (``final_info["episode"]``,
        ``final_info["_episode"]``) as a SAME_STEP ``SyncVectorEnv`` writes a sub-env's.
    """
    ended = np.asarray(ended, dtype=bool).copy()
    n = len(ended)
    if legacy_vector_api():
        obs_entries = np.full(n, None, dtype=object)
        info_entries = np.full(n, None, dtype=object)
        for i in np.flatnonzero(ended):
            obs_entries[i] = np.asarray(final_obs[i]).copy()
            info_entries[i] = {"episode": {k: np.asarray(v)[i : i + 1].copy() for k, v in episode.items()}}
        return {
            "final_observation": obs_entries,
            "_final_observation": ended.copy(),
            "final_info": info_entries,
            "_final_info": ended.copy(),
        }
    stats = {k: np.where(ended, np.asarray(v), np.zeros_like(np.asarray(v))) for k, v in episode.items()}
    return {
        "final_obs": np.asarray(final_obs).copy(),
        "_final_obs": ended.copy(),
        "final_info": {"episode": {k: v.copy() for k, v in stats.items()}, "_episode": ended.copy()},
        "_final_info": ended.copy(),
        "episode": stats,
        "_episode": ended.copy(),
    }
