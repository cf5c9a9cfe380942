"""Comparing two configurations or metric sets: flatten, diff with tolerances, match renames, classify keys.

The config audit flattens both subjects' resolved configs to dotted keys, diffs them, pairs keys that look
renamed (``charts/episode_return`` ~ ``charts/episodic_return``), and files each difference under one of the
fourteen subsystems so that its notebook can pick it up.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

_MISSING = object()

CHANGES = ("same", "changed", "added", "removed")
"""The values of the ``change`` column of :func:`diff_values`."""


def flatten(d: Mapping[str, Any] | Sequence[Any], sep: str = ".", prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts and lists to one level of dotted keys.

    ``{"agent": {"hidden": [128, 64]}, "lr": 3e-4}`` becomes
    ``{"agent.hidden.0": 128, "agent.hidden.1": 64, "lr": 3e-4}``. Empty dicts and lists are kept as leaf
    values (so a key that holds ``{}`` on one side is not silently lost); tuples flatten like lists.

    Args:
        d: A nested mapping (or a list at the top level).
        sep: Separator between key parts.
        prefix: Prefix for every key (used by the recursion).

    Returns:
        A new flat dict; keys are strings, in the order the nesting lists them.
    """
    out: dict[str, Any] = {}

    def walk(value: Any, key: str) -> None:
        if isinstance(value, Mapping) and value:
            for k, v in value.items():
                walk(v, f"{key}{sep}{k}" if key else str(k))
        elif isinstance(value, list | tuple) and value:
            for i, v in enumerate(value):
                walk(v, f"{key}{sep}{i}" if key else str(i))
        else:
            out[key] = value

    if isinstance(d, Mapping | list | tuple) and not d:
        return {prefix: d} if prefix else {}
    walk(d, prefix)
    return out


def _is_number(value: Any) -> bool:
    # bool is an int in Python, but True vs 1 is a type change worth seeing, so bools are not numbers here.
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a core dependency
        return False
    return isinstance(value, np.integer | np.floating)


def values_equal(a: Any, b: Any, rtol: float = 1e-9, atol: float = 0.0) -> bool:
    """Equality with a numeric tolerance: ``3 == 3.0``, ``nan == nan``, ``"1" != 1``, ``True != 1``.

    Numbers compare with ``math.isclose(a, b, rel_tol=rtol, abs_tol=atol)``; everything else with ``==``
    after requiring the same kind of value (so a YAML string ``"1"`` differs from the integer ``1``).
    """
    if _is_number(a) and _is_number(b):
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return math.isclose(fa, fb, rel_tol=rtol, abs_tol=atol)
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(values_equal(x, y, rtol, atol) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k], rtol, atol) for k in a)
    if isinstance(a, str) != isinstance(b, str):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays and other objects without a truth value
        return repr(a) == repr(b)


def relative_change(a: Any, b: Any) -> float:
    """``(b - a) / |a|`` for two numbers; ``inf`` when a is 0 and b is not, ``nan`` for non-numbers."""
    if not (_is_number(a) and _is_number(b)):
        return math.nan
    fa, fb = float(a), float(b)
    if fa == fb:
        return 0.0
    if fa == 0.0:
        return math.copysign(math.inf, fb)
    return (fb - fa) / abs(fa)


