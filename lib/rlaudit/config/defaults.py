"""Implicit-defaults check: keys one side sets and the other leaves out or sets to None, so the value comes
from code or a library, invisible in the config; each named with the default it most likely falls back to.
"""

from __future__ import annotations

import fnmatch

from rlaudit.checks import Check, check
from rlaudit.config import probes
from rlaudit.config.diff import RESOLVE_DESC, config_diff, filed_under, short_value
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section

# Library defaults a key falls back to when a config leaves it out (or sets None). Matched against the last
# dotted segment of the key; the first match wins. Sources: torch.optim.Adam, SB3 PPO, CleanRL ppo.py.
KNOWN_DEFAULTS: list[tuple[str, str]] = [
    ("eps", "torch.optim.Adam eps=1e-08 (PPO implementations use 1e-5)"),
    ("adam_eps", "torch.optim.Adam eps=1e-08 (PPO implementations use 1e-5)"),
    ("betas", "torch.optim.Adam betas=(0.9, 0.999)"),
    ("weight_decay", "torch.optim.Adam weight_decay=0"),
    ("*schedule*", "no schedule: the value stays constant for the whole run"),
    ("anneal*", "no annealing: the value stays constant for the whole run"),
    ("max_grad_norm", "no gradient clipping"),
    ("target_kl", "no early stopping on KL"),
    ("ent_coef", "SB3 PPO ent_coef=0.0 (no entropy bonus)"),
    ("*reward*", "no reward for this component"),
    ("ore", "no reward for this component"),
    ("battery", "no reward for this component"),
    ("heart", "no reward for this component"),
    ("seed", "an unseeded (time-dependent) generator"),
]


def library_default(key: str) -> str:
    """What a key most likely falls back to when left out, or a generic sentence."""
    last = key.rsplit(".", 1)[-1]
    for pattern, meaning in KNOWN_DEFAULTS:
        if fnmatch.fnmatch(last, pattern):
            return meaning
    return "whatever default the code or library applies"


@check(
    "config/implicit-defaults",
    title="Settings left to implicit defaults",
    probe=probes.resolved_config,
    desc=RESOLVE_DESC,
)
def implicit_defaults(c: Check, pair: Pair) -> Section:
    """Neither setup leaves a setting to an implicit default the other sets explicitly.

    Keys one side sets and the other leaves out or sets to None: the value then comes from code or a
    library, invisible in the config (Adam's eps=1e-8, a schedule that became None).
    """
    rows = config_diff(pair).table
    rows = rows[rows["change"].isin(["implicit", "added", "removed"])]
    findings = []
    for r in rows.itertuples():
        missing_side = "candidate" if r.candidate is None or r.candidate == "(absent)" else "baseline"
        setting_side = "baseline" if missing_side == "candidate" else "candidate"
        value = r.baseline if setting_side == "baseline" else r.candidate
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            id=f"config/implicit-{r.key}",
            hypothesis=f"`{r.key}` is set explicitly on both sides",
            baseline=r.baseline,
            candidate=r.candidate,
            summary=f"{r.key}: the {setting_side} sets {short_value(value)}; the {missing_side} leaves it to "
            f"{library_default(r.key)}",
            remediation=f"Set `{r.key}` explicitly in the {missing_side}'s config to {short_value(value)} "
            "(or confirm the default is intended).",
        )
        findings.append(filed_under(finding, str(r.subsystem)))
    if not findings:
        findings.append(c.finding(Status.CLEARED, summary="every key set on one side is set on the other"))
    return c.section(findings, tables={"implicit defaults": rows.reset_index(drop=True)} if len(rows) else {})
