"""Ranking: audit evidence (mechanisms over symptoms, echoes of an upstream change, ties by strength), measured
causes and red herrings, on tiny hand-built findings."""

from __future__ import annotations

from dataclasses import replace

from rlaudit.attribution.arms import Attribution
from rlaudit.attribution.ranking import audit_priors, evidence_order, knock_on, rank_causes, role
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.report import ranked_suspects_text

CONFIRMED, SUSPECT, NOTED, CLEARED = Status.CONFIRMED, Status.SUSPECT, Status.NOTED, Status.CLEARED
CRITICAL, HIGH, MEDIUM, LOW = Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW


def f(fid, status=CONFIRMED, severity=HIGH, *, role="", reads=(), subsystem=None, **evidence):
    """A finding as a room saves it; ``role``/``reads`` as :func:`rlaudit.checks.check` stamps them."""
    return Finding(
        fid,
        subsystem or fid.split("/")[0],
        "h",
        status,
        severity,
        Evidence(**evidence),
        role=role,
        reads=list(reads),
    )


def order(findings):
    return [c.subsystem for c in rank_causes(findings)]


def _result(ranking):
    return Attribution(
        metrics=["heart.get", "sps"],
        gaps={},
        arms=[],
        effects={},
        suspects=[],
        ranking=ranking,
        together={},
        spent={},
        notes=[],
    )


def test_rank_causes_puts_measured_causes_first_and_names_red_herrings():
    flagged = [
        Finding("env/x", "env", "h", Status.CONFIRMED, Severity.CRITICAL, Evidence()),
        Finding("loss/x", "loss", "h", Status.SUSPECT, Severity.MEDIUM, Evidence()),
        Finding("optimizer/x", "optimizer", "h", Status.SUSPECT, Severity.HIGH, Evidence()),
        Finding(
            "agents/x", "agents", "h", Status.SUSPECT, Severity.LOW, Evidence(details={"knock_on": "spaces"})
        ),
    ]
    row = lambda arm, subs, point, low, high, single, verdict: {  # noqa: E731 - a table of literals
        "arm": arm,
        "suspects": [arm],
        "subsystems": subs,
        "single": single,
        "point": point,
        "low": low,
        "high": high,
        "n": 4,
        "verdict": verdict,
    }
    ranking = {
        "heart.get": [
            row("fix loss", ["loss"], 0.9, 0.7, 1.1, True, "cause"),
            row("fix env", ["env"], 0.02, -0.05, 0.08, True, "no effect"),
            row("grp", ["optimizer", "checkpointing"], 0.0, -0.02, 0.03, False, "no effect"),
        ]
    }
    causes = rank_causes(flagged, _result(ranking))
    assert causes[0].subsystem == "loss" and causes[0].verdict == "primary"
    verdicts = {c.subsystem: c.verdict for c in causes}
    # the audits' strongest finding (env) measurably does not matter: a red herring, ranked below
    assert verdicts["env"] == "red herring" and verdicts["optimizer"] == "red herring"
    assert [c.subsystem for c in causes].index("agents") < [c.subsystem for c in causes].index("env")


def test_audit_priors_weight_status_and_severity():
    f = [
        Finding("a/x", "loss", "h", Status.CONFIRMED, Severity.HIGH, Evidence()),
        Finding("a/y", "env", "h", Status.CLEARED, Severity.INFO, Evidence()),
    ]
    assert audit_priors(f) == {"loss": 3.0 * 1.5}


def test_checks_that_measure_through_a_flagged_upstream_change_count_as_knock_on():
    geometry = [
        f("trainer/geometry-candidate", role="mechanism"),
        f("env/throughput", reads=("trainer", "curriculum")),
        f("env/reset-cost", reads=("curriculum",)),
        f("memory/growth-sites", reads=("trainer",)),
    ]
    assert knock_on(geometry) == {"env/throughput", "memory/growth-sites"}
    no_upstream = [f("env/throughput", reads=("trainer",)), f("memory/growth-sites", reads=("trainer",))]
    assert knock_on(no_upstream) == set()  # nothing flagged upstream: both are real
    assert knock_on([f("trainer/geometry", CLEARED), f("env/throughput", reads=("trainer",))]) == set()
    rewards = [f("rewards/component-vanished"), f("env/equivalence", reads=("rewards", "curriculum"))]
    assert knock_on(rewards) == {"env/equivalence"}
    agents = [f("agents/architecture"), f("loss/terms", reads=("agents",)), f("loss/advantages")]
    assert knock_on(agents) == {"loss/terms"}
    # a finding its own audit marked as an echo, whatever it reads
    assert knock_on([f("env/episode-stats", details={"knock_on": "rewards"})]) == {"env/episode-stats"}
    # the evidence ranking: a lone checkpointing finding outranks the echoes of a geometry change
    ranked = order([*geometry, f("checkpointing/selection", SUSPECT)])
    assert ranked.index("checkpointing") < ranked.index("memory")


