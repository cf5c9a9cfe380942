"""The change search on a real workbench: hybrids as subjects trained in worker processes, unresolved hybrids
as failed runs, the trace of the rooms' probes, and the seam into attribution. Tiny sizes in the default run;
the whole search end to end (the tinyrl pair and history, the cartpole trainer at the standard profile) with
``-m expensive``."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from rlaudit.attribution import code_changes as search
from rlaudit.attribution import culprit_report as report
from rlaudit.attribution.bisection import Bisection
from rlaudit.attribution.engine import Engine
from rlaudit.attribution.pair import attribute
from rlaudit.attribution.suspects import COMPOSERS, Suspect, compose, compose_injection
from rlaudit.changes import changeset as csm
from rlaudit.changes.priors import map_all
from rlaudit.changes.targets import Targets
from rlaudit.engine.store import subject_fingerprint
from rlaudit.engine.workbench import Workbench
from rlaudit.profiles import get_profile
from support import changes as sc

TINY = dataclasses.replace(get_profile("smoke"), seeds=3, train_steps=30_000, attribution_budget=40)


def test_hybrids_train_in_workers_and_unresolved_ones_fail_cleanly(tmp_path, tmp_cache, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    made = sc.pair(tmp_path)
    profile = dataclasses.replace(TINY, train_steps=4096)
    with Workbench(made["v1"], made["v2"], profile=profile, jobs=2) as wb:
        cs = csm.change_set(wb.specs["baseline"], wb.specs["candidate"])
        collect = sc.find(cs.diff, "b_obs.append(obs)\n")
        buffer = sc.find(cs.diff, "self._obs = np.zeros(")
        search_ = Bisection(Engine(wb), cs, targets=Targets(cs, wb.specs["baseline"], wb.specs["candidate"]))
        ok, broken = search_.hunk_arm([collect]), search_.hunk_arm([buffer])
        search_.engine.grow([ok, broken], 1)
        # reverting the copy runs; removing the buffer step() writes into does not: an unresolved arm, no crash
        assert ok.unresolved == "" and ok.values("return")[0] > 0
        # each run says the load it was timed at, so throughput shares compare only at similar loads
        assert ok.values("load")[0] >= 0.0 and ok.values("sps")[0] > 0
        assert "AttributeError" in broken.unresolved and "_obs" in broken.unresolved
        assert broken.name in search_.failures
        # the trace of the rooms' probes ran in both workers (the training run reached collect)
        executed, notes = search.trace_sides(wb, cs)
    assert notes == []
    assert "training" in executed["candidate"]["tinyrl/train.py::collect"]
    assert "tinyrl/train.py::collect" in executed["baseline"]


def test_a_td_target_hunk_is_filed_under_loss_by_the_trace_of_the_td_target_probe(
    tmp_path, tmp_cache, monkeypatch
):
    """The single-file DQN's regression lives in ``bellman_backup``, which ``td_targets`` calls: the loss room's
    TD-target probe runs it, so the hunk belongs to loss (not to the trainer, as a hunk only training reaches)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    example = Path(__file__).resolve().parents[2] / "data" / "examples" / "dqn_single"
    with Workbench(
        str(example / "v1" / "subject.py"), str(example / "v2" / "subject.py"), profile=TINY
    ) as wb:
        cs, notes = search.prepare(wb)
    assert cs is not None, notes
    backup = sc.find(cs.diff, "def bellman_backup(")
    assert backup.subsystem == "loss", backup.to_dict()
    assert any("loss" in reason for reason in backup.reasons), backup.reasons


@pytest.fixture(autouse=True)
def _composers(monkeypatch):
    """Registering the change composer is global: undo it after each test (None is a placeholder the test's own
    registration replaces; the teardown restores the registry as it was)."""
    monkeypatch.setitem(COMPOSERS, "change", COMPOSERS.get("change"))


def test_change_suspects_compose_into_the_same_hybrids(tmp_path, tmp_cache):
    made = sc.pair(tmp_path)
    with Workbench(made["v1"], made["v2"], profile=TINY, jobs=1) as wb:
        cs = map_all(csm.change_set(wb.specs["baseline"], wb.specs["candidate"]))
        targets = Targets(cs, wb.specs["baseline"], wb.specs["candidate"])
        search.ENTRIES[wb.specs["candidate"].text] = search.ENTRIES[wb.specs["baseline"].text] = search.Entry(
            cs, targets
        )
        search.register()
        assert "change" in COMPOSERS
        collect = sc.find(cs.diff, "b_obs.append(obs)\n")
        step = sc.find(cs.diff, "np.take(self.eye")
        s = Suspect("revert collect", "trainer", "change", refs=(collect.id,))
        target, overrides = compose(wb.specs["candidate"], [s])
        own, _ = targets.hybrid("candidate", [collect], reverse=True, label="x")
        assert overrides == () and subject_fingerprint(target) == subject_fingerprint(own)
        assert Path(target.target).read_text() == (Path(wb.specs["candidate"].target)).read_text()
        # the reverse check puts the hunk alone into the baseline; one that does not run alone is still a
        # subject (it fails to import, naming why)
        put, _ = compose_injection(wb.specs["baseline"], s)
        assert "b_obs.append(obs)\n" in (Path(put.target).parent / "tinyrl" / "train.py").read_text()
        both = Suspect("revert both", "env", "change", refs=(collect.id, step.id))
        target, _ = compose(wb.specs["candidate"], [both])
        assert "np.take" not in (Path(target.target).parent / "tinyrl" / "env.py").read_text()
        assert search.unresolved_subject("hunks overlap").text.endswith("subject.py")


