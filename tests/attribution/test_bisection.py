"""The bisection (commits, then hunks) against a simulated trainer (tests/support/changes.py), on the real example histories and
real hybrids: commit bisection, hunk isolation, unresolved hybrids, interactions, reverse checks, what it costs."""

from __future__ import annotations

import pytest

from rlaudit.attribution.bisection import Bisection
from rlaudit.attribution.engine import Engine
from rlaudit.changes import changeset as csm
from rlaudit.changes.priors import map_all
from rlaudit.changes.targets import Targets
from support import changes as sc

HYBRIDS: dict[str, object] = {}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict:
    # hybrids are content-addressed: the tests of this module share them (the history is the same)
    HYBRIDS["root"] = tmp_path_factory.mktemp("hybrids")
    return sc.history(tmp_path_factory.mktemp("history"))


def _history(example: dict) -> csm.ChangeSet:
    cs = csm.change_set(f"git:{example['repo']}@{example['commits'][0]}", f"git:{example['repo']}@main")
    return map_all(cs)


def _search(cs, oracle, **kw):
    kw = {"metric": "return", "max_seeds": 5, "budget": 60, "steps": 1000, **kw}
    engine = Engine(None, runner=oracle, **kw)
    return Bisection(engine, cs, targets=Targets(cs, root=HYBRIDS.get("root")))


def test_the_culprit_commit_and_hunk_come_first_for_a_third_of_a_per_hunk_sweep(example, tmp_cache):
    cs = _history(example)
    oracle = sc.oracle_for_history(cs)
    result = _search(cs, oracle).run()
    c1, c2, c3, c4 = cs.commits
    harmful = sc.find(c3.hunks, "np.stack(b_obs, axis=1)")
    first, second = result.culprits[:2]
    assert first.hunks == [harmful] and first.commit is c3 and first.verdict == "cause"
    e = first.effects["return"]
    assert e.low <= 1.0 <= e.high and e.low > 0.8
    assert first.reproduced["return"].low > 0.8  # applied alone to the baseline, it reproduces the gap
    assert first.changes() == [
        {"commit": c3.sha, "path": "tinyrl/train.py", "hunk": "@@ -76,8 +79,8 @@", "function": "collect"}
    ]
    # the throughput regression in another file: the observe helper and the reset that calls it run only together
    assert second.commit is c4 and {h.id for h in second.hunks} == {h.id for h in c4.hunks}
    assert second.effects["sps"].low > 0.8 and second.note
    verdicts = {row["sha"]: row["verdict"] for row in result.commits}
    assert verdicts == {c1.sha: "cleared", c2.sha: "cleared", c3.sha: "culprit", c4.sha: "culprit"}
    # the rename's hunks were once split apart: an unresolved hybrid, recorded, never a culprit half
    assert any("ImportError" in u["reason"] for u in result.unresolved)
    for c in result.culprits:
        rename = {h.id for h in c3.hunks if "discounted_returns" in "".join(h.lines)}
        assert not (0 < len(rename & {h.id for h in c.hunks}) < len(rename))
    spent = result.spent
    assert spent["runs"] == oracle.calls
    assert spent["per_hunk_sweep_runs"] == 14 * 5 + 10 and spent["per_commit_sweep_runs"] == 6 * 5
    assert spent["runs"] <= spent["per_hunk_sweep_runs"] / 3