def diff_values(
    a: Mapping[str, Any], b: Mapping[str, Any], rtol: float = 1e-9, atol: float = 0.0
) -> pd.DataFrame:
    """Compare two (nested or flat) dicts key by key.

    Args:
        a: The baseline's values; nested dicts are flattened with :func:`flatten`.
        b: The candidate's values.
        rtol: Relative tolerance for numbers (``3e-4`` vs ``3.0000000001e-4`` is "same").
        atol: Absolute tolerance for numbers.

    Returns:
        pandas DataFrame, one row per key in the union (baseline's order, then keys only the candidate has),
        columns ``key``, ``baseline``, ``candidate`` (None where absent), ``change`` (one of "same",
        "changed", "added", "removed") and ``relative_change`` (``(candidate - baseline) / |baseline|`` for
        numbers, NaN otherwise).
    """
    import pandas as pd

    flat_a, flat_b = flatten(a), flatten(b)
    rows = []
    for key in list(flat_a) + [k for k in flat_b if k not in flat_a]:
        va, vb = flat_a.get(key, _MISSING), flat_b.get(key, _MISSING)
        if va is _MISSING:
            change = "added"
        elif vb is _MISSING:
            change = "removed"
        else:
            change = "same" if values_equal(va, vb, rtol, atol) else "changed"
        rows.append(
            {
                "key": key,
                "baseline": None if va is _MISSING else va,
                "candidate": None if vb is _MISSING else vb,
                "change": change,
                "relative_change": relative_change(va, vb) if change in ("same", "changed") else math.nan,
            }
        )
    frame = pd.DataFrame(rows, columns=["key", "baseline", "candidate", "change", "relative_change"])
    # Mixed values (numbers, strings, lists) must stay as they are, not be coerced to one dtype.
    frame["baseline"] = pd.Series([r["baseline"] for r in rows], dtype=object)
    frame["candidate"] = pd.Series([r["candidate"] for r in rows], dtype=object)
    return frame


# ----------------------------------------------------------------------------------------------------------
# Renames
# ----------------------------------------------------------------------------------------------------------