@pytest.mark.expensive
def test_two_hunks_that_break_training_only_together_end_to_end(tmp_path, tmp_cache, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    made = sc.pair(tmp_path)
    with Workbench(made["v1"], made["v2"], profile=TINY, jobs=2) as wb:
        result, _ = search.find_culprits(wb, {"spaces": 2.0})
        assert result is not None and result.active == ["return"]
        causes = {h.function: c for c in result.culprits if c.verdict == "cause" for h in c.hunks}
        assert {"collect", "Corridor.step"} <= set(causes)
        for name in ("collect", "Corridor.step"):
            assert causes[name].effects["return"].low > 0.5  # reverting either one restores the gap
            assert causes[name].together["return"].low > 0.5  # applying both reproduces it
        assert any("collect" in s and "with its partners" in s for s in report.summary_sentences(result))
        attributed = attribute(wb, [], changes="auto", budget=40)
    rows = attributed.ranking["return"]
    assert any(r["single"] and r["verdict"] == "cause" and "collect" in r["arm"] for r in rows)
    assert attributed.spent["cached_runs"] >= 6
    changes = search.causes_changes(attributed)
    assert any(c["function"] == "collect" for cs in changes.values() for c in cs)


@pytest.mark.expensive
def test_the_worked_example_at_the_standard_profile(tmp_path, tmp_cache, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    made = sc.history(tmp_path)
    with Workbench(f"git:{made['repo']}@baseline", f"git:{made['repo']}@main", profile="standard") as wb:
        result, _ = search.find_culprits(wb, {})
    first = result.culprits[0]
    assert first.commit.sha == made["culprit"] and first.hunks[0].function == "collect"
    assert first.effects["return"].low > 0.8 and first.reproduced["return"].low > 0.8
    slow = next(c for c in result.culprits if "sps" in c.effects and c.effects["sps"].matters(0.2))
    assert slow.commit.sha == made["throughput"]
    assert result.spent["runs"] <= result.spent["per_hunk_sweep_runs"] / 3


@pytest.mark.expensive
def test_the_cartpole_trainer_at_the_standard_profile(tmp_path, tmp_cache, monkeypatch):
    """The real trainer: cartpole v1 as a repository, then a harmless commit, then v2's refactor of the loss
    (advantage normalization lost and vf_coef 0.5 -> 5.0) beside harmless hunks, then another harmless commit.
    The standard profile's seeds and budget; 60k steps per run, where the example's learning gap shows (by the
    standard profile's 300k steps both versions have learned CartPole)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    examples = sc.EXAMPLE.parent / "cartpole"
    repo = tmp_path / "cartpole"
    env = {
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
    }

    def commit(message: str) -> str:
        subprocess.run(
            ["git", "-C", str(repo), "add", "-A"], check=True, env={**env, "PATH": "/usr/bin:/bin"}
        )
        subprocess.run(
            ["git", "-C", str(repo), "-c", "commit.gpgsign=false", "commit", "-qm", message],
            check=True,
            env={**env, "PATH": "/usr/bin:/bin"},
        )
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()

    import shutil

    shutil.copytree(examples / "v1", repo, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    base = commit("cartpole PPO")
    train = repo / "cartpole_ppo" / "train.py"
    train.write_text(train.read_text().replace('"""', '"""\n', 1))
    commit("Docstring spacing")
    shutil.copyfile(examples / "v2" / "cartpole_ppo" / "train.py", train)
    culprit = commit("Split ppo_loss into the policy and value helpers")
    (repo / "NOTES.md").write_text("notes\n")
    commit("Notes")
    with Workbench(f"git:{repo}@{base}", f"git:{repo}@main", profile="standard") as wb:
        result, _ = search.find_culprits(wb, {"loss": 3.0}, steps=60_000)
    assert result.culprits and result.culprits[0].commit.sha == culprit
    assert {row["verdict"] for row in result.commits if row["sha"] != culprit} <= {"cleared", "not searched"}