def test_seeds_are_added_only_where_an_interval_straddles_delta(example, tmp_cache):
    cs = _history(example)
    c1, _, c3, _ = cs.commits
    # clear-cut shares: every arm is decided on its first seed; only the first places get a second
    search = _search(cs, sc.oracle_for_history(cs))
    result = search.run()
    firsts = {c.arm for c in result.culprits[:2]}
    assert {a["name"]: a["seeds"] for a in result.arms if a["name"] not in ("baseline", "candidate")} == {
        a["name"]: 2 if a["name"] in firsts else 1
        for a in result.arms
        if a["name"] not in ("baseline", "candidate")
    }
    # a noisy trainer: a range whose interval straddles delta gains seeds at its checkouts, one round at a time
    oracle = sc.oracle_for_history(cs, noise={"return": 0.12, "sps": 800.0})
    harmful = sc.find(c3.hunks, "np.stack(b_obs, axis=1)")
    small = sc.find(c1.hunks, "self.lengths: list[int] = []")
    oracle.harm.update({harmful.id: {"return": 0.4}, small.id: {"return": 0.6}})
    result = _search(cs, oracle).run()
    seeds = {a["name"]: a["seeds"] for a in result.arms}
    # (intervals account for every view tried, Holm, so a range may take more than one round, or be left
    # unclear when even max_seeds could not settle it)
    grown = [
        line.split("one more seed for ", 1)[1].split(" (")[0]
        for line in result.log
        if line.startswith("commit bisection:") and "one more seed for " in line
    ]
    names = {n for line in grown for n in line.split(", ")}
    assert names and all(seeds[n] >= 2 for n in names), result.log
    # a checkout no bisection round named stays at its first seed unless it frames a hunk arm that grew
    framed = {n for n in seeds if n.startswith("commit ") and any(f"from {n[7:]}" in a for a in seeds)}
    assert all(seeds[n] == 1 for n in seeds if n.startswith("commit ") and n not in names | framed), seeds
    assert all(r["verdict"] in ("culprit", "cleared", "unclear") for r in result.ranges)


def test_priors_choose_where_the_bisection_looks_first(example, tmp_cache):
    cs = _history(example)
    for c, prior in zip(cs.commits, (0.01, 0.01, 0.01, 5.0), strict=True):
        c.prior = prior
    oracle = sc.oracle_for_history(cs)
    _search(cs, oracle).run()
    assert (
        oracle.seen[10] == f"commit {cs.commits[2].short}"
    )  # the last commit holds the mass: split before it


def test_a_checkout_that_does_not_run_is_skipped_like_git_bisect_skip(example, tmp_cache):
    cs = _history(example)
    oracle = sc.oracle_for_history(cs, broken_commits={cs.commits[1].sha})
    result = _search(cs, oracle).run()
    verdicts = {row["sha"]: row["verdict"] for row in result.commits}
    assert verdicts[cs.commits[1].sha] == "unresolved"
    assert verdicts[cs.commits[2].sha] == "culprit" and result.culprits[0].commit is cs.commits[2]


def test_hunks_that_no_longer_apply_to_the_candidate_are_reverted_from_their_commit(example, tmp_cache):
    cs = _history(example)
    c1 = cs.commits[0]
    late = sc.find(c1.hunks, "mean_length = float(")  # commit 3 rewrote its context
    oracle = sc.Oracle(cs, {late.id: {"return": 1.0}})
    search = _search(cs, oracle)
    result = search.run()
    assert result.culprits[0].hunks == [late]
    arm = search.engine.arms[result.culprits[0].arm]
    assert arm.base == c1.sha and arm.frame == f"commit {c1.short}"
    assert any("reverted from" in line for line in result.log)
    assert result.culprits[0].effects["return"].low > 0.8


def test_a_regression_that_needs_two_hunks_together(tmp_path, tmp_cache):
    made = sc.pair(tmp_path)
    cs = map_all(csm.change_set(made["v1"], made["v2"]))
    x = sc.find(cs.diff, "b_obs.append(obs)\n")
    y = sc.find(cs.diff, "np.take(self.eye")
    buffer = sc.find(cs.diff, "self._obs = np.zeros(")
    oracle = sc.Oracle(
        cs, {}, together=[(frozenset({x.id, y.id}), {"return": 1.0})], requires={y.id: {buffer.id}}
    )
    result = _search(cs, oracle).run()
    causes = [c for c in result.culprits if c.verdict == "cause"]
    assert {h.id for c in causes for h in c.hunks} >= {x.id, y.id}
    # each alone restores the whole gap when reverted, and reproduces none of it when applied alone; together
    # they reproduce it
    for c in causes:
        assert c.effects["return"].low > 0.8
        assert c.reproduced["return"].high < 0.2
        assert c.together["return"].low > 0.8


