"""Optimizer probes: the optimizer the subject's own ``make_optimizer`` builds, inspected in its process.

Effective schedules, gradient norms and per-layer update ratios come from the shared training runs'
recorder tables (:func:`rlaudit.trainer.runs.runs`), not from here.

Imports the standard library and light rlaudit modules; torch lazily.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from rlaudit.loss.probes import env_spaces, space_info
from rlaudit.probe import ProbeContext, probe

# Param-group entries that are implementation switches, not hyperparameters of the update rule.
# (decoupled_weight_decay is not one of them: it turns Adam into AdamW.)
IMPLEMENTATION_FLAGS = ("foreach", "fused", "capturable", "differentiable")


def jsonable_value(value: Any) -> Any:
    """A param-group or default entry as JSON: numbers, bools, None, lists; tensors become floats."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if hasattr(value, "numel") and hasattr(value, "item") and value.numel() == 1:
        return float(value.item())
    if isinstance(value, list | tuple):
        return [jsonable_value(v) for v in value]
    return repr(value)


def library_defaults(cls: type) -> dict[str, Any]:
    """The keyword defaults of an optimizer class's constructor (what a value left out falls back to)."""
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return {}
    return {
        name: jsonable_value(p.default)
        for name, p in params.items()
        if name not in ("self", "params") and p.default is not inspect.Parameter.empty
    }


def _qualname(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


@probe(requires=("config", "make_env", "make_policy", "make_optimizer"), version=3)
def optimizer_setup(ctx: ProbeContext, *, seed: int = 0) -> dict:
    """Build the subject's policy and optimizer and record the optimizer's class, param groups and coverage.

    ``make_optimizer`` may return an optimizer or ``(optimizer, scheduler)``.

    Writes ``optimizer.json`` (``class``, ``defaults`` of the constructor, ``groups``: every param-group
    entry but the parameters, with the group's tensor and value counts, and ``scheduler``) and the
    ``coverage`` table: one row per parameter of the policy (``parameter``, ``numel``, ``requires_grad``,
    ``group``: the param group holding it, -1 for none; ``target``: the parameter belongs to a target network
    the subject names through ``target_networks``, which follows the online network by copies, not by
    gradients).
    """
    import torch

    obs_space, act_space = env_spaces(ctx.subject, ctx.config, seed)
    torch.manual_seed(seed)
    policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
    made = ctx.subject.make_optimizer(ctx.config, policy)
    optimizer, scheduler = (made[0], made[1]) if isinstance(made, tuple | list) else (made, None)

    group_of: dict[int, int] = {}
    groups = []
    for gi, group in enumerate(optimizer.param_groups):
        params = list(group["params"])
        for p in params:
            group_of.setdefault(id(p), gi)
        # initial_lr is bookkeeping a torch LR scheduler adds to every group it drives, not a setting
        entry = {k: jsonable_value(v) for k, v in group.items() if k not in ("params", "initial_lr")}
        entry["_tensors"] = len(params)
        entry["_values"] = int(sum(p.numel() for p in params))
        groups.append(entry)
    named = list(policy.named_parameters())
    targets = (
        list(ctx.subject.target_networks(ctx.config, policy) or {}) if ctx.has("target_networks") else []
    )

    def is_target(name: str) -> bool:
        return any(name == t or name.startswith(t + ".") for t in targets)

    policy_ids = {id(p) for _, p in named}
    outside = sum(1 for g in optimizer.param_groups for p in g["params"] if id(p) not in policy_ids)
    coverage = {
        "parameter": [n for n, _ in named],
        "numel": [int(p.numel()) for _, p in named],
        "requires_grad": [bool(p.requires_grad) for _, p in named],
        "group": [group_of.get(id(p), -1) for _, p in named],
        "target": [is_target(n) for n, _ in named],
    }
    sched = None
    if scheduler is not None:
        state = {}
        try:
            state = {k: jsonable_value(v) for k, v in scheduler.state_dict().items() if not callable(v)}
        except Exception:  # a scheduler whose state holds closures: keep its class only
            state = {}
        sched = {"class": _qualname(scheduler), "state": state}
    ctx.write_json(
        "optimizer",
        {
            "class": _qualname(optimizer),
            "defaults": library_defaults(type(optimizer)),
            "groups": groups,
            "scheduler": sched,
            "foreign_tensors": outside,
        },
    )
    ctx.write_table("coverage", coverage)
    trainable = [n for n, p in named if p.requires_grad]
    missing = [n for n, p in named if p.requires_grad and id(p) not in group_of and not is_target(n)]
    return {
        "class": _qualname(optimizer),
        "groups": len(groups),
        "trainable": len(trainable),
        "missing": missing,
        "foreign_tensors": outside,
        "scheduler": sched["class"] if sched else None,
        "target_networks": targets,
        **space_info(obs_space, act_space),
    }
