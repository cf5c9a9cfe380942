"""Loss audit (notebook 09): advantages, loss terms, gradient flow and probe environments, side by side.

Case 003 is the model: weeks went to a lambda-return bootstrapped from ``V(s_t)`` instead of ``V(s_{t+1})``,
and to a ``torch.max(free_bits, loss)`` floor that sent zero gradient whenever the loss sat below it. Both are
invisible in a config and in a loss curve; both are obvious when the math is run on inputs whose answer is
known. One module per check:

- :mod:`rlaudit.loss.advantages`: each subject's ``compute_advantages`` (a sequence learner's
  ``compute_lambda_returns``) on the same random and impulse inputs
  against the workbench's own GAE and its common mistakes (:mod:`rlaudit.loss.gae`), with the discount and
  lambda it actually uses;
- :mod:`rlaudit.loss.terms`: each subject's ``compute_loss`` on one identical batch with the same weights,
  designed so that the value loss is small, as it is late in training (where a floor bites), and the
  coefficient of each term solved from a sweep of batches;
- :mod:`rlaudit.loss.gradients`: gradient flow on that batch, on a batch from the subject's own rollouts with a
  trained checkpoint, and in the recorder's per-layer gradient norms over real training;
- :mod:`rlaudit.loss.ladder`: five tiny probe environments whose answers are known (:mod:`rlaudit.loss.envs`);
  the first rung that fails isolates the bug;
- :mod:`rlaudit.loss.targets`: an off-policy learner's ``compute_td_targets`` on controlled batches, read as
  the discount, done mask, truncation bootstrap, bootstrap state and network it uses;
- :mod:`rlaudit.loss.tdloss`: its ``compute_td_loss`` against shifted targets, read as the loss on the TD error
  (squared, Huber and its threshold, absolute) and its scale (mean or sum, a ½, critics summed).
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.loss.advantages import advantages
from rlaudit.loss.gradients import gradient_flow
from rlaudit.loss.ladder import probe_envs
from rlaudit.loss.targets import td_targets
from rlaudit.loss.tdloss import td_loss_form
from rlaudit.loss.terms import loss_terms
from rlaudit.notebook import Section

__all__ = [
    "CHECKS",
    "advantages",
    "audit_all",
    "gradient_flow",
    "loss_terms",
    "probe_envs",
    "td_loss_form",
    "td_targets",
]


CHECKS = (advantages, loss_terms, gradient_flow, probe_envs, td_targets, td_loss_form)
"""Every loss check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every loss check, in notebook order."""
    return run_checks(wb, CHECKS)
