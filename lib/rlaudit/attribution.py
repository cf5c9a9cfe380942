"""Attribution: which changes explain the gap between baseline and candidate, measured, with intervals.

Audits list differences; this module runs the experiments that turn suspects into causes. A *suspect* is a
change that can be undone in the candidate: one subsystem's config keys set back to the baseline's values (a
*restore*, through the candidate's own ``config(overrides=...)``), a fault removed from a built-in candidate
(the built-in analog of a fix commit), or any named variant subject the user lists (a fix commit). Every arm
trains on the same seeds as the baseline and the candidate, and for each arm and each metric (the primary
metric, final ``heart.get`` by default, and steps per second) we measure the fraction of the gap it restores,
``(variant - candidate) / (baseline - candidate)``, with a bootstrap interval paired by seed. Throughput is
split as CPU time per step, where costs add (:func:`attribution_scale`).

A full one-factor sweep (every suspect alone, many seeds) is what a careful human would do and costs the most.
The search here spends less (case 003's protocol, automated; :class:`Search` has the details):

- **Audit evidence first**: suspects with a CONFIRMED or SUSPECT audit finding are restored one at a time,
  strongest evidence first, two at a time (two cores), until the causes found add up to every gap.
- **Interactions**: the causes found are then restored together. If together they close every gap, the
  suspects not yet tried are not needed to explain it and are left unmeasured (and said so); when the singles
  do not add up to the whole, the summary says so.
- **Group testing** (delta debugging with a statistical oracle) for everything else: the remaining suspects
  are restored as one group; a group that matters is halved (a half whose sibling measurably does not matter
  is inferred to matter and halved again without a run), a group that does not is cleared whole.
- **Sequential allocation**: every arm starts with ``seeds0`` seeds (one); seeds are added only where an
  interval still straddles a decision (restores a meaningful share ``delta`` or not) that more seeds could
  settle and the search still needs it, and to the first place of each ranking until it rests on two seeds
  and clears the runner-up. Intervals pool the run-to-run noise of all arms
  (:func:`rlaudit.stats.fractions_restored_pooled`; the baseline and candidate bring ``max_seeds`` each), so
  a one- or two-seed arm gets an honest interval instead of the span of the values it saw.

The budget (training runs) comes from the profile; the result records what was spent and what the full
one-factor sweep at the same seed count would have cost.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rlaudit import stats
from rlaudit.findings import SUBSYSTEMS, Evidence, Finding, Severity, Status
from rlaudit.subjects import SubjectSpec
from rlaudit.trainer.probes import train_run
from rlaudit.trainer.runs import RunData, run_params
from rlaudit.workbench import ProbeResult, Workbench

SPS = "sps"
DEFAULT_METRIC = "heart.get"
DEFAULT_DELTA = 0.2
"""A restore "matters" when it closes at least this fraction of a gap (20%)."""

_STATUS_WEIGHT = {Status.CONFIRMED: 3.0, Status.SUSPECT: 2.0, Status.NOTED: 0.25}
_SEVERITY_WEIGHT = {
    Severity.CRITICAL: 2.0,
    Severity.HIGH: 1.5,
    Severity.MEDIUM: 1.0,
    Severity.LOW: 0.5,
    Severity.INFO: 0.25,
}


# ------------------------------------------------------------------------------------------------------------
# Suspects and arms
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suspect:
    """One change that an experiment can undo in the candidate.

    Attributes:
        name: Human label (``"restore rewards config"``, ``"fix loss.gae_bootstrap"``, a variant's name).
        subsystem: The subsystem it belongs to (for the status grid and the ranking).
        source: ``"config"`` (restore keys), ``"fix"`` (built-in fault removed), ``"variant"`` (named subject).
        overrides: Config overrides that restore the baseline's values (``dotted.key=value``).
        remove: Faults removed from a built-in candidate.
        spec: A named variant subject (not composable with others).
        prior: Strength of the audit evidence against it (orders the search; never decides).
        inject: The reverse experiment, config overrides that put the candidate's values into the baseline.
        add: The reverse experiment for a built-in fix: faults added to a built-in baseline.
    """

    name: str
    subsystem: str
    source: str
    overrides: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    spec: str | None = None
    prior: float = 0.0
    inject: tuple[str, ...] = ()
    add: tuple[str, ...] = ()

    @property
    def composable(self) -> bool:
        return self.spec is None

    @property
    def injectable(self) -> bool:
        return bool(self.inject or self.add)


@dataclass
class Arm:
    """A set of training runs of one setup over the shared seeds.

    Attributes:
        name: ``"baseline"``, ``"candidate"``, or the restored suspects joined with " + ".
        target: What the workbench runs: ``"baseline"``, ``"candidate"`` or a spec string.
        overrides: Config overrides for the runs.
        suspects: Names of the suspects this arm restores.
        injects: Names of the suspects this arm injects into the baseline (the reverse experiment).
        results: One probe result per seed, in seed order (None where the runs came from elsewhere).
        measured: Per seed, the metrics read from its run: ``{metric: value, "sps": value}`` (NaN if failed).
    """

    name: str
    target: str | SubjectSpec
    overrides: tuple[str, ...] = ()
    suspects: tuple[str, ...] = ()
    injects: tuple[str, ...] = ()
    results: list[ProbeResult | None] = field(default_factory=list)
    measured: list[dict[str, float]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.measured)

    def add(self, result: ProbeResult | None, row: dict[str, float]) -> None:
        self.results.append(result)
        self.measured.append(row)

    def values(self, metric: str) -> np.ndarray:
        """Per seed: the final metric (or SPS); NaN for a failed run. Shape (n,)."""
        return np.asarray([row.get(metric, math.nan) for row in self.measured], dtype=float)

    def errors(self) -> list[str]:
        return [
            f"{self.name} seed {i}: {r.error or r.missing}"
            for i, r in enumerate(self.results)
            if r is not None and not r.ok
        ]


def final_metric(run: RunData, metric: str = DEFAULT_METRIC, tail: float = 0.25) -> float:
    """The metric averaged over the episodes that ended in the last ``tail`` fraction of the run's steps.

    Falls back to the logged scalar ``env/<metric>`` (or ``<metric>``) when the recorder saw no episodes
    with that statistic. NaN when neither exists.
    """
    episodes = run.table("episodes")
    if not episodes.empty and metric in episodes.columns and "step" in episodes.columns:
        last = float(episodes["step"].max())
        window = episodes[episodes["step"] >= (1.0 - tail) * last]
        if len(window):
            return float(window[metric].mean())
    scalars = run.table("scalars")
    if not scalars.empty:
        for name in (f"env/{metric}", metric):
            rows = scalars[scalars["name"] == name]
            if len(rows):
                last = float(rows["step"].max())
                return float(rows[rows["step"] >= (1.0 - tail) * last]["value"].mean())
    return math.nan


def attribution_scale(metric: str, values: np.ndarray) -> np.ndarray:
    """The scale on which a metric's gap is split between causes.

    Throughput is split as CPU time per step (``1 / SPS``), because costs add: a curriculum that costs 9 us
    and an environment rebuild that costs 3 us per step together cost 12 us, whatever order they are fixed
    in. Shares of steps per second do not add (the rebuild's gain in SPS grows once the curriculum is fixed),
    so on the SPS scale the causes of a throughput gap never seem to add up. Everything else is split on its
    own scale.
    """
    values = np.asarray(values, dtype=float)
    if metric != SPS:
        return values
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, 1.0 / values, np.nan)


def gap_label(metric: str) -> str:
    """What a share of ``metric`` is a share of, for sentences and axes (see :func:`attribution_scale`)."""
    return "the CPU time per step lost" if metric == SPS else "the gap"


def run_sps(run: RunData) -> float:
    """Steps per CPU-second of the training process when the recorder measured it (other load on the machine
    barely moves it, so two arms trained at different moments compare fairly), else wall-clock steps/s."""
    value = run.summary.get("sps_cpu") or run.sps
    return float(value) if value else math.nan


# ------------------------------------------------------------------------------------------------------------
# Finding suspects
# ------------------------------------------------------------------------------------------------------------


KNOCK_ON: dict[str, tuple[str, ...]] = {
    # A flagged upstream check (id prefix) -> the downstream checks (id prefixes) that measure through it. The
    # batch geometry (envs, rollout length, minibatches) shapes environment throughput and episode statistics,
    # observation statistics and preprocessing cost, buffer memory, and the size of every update; the
    # curriculum runs inside env.reset(), so its cost shows up as a slower reset.
    "trainer/geometry": (
        "env/throughput",
        "env/equivalence",
        "env/episode-distributions",
        "spaces/",
        "memory/",
        "optimizer/clip-fraction",
        "optimizer/update-ratios",
    ),
    # a different network computes a different loss on the same batch, learns the probe environments
    # differently, and starts from a different policy
    "agents/": ("loss/terms", "loss/probe-envs", "init/policy-at-init"),
    # rewards are paid by the environment: a reward component that changed shows in its step-by-step and
    # episode comparisons too
    "rewards/": ("env/equivalence", "env/episode-distributions"),
    "curriculum/overhead": ("env/reset-cost", "env/throughput"),
    "curriculum/scaling": ("env/reset-cost", "env/throughput"),
}


def knock_on(findings: Sequence[Finding]) -> set[str]:
    """Ids of flagged findings that may only echo a flagged upstream check (:data:`KNOCK_ON`) or that their
    audit marked as a knock-on (``evidence.details["knock_on"]``). Such findings count a fifth in the evidence
    ranking; a measured restore is never discounted."""
    flagged = [f for f in findings if f.status.is_flag]
    upstream = [up for up in KNOCK_ON if any(f.id.startswith(up) for f in flagged)]
    out = set()
    for f in flagged:
        if (f.evidence.details or {}).get("knock_on"):
            out.add(f.id)
        elif any(
            f.id.startswith(down) and not f.id.startswith(up) for up in upstream for down in KNOCK_ON[up]
        ):
            out.add(f.id)
    return out


def audit_priors(findings: Sequence[Finding]) -> dict[str, float]:
    """Per subsystem, the strength of the audit evidence against it (orders the search, never decides).

    The strongest flagged finding counts in full (status x severity weight) and the others a tenth, so one
    CONFIRMED finding outranks many weak ones; knock-on findings (``evidence.details["knock_on"]``, effects
    of another subsystem's fault) count a fifth.
    """
    weights: dict[str, list[float]] = {}
    echoes = knock_on(findings)
    for f in findings:
        w = _STATUS_WEIGHT.get(f.status, 0.0) * _SEVERITY_WEIGHT.get(f.severity, 1.0)
        if f.id in echoes:
            w *= 0.2
        if w:
            weights.setdefault(f.subsystem, []).append(w)
    return {sub: max(ws) + 0.1 * (sum(ws) - max(ws)) for sub, ws in weights.items()}


def _yaml_value(value: Any) -> str:
    import json

    return "null" if value is None else json.dumps(value)


def config_suspects(wb: Workbench, priors: dict[str, float]) -> tuple[list[Suspect], list[str]]:
    """One restore per subsystem whose config keys differ (from the config audit's diff).

    Returns:
        ``(suspects, notes)``; keys the candidate's config does not have cannot be restored through
        overrides and are named in the notes.
    """
    from rlaudit.config.audit import load_diff

    _, diff = load_diff(wb)
    if diff is None:
        return [], ["config restores unavailable: a subject's config could not be resolved"]
    notes = []
    suspects = []
    for subsystem, keys in sorted(diff.keys_by_subsystem().items()):
        overrides, inject, skipped = [], [], []
        for key in keys:
            if key in diff.candidate and key in diff.baseline:
                overrides.append(f"{key}={_yaml_value(diff.baseline[key])}")
                inject.append(f"{key}={_yaml_value(diff.candidate[key])}")
            else:
                skipped.append(key)
        if skipped:
            notes.append(
                f"{subsystem}: keys {', '.join(skipped)} exist on one side only; not restorable by override"
            )
        if overrides:
            suspects.append(
                Suspect(
                    name=f"restore {subsystem} config",
                    subsystem=subsystem,
                    source="config",
                    overrides=tuple(overrides),
                    prior=priors.get(subsystem, 0.0),
                    inject=tuple(inject),
                )
            )
    return suspects, notes


def builtin_fix_suspects(
    candidate_spec: str, priors: dict[str, float], baseline_spec: str = ""
) -> list[Suspect]:
    """For a built-in candidate: one suspect per fault it carries (the built-in analog of a fix commit).
    When the baseline is built-in too, each fault can also be injected into it alone (the reverse check)."""
    if not candidate_spec.startswith("builtin:"):
        return []
    from rlaudit.demo import faults as catalog
    from rlaudit.demo.subject import parse

    _, active = parse(candidate_spec.split(":", 1)[1])
    return [
        Suspect(
            name=f"fix {fid}",
            subsystem=catalog.CATALOG[fid].subsystem,
            source="fix",
            remove=(fid,),
            prior=priors.get(catalog.CATALOG[fid].subsystem, 0.0),
            add=(fid,) if baseline_spec.startswith("builtin:") else (),
        )
        for fid in active
    ]


def variant_suspects(variants: str, priors: dict[str, float]) -> list[Suspect]:
    """Named variant subjects from a parameter string: ``"name=spec, spec2"`` (a name may carry its
    subsystem as ``name@subsystem=spec``)."""
    out = []
    for item in (v.strip() for v in variants.split(",") if v.strip()):
        label, sep, spec = item.partition("=")
        if not sep:
            label, spec = item, item
        label, _, subsystem = label.partition("@")
        if subsystem and subsystem not in SUBSYSTEMS:
            raise ValueError(
                f"variant {item!r}: unknown subsystem {subsystem!r}; expected one of {SUBSYSTEMS}"
            )
        out.append(
            Suspect(
                name=label.strip(),
                subsystem=subsystem or "trainer",
                source="variant",
                spec=spec.strip(),
                prior=priors.get(subsystem, 0.0),
            )
        )
    return out


def gather_suspects(
    wb: Workbench, findings: Sequence[Finding], variants: str = ""
) -> tuple[list[Suspect], list[str]]:
    """Every suspect for this pair: built-in fixes, config restores not already covered by a fix of the same
    subsystem, and named variants; ordered by audit evidence (strongest first)."""
    priors = audit_priors(findings)
    fixes = builtin_fix_suspects(wb.specs["candidate"].text, priors, wb.specs["baseline"].text)
    restores, notes = config_suspects(wb, priors)
    covered = {s.subsystem for s in fixes}
    suspects = (
        fixes + [s for s in restores if s.subsystem not in covered] + variant_suspects(variants, priors)
    )
    suspects.sort(
        key=lambda s: (-s.prior, SUBSYSTEMS.index(s.subsystem) if s.subsystem in SUBSYSTEMS else 99, s.name)
    )
    return suspects, notes


def compose(candidate: SubjectSpec, suspects: Sequence[Suspect]) -> tuple[str | SubjectSpec, tuple[str, ...]]:
    """What to run for the candidate with ``suspects`` undone together: ``(target, overrides)``.

    The target is ``"candidate"`` itself when only config restores are involved (same worker, same cache),
    the candidate's spec with faults removed for built-in fixes (keeping its interpreter, cwd and env), or a
    named variant's own spec.

    Raises:
        ValueError: A named variant combined with anything else (variants are whole subjects).
    """
    from rlaudit.subjects import parse_spec

    variants = [s for s in suspects if not s.composable]
    if variants:
        if len(suspects) > 1:
            raise ValueError("a named variant subject cannot be combined with other suspects")
        return parse_spec(variants[0].spec or ""), ()
    overrides = tuple(o for s in suspects for o in s.overrides)
    removes = [f for s in suspects for f in s.remove]
    if not removes:
        return "candidate", overrides
    return _respec(candidate, f"{candidate.text}-{','.join(removes)}"), overrides


def compose_injection(baseline: SubjectSpec, suspect: Suspect) -> tuple[str | SubjectSpec, tuple[str, ...]]:
    """What to run for the baseline with ``suspect``'s change put in alone: ``(target, overrides)``. A
    config change runs on the baseline itself with the candidate's values as overrides; a built-in fault is
    added to the built-in baseline's spec (``builtin:reference+<fault>``)."""
    if not suspect.add:
        return "baseline", suspect.inject
    return _respec(baseline, f"{baseline.text}+{','.join(suspect.add)}"), suspect.inject


def _respec(spec: SubjectSpec, text: str) -> SubjectSpec:
    """``spec`` with its spec string changed (built-in faults added or removed), run the same way: same
    interpreter, environment, working directory and requirements."""
    from rlaudit.subjects import parse_spec

    return parse_spec(text).replace(
        python=spec.python,
        requirements=spec.requirements,
        system_site_packages=spec.system_site_packages,
        cwd=spec.cwd,
        env=dict(spec.env),
    )


# ------------------------------------------------------------------------------------------------------------
# The search
# ------------------------------------------------------------------------------------------------------------


def minor_floor(delta: float) -> float:
    """The smallest share a "minor" contributor must surely restore: a quarter of ``delta``."""
    return delta / 4.0


@dataclass
class Effect:
    """Fraction of one metric's gap that an arm restores, paired by seed."""

    point: float
    low: float
    high: float
    n: int

    def decided(self, delta: float) -> bool:
        return self.low > delta or self.high < delta

    def matters(self, delta: float) -> bool:
        return self.low > 0.0 and self.point >= delta

    def contributes(self, delta: float) -> bool:
        """Surely restores more than a quarter of ``delta`` (5% of the gap by default). Below that floor,
        throughput shares are within what separate batches of runs on one busy machine differ by."""
        return self.low > minor_floor(delta)

    def verdict(self, delta: float) -> str:
        """``cause`` (a meaningful share), ``minor`` (surely above :func:`minor_floor`, surely below
        ``delta``), ``no effect`` (surely below ``delta``, not surely above the floor), or ``unclear``."""
        if self.matters(delta):
            return "cause"
        if self.high < delta:
            return "minor" if self.contributes(delta) else "no effect"
        return "unclear"


@dataclass
class Attribution:
    """Everything the summary reports: gaps, arms, effects per metric, the ranking, and what it cost."""

    metrics: list[str]
    gaps: dict[str, dict[str, float]]
    arms: list[Arm]
    effects: dict[str, dict[str, Effect]]
    suspects: list[Suspect]
    ranking: dict[str, list[dict[str, Any]]]
    together: dict[str, Any]
    spent: dict[str, Any]
    notes: list[str]
    log: list[str] = field(default_factory=list)
    injected: dict[str, dict[str, Effect]] = field(default_factory=dict)
    """Suspect name -> metric -> the share of the gap its change reproduces when put into the baseline alone."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "gaps": self.gaps,
            "arms": [
                {
                    "name": a.name,
                    "target": a.target,
                    "overrides": list(a.overrides),
                    "suspects": list(a.suspects),
                    "injects": list(a.injects),
                    "seeds": a.n,
                    "measured": a.measured,
                    "errors": a.errors(),
                }
                for a in self.arms
            ],
            "effects": {arm: {m: asdict(e) for m, e in per.items()} for arm, per in self.effects.items()},
            "suspects": [asdict(s) for s in self.suspects],
            "ranking": self.ranking,
            "together": self.together,
            "spent": self.spent,
            "notes": self.notes,
            "log": self.log,
            "injected": {n: {m: asdict(e) for m, e in per.items()} for n, per in self.injected.items()},
        }


class Search:
    """Prior-guided screening with sequential seeds over a workbench's (baseline, candidate) pair.

    The order of work (each step one parallel batch of ``batch`` arms, the number of jobs):

    1. Baseline and candidate at ``max_seeds`` (usually cached: the trainer audit ran the same runs).
    2. Suspects the audits flagged strongly (a CONFIRMED or SUSPECT finding: ``prior >= strong_prior``) are
       restored one at a time, strongest evidence first, until the singles explain every gap (the lower
       bounds of their shares add up to ``1 - delta``).
    3. The causes and smaller contributors found are restored together (the interaction check), beside the
       reverse check of the primary cause (its change alone in the baseline). If together they close every
       gap, the suspects not yet tried are not needed to explain it and stay unmeasured.
    4. Otherwise the remaining suspects are screened as one group (group testing); a group that matters is
       halved until its causes are isolated, a group that does not is cleared whole.
    5. The first place of each metric's ranking gains seeds until it rests on two and its interval clears the
       runner-up's (both grow while they overlap).

    Every arm starts with ``seeds0`` seeds and gains seeds only while an interval still straddles ``delta``
    on a metric with a gap and ``max_seeds`` could still settle it (:meth:`_futile`), within the budget.
    Intervals come from :func:`rlaudit.stats.fractions_restored_pooled` (paired by seed, run-to-run noise
    pooled over arms).

    Args:
        wb: The workbench (its profile sets steps, seeds and the budget).
        suspects: From :func:`gather_suspects`, strongest audit evidence first.
        metric: The primary metric (an episode statistic such as ``heart.get``).
        delta: The share of a gap that counts as meaningful.
        budget: Training runs this search may use (baseline and candidate seeds included).
        seeds0: Seeds an arm starts with.
        max_seeds: Seeds an arm may grow to (also the baseline's and candidate's seed count).
        steps: Environment steps per run.
        tail: Fraction of the run over which the final metric is averaged.
        seed: Seeds the bootstrap.
        batch: Arms evaluated side by side in one step (defaults to the workbench's parallel jobs).
        strong_prior: Audit evidence from which a suspect is tried on its own rather than in a group.
    """

    def __init__(
        self,
        wb: Workbench | None,
        suspects: Sequence[Suspect],
        *,
        metric: str = DEFAULT_METRIC,
        delta: float = DEFAULT_DELTA,
        budget: int | None = None,
        seeds0: int = 1,
        max_seeds: int | None = None,
        steps: int | None = None,
        tail: float = 0.25,
        seed: int = 0,
        batch: int | None = None,
        strong_prior: float = _STATUS_WEIGHT[Status.SUSPECT] * _SEVERITY_WEIGHT[Severity.LOW],
    ) -> None:
        profile = wb.profile if wb is not None else None
        self.wb = wb
        self.suspects = list(suspects)
        self.metric = metric
        self.delta = delta
        self.budget = budget if budget is not None else (profile.attribution_budget if profile else 60)
        seeds = max_seeds if max_seeds is not None else (profile.seeds if profile else 5)
        self.max_seeds = max(2, seeds)
        self.seeds0 = min(max(1, seeds0), self.max_seeds)
        self.steps = steps if steps is not None else (profile.train_steps if profile else 0)
        self.tail = tail
        self.seed = seed
        self.batch = max(1, batch if batch is not None else (getattr(wb, "jobs", None) or 2))
        self.strong_prior = strong_prior
        self.arms: dict[str, Arm] = {}
        self.injections: dict[str, Arm] = {}
        self.runs_used = 0
        self.cached_runs = 0
        self.notes: list[str] = []
        self.log: list[str] = []
        self._metrics = [metric, SPS]
        self._gap_known: dict[str, bool] = {}
        self._effects: dict[str, dict[str, Effect]] = {}
        self.started = time.perf_counter()

    # -- running arms ----------------------------------------------------------------------------------

    def measure(self, calls: Sequence[tuple[Arm, int]]) -> list[tuple[ProbeResult | None, dict[str, float]]]:
        """Train one run per ``(arm, seed)``, all in one parallel batch, and read each run's metrics.

        Returns:
            Per call: the probe result (kept for learning curves) and ``{metric: value, "sps": value}``
            (NaN for a failed run).
        """
        if self.wb is None:
            raise RuntimeError("Search without a workbench: override measure() to supply runs")
        results = self.wb.run_each(
            train_run,
            [(arm.target, run_params(self.steps, s, arm.overrides)) for arm, s in calls],
            desc=f"attribution ({len(calls)} runs)",
        )
        out = []
        for (arm, _), res in zip(calls, results, strict=True):
            row = {m: math.nan for m in self._metrics}
            if res.ok:
                run = RunData.from_result(res, arm.name)
                row = {self.metric: final_metric(run, self.metric, self.tail), SPS: run_sps(run)}
            out.append((res, row))
        return out

    def _grow(self, arms: Sequence[Arm], n: int | None = None) -> None:
        """Bring every arm to ``n`` seeds (``None``: one seed more each), all new runs in one parallel batch."""
        calls = [(arm, s) for arm in arms for s in range(arm.n, arm.n + 1 if n is None else n)]
        if not calls:
            return
        for (arm, _), (res, row) in zip(calls, self.measure(calls), strict=True):
            arm.add(res, row)
            self.runs_used += 1
            self.cached_runs += int(bool(getattr(res, "cached", False)))
        self._effects.clear()

    def arm(self, suspects: Sequence[Suspect]) -> Arm:
        order = {s.name: i for i, s in enumerate(self.suspects)}
        suspects = sorted(suspects, key=lambda s: order.get(s.name, len(order)))
        names = tuple(s.name for s in suspects)
        key = " + ".join(names)
        if key not in self.arms:
            target, overrides = (
                compose(self.wb.specs["candidate"], suspects) if self.wb is not None else (key, ())
            )
            self.arms[key] = Arm(name=key, target=target, overrides=overrides, suspects=names)
        return self.arms[key]

    def _base_arms(self) -> tuple[Arm, Arm]:
        for name in ("baseline", "candidate"):
            if name not in self.arms:
                self.arms[name] = Arm(name=name, target=name)
        return self.arms["baseline"], self.arms["candidate"]

    # -- statistics ------------------------------------------------------------------------------------

    def gap(self, metric: str) -> stats.Interval | None:
        """Baseline minus candidate, paired by seed, with a Student-t interval (honest at two seeds, where a
        bootstrap would call noise a gap half the time)."""
        b, c = self._base_arms()
        vb, vc = b.values(metric), c.values(metric)
        ok = ~(np.isnan(vb) | np.isnan(vc))
        if ok.sum() < 2:
            return None
        return stats.paired_t_interval(vb[ok], vc[ok])

    def has_gap(self, metric: str) -> bool:
        g = self.gap(metric)
        return g is not None and (g.low > 0.0 or g.high < 0.0)

    def _fractions(self, metric: str, arms: dict[str, Arm]) -> dict[str, Effect]:
        """The share of ``metric``'s gap each arm restores, computed together (they share the pooled
        noise). Throughput is attributed as CPU time per step (:func:`attribution_scale`)."""
        b, c = self._base_arms()
        values = {k: attribution_scale(metric, a.values(metric)) for k, a in arms.items() if a.n}
        if not values:
            return {}
        try:
            iv = stats.fractions_restored_pooled(
                attribution_scale(metric, b.values(metric)),
                attribution_scale(metric, c.values(metric)),
                values,
                seed=self.seed,
            )
        except ValueError:
            return {}
        return {
            k: Effect(point=i.point, low=i.low, high=i.high, n=int((~np.isnan(values[k])).sum()))
            for k, i in iv.items()
        }

    def _effects_for(self, metric: str) -> dict[str, Effect]:
        """Effects of every variant arm on ``metric`` (cached until the next runs)."""
        if metric not in self._effects:
            variants = {k: a for k, a in self.arms.items() if k not in ("baseline", "candidate")}
            self._effects[metric] = self._fractions(metric, variants)
        return self._effects[metric]

    def effect(self, arm: Arm, metric: str) -> Effect | None:
        return self._effects_for(metric).get(arm.name)

    def reproduced(self, metric: str) -> dict[str, Effect]:
        """Per injected suspect: the share of ``metric``'s gap its change reproduces in the baseline alone,
        ``(baseline - injected) / (baseline - candidate)``: one minus the share it "restores"."""
        return {
            n: Effect(1.0 - e.point, 1.0 - e.high, 1.0 - e.low, e.n)
            for n, e in self._fractions(metric, self.injections).items()
        }

    def _undecided(self, arm: Arm) -> bool:
        """Worth another seed: no metric shows it matters yet, and some metric still straddles ``delta`` by
        less than ``max_seeds`` could resolve. (A cause found on one metric is not grown to settle another: it
        is restored with the other causes.)"""
        if self._matters(arm):
            return False
        for m in self.active_metrics:
            e = self.effect(arm, m)
            if e is None or not (e.decided(self.delta) or self._futile(e)):
                return True
        return False

    def _futile(self, e: Effect) -> bool:
        """Seeds up to ``max_seeds`` would still leave the interval straddling ``delta``: the effect sits on
        the threshold. Its half-width shrinks as 1/sqrt(seeds) at best, so when even that leaves ``delta``
        inside, the arm stays "unclear" instead of spending the budget on it."""
        if e.n >= self.max_seeds:
            return True
        half = 0.5 * (e.high - e.low) * math.sqrt(e.n / self.max_seeds)
        return abs(e.point - self.delta) < half

    def evaluate(self, arms: Sequence[Arm], *, grow: bool = True) -> None:
        """Run arms at ``seeds0`` seeds, then (if ``grow``) add seeds one round at a time, in parallel, to
        those still undecided, while the budget allows."""
        arms = list(arms)
        base = self._base_arms()
        start = [a for a in arms if a.n < self.seeds0]
        if start and self.runs_used + sum(self.seeds0 - a.n for a in start) > self.budget:
            self.notes.append(
                "budget spent before " + ", ".join(repr(a.name) for a in start) + " could be measured"
            )
            return
        self._grow([*base, *arms], self.seeds0)
        while grow:
            pending = [a for a in arms if a.n < self.max_seeds and self._undecided(a)]
            if not pending or self.runs_used + len(pending) > self.budget:
                return
            self._grow(pending)  # one seed more each (the baseline and candidate have max_seeds)

    # -- the search ------------------------------------------------------------------------------------

    @property
    def active_metrics(self) -> list[str]:
        return [m for m in self._metrics if self._gap_known.get(m)]

    def _matters(self, arm: Arm) -> bool:
        return any(
            (e := self.effect(arm, m)) is not None and e.matters(self.delta) for m in self.active_metrics
        )

    def _cleared(self, arm: Arm) -> bool:
        """Measurably no share of any gap: a group that can be dropped whole."""
        effects = [self.effect(arm, m) for m in self.active_metrics]
        return all(e is not None and e.high < self.delta for e in effects)

    def _fixes(self) -> list[Suspect]:
        """The composable singles worth restoring together: the causes, and the smaller contributors
        (:meth:`_contributors`) that together with them may close a gap."""
        names = {s.name for s in [*self._causes(), *self._contributors()]}
        return [s for s in self.suspects if s.name in names and s.composable]

    def _singles(self) -> list[tuple[Suspect, Arm]]:
        """Every suspect measured on its own, with its arm."""
        by_name = {s.name: s for s in self.suspects}
        return [
            (by_name[a.suspects[0]], a)
            for a in self.arms.values()
            if len(a.suspects) == 1 and a.suspects[0] in by_name and a.n
        ]

    def _ranked(self, metric: str) -> list[tuple[Effect, Suspect, Arm]]:
        """The singles measured on ``metric``, largest share first."""
        rows = [(e, s, a) for s, a in self._singles() if (e := self.effect(a, metric)) is not None]
        return sorted(rows, key=lambda row: -row[0].point)

    def _causes(self) -> list[Suspect]:
        return [s for s, a in self._singles() if self._matters(a)]

    def _contributors(self) -> list[Suspect]:
        """Singles measured to restore some share of a gap (interval above :func:`minor_floor`), causes or
        not: an effect below ``delta`` still counts towards explaining a gap."""
        return [
            s
            for s, a in self._singles()
            if any(
                (e := self.effect(a, m)) is not None and e.contributes(self.delta)
                for m in self.active_metrics
            )
        ]

    def _explained(self, causes: Sequence[Suspect]) -> bool:
        """The singles ``causes`` add up to the whole of every gap (within ``delta``), confidently: the sum
        of their lower bounds reaches ``1 - delta``, so what is left unexplained is below ``delta`` and no
        suspect left untried can hide a meaningful share (a point estimate just past the line would stop
        the search half the time when an untried suspect holds close to ``delta``)."""
        for m in self.active_metrics:
            total = sum(
                e.low
                for s in causes
                if (e := self.effect(self.arm([s]), m)) is not None and e.contributes(self.delta)
            )
            if total < 1.0 - self.delta:
                return False
        return True

    def run(self) -> Attribution:
        b, c = self._base_arms()
        self._grow([b, c], self.max_seeds)
        self._gap_known = {m: self.has_gap(m) for m in self._metrics}
        for m in self._metrics:
            if not self._gap_known[m]:
                g = self.gap(m)
                where = f" ({g.point:+.3g}, CI {g.low:+.3g}..{g.high:+.3g})" if g else ""
                self.notes.append(
                    f"no measurable {m} gap between baseline and candidate{where}: not attributed"
                )
        composable = [s for s in self.suspects if s.composable]
        variants = [s for s in self.suspects if not s.composable]
        if self.active_metrics and self.suspects:
            self._screen(composable)
            for s in variants:
                if self.runs_used + self.seeds0 > self.budget:
                    self.notes.append(f"budget spent before variant {s.name!r} was tried")
                    break
                self.evaluate([self.arm([s])])
            self._confirm_first_places()
            self._inject_primary_cause()
            self._restore_causes_together()
        return self._result()

    def _screen(self, suspects: list[Suspect]) -> None:
        if not suspects:
            return
        strong = [s for s in suspects if s.prior >= self.strong_prior]
        untested = list(suspects)
        # 2. singles of the strongest suspects, a batch at a time, until the causes explain every gap; seeds
        # are added later, and only if the causes found do not close the gaps together
        while strong and not self._explained(self._contributors()):
            batch, strong = strong[: self.batch], strong[self.batch :]
            self.log.append(
                "alone (strong audit evidence; gaps not yet explained): " + ", ".join(s.name for s in batch)
            )
            self.evaluate([self.arm([s]) for s in batch], grow=False)
            untested = [s for s in untested if s not in batch]
        # 3. the causes together: if they close every gap, what is left is not needed to explain it. The
        # reverse check of the primary cause shares the batch (two cores).
        fixes = self._fixes()
        inject = self._injection_arm()
        if len(fixes) >= 2 and self.runs_used + self.seeds0 * (1 + bool(inject)) <= self.budget:
            together = self.arm(fixes)
            self.log.append(
                "together (the causes and smaller contributors found; do they close every gap?): "
                + together.name
            )
            if inject is not None:
                self.log.append(self._injection_log(inject))
            self._grow([together, *([inject] if inject else [])], self.seeds0)
            closed = self._closes(together)
        else:
            closed = len(fixes) == 1 and self._explained(fixes)
        if closed:
            if untested:
                self.notes.append(
                    f"the causes found close every gap to within {self.delta:.0%}; not measured, as not "
                    "needed to explain it (their audit evidence stands): "
                    + ", ".join(s.name for s in untested)
                )
            return
        # 4. otherwise: more seeds where a single is undecided, then group testing over what is left
        singles = [a for a in self.arms.values() if len(a.suspects) == 1 and a.n]
        if singles:
            self.log.append("more seeds where a single is undecided (the causes found do not close the gaps)")
            self.evaluate(singles)
        if untested:
            self._split(untested)

    def _confirm_first_places(self) -> None:
        """Sequential allocation for the ranking itself: the single ranked first on a metric must rest on at
        least two seeds (its own run-to-run noise, not only the pooled one) and its interval must clear the
        runner-up's. Seeds go to the first and second place, one round at a time, until both hold, the arms
        reach ``max_seeds``, or the budget ends."""
        while True:
            grow: dict[str, Arm] = {}
            ties: list[str] = []
            for m in self.active_metrics:
                ranked = self._ranked(m)
                if not ranked or not ranked[0][0].matters(self.delta):
                    continue
                (top_e, _, top), rest = ranked[0], ranked[1:]
                if top.n < 2:
                    grow[top.name] = top
                if rest and rest[0][0].high >= top_e.low:
                    second = rest[0][2]
                    grow.update({top.name: top, second.name: second})
                    ties.append(f"{m}: {top.name} and {second.name}")
            pending = [a for a in grow.values() if a.n < self.max_seeds]
            if not pending or self.runs_used + len(pending) > self.budget:
                self.notes.extend(
                    f"{t}: the seeds cannot tell their shares apart, so which comes first is not established"
                    for t in ties
                )
                return
            self.log.append(
                "one more seed for a first place (fewer than two seeds, or not yet clear of the runner-up): "
                + ", ".join(a.name for a in pending)
            )
            self._grow(pending)

    def _injection_arm(self) -> Arm | None:
        """The reverse experiment for the primary cause, if it still needs running: the single ranked first
        on the primary metric (on SPS when only throughput has a gap), its change alone put into the
        baseline. A cause that restores the gap when undone and reproduces it when injected is confirmed
        from both sides; one that does only one of the two depends on the other changes."""
        ranked = self._ranked(self.active_metrics[0]) if self.active_metrics else []
        if not ranked:
            return None
        e, s, _ = ranked[0]
        if not s.injectable or not e.matters(self.delta):
            return None
        if s.name not in self.injections:
            target, overrides = (
                compose_injection(self.wb.specs["baseline"], s) if self.wb is not None else (s.name, ())
            )
            self.injections[s.name] = Arm(
                name=f"inject {s.name}", target=target, overrides=overrides, injects=(s.name,)
            )
        arm = self.injections[s.name]
        return arm if arm.n < self.seeds0 else None

    @staticmethod
    def _injection_log(arm: Arm) -> str:
        return f"injected into the baseline alone (does the primary cause reproduce the gap?): {arm.name}"

    def _inject_primary_cause(self) -> None:
        """Run the reverse experiment of the primary cause if the search has not yet (see
        :meth:`_injection_arm`)."""
        arm = self._injection_arm()
        if arm is None:
            return
        if self.runs_used + self.seeds0 > self.budget:
            self.notes.append("budget spent before the primary cause could be injected into the baseline")
            return
        self.log.append(self._injection_log(arm))
        self._grow([arm], self.seeds0)

    def _closes(self, arm: Arm) -> bool:
        effects = [self.effect(arm, m) for m in self.active_metrics]
        return all(e is not None and e.high >= 1.0 - self.delta and e.low > self.delta for e in effects)

    def _split(self, group: list[Suspect]) -> None:
        """Group testing (delta debugging with a statistical oracle) over ``group``.

        A group that matters is halved. Its first half is measured; the second half is measured too when the
        first matters, and otherwise is inferred to carry the effect and halved again without being measured
        (a single is always measured: its effect size is the result). Groups measured as no effect are
        dropped whole. The inference assumes no two suspects matter only jointly; such causes end as singles
        that do not matter, and the summary says the causes do not add up.
        """
        work: list[tuple[list[Suspect], list[Suspect] | None]] = [(group, None)]
        while work:
            batch, work = work[: self.batch], work[self.batch :]
            arms = [self.arm(g) for g, _ in batch]
            self.log.append("group test: " + " | ".join(a.name for a in arms))
            self.evaluate(arms)
            for (g, sibling), arm in zip(batch, arms, strict=True):
                if arm.n == 0:
                    return  # out of budget (evaluate noted it)
                matters = self._matters(arm) and not self._cleared(arm)
                if matters and len(g) > 1:
                    work.append(_halves(g))
                if sibling is None:
                    continue
                if matters or len(sibling) == 1:
                    work.append((sibling, None))
                else:
                    self.log.append(
                        "inferred to matter (its sibling does not): " + " + ".join(s.name for s in sibling)
                    )
                    work.append(_halves(sibling))

    def _result(self) -> Attribution:
        effects = {
            name: {m: e for m in self._metrics if (e := self.effect(arm, m)) is not None}
            for name, arm in self.arms.items()
            if name not in ("baseline", "candidate")
        }
        by_name = {s.name: s for s in self.suspects}
        ranking: dict[str, list[dict[str, Any]]] = {}
        for m in self.active_metrics:
            rows = []
            for name, per in effects.items():
                if m not in per:
                    continue
                members = self.arms[name].suspects
                subsystems = sorted({by_name[s].subsystem for s in members})
                e = per[m]
                rows.append(
                    {
                        "arm": name,
                        "suspects": list(members),
                        "subsystems": subsystems,
                        "single": len(members) == 1,
                        "point": e.point,
                        "low": e.low,
                        "high": e.high,
                        "n": e.n,
                        "verdict": e.verdict(self.delta),
                    }
                )
            # singles first (they name a cause), then by effect
            rows.sort(key=lambda r: (not r["single"], -r["point"]))
            ranking[m] = rows
        together = self._together(ranking)
        gaps = {}
        for m in self._metrics:
            g = self.gap(m)
            b, c = self._base_arms()
            gaps[m] = {
                "baseline": float(np.nanmean(b.values(m))),
                "candidate": float(np.nanmean(c.values(m))),
                "difference": g.point if g else None,
                "low": g.low if g else None,
                "high": g.high if g else None,
                "measurable": bool(self._gap_known.get(m)),
            }
        n_suspects = len(self.suspects)
        variant_runs = sum(a.n for k, a in self.arms.items() if k not in ("baseline", "candidate")) + sum(
            a.n for a in self.injections.values()
        )
        injected: dict[str, dict[str, Effect]] = {}
        for m in self.active_metrics:
            for name, e in self.reproduced(m).items():
                injected.setdefault(name, {})[m] = e
        spent = {
            "runs": self.runs_used,
            "cached_runs": self.cached_runs,
            "variant_runs": variant_runs,
            "budget": self.budget,
            "seconds": round(time.perf_counter() - self.started, 1),
            "full_sweep_variant_runs": n_suspects * self.max_seeds,
            "min_sweep_variant_runs": n_suspects * self.seeds0,
            "seeds_per_arm_min": self.seeds0,
            "full_sweep_runs": (n_suspects + 2) * self.max_seeds,
            "seeds_per_arm_max": self.max_seeds,
        }
        return Attribution(
            metrics=self._metrics,
            gaps=gaps,
            arms=[*self.arms.values(), *self.injections.values()],
            effects=effects,
            suspects=self.suspects,
            ranking=ranking,
            together=together,
            spent=spent,
            notes=self.notes,
            log=self.log,
            injected=injected,
        )

    def _restore_causes_together(self) -> None:
        """The interaction check: restore the causes and contributors found together (if not yet done)."""
        members = self._fixes()
        if len(members) < 2:
            return
        arm = self.arm(members)
        if arm.n == 0:
            self.log.append("together (interaction check): " + arm.name)
        self.evaluate([arm])

    def _together(self, ranking: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """How much of each gap the causes and contributors found close when restored together."""
        members = self._fixes()
        causes = {s.name for s in members}
        arm = self.arms.get(" + ".join(s.name for s in members)) if len(members) >= 2 else None
        if arm is None or arm.n == 0:
            return {
                "suspects": [m.name for m in members],
                "effects": {},
                "note": ""
                if len(members) < 2
                else "budget spent before the causes could be restored together",
            }
        effects = {m: asdict(e) for m in self.active_metrics if (e := self.effect(arm, m)) is not None}
        notes = []
        for m, e in effects.items():
            singles = sum(
                r["point"] for r in ranking.get(m, []) if r["single"] and r["suspects"][0] in causes
            )
            if e["high"] < 1.0 - self.delta:
                notes.append(
                    f"{m}: the causes found close {e['point']:.0%} of the gap together; "
                    f"{1 - e['point']:.0%} stays unexplained"
                )
            if abs(singles - e["point"]) > max(0.25, e["high"] - e["low"]):
                notes.append(
                    f"{m}: the single restores add up to {singles:.0%} but together restore "
                    f"{e['point']:.0%}: the causes interact"
                )
        return {"suspects": [m.name for m in members], "effects": effects, "note": "; ".join(notes)}


def _halves(group: list[Suspect]) -> tuple[list[Suspect], list[Suspect]]:
    half = (len(group) + 1) // 2
    return group[:half], group[half:]


def attribute(
    wb: Workbench,
    findings: Sequence[Finding],
    *,
    variants: str = "",
    metric: str = DEFAULT_METRIC,
    delta: float = DEFAULT_DELTA,
    budget: int | None = None,
    seed: int = 0,
) -> Attribution:
    """Gather suspects from the audits' findings and the config diff, and run the search."""
    suspects, notes = gather_suspects(wb, findings, variants)
    search = Search(wb, suspects, metric=metric, delta=delta, budget=budget, seed=seed)
    result = search.run()
    result.notes = notes + result.notes
    return result


# ------------------------------------------------------------------------------------------------------------
# From measurements to findings and a ranked list of causes
# ------------------------------------------------------------------------------------------------------------


def attribution_findings(result: Attribution, delta: float = DEFAULT_DELTA) -> list[Finding]:
    """One finding per single suspect measured: CONFIRMED when its restore closes a meaningful share of a
    gap, NOTED when it measurably does not (a red herring if the audits flagged it)."""
    out = []
    by_name = {s.name: s for s in result.suspects}
    for name, per in result.effects.items():
        arm = next(a for a in result.arms if a.name == name)
        if len(arm.suspects) != 1:
            continue
        s = by_name[arm.suspects[0]]
        parts, matters, none, some = [], False, True, False
        for m, e in per.items():
            if not result.gaps.get(m, {}).get("measurable"):
                continue
            seeds = "1 seed" if e.n == 1 else f"{e.n} seeds"
            parts.append(
                f"{m}: restores {e.point:.0%} of {gap_label(m)} (95% CI {e.low:.0%}..{e.high:.0%}, {seeds})"
            )
            matters |= e.matters(delta)
            none &= e.high < delta
            some |= e.contributes(delta)
        if not parts:
            continue
        status = Status.CONFIRMED if matters else (Status.NOTED if none else Status.SUSPECT)
        best = max(per.values(), key=lambda e: e.point)
        out.append(
            Finding(
                id=f"summary/attribution-{s.name.replace(' ', '-')}",
                subsystem=s.subsystem if s.subsystem in SUBSYSTEMS else "trainer",
                hypothesis=f"Undoing '{s.name}' in the candidate closes part of the gap",
                status=status,
                severity=Severity.CRITICAL
                if best.point >= 0.5 and matters
                else (Severity.HIGH if matters else Severity.LOW),
                evidence=Evidence(
                    effect=best.point,
                    effect_label="fraction of gap restored",
                    ci=(best.low, best.high),
                    ci_level=0.95,
                    summary=(
                        "; ".join(parts)
                        + (
                            ""
                            if matters
                            else " — a small share, below what counts as a cause"
                            if none and some
                            else " — measurably no cause"
                            if none
                            else " — unclear"
                        )
                    ),
                    details={
                        "arm": name,
                        "overrides": list(arm.overrides),
                        "target": arm.target,
                        "effects": {m: asdict(e) for m, e in per.items()},
                    },
                ),
                remediation=(
                    f"Apply '{s.name}' ({', '.join(arm.overrides) or arm.target})"
                    if matters
                    else "No measurable effect on the gap: leave for later (a red herring if audits flagged it)."
                ),
            )
        )
    return out


@dataclass
class Cause:
    """One subsystem in the ranked list: its measured effect (if any) and the audit evidence behind it."""

    subsystem: str
    rank_score: float
    effects: dict[str, dict[str, float]]
    findings: list[Finding]
    verdict: str  # "primary", "secondary", "red herring", "flagged (unmeasured)"


def rank_causes(
    findings: Sequence[Finding], result: Attribution | None = None, delta: float = DEFAULT_DELTA
) -> list[Cause]:
    """Subsystems ranked: measured causes by the share of a gap they restore, then subsystems with flagged
    findings by audit evidence. Knock-on findings (:func:`knock_on`) count a fifth."""
    flagged: dict[str, list[Finding]] = {}
    for f in findings:
        if f.status.is_flag and f.subsystem in SUBSYSTEMS and not f.id.startswith("summary/"):
            flagged.setdefault(f.subsystem, []).append(f)
    measured: dict[str, dict[str, dict[str, float]]] = {}
    if result is not None:
        for m, rows in result.ranking.items():
            for r in rows:
                if r["single"] and len(r["subsystems"]) == 1:
                    sub = r["subsystems"][0]
                    prev = measured.setdefault(sub, {}).get(m)
                    if prev is None or r["point"] > prev["point"]:
                        measured[sub][m] = {k: r[k] for k in ("point", "low", "high", "n")}
            # a group restored together with no effect clears each member it holds (group testing drops it
            # whole), unless a member was measured on its own
            for r in rows:
                if not r["single"] and r["verdict"] == "no effect":
                    for sub in r["subsystems"]:
                        measured.setdefault(sub, {}).setdefault(
                            m, {k: r[k] for k in ("point", "low", "high", "n")}
                        )
    # clearing needs every gap: a metric whose gap could not be measured can never be ruled out
    every_gap = set(result.gaps) if result is not None else set()
    echoes = knock_on(findings)
    causes = []
    for sub in sorted(set(flagged) | set(measured), key=SUBSYSTEMS.index):
        evidence = sum(
            _STATUS_WEIGHT.get(f.status, 0)
            * _SEVERITY_WEIGHT.get(f.severity, 1)
            * (0.2 if f.id in echoes else 1.0)
            for f in flagged.get(sub, [])
        )
        eff = measured.get(sub, {})
        best = max((e["point"] for e in eff.values() if e["low"] > 0), default=None)
        if best is not None and best >= delta:
            verdict, score = "primary" if best >= 0.5 else "secondary", 10.0 + best
        elif any(e["low"] > minor_floor(delta) for e in eff.values()) and all(
            e["high"] < delta for e in eff.values()
        ):
            # a small share that is surely there: real, below what counts as meaningful, never a red herring
            verdict, score = "minor", evidence / (1.0 + evidence) + best
        elif eff and set(eff) >= every_gap and all(e["high"] < delta for e in eff.values()):
            # measurably no share of any gap there is (nor an interval above zero); with a gap too small to measure (a learning gap at
            # the smoke profile), "no effect on SPS" does not clear a subsystem flagged for correctness
            verdict, score = "red herring", -1.0 + 0.01 * evidence
        else:
            verdict, score = "flagged (unmeasured)" if not eff else "unclear", evidence / (1.0 + evidence)
        causes.append(Cause(sub, score, eff, flagged.get(sub, []), verdict))
    causes.sort(key=lambda c: -c.rank_score)
    return causes


def bench_attribution(quick: bool = False) -> list[dict[str, Any]]:
    """The search on the built-in pair next to the full one-factor sweep: runs used and the top causes."""
    from rlaudit import audits

    profile = "smoke" if quick else "standard"
    with Workbench("builtin:reference", "builtin:regressed", profile=profile) as wb:
        findings = audits.run_audits(wb, list(SUBSYSTEMS))
        result = attribute(wb, findings)
    top = {m: (rows[0]["arm"] if rows else None) for m, rows in result.ranking.items()}
    return [
        {
            "name": "attribution.runs",
            "value": result.spent["runs"],
            "unit": "runs",
            "baseline": result.spent["full_sweep_runs"],
            "candidate": result.spent["runs"],
            "ratio": result.spent["runs"] / max(1, result.spent["full_sweep_runs"]),
        },
        {
            "name": "attribution.variant_runs",
            "value": result.spent["variant_runs"],
            "unit": "runs",
            "baseline": result.spent["full_sweep_variant_runs"],
            "candidate": result.spent["variant_runs"],
            "ratio": result.spent["variant_runs"] / max(1, result.spent["full_sweep_variant_runs"]),
        },
        {"name": "attribution.seconds", "value": result.spent["seconds"], "unit": "s"},
        {"name": "attribution.top_causes", "value": 0, "unit": "", "top": top},
    ]
