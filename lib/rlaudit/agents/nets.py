"""Probe-side helpers that look inside a subject's network: its module tree, one traced forward pass, heads.

Runs inside the subject's process (imported by the agents, init, checkpointing and spaces probes), so it
imports only numpy at module level and torch inside functions.

A subject's policy is any ``torch.nn.Module``; how to call it is not part of the subject contract, so
:func:`call_policy` tries, in order: an overridden ``forward(obs)``, CleanRL's
``get_action_and_value(obs, action)`` (with fixed actions, so no sampling happens), and finally every
direct child that is an ``nn.Sequential`` applied to the observation. Whatever runs, forward hooks on every
leaf module record what each one received and returned (:func:`trace_forward`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Leaf-module classes by role; anything else is "other". Names, not classes, so that subclasses from other
# libraries with the usual names are recognised without importing them.
LINEAR_CLASSES = ("Linear", "LazyLinear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d")
ACTIVATION_CLASSES = (
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "PReLU",
    "ELU",
    "SELU",
    "CELU",
    "GELU",
    "SiLU",
    "Mish",
    "Tanh",
    "Sigmoid",
    "Hardtanh",
    "Hardswish",
    "Hardsigmoid",
    "Softplus",
    "Softsign",
    "Tanhshrink",
    "LogSigmoid",
    "Softmax",
    "LogSoftmax",
    "Identity",
)
NORM_CLASSES = ("LayerNorm", "BatchNorm1d", "BatchNorm2d", "GroupNorm", "RMSNorm", "InstanceNorm1d")
DROPOUT_CLASSES = ("Dropout", "Dropout1d", "Dropout2d", "AlphaDropout")
RECURRENT_CLASSES = ("LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell")
EMBEDDING_CLASSES = ("Embedding", "EmbeddingBag")
# Activations whose output is bounded: a unit pinned at the bound is "saturated" (no gradient).
BOUNDED_ACTIVATIONS = {"Tanh": 1.0, "Sigmoid": 1.0, "Hardtanh": 1.0, "Softsign": 1.0}


def module_kind(class_name: str) -> str:
    """The role of a leaf module class: ``linear``, ``activation``, ``norm``, ``dropout``, ``recurrent``,
    ``embedding`` or ``other``."""
    for kind, names in (
        ("linear", LINEAR_CLASSES),
        ("activation", ACTIVATION_CLASSES),
        ("norm", NORM_CLASSES),
        ("dropout", DROPOUT_CLASSES),
        ("recurrent", RECURRENT_CLASSES),
        ("embedding", EMBEDDING_CLASSES),
    ):
        if class_name in names:
            return kind
    return "other"


_KV = re.compile(r"(\w+)=([^,=]+?)(?=,\s*\w+=|$)")


def parse_extra_repr(text: str) -> dict[str, str]:
    """``"in_features=4, out_features=2, bias=True"`` -> ``{"in_features": "4", ...}``.

    Positional leading values (``Conv2d(3, 8, kernel_size=(3, 3))``) are kept under ``arg0``, ``arg1``.
    """
    settings: dict[str, str] = {}
    text = text.strip()
    if not text:
        return settings
    # Split on commas outside parentheses.
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    for i, part in enumerate(parts):
        key, sep, value = part.partition("=")
        if sep:
            settings[key.strip()] = value.strip()
        else:
            settings[f"arg{i}"] = part
    return settings


def describe_modules(policy: Any) -> list[dict[str, Any]]:
    """One record per module that is a leaf or holds parameters directly, in registration order.

    Returns:
        Records with ``path`` (dotted name, ``""`` for the root), ``cls``, ``kind`` (:func:`module_kind`),
        ``params`` (``{name: shape}`` of its own parameters), ``buffers`` (``{name: shape}``), ``n_params``,
        ``settings`` (parsed ``extra_repr``), ``block`` (the top-level child it belongs to), ``order``
        (registration index).
    """
    records = []
    for order, (path, module) in enumerate(policy.named_modules()):
        own = dict(module.named_parameters(recurse=False))
        children = list(module.children())
        if children and not own:
            continue
        cls = type(module).__name__
        records.append(
            {
                "path": path,
                "cls": cls,
                "kind": module_kind(cls),
                "params": {k: list(v.shape) for k, v in own.items()},
                "buffers": {k: list(v.shape) for k, v in module.named_buffers(recurse=False)},
                "n_params": int(sum(v.numel() for v in own.values())),
                "settings": parse_extra_repr(module.extra_repr()),
                "block": path.split(".", 1)[0] if path else "",
                "order": order,
            }
        )
    return records


def block_param_counts(policy: Any) -> dict[str, int]:
    """Parameters per top-level child (``"(root)"`` for parameters held by the root) and ``"total"``."""
    counts: dict[str, int] = {}
    for name, param in policy.named_parameters():
        block = name.split(".", 1)[0] if "." in name else "(root)"
        counts[block] = counts.get(block, 0) + int(param.numel())
    counts["total"] = int(sum(p.numel() for p in policy.parameters()))
    return counts


def _overrides_forward(policy: Any) -> bool:
    import torch

    return type(policy).forward is not torch.nn.Module.forward


def as_tensors(obs: Any, device: Any = "cpu") -> Any:
    """A fixed observation batch as the network takes it: a float32 tensor, or for a Dict or Tuple space a
    dict or tuple of float32 tensors (see :func:`rlaudit.spaces.rollout.policy_batch`), on ``device`` (the
    network's: :func:`rlaudit.devices.module_device`)."""
    import torch

    from rlaudit.devices import to_device
    from rlaudit.spaces.rollout import map_leaves

    return map_leaves(lambda a: to_device(a, device, torch.float32), obs)


def call_policy(policy: Any, obs: Any, n_actions: int | None = None) -> str:
    """Run ``policy`` on ``obs`` (B, ...) float tensor once, without sampling where it can; returns the entry
    point used (``forward``, ``get_action_and_value``, ``children``). ``obs`` may be a dict or tuple of such
    tensors (a Dict or Tuple observation space).

    The observations are moved to the policy's device first (:func:`rlaudit.devices.module_device`).

    Raises:
        TypeError: No way to call the policy was found, naming what was tried.
    """
    import torch

    from rlaudit.devices import module_device, to_device
    from rlaudit.spaces.rollout import obs_rows

    device = module_device(policy)
    obs = to_device(obs, device)  # a tensor already there is passed on as it is (trace_forward's ids hold)
    batch = obs_rows(obs)
    if _overrides_forward(policy):
        policy(obs)
        return "forward"
    if callable(getattr(policy, "get_action_and_value", None)):
        action = torch.zeros(batch, dtype=torch.long, device=device)
        policy.get_action_and_value(obs, action)
        return "get_action_and_value"
    seqs = [m for m in policy.children() if isinstance(m, torch.nn.Sequential)]
    if seqs:
        for m in seqs:
            m(obs)
        return "children"
    raise TypeError(
        f"cannot run {type(policy).__name__}: it has no forward(obs), no get_action_and_value(obs, action) "
        "and no nn.Sequential children; give the policy a forward(obs) that returns its outputs"
    )


@dataclass
class Trace:
    """What one traced forward pass saw, per leaf-module call in execution order.

    Attributes:
        calls: Records ``{"path", "cls", "kind", "in_shape", "out_shape", "sources", "index"}``; ``sources``
            names the producers of the call's first input: module paths, ``"obs"`` (the observation itself) or
            ``"op"`` (a tensor made by a non-module operation, e.g. ``F.relu`` or a reshape of a copy).
        outputs: ``path -> output tensor`` of each module's last call (detached).
        inputs: ``path -> first input tensor`` of each module's last call (detached).
        terminal: Paths whose output no other leaf module consumed: the network's heads.
        entry: The entry point :func:`call_policy` used.
    """

    calls: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    terminal: list[str] = field(default_factory=list)
    entry: str = ""

    def order(self) -> list[str]:
        """Module paths in order of first call."""
        seen: dict[str, None] = {}
        for c in self.calls:
            seen.setdefault(c["path"], None)
        return list(seen)

    def upstream(self, path: str) -> set[str]:
        """Every module whose output (transitively) feeds ``path``, following recorded sources."""
        producers: dict[str, set[str]] = {}
        for c in self.calls:
            producers.setdefault(c["path"], set()).update(s for s in c["sources"] if s not in ("obs", "op"))
        out: set[str] = set()
        stack = list(producers.get(path, ()))
        while stack:
            p = stack.pop()
            if p in out:
                continue
            out.add(p)
            stack.extend(producers.get(p, ()))
        return out

    def obs_consumers(self) -> list[str]:
        """Modules that received the observation itself (the network's input layers)."""
        return [c["path"] for c in self.calls if "obs" in c["sources"]]

    def input_layers(self) -> list[str]:
        """The network's input layers: :meth:`obs_consumers`, or when none received the observation itself
        (it was one-hot encoded, concatenated from a Dict observation's entries, normalized in ``forward``),
        the modules whose input no module produced."""
        return self.obs_consumers() or [
            c["path"] for c in self.calls if c["sources"] and all(s == "op" for s in c["sources"])
        ]


def _storage_key(t: Any) -> tuple[int, int] | None:
    try:
        return (t.untyped_storage().data_ptr(), int(t.storage_offset()))
    except Exception:
        return None


def trace_forward(policy: Any, obs: Any, *, keep_tensors: bool = True) -> Trace:
    """Run :func:`call_policy` with forward hooks on every leaf module (no gradients).

    Args:
        policy: The network.
        obs: (B, ...) float32 tensor of observations (or a dict or tuple of them: :func:`as_tensors`).
        keep_tensors: Keep each module's input and output tensors in the trace (for statistics); they stay on
            the policy's device (:func:`rlaudit.devices.to_numpy` brings them to the CPU).

    The observations are moved to the policy's device first (:func:`rlaudit.devices.module_device`).
    """
    import torch

    from rlaudit.devices import module_device, to_device
    from rlaudit.spaces.rollout import leaves as obs_leaves

    obs = to_device(obs, module_device(policy))
    trace = Trace()
    leaves = [(p, m) for p, m in policy.named_modules() if not list(m.children())]
    by_obj: dict[int, str] = {}  # id(tensor) -> producing module path
    by_storage: dict[tuple[int, int], str] = {}
    keep: list[Any] = [obs]  # references keep ids from being reused during the pass
    consumed: set[str] = set()
    obs_ids = {id(t) for t in obs_leaves(obs)}
    obs_keys = {key for t in obs_leaves(obs) if (key := _storage_key(t)) is not None}
    handles = []

    def source_of(t: Any) -> str:
        if id(t) in obs_ids:
            return "obs"
        if id(t) in by_obj:
            return by_obj[id(t)]
        key = _storage_key(t)
        if key is not None and key in obs_keys:
            return "obs"
        if key is not None and key in by_storage:
            return by_storage[key]
        return "op"

    def make_hook(path: str, module: Any) -> Callable[..., None]:
        cls = type(module).__name__

        def hook(mod: Any, args: tuple[Any, ...], output: Any) -> None:
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            out = output[0] if isinstance(output, tuple | list) and output else output
            sources = [source_of(a) for a in args if isinstance(a, torch.Tensor)]
            for s in sources:
                if s not in ("obs", "op"):
                    consumed.add(s)
            trace.calls.append(
                {
                    "path": path,
                    "cls": cls,
                    "kind": module_kind(cls),
                    "in_shape": list(first.shape) if first is not None else [],
                    "out_shape": list(out.shape) if isinstance(out, torch.Tensor) else [],
                    "sources": sources,
                    "index": len(trace.calls),
                }
            )
            if isinstance(out, torch.Tensor):
                keep.append(out)
                by_obj[id(out)] = path
                key = _storage_key(out)
                if key is not None:
                    by_storage[key] = path
                if keep_tensors:
                    trace.outputs[path] = out.detach()
            if keep_tensors and first is not None:
                trace.inputs[path] = first.detach()

        return hook

    try:
        for path, module in leaves:
            handles.append(module.register_forward_hook(make_hook(path, module)))
        with torch.no_grad():
            trace.entry = call_policy(policy, obs)
    finally:
        for h in handles:
            h.remove()
    called = trace.order()
    trace.terminal = [p for p in called if p not in consumed]
    return trace


def find_heads(trace: Trace, records: list[dict[str, Any]], n_actions: int | None) -> dict[str, str | None]:
    """Name the policy head and the value head among the trace's terminal modules.

    The policy head is the terminal parametrized module whose output width equals ``n_actions`` (for a
    Discrete space), the value head the one of width 1; when several qualify, the one whose path says
    actor/policy/pi (critic/value/vf) wins, then the last called.

    Returns:
        ``{"policy": path or None, "value": path or None}``.
    """
    with_params = {r["path"] for r in records if r["n_params"] > 0}
    width = {c["path"]: (c["out_shape"][-1] if c["out_shape"] else None) for c in trace.calls}
    terminal = [p for p in trace.terminal if p in with_params]

    def pick(cands: list[str], words: tuple[str, ...]) -> str | None:
        if not cands:
            return None
        named = [p for p in cands if any(w in p.lower() for w in words)]
        return (named or cands)[-1]

    policy_cands = [p for p in terminal if n_actions is not None and width.get(p) == n_actions]
    value_cands = [p for p in terminal if width.get(p) == 1 and p not in policy_cands]
    if n_actions == 1:  # ambiguous widths: names decide
        value_cands = [p for p in terminal if any(w in p.lower() for w in ("critic", "value", "vf"))]
        policy_cands = [p for p in terminal if p not in value_cands]
    return {
        "policy": pick(policy_cands, ("actor", "policy", "pi", "action", "logit")),
        "value": pick(value_cands, ("critic", "value", "vf")),
    }


def activation_stats(x: Any, cls: str) -> dict[str, float]:
    """Statistics of one layer's output over a batch: (B, units...) -> summary.

    ``dead`` is the fraction of units that are exactly zero on every sample (a ReLU that never fires);
    ``saturated`` the fraction pinned within 1% of the bound of a bounded activation on at least 99% of the
    samples (tanh at +-1: no gradient flows through it).
    """
    a = np.asarray(x.detach().float().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    a = a.reshape(a.shape[0], -1)
    dead = float(np.mean(np.all(np.abs(a) == 0.0, axis=0)))
    bound = BOUNDED_ACTIVATIONS.get(cls)
    saturated = 0.0
    if bound is not None:
        saturated = float(np.mean(np.mean(np.abs(a) >= 0.99 * bound, axis=0) >= 0.99))
    return {
        "mean": float(a.mean()),
        "std": float(a.std()),
        "unit_std": float(a.std(axis=0).mean()),
        "dead": dead,
        "saturated": saturated,
        "units": int(a.shape[1]),
    }


HISTOGRAM_BINS = 128
"""Bins of the per-layer activation histograms the network probe writes (re-binned onto common edges later)."""


def activation_histogram(x: Any, bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    """One layer's output values over a batch as a histogram: exact zeros counted apart (a ReLU's dead and
    inactive units are a point mass), the rest in ``bins`` equal bins between the smallest and largest value.

    Returns:
        ``{"low", "high"}`` (the range of the non-zero values, floats), ``"zeros"`` and ``"n"`` (counts of
        exact zeros and of all finite values) and ``"counts"`` (``bins`` ints, the non-zero values per bin).
    """
    a = np.asarray(x.detach().float().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64).ravel()
    a = a[np.isfinite(a)]
    zero = a == 0.0
    rest = a[~zero]
    low, high = (float(rest.min()), float(rest.max())) if rest.size else (0.0, 0.0)
    counts, _ = np.histogram(rest, bins=bins, range=(low, high if high > low else low + 1e-12))
    return {
        "low": low,
        "high": high,
        "zeros": int(zero.sum()),
        "n": int(a.size),
        "counts": counts.astype(int).tolist(),
    }


def single_spaces(env: Any) -> tuple[Any, Any]:
    """``(observation_space, action_space)`` of one environment of a vector env (or of a plain env)."""
    obs_space = getattr(env, "single_observation_space", None) or env.observation_space
    act_space = getattr(env, "single_action_space", None) or env.action_space
    return obs_space, act_space


def n_actions_of(action_space: Any) -> int | None:
    """Number of discrete actions (``Discrete.n``), or None for other spaces."""
    n = getattr(action_space, "n", None)
    return int(n) if n is not None else None


def state_tensors(state: Any) -> dict[str, Any]:
    """A state dict's tensor entries only (``{name: tensor}``), in order."""
    import torch

    return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
