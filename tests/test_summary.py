"""The summary room: the executive summary's verdicts, and a summary that works with whatever the subjects
expose (no training at all, nothing flagged, a simulated search)."""

from __future__ import annotations

import json
import math

from rlaudit.attribution.engine import Engine
from rlaudit.attribution.screening import Screening
from rlaudit.attribution.summary import (
    Investigation,
    attribution_section,
    executive_section,
    executive_summary,
    save,
    verified,
)
from rlaudit.engine.store import ProbeResult
from rlaudit.findings import Evidence, Finding, Severity, Status
from support.attribution import REGRESSED_LIKE, SimSearch, fixes


def f(fid, status, severity=Severity.HIGH, subsystem=None, role="", **evidence):
    finding = Finding(fid, subsystem or fid.split("/")[0], "h", status, severity, Evidence(**evidence))
    finding.role = role
    return finding


def test_verified_as_correct_needs_every_check_cleared():
    findings = [
        f("init/schemes", Status.CLEARED),
        f("init/policy-at-init", Status.CLEARED),
        f("env/throughput", Status.CLEARED),
        f("env/equivalence", Status.NOTED, Severity.INFO, summary="inconclusive: 8 seeds would settle it"),
        f("spaces/bounds", Status.CLEARED),
        f("spaces/dtype", Status.SKIPPED),
        f("optimizer/param-groups", Status.CLEARED),
        f("config/changed-optimizer", Status.SUSPECT, subsystem="config"),  # counts for optimizer
        f("config/unchanged", Status.CLEARED),
    ]
    assert verified(findings) == ["init", "config"]
    summary = executive_summary(findings, None, 0.2)
    assert summary["cleared"] == ["init", "config"]
    assert "Verified as correct (every check cleared): init, config." in summary["sentences"]


def test_the_executive_summary_names_symptoms_apart_from_causes():
    findings = [
        f("trainer/learning", Status.CONFIRMED, role="symptom"),  # as its check declares it
        f("agents/architecture", Status.SUSPECT, Severity.LOW),
    ]
    summary = executive_summary(findings, None, 0.2)
    assert [(r["subsystem"], r["verdict"]) for r in summary["causes"]] == [
        ("agents", "flagged (unmeasured)"),
        ("trainer", "symptom"),
    ]
    assert summary["order"] == ["agents"]  # a symptom is not something to fix
    assert any(
        s.startswith("Flagged for a gap every cause produces") and "trainer" in s
        for s in summary["sentences"]
    )


def no_training(calls):
    """A runner for subjects without ``train``: every run comes back missing the capability."""
    missing = ProbeResult("candidate", "x", "train_run", {}, ok=False, missing=["train"])
    return [(missing, {m: math.nan for m in ("return", "sps")}) for _ in calls]


def test_a_summary_of_subjects_that_cannot_train_says_why_everywhere(tmp_path):
    findings = [f("agents/architecture", Status.SKIPPED), f("config/values", Status.SUSPECT)]
    engine = Engine(None, runner=no_training, metric="return", max_seeds=2)
    result = Screening(engine, fixes(REGRESSED_LIKE[:2])).run()
    assert result.spent["variant_runs"] == 0
    assert "lacks `train`" in result.gaps["return"]["note"] and "lacks `train`" in result.gaps["sps"]["note"]
    inv = Investigation(result=result, causes=[], summary=executive_summary(findings, result, 0.2))
    assert any("lacks `train`" in s for s in inv.summary["sentences"])
    section = attribution_section(inv)
    assert set(section.figures) == {"gap restored (forest plot)", "learning curves", "SPS waterfall"}
    texts = [t.get_text() for fig in section.figures.values() for ax in fig.axes for t in ax.texts]
    assert sum("train" in " ".join(t.split()) for t in texts) == 3  # every empty panel says why
    assert any("lacks `train`" in n for n in section.notes)
    executive_section(inv)
    saved = json.loads(save(inv, tmp_path, [section]).read_text())
    assert saved["attribution"]["primary"]["name"] == "return" and len(saved["figures"]) == 3


def test_a_summary_without_experiments_or_findings_is_still_a_summary():
    summary = executive_summary([], None, 0.2)
    assert summary["causes"] == [] and summary["sentences"] == [] and summary["attribution"] is None
    assert attribution_section(Investigation(result=None, causes=[])).notes == ["attribution did not run"]


