"""Checkpoints of the demo PPO: ``<run_dir>/checkpoints/model_{update}.pt``, loadable with ``weights_only``.

A checkpoint is one ``torch.save``'d dict of tensors, plain dicts, lists, numbers and strings (the config is a
JSON string), so ``torch.load(path, weights_only=True)`` reads it without unpickling arbitrary objects:

=================  ==========================================================================================
format             ``CHECKPOINT_FORMAT``
policy             the agent's ``state_dict``
optimizer          the optimizer's ``state_dict``
obs_rms            ``{"mean": (D,) float64, "var": (D,) float64, "count": float}`` observation statistics
global_step        environment steps so far (all envs together)
update             PPO updates so far (the ``{update}`` of the file name)
config             the resolved config, as a JSON string
spaces             ``{"obs_dim": int, "n_actions": int}`` to rebuild the network without an environment
trainer_state      what an exact resume needs: RNG states (torch, numpy), the environment's state, the
                   rollout's carried observation and done flags, the episode statistics windows
=================  ==========================================================================================
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlaudit.engine.io import atomic_path

CHECKPOINT_FORMAT = "rlaudit.demo.ppo/1"
_NAME = re.compile(r"^model_(\d+)\.pt$")

# Checkpoints written before the networks were renamed to CleanRL's names used these prefixes; loading maps
# them to the current ones (old name -> new name).
KEY_RENAMES: dict[str, str] = {"policy_net.": "actor.", "value_net.": "critic."}


def checkpoint_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "checkpoints"


def checkpoint_path(run_dir: str | Path, update: int) -> Path:
    return checkpoint_dir(run_dir) / f"model_{int(update)}.pt"


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (see the module docstring) atomically to ``path``."""
    path = Path(path)
    data = {"format": CHECKPOINT_FORMAT, **payload}
    with atomic_path(path) as tmp:
        torch.save(data, tmp)
    return path


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True`` and check its format.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: The file is not a demo-PPO checkpoint.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"no checkpoint at {path}; list the run's checkpoints with list_checkpoints(run_dir)"
        )
    data = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(
            f"{path} is not a demo PPO checkpoint (expected format {CHECKPOINT_FORMAT!r}, found {found!r}); "
            "pass a model_<update>.pt written by rlaudit.demo.ppo.train"
        )
    return data


def list_checkpoints(run_dir: str | Path, *, lexicographic: bool = False) -> list[str]:
    """Checkpoint paths of a run, latest first (the order in which the trainer would pick them).

    Args:
        run_dir: The run directory (checkpoints live in ``run_dir/checkpoints``).
        lexicographic: Sort file names as strings (the ``checkpoint_sort_lexicographic`` fault): then
            ``model_9.pt`` comes before ``model_10.pt`` and the "latest" checkpoint is the wrong one.

    Returns:
        Paths as strings; empty when the directory does not exist.
    """
    directory = checkpoint_dir(run_dir)
    if not directory.is_dir():
        return []
    names = [p.name for p in directory.iterdir() if _NAME.match(p.name)]
    if lexicographic:
        names.sort(reverse=True)
    else:
        names.sort(key=lambda n: int(_NAME.match(n).group(1)), reverse=True)  # type: ignore[union-attr]
    return [str(directory / n) for n in names]


