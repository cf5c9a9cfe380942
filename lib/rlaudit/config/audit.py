"""Config audit (notebook 14): what changed between the two resolved configs, what was left to a library
default, and whether an override given through the subject's own mechanism actually lands.

Case 000 is the model: a Hydra/YAML tree rewritten as Python ("dehydration") whose scheduler fields became
None and quietly fell back to defaults. Every check reads the config diff (:mod:`rlaudit.config.diff`), where
each difference is attributed to a subsystem, so later audits and the summary's attribution experiments can
restore one subsystem's keys at a time. One module per check:

- :mod:`rlaudit.config.values`: resolved values that differ, filed under the subsystem that owns each key;
- :mod:`rlaudit.config.defaults`: keys one side leaves to an implicit library default;
- :mod:`rlaudit.config.overrides`: test overrides through each subject's own mechanism, and whether they land.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.config.defaults import KNOWN_DEFAULTS, implicit_defaults, library_default
from rlaudit.config.diff import RESOLVE_DESC, ConfigDiff, config_diff, diff_configs, load_diff
from rlaudit.config.overrides import override_pairs, overrides, pick_overrides
from rlaudit.config.values import CHANGED_VALUES, changed_values, values
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section

__all__ = [
    "CHANGED_VALUES", "CHECKS", "KNOWN_DEFAULTS", "RESOLVE_DESC", "ConfigDiff", "audit_all", "changed_values",
    "config_diff", "diff_configs", "implicit_defaults", "library_default", "load_diff", "override_pairs",
    "overrides", "pick_overrides", "values",
]  # fmt: skip

CHECKS = (values, implicit_defaults, overrides)
"""Every config check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every config check, in notebook order."""
    return run_checks(wb, CHECKS)