_SPLIT = re.compile(r"[/._\-\s:]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_tokens(name: str) -> list[str]:
    """Split a metric or config key into lower-case words: ``charts/episodicReturn`` -> charts, episodic, return."""
    return [t.lower() for part in _SPLIT.split(name) for t in _CAMEL.split(part) if t]


# Abbreviations common in RL metric and config names (CleanRL, SB3, rllib): a token on one side matches its
# expansion on the other ("losses/vf_loss" ~ "losses/value_loss").
ABBREVIATIONS: dict[str, str] = {
    "vf": "value",
    "v": "value",
    "pg": "policy",
    "pi": "policy",
    "ent": "entropy",
    "adv": "advantage",
    "advs": "advantages",
    "obs": "observation",
    "rew": "reward",
    "rews": "rewards",
    "ret": "return",
    "env": "environment",
    "envs": "environments",
    "num": "number",
    "approx": "approximate",
    "ep": "episode",
    "len": "length",
    "eps": "epsilon",
    "grad": "gradient",
    "ckpt": "checkpoint",
    "cfg": "config",
    "init": "initialization",
    "max": "maximum",
    "min": "minimum",
}


def _token_match(t: str, u: str) -> float:
    if t == u:
        return 1.0
    if ABBREVIATIONS.get(t) == u or ABBREVIATIONS.get(u) == t:
        return 0.9
    # episode ~ episodic, reward ~ rewards: a shared stem of 4+ letters covering most of both words.
    prefix = len(_common_prefix(t, u))
    if prefix >= 4 and prefix >= 0.6 * max(len(t), len(u)):
        return 0.9
    ratio = difflib.SequenceMatcher(None, t, u).ratio()
    return ratio if ratio >= 0.75 else 0.0


def _common_prefix(t: str, u: str) -> str:
    n = 0
    while n < min(len(t), len(u)) and t[n] == u[n]:
        n += 1
    return t[:n]


def _initials_match(short: list[str], long: list[str]) -> bool:
    """``lr`` ~ ``learning_rate``: one token of ``short`` spells the initials of 2+ consecutive tokens."""
    for token in short:
        if len(token) < 2:
            continue
        for start in range(len(long)):
            stop = start + len(token)
            if stop <= len(long) and "".join(w[0] for w in long[start:stop]) == token:
                return True
    return False


def _match_tokens(ta: list[str], tb: list[str]) -> tuple[float, list[str], list[str]]:
    """Greedy one-to-one token matching: (sum of scores, unmatched of ta, unmatched of tb)."""
    used: set[int] = set()
    total = 0.0
    left_a = []
    for t in ta:
        best, best_j = 0.0, -1
        for j, u in enumerate(tb):
            if j not in used and (score := _token_match(t, u)) > best:
                best, best_j = score, j
        if best_j >= 0:
            used.add(best_j)
            total += best
        else:
            left_a.append(t)
    return total, left_a, [u for j, u in enumerate(tb) if j not in used]


def name_similarity(old: str, new: str) -> float:
    """How alike two names are, 0 to 1 (1 only for identical names, ignoring case).

    The best of three views:

    - words: tokens matched one to one (equal, a known abbreviation such as ``vf`` ~ ``value``, the same 4+
      letter stem such as ``episode`` ~ ``episodic``, or a close spelling), scored like a Dice coefficient,
      so reordered words (``heart.get/env`` ~ ``env/heart.get``) match; a token that spells the initials of
      words on the other side (``lr`` ~ ``learning_rate``) stands for those words;
    - characters: ``difflib.SequenceMatcher`` ratio of the names, discounted by how unlike the words that
      did not match are, so that a long shared prefix does not make siblings look renamed
      (``charts/episodic_length`` vs ``charts/episodic_return``);
    - leaf: the same last component under another namespace (``train/loss`` ~ ``losses/loss``) scores 0.85.
    """
    a, b = old.lower(), new.lower()
    if a == b:
        return 1.0
    chars = difflib.SequenceMatcher(None, a, b).ratio()
    ta, tb = name_tokens(old), name_tokens(new)
    if not ta or not tb:
        return chars
    matched, left_a, left_b = _match_tokens(ta, tb)
    words = 2 * matched / (len(ta) + len(tb))
    if (_initials_match(left_a, left_b) or _initials_match(left_b, left_a)) and min(
        len(left_a), len(left_b)
    ) == 1:
        words = max(words, 0.85)
    if left_a and left_b:
        residual = difflib.SequenceMatcher(None, " ".join(left_a), " ".join(left_b)).ratio()
        chars *= 0.5 + 0.5 * residual
    leaf_a, leaf_b = re.split(r"[/.]", a)[-1], re.split(r"[/.]", b)[-1]
    leaf = 0.85 if leaf_a == leaf_b and len(leaf_a) >= 3 else 0.0
    # 1.0 is kept for identical names; the same words in another order score just below.
    return max(chars, 0.95 if words >= 1.0 else words, leaf)


def match_near_names(
    old: Iterable[str], new: Iterable[str], cutoff: float = 0.8
) -> list[tuple[str, str, float]]:
    """Pair names that disappeared with names that appeared and look like renames.

    Only names present on one side take part (a name on both sides is not a rename). Pairs are chosen
    greedily by :func:`name_similarity`, best first, each name used at most once.

    Args:
        old: Names on the baseline side (metric names, flattened config keys).
        new: Names on the candidate side.
        cutoff: Lowest similarity reported as a likely rename (0 to 1). The default keeps sibling metrics
            apart (``losses/value_loss`` vs ``losses/policy_loss`` scores about 0.77).

    Returns:
        ``[(old_name, new_name, score), ...]`` sorted by score, best first (ties by name).
    """
    old_list, new_list = list(dict.fromkeys(old)), list(dict.fromkeys(new))
    new_set, old_set = set(new_list), set(old_list)
    gone = [n for n in old_list if n not in new_set]
    came = [n for n in new_list if n not in old_set]
    scored = sorted(
        ((name_similarity(o, n), o, n) for o in gone for n in came),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    taken_old: set[str] = set()
    taken_new: set[str] = set()
    pairs = []
    for score, o, n in scored:
        if score < cutoff:
            break
        if o in taken_old or n in taken_new:
            continue
        taken_old.add(o)
        taken_new.add(n)
        pairs.append((o, n, round(score, 4)))
    return pairs


# ----------------------------------------------------------------------------------------------------------
# Which subsystem does a key belong to
# ----------------------------------------------------------------------------------------------------------


def _patterns(text: str) -> list[str]:
    return text.split()


DEFAULT_RULES: dict[str, list[str]] = {
    # Order matters: the first subsystem with a matching pattern wins, so specific rooms come before the
    # broad ones (env.game.rewards.* is rewards, not env; trainer.learning_rate is optimizer, not trainer).
    "seeding": _patterns("*seed* *determinis* *cudnn.benchmark*"),
    "checkpointing": _patterns("*checkpoint* *ckpt* *save_interval* *save_freq* *resume* *restore*"),
    "curriculum": _patterns("*curriculum* *task* *difficulty* *learning_progress*"),
    "rewards": _patterns("*reward* *shaped* *shaping* *return_norm* *norm_return* *time_penalty*"),
    "logging": _patterns(
        "log.* logging.* *.log_* log_* *wandb* *tensorboard* *stats_interval* *log_interval* *metrics* "
        "*profiler* *evaluate*"
    ),
    "optimizer": _patterns(
        "optimizer.* optim.* *lr *lr.* *lr_* *_lr* lr* *learning_rate* *adam* *beta1* *beta2* *betas* "
        "*.eps eps *weight_decay* *max_grad_norm* *grad_clip* *clip_grad* *schedul* *anneal* *momentum*"
    ),
    "init": _patterns("*init* *orthogonal* *xavier* *kaiming* *gain*"),
    "loss": _patterns(
        "*loss* *clip_coef* *vf_coef* *ent_coef* *entropy* *gae* *gamma* *lambda* *lmbda* *norm_adv* "
        "*clip_vloss* *vtrace* *target_kl* *value_coef* *advantage*"
    ),
    "agents": _patterns(
        "agent.* agents.* policy.* model.* network.* *hidden* *activation* *layer* *lstm* *rnn* *embed* "
        "*encoder* *critic* *actor*"
    ),
    "spaces": _patterns(
        "*obs* *observation* *action_space* *actions* *frame_stack* *normaliz* *clip_obs* *one_hot*"
    ),
    "memory": _patterns("*buffer* *memory* *cache* *replay* *zero_copy* *prefetch*"),
    "trainer": _patterns(
        "trainer.* train.* ppo.* *batch* *epochs* *num_steps* *total_timesteps* *num_envs* *workers* "
        "*rollout* *async* *device* *compile*"
    ),
    "env": _patterns("env.* envs.* game.* *env* *map* *max_steps* *episode* *desync*"),
}
"""Name-based rules, subsystem -> glob patterns (``fnmatch``, matched on the lower-cased flattened key)."""


def classify_key(
    key: str,
    rules: Mapping[str, Sequence[str]] | None = None,
    *,
    defaults: bool = True,
    fallback: str = "config",
) -> str:
    """The subsystem a configuration key (or metric name) belongs to.

    Args:
        key: A flattened key such as ``"trainer.optimizer.learning_rate"``.
        rules: Subsystem -> glob patterns, tried in order before the defaults, e.g. a subject's
            ``config_keys()``.
        defaults: Also try :data:`DEFAULT_RULES` when ``rules`` has no match.
        fallback: The answer when nothing matches; ``"config"`` (configuration resolution) by default.

    Returns:
        A subsystem name.
    """
    lowered = key.lower()
    tables: list[Mapping[str, Sequence[str]]] = []
    if rules:
        tables.append(rules)
    if defaults:
        tables.append(DEFAULT_RULES)
    for table in tables:
        for subsystem, patterns in table.items():
            if any(fnmatch.fnmatchcase(lowered, p.lower()) for p in patterns):
                return subsystem
    return fallback


def classify_keys(
    keys: Iterable[str], rules: Mapping[str, Sequence[str]] | None = None, **kwargs: Any
) -> dict[str, str]:
    """:func:`classify_key` for many keys: ``{key: subsystem}``."""
    return {k: classify_key(k, rules, **kwargs) for k in keys}
