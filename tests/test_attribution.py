"""Attribution's pure logic: composing arms, effects, and ranking causes (the search itself runs in the
summary notebook under nbval and in `make report`)."""

from __future__ import annotations

import pytest

from rlaudit import attribution as attr
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.subjects import parse_spec


def _suspect(name, subsystem, **kw):
    return attr.Suspect(name=name, subsystem=subsystem, source=kw.pop("source", "fix"), **kw)


def test_compose_removes_builtin_faults_and_keeps_the_candidates_environment():
    cand = parse_spec("builtin:regressed", env={"OMP_NUM_THREADS": "1"})
    target, overrides = attr.compose(
        cand,
        [
            _suspect("a", "loss", remove=("loss.gae_bootstrap",)),
            _suspect("b", "rewards", remove=("rewards.shaped_reward_lost",)),
        ],
    )
    assert target.text == "builtin:regressed-loss.gae_bootstrap,rewards.shaped_reward_lost"
    assert dict(target.env) == {"OMP_NUM_THREADS": "1"} and overrides == ()


def test_compose_config_restores_run_on_the_candidate_itself_with_overrides():
    cand = parse_spec("builtin:regressed")
    target, overrides = attr.compose(
        cand, [_suspect("r", "rewards", source="config", overrides=("env.rewards.battery=0.8",))]
    )
    assert target == "candidate" and overrides == ("env.rewards.battery=0.8",)


def test_a_named_variant_cannot_be_grouped():
    cand = parse_spec("builtin:regressed")
    v = _suspect("fix", "loss", source="variant", spec="builtin:reference")
    assert attr.compose(cand, [v])[0].text == "builtin:reference"
    with pytest.raises(ValueError, match="cannot be combined"):
        attr.compose(cand, [v, _suspect("r", "rewards", source="config", overrides=("a=1",))])


def test_variant_suspects_parse_names_and_subsystems():
    out = attr.variant_suspects("fix gae@loss=builtin:reference, builtin:regressed", {"loss": 3.0})
    assert [(s.name, s.subsystem, s.spec, s.prior) for s in out] == [
        ("fix gae", "loss", "builtin:reference", 3.0),
        ("builtin:regressed", "trainer", "builtin:regressed", 0.0),
    ]
    with pytest.raises(ValueError, match="unknown subsystem"):
        attr.variant_suspects("x@nowhere=builtin:reference", {})


def test_effect_decisions():
    assert attr.Effect(0.6, 0.3, 0.9, 4).matters(0.2) and attr.Effect(0.6, 0.3, 0.9, 4).decided(0.2)
    assert not attr.Effect(0.05, -0.1, 0.15, 4).matters(0.2) and attr.Effect(0.05, -0.1, 0.15, 4).decided(0.2)
    assert not attr.Effect(0.3, 0.05, 0.6, 2).decided(0.2)  # straddles delta: more seeds


def _result(ranking):
    return attr.Attribution(
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
    causes = attr.rank_causes(flagged, _result(ranking))
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
    assert attr.audit_priors(f) == {"loss": 3.0 * 1.5}