def test_the_executive_summary_of_a_search_names_the_primary_cause_and_what_fixing_all_recovers():
    search = SimSearch(
        fixes(REGRESSED_LIKE[:3]), heart={"gae": 1.0}, sps={"shaped": 1.0}, metric="heart.get", max_seeds=5
    )
    result = search.run()
    summary = executive_summary([f("loss/advantages", Status.CONFIRMED)], result, 0.2)
    first = summary["sentences"][0]
    assert first.startswith("heart.get: baseline 6.") and "Primary cause: gae (loss) restores" in first
    assert summary["order"][:2] == ["loss", "rewards"] and "env" in summary["red_herrings"]
    # the attribution tables say of what each interval is: "95% CI low (share of the gap)", not "share, low"
    from rlaudit.display import bare_header, frame_html

    tables = attribution_section(Investigation(result=result, causes=[], summary=summary)).tables
    assert any(t.startswith("gap restored") for t in tables)
    assert not [
        (t, c) for t, frame in tables.items() for c in frame.columns if bare_header(c) or "," in str(c)
    ]
    gaps = frame_html(tables["gaps"])
    assert (
        "95% CI low (candidate worse by)" in gaps and "%</td>" not in gaps
    )  # a gap in heart.get, not a share


def test_an_undecided_share_and_recovery_are_stated_as_undecided_with_their_intervals() -> None:
    from types import SimpleNamespace

    from rlaudit.attribution.summary import _gap_sentence

    row = {
        "arm": "restore loss config",
        "single": True,
        "verdict": "undecided",
        "point": -0.66,
        "low": -3.6,
        "high": 0.96,
        "n": 1,
        "needed": 8,
        "subsystems": ["loss"],
        "suspects": ["restore loss config"],
    }
    result = SimpleNamespace(
        gaps={"return": {"measurable": True, "baseline": 470.0, "candidate": 351.0}},
        label=lambda m: m,
        ranking={"return": [row]},
        injected={},
    )
    recovery = {"return": {"point": -0.66, "low": -3.6, "high": 0.96, "n": 1}}
    text = _gap_sentence(result, "return", recovery)
    assert "No single change is shown to restore a meaningful share at the seeds spent" in text
    assert "restore loss config -66% (95% CI -360%..96%, 1 seed)" in text
    assert "vary too much from seed to seed to decide, and about 8 seeds per arm would." in text
    assert "expected to recover" not in text and "not established: -66% of it (95% CI -360%..96%)" in text
    recovery["return"] = {"point": 0.9, "low": 0.6, "high": 1.2, "n": 3}
    assert "expected to recover 90% of it (95% CI 60%..120%)" in _gap_sentence(result, "return", recovery)


def test_the_budget_sentence_reads_as_runs_against_a_sweep() -> None:
    """The SB3 SAC pair's standard report: one arm, five seeds a side, 10 runs from the cache."""
    from rlaudit.attribution.summary import budget_sentence

    spent = {
        "variant_runs": 3,
        "full_sweep_variant_runs": 5,
        "min_sweep_variant_runs": 1,
        "seeds_per_arm_min": 1,
        "seeds_per_arm_max": 5,
        "runs": 13,
        "cached_runs": 10,
        "full_sweep_runs": 15,
    }
    assert budget_sentence(spent) == (
        "Attribution trained 3 runs on variants, where a one-factor sweep at the 5 seeds the baseline and "
        "candidate ran would train 5 (1 at 1 seed per arm). With the baseline and candidate: 13 runs, 10 of "
        "them reused from the audits' cache, against the sweep's 15."
    )
    del spent["min_sweep_variant_runs"]
    assert "would train 5. With" in budget_sentence(spent)


def test_a_subsystem_flagged_only_as_an_echo_of_a_measured_cause_is_not_sent_to_be_fixed(monkeypatch) -> None:
    """An SB3 TD3 pair with policy_delay 2 → 8: restoring the trainer's config restored 100% of the gap, and
    optimizer/target-network (which reads the trainer's changes) was flagged for the target updates that follow
    the actor's. The summary said "Fix in this order: trainer → optimizer"; the optimizer has nothing to fix."""
    from rlaudit.attribution import summary as module
    from rlaudit.attribution.ranking import Cause, Strength

    replay = f("trainer/replay-ratio", Status.CONFIRMED)
    replay.reads = ["memory"]
    target = f("optimizer/target-network", Status.CONFIRMED)
    target.reads = ["trainer"]
    share = {"return": {"point": 1.0, "low": 0.92, "high": 1.08, "n": 2}}
    trainer = Cause("trainer", 11.0, share, [replay], "primary", Strength(score=4.5, independent=1))
    echo = Cause("optimizer", 0.4, {}, [target], "flagged (unmeasured)", Strength(score=0.9, independent=0))
    monkeypatch.setattr(module, "rank_causes", lambda findings, result, delta: [trainer, echo])
    summary = executive_summary([replay, target], None, 0.2)
    assert summary["order"] == ["trainer"]
    assert (
        "Optimizer is flagged only by checks that read trainer's changes (optimizer/target-network), which "
        "attribution measured as a cause: fix trainer, then re-audit optimizer before changing it."
    ) in summary["sentences"]
    # rechecked on the runs that restore the trainer and still flagged: a change of its own, kept in the order
    from rlaudit.attribution.echoes import Echo

    still = Echo("optimizer", ["trainer"], [target.id], {target.id: target}, arm="restore trainer config")
    assert executive_summary([replay, target], None, 0.2, echoes=[still])["order"] == ["trainer", "optimizer"]