def remap_keys(state: dict[str, torch.Tensor], renames: dict[str, str]) -> dict[str, torch.Tensor]:
    """Rename state-dict keys by prefix (``renames``: old prefix -> new prefix); other keys pass unchanged."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        for old, new in renames.items():
            if key.startswith(old):
                key = new + key[len(old) :]
                break
        out[key] = value
    return out


# -- environment state --------------------------------------------------------------------------------------------
#
# An exact resume needs the environment exactly where the run left it: maps, positions, inventories, episode
# clocks, its random generator, and its curriculum's learned statistics. Environments that can say so
# themselves implement ``get_state() -> dict`` / ``set_state(dict)`` (then only plain data must come back).
# For the others, :func:`capture_state` walks the object's attributes and keeps the mutable numeric state:
# numpy arrays, numpy random generators, numbers and strings, and (recursively) plain objects holding them,
# such as a curriculum. Configuration dataclasses, gymnasium spaces, callables and modules are skipped.

_SCALARS = (bool, int, float, str, type(None))


def _skip(value: Any) -> bool:
    from gymnasium import spaces

    return (
        (dataclasses.is_dataclass(value) and not isinstance(value, type))
        or isinstance(value, spaces.Space)
        or callable(value)
        or inspect.ismodule(value)
    )


def capture_state(obj: Any) -> dict[str, Any]:
    """The mutable numeric state of ``obj``, as tensors and plain data (``torch.load(weights_only=True)``-safe).

    Uses ``obj.get_state()`` when it has one; see the section comment above for what is captured otherwise.
    """
    if hasattr(obj, "get_state"):
        return {"kind": "get_state", "state": _plain(obj.get_state(), set())}
    return {"kind": "attributes", "state": _capture_attrs(obj, set())}


def restore_state(obj: Any, state: dict[str, Any]) -> None:
    """Put ``obj`` back into a state captured by :func:`capture_state` (arrays are written in place, so views
    of them stay valid)."""
    if state["kind"] == "get_state":
        obj.set_state(_unplain(state["state"]))
    else:
        _restore_attrs(obj, state["state"])


def _plain(value: Any, seen: set[int]) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            return {"__ndarray__": torch.from_numpy(np.ascontiguousarray(value).copy())}
        # dtypes torch has no tensor for (raw void rows, structured records): keep the bytes
        raw = np.frombuffer(np.ascontiguousarray(value).tobytes(), dtype=np.uint8).copy()
        return {
            "__ndarray_bytes__": torch.from_numpy(raw),
            "dtype": value.dtype.str,
            "shape": list(value.shape),
        }
    if isinstance(value, np.random.Generator):
        return {"__generator__": _plain(value.bit_generator.state, seen)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, dict):
        return {"__dict__": [[_plain(k, seen), _plain(v, seen)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return {"__list__": [_plain(v, seen) for v in value], "tuple": isinstance(value, tuple)}
    if hasattr(value, "__dict__") and not _skip(value):
        return {"__object__": _capture_attrs(value, seen)}
    return {"__skipped__": type(value).__name__}


def _unplain(value: Any) -> Any:
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return value["__ndarray__"].numpy().copy()
        if "__ndarray_bytes__" in value:
            raw = value["__ndarray_bytes__"].numpy()
            return np.frombuffer(raw.tobytes(), dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()
        if "__dict__" in value:
            return {_unplain(k): _unplain(v) for k, v in value["__dict__"]}
        if "__list__" in value:
            items = [_unplain(v) for v in value["__list__"]]
            return tuple(items) if value.get("tuple") else items
        if "__generator__" in value:
            return _generator(_unplain(value["__generator__"]))
    return value


def _generator(state: dict[str, Any]) -> np.random.Generator:
    """A numpy Generator in the bit-generator ``state`` (as ``Generator.bit_generator.state`` returns it)."""
    gen = np.random.Generator(getattr(np.random, state["bit_generator"])())
    gen.bit_generator.state = state
    return gen


def _capture_attrs(obj: Any, seen: set[int]) -> dict[str, Any]:
    if id(obj) in seen:
        return {}
    seen.add(id(obj))
    out: dict[str, Any] = {}
    for name, value in vars(obj).items():
        if _skip(value):
            continue
        plain = _plain(value, seen)
        if not (isinstance(plain, dict) and "__skipped__" in plain):
            out[name] = plain
    return out


def _restore_attrs(obj: Any, state: dict[str, Any]) -> None:
    for name, saved in state.items():
        current = getattr(obj, name, None)
        if isinstance(saved, dict) and "__object__" in saved:
            if current is not None:
                _restore_attrs(current, saved["__object__"])
            continue
        if isinstance(saved, dict) and "__generator__" in saved:
            if isinstance(current, np.random.Generator):
                current.bit_generator.state = _unplain(saved["__generator__"])
            else:
                setattr(obj, name, _generator(_unplain(saved["__generator__"])))
            continue
        value = _unplain(saved)
        if (
            isinstance(current, np.ndarray)
            and isinstance(value, np.ndarray)
            and current.shape == value.shape
            and current.dtype.itemsize == value.dtype.itemsize
        ):
            if current.dtype != value.dtype:  # bytes of a void/structured array: view them as its dtype
                value = value.view(current.dtype)
            if current.flags.writeable:
                current[...] = value  # in place: other attributes may be views of this array
            elif not np.array_equal(current, value):
                setattr(obj, name, value)  # a frozen table that differs: replace it
        else:
            setattr(obj, name, value)