def test_hunks_that_only_matter_reverted_together_are_isolated_ddmin_style(tmp_path, tmp_cache):
    made = sc.pair(tmp_path)
    cs = map_all(csm.change_set(made["v1"], made["v2"]))
    a = sc.find(cs.diff, "self.lengths: list[int] = []")
    b = sc.find(cs.diff, "# one-hot rows")
    # either one alone causes the whole gap: reverting one leaves the other
    oracle = sc.Oracle(cs, {a.id: {"return": 1.0}, b.id: {"return": 1.0}})
    result = _search(cs, oracle).run()
    (group,) = [c for c in result.culprits if len(c.hunks) > 1]
    assert {h.id for h in group.hunks} == {a.id, b.id} and group.note == "matters only together"
    assert group.effects["return"].low > 0.8


def test_no_gap_no_search(example, tmp_cache):
    cs = _history(example)
    oracle = sc.Oracle(cs, {})
    result = _search(cs, oracle).run()
    assert result.culprits == [] and result.active == [] and oracle.calls == 10
    assert any("No measurable" in n for n in result.notes)


def test_a_small_budget_ends_the_search_with_a_note(example, tmp_cache):
    cs = _history(example)
    result = _search(cs, sc.oracle_for_history(cs), budget=12).run()
    assert result.spent["runs"] <= 12
    assert any("budget" in n for n in result.notes)


def test_the_result_serializes(example, tmp_cache):
    import json

    cs = _history(example)
    result = _search(cs, sc.oracle_for_history(cs)).run()
    data = json.loads(json.dumps(result.to_dict()))
    top = data["culprits"][0]
    assert top["changes"][0]["function"] == "collect" and "np.stack(b_obs, axis=1)" in top["diff"]
    assert data["spent"]["per_hunk_sweep_runs"] == 80


def test_a_run_that_timed_out_is_run_again_before_its_arm_counts_as_unresolved(example, tmp_cache):
    from types import SimpleNamespace

    cs = _history(example)
    oracle = sc.oracle_for_history(cs)
    first = {"done": False}

    def flaky(calls):
        out = oracle(calls)
        if not first["done"] and calls and calls[0][0].name.startswith("commit"):
            first["done"] = True
            error = SimpleNamespace(kind="timeout", __str__=lambda self: "timeout")
            out[0] = (sc.Failed(error), {"return": float("nan"), "sps": float("nan")})
        return out

    search = _search(cs, flaky)
    result = search.run()
    assert first["done"] and any(line.startswith("ran again after a timeout") for line in result.log)
    assert not any(u["kind"] == "commit" for u in result.unresolved)
    assert search.engine.runs_used == oracle.calls and result.culprits[0].commit is cs.commits[2]


def test_throughput_shares_of_checkouts_timed_at_another_load_decide_nothing(example, tmp_cache):
    cs = _history(example)
    oracle = sc.oracle_for_history(cs)

    def loaded(calls):  # the two sides timed on a quiet machine, every checkout and hybrid on a busy one
        runs = oracle(calls)
        for (arm, _), (_, row) in zip(calls, runs, strict=True):
            row["load"] = 1.2 if arm.name in ("baseline", "candidate") else 4.6
        return runs

    result = _search(cs, loaded).run()
    c3 = cs.commits[2]
    first = result.culprits[0]
    assert first.commit is c3 and first.effects["return"].low > 0.8  # the learning culprit still found
    for culprit in result.culprits:
        sps = culprit.effects.get("sps")
        assert sps is None or sps.incomparable.startswith("not comparable: ")
        assert sps is None or sps.verdict(0.2) == "undecided"
        # a culprit is named for the learning gap alone: c4's throughput regression is left undecided
        assert culprit.effects["return"].matters(0.2), culprit
    # a commit whose throughput share is not comparable is never cleared of the throughput gap
    assert "cleared" not in {row["verdict"] for row in result.commits}
    from rlaudit.attribution.culprit_report import summary_sentences

    said = [s for s in summary_sentences(result) if "undecided, whatever their intervals" in s]
    assert len(said) == 1 and "timed at load 4.6 per core, the baseline and candidate at 1.2" in said[0]