def test_a_mirror_of_another_rooms_finding_is_not_counted_twice():
    mirror = f("config/changed-values", NOTED, LOW, details={"mirror_of": ["optimizer/hyperparameters"]})
    assert audit_priors([mirror]) == {}
    assert audit_priors([f("config/implicit-defaults", NOTED, LOW)]) == {"config": 0.25 * 0.5}


def test_rlaudit_audit_prints_the_suspects_ranked_by_evidence():

    text = ranked_suspects_text(
        [
            f("trainer/geometry-candidate"),
            f("memory/growth-sites", reads=("trainer",)),
            f("checkpointing/selection", SUSPECT),
            f("init/schemes", CLEARED, Severity.INFO),
        ]
    )
    order = [line.split()[1] for line in text.splitlines()[1:]]
    assert order == ["trainer", "checkpointing", "memory"]  # memory only echoes the geometry change
    assert ranked_suspects_text([]) == "no subsystem flagged: nothing to rank"


# ------------------------------------------------------------------------------------------------------------
# Mechanisms, not symptoms
# ------------------------------------------------------------------------------------------------------------


def test_a_confirmed_learning_gap_never_outranks_a_suspect_mechanism():
    learning = f("trainer/learning", CONFIRMED, CRITICAL, role="symptom")
    architecture = f("agents/architecture", SUSPECT, LOW, role="mechanism")
    causes = rank_causes([learning, architecture])
    assert [c.subsystem for c in causes] == ["agents", "trainer"]
    assert causes[1].verdict == "symptom" and causes[1].rank_score == 0.0
    text = ranked_suspects_text([learning, architecture])
    assert [line.split()[1] for line in text.splitlines()[1:]] == ["agents", "trainer"]
    # a declared role decides, for any id: a symptom elsewhere, a mechanism under a listed id
    assert order([f("loss/value-gap", CONFIRMED, CRITICAL, role="symptom"), architecture]) == [
        "agents",
        "loss",
    ]
    assert role(f("trainer/learning", role="mechanism")) == "mechanism"
    assert role(f("trainer/speed", role="symptom")) == "symptom"
    assert role(f("trainer/geometry")) == "mechanism"  # a finding made without a check: a mechanism
    # symptoms point at no subsystem: they order no search
    assert audit_priors([learning, architecture]) == {"agents": 2.0 * 0.5}


def test_a_subsystem_with_a_symptom_and_a_mechanism_ranks_by_its_mechanism():
    trainer = [f("trainer/speed", CONFIRMED, CRITICAL, role="symptom"), f("trainer/geometry", SUSPECT, LOW)]
    loss = f("loss/advantages", SUSPECT, MEDIUM)
    causes = rank_causes([*trainer, loss])
    assert [c.subsystem for c in causes] == ["loss", "trainer"]  # 2.0 against trainer's 1.0
    assert causes[1].verdict == "flagged (unmeasured)"
    assert [x.id for x in causes[1].findings] == ["trainer/geometry", "trainer/speed"]  # mechanism first


# ------------------------------------------------------------------------------------------------------------
# Echoes: a check whose inputs carry another subsystem's change
# ------------------------------------------------------------------------------------------------------------


def test_a_check_that_reads_a_flagged_subsystem_may_only_echo_it():
    env = f("env/equivalence", SUSPECT, HIGH, role="mechanism", reads=("curriculum",))
    curriculum = f("curriculum/task-mix", SUSPECT, MEDIUM, role="mechanism")
    assert knock_on([env, curriculum]) == {"env/equivalence"}
    assert order([env, curriculum]) == ["curriculum", "env"]  # env's 3.0 counts a fifth: 0.6 < 2.0
    # nothing flagged upstream, or only cleared, or only a symptom there: env's flag is its own
    assert knock_on([env]) == set()
    assert knock_on([env, f("curriculum/task-mix", CLEARED, role="mechanism")]) == set()
    assert knock_on([env, f("curriculum/learning", SUSPECT, role="symptom")]) == set()
    # two subsystems that read each other's changes cannot be told apart: neither is discounted
    assert knock_on([env, replace(curriculum, reads=["env"])]) == set()


def test_only_declared_reads_make_an_echo():
    geometry = f("trainer/geometry-candidate", CONFIRMED, HIGH)
    declared = f("env/throughput", SUSPECT, HIGH, role="mechanism")  # declares it reads nothing else
    assert knock_on([geometry, declared]) == set()
    assert knock_on([geometry, replace(declared, reads=["trainer"])]) == {"env/throughput"}


# ------------------------------------------------------------------------------------------------------------
# Ties and double counting
# ------------------------------------------------------------------------------------------------------------


def test_ties_are_broken_by_strength_and_specificity_never_by_notebook_order():
    # the same weight (2 x 1.5 = 3 x 1.0): CONFIRMED before SUSPECT, whichever comes first in the notebooks
    agents, rewards = f("agents/architecture", SUSPECT, HIGH), f("rewards/terms", CONFIRMED, MEDIUM)
    assert order([agents, rewards]) == order([rewards, agents]) == ["rewards", "agents"]
    # the same status and severity: the finding that names the changed quantity first
    named = f("optimizer/lr", SUSPECT, HIGH, baseline=3e-4, candidate=1e-3)
    assert order([agents, named]) == order([named, agents]) == ["optimizer", "agents"]
    same = f("optimizer/lr", SUSPECT, HIGH, baseline=3e-4, candidate=3e-4)  # names no change
    assert order([same, agents]) == ["agents", "optimizer"]  # a true tie: by name, stable
    # the search takes its suspects in the same order
    assert evidence_order([agents, rewards]) == ["rewards", "agents"]


def test_a_changed_config_value_counts_once_for_the_subsystem_that_owns_it():
    own = f("optimizer/lr-schedule", SUSPECT, HIGH, role="mechanism")
    alone = rank_causes([own])[0]
    for filed_under in ("config", "optimizer"):  # a check files it under its room; the config room its owner
        config = f("config/changed-optimizer", SUSPECT, HIGH, subsystem=filed_under, baseline=1, candidate=2)
        causes = rank_causes([own, config])
        assert [c.subsystem for c in causes] == ["optimizer"]  # never "config" as well
        assert causes[0].rank_score == alone.rank_score and causes[0].strength.independent == 1
        assert causes[0].strength.specific  # the config diff names the values
        assert order([config]) == ["optimizer"]
    stronger = f("config/changed-optimizer", CONFIRMED, HIGH, subsystem="config")
    assert rank_causes([own, stronger])[0].strength.score == 3.0 * 1.5  # the stronger view, not the sum
    # the config room's own checks still count for config
    assert order([f("config/override-ignored", SUSPECT, HIGH)]) == ["config"]


def test_an_undecided_restore_says_how_many_seeds_would_decide_it():
    from rlaudit.attribution.arms import Arm, Effect
    from rlaudit.attribution.ranking import attribution_findings
    from rlaudit.attribution.suspects import Suspect

    suspect = Suspect("loss config", "loss", "config", overrides=("vf_coef=0.5",))
    result = replace(
        _result({}),
        gaps={"heart.get": {"measurable": True}},
        arms=[Arm("restore loss config", "candidate", suspects=("loss config",))],
        effects={"restore loss config": {"heart.get": Effect(-0.66, -3.6, 0.96, 1)}},
        suspects=[suspect],
    )
    (finding,) = attribution_findings(result)
    assert finding.status is Status.SUSPECT
    assert finding.evidence.summary.endswith("— undecided: about 8 seeds per arm would decide it")


def test_an_undecided_restore_needing_thousands_of_seeds_offers_no_plan():
    """The built-in pair's smoke report: the checkpoint interval restores 19% (-82%..132%) of the CPU time per
    step lost, at 1 seed; the projection, about 8,398 seeds per arm, is no plan to run."""
    from rlaudit.attribution.arms import Arm, Effect
    from rlaudit.attribution.ranking import attribution_findings
    from rlaudit.attribution.suspects import Suspect

    suspect = Suspect(
        "checkpointing config", "checkpointing", "config", overrides=("checkpoint_interval=25",)
    )
    result = replace(
        _result({}),
        gaps={"heart.get": {"measurable": True}},
        arms=[Arm("restore checkpointing config", "candidate", suspects=("checkpointing config",))],
        effects={"restore checkpointing config": {"heart.get": Effect(0.19, -0.82, 1.32, 1)}},
        suspects=[suspect],
    )
    (finding,) = attribution_findings(result)
    assert finding.status is Status.SUSPECT
    assert "— undecided: no practical number of seeds would decide it (about " in finding.evidence.summary
    assert " per arm: the estimate lies at the edge of the margin" in finding.evidence.summary
