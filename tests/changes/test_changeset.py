"""Change sets: commits and hunks between two versions of one source, hunks mapped to functions and subsystems."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rlaudit.changes import changeset as csm
from rlaudit.changes.hunks import Hunk, apply_hunks, diff_hunks, parse_diff
from rlaudit.changes.priors import KEY_WEIGHT, TRACE_WEIGHT, map_config_keys, map_names, map_trace, prioritize
from rlaudit.changes.scopes import linked
from rlaudit.changes.trees import decode_text, read_file
from support import changes as sc

CONFIG_KEYS = {
    "env": ["num_envs", "length", "max_steps"],
    "rewards": ["goal_reward", "step_cost"],
    "trainer": ["num_steps"],
    "loss": ["gamma"],
    "optimizer": ["lr"],
}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return sc.history(tmp_path_factory.mktemp("history"))


@pytest.fixture(scope="module")
def history(example: dict) -> csm.ChangeSet:
    cs = csm.change_set(f"git:{example['repo']}@{example['commits'][0]}", f"git:{example['repo']}@main")
    assert isinstance(cs, csm.ChangeSet)
    return cs


def test_two_refs_give_the_commits_between_them_with_their_hunks(example, history):
    assert history.kind == "commits" and not history.notes
    assert [c.sha for c in history.commits] == example["commits"][1:]
    assert [c.subject for c in history.commits] == [example["subjects"][s] for s in example["commits"][1:]]
    assert [len(c.hunks) for c in history.commits] == [3, 3, 6, 2]
    # every hunk belongs to its commit and its id names it
    for c in history.commits:
        assert all(h.commit == c.sha and h.id.startswith(c.short) for h in c.hunks)
    assert len(history.searched) == 14


def test_hunk_headers_and_text_are_what_git_show_prints(example, history):
    culprit = history.commits[2]
    harmful = sc.find(culprit.hunks, "np.stack(b_obs, axis=1)")
    shown = subprocess.run(
        ["git", "-C", example["repo"], "show", "--format=", culprit.sha, "--", "tinyrl/train.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert harmful.header in shown
    body = harmful.text().split("\n", 3)[3]  # after ---, +++ and the header
    assert body in shown
    assert harmful.header == "@@ -76,8 +79,8 @@" and harmful.changed == 4


def test_hunks_name_their_enclosing_function_or_class(history):
    c1, c2, c3, c4 = history.commits
    assert sc.find(c3.hunks, "np.stack(b_obs, axis=1)").function == "collect"
    assert sc.find(c3.hunks, "def discounted_returns(").function == "discounted_returns"
    assert sc.find(c3.hunks, "import discounted_returns").function == ""  # module level
    assert sc.find(c3.hunks, "# one-hot rows").function == "Agent.probs"
    assert sc.find(c1.hunks, "self.lengths: list[int] = []").function == "EpisodeStats.__init__"
    # a new method (its blank separator line is not what names it)
    assert sc.find(c2.hunks, "def _move(").function == "Corridor._move"
    # a hunk across two methods names their class, and lists both
    obs = sc.find(c4.hunks, "def observe(self)")
    assert obs.function == "Corridor" and {"Corridor.step", "Corridor.observe"} <= set(obs.functions)


def test_cosmetic_hunks_are_recognized(history):
    c3 = history.commits[2]
    assert sc.find(c3.hunks, "# one-hot rows").cosmetic  # a comment
    assert sc.find(c3.hunks, "Finished episodes go").cosmetic  # a docstring
    assert not sc.find(c3.hunks, "np.stack(b_obs, axis=1)").cosmetic
    assert not sc.find(c3.hunks, "def discounted_returns(").cosmetic  # a rename changes the code


def test_hunks_that_name_each_other_are_linked(history):
    c2, c3 = history.commits[1], history.commits[2]
    rename = [
        sc.find(c3.hunks, t)
        for t in ("def discounted_returns(", "import discounted_returns", "= discounted_returns(")
    ]
    assert all(linked(a, b) for a in rename for b in rename if a is not b)
    harmful = sc.find(c3.hunks, "np.stack(b_obs, axis=1)")
    assert not any(linked(harmful, r) for r in rename)
    # a helper method and the call that replaced its inlined body
    assert linked(sc.find(c2.hunks, "self.pos = self._move("), sc.find(c2.hunks, "def _move("))


def test_the_whole_diff_applies_to_the_baseline_and_reverts_from_the_candidate(history):
    for path in {h.path for h in history.diff}:
        old = decode_text(read_file(history.baseline, path) or b"")
        new = decode_text(read_file(history.candidate, path) or b"")
        hunks = [h for h in history.diff if h.path == path]
        assert apply_hunks(old, hunks) == new
        assert apply_hunks(new, hunks, reverse=True) == old


def test_parse_diff_keeps_a_missing_final_newline():
    text = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    ((a, b, c, d, lines),) = parse_diff(text)
    assert (a, b, c, d) == (1, 2, 1, 2)
    assert lines == (" a\n", "-b", "+c")
    hunk = Hunk("x#1", "x", a, b, c, d, lines)
    assert apply_hunks("a\nb", [hunk]) == "a\nc"
    assert "\\ No newline at end of file" in hunk.text()


def test_a_hunk_applies_where_its_context_moved_and_not_where_it_is_gone():
    old = "".join(f"line {i}\n" for i in range(1, 21))
    new = old.replace("line 10\n", "line ten\n")
    (hunk,) = diff_hunks("f.txt", old.encode(), new.encode())
    shifted = "new 1\nnew 2\n" + new  # two lines inserted above: the context is two lines further down
    assert apply_hunks(shifted, [hunk], reverse=True) == "new 1\nnew 2\n" + old
    assert apply_hunks(new.replace("line 9\n", "line nine\n"), [hunk], reverse=True) is None


def test_two_directories_of_one_package_give_one_diff_without_history(tmp_path):
    made = sc.pair(tmp_path)
    cs = csm.change_set(made["v1"], made["v2"])
    assert isinstance(cs, csm.ChangeSet)
    assert cs.kind == "directories" and cs.commits == [] and len(cs.diff) == 6
    assert {h.path for h in cs.diff} == {"tinyrl/agent.py", "tinyrl/env.py", "tinyrl/train.py"}
    assert all(h.id.startswith("diff:") for h in cs.diff)
    # caches and run outputs in the directories are never part of the change set
    (Path(made["v2"]).parent / "__pycache__").mkdir()
    (Path(made["v2"]).parent / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert len(csm.change_set(made["v1"], made["v2"]).diff) == 6


def test_a_directory_against_a_ref_of_its_own_repository(example, tmp_path):
    repo = Path(example["repo"])
    work = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True)
    train = work / "tinyrl" / "train.py"
    train.write_text(train.read_text().replace("lr: float = 0.5", "lr: float = 0.1"))
    cs = csm.change_set(f"git:{work}@{example['commits'][3]}", str(work / "subject.py"))
    assert isinstance(cs, csm.ChangeSet) and cs.kind == "directory-vs-ref"
    # the ref to the working tree: commit 4's hunks plus the uncommitted edit
    assert len(cs.diff) == 3 and any("lr: float = 0.1" in "".join(h.lines) for h in cs.diff)


def test_a_directory_outside_the_repository_against_a_ref(example, tmp_path):
    outside = tmp_path / "copy"
    subprocess.run(
        [
            "git",
            "-C",
            example["repo"],
            "worktree",
            "add",
            "-q",
            "--detach",
            str(tmp_path / "wt"),
            example["commits"][0],
        ],
        check=True,
    )
    shutil.copytree(tmp_path / "wt", outside, ignore=shutil.ignore_patterns(".git"))
    cs = csm.change_set(str(outside / "subject.py"), f"git:{example['repo']}@main")
    assert isinstance(cs, csm.ChangeSet) and cs.kind == "directory-vs-ref"
    assert cs.baseline.kind == "dir" and cs.candidate.kind == "git"
    assert len(cs.diff) == len(
        csm.change_set(f"git:{example['repo']}@{example['commits'][0]}", f"git:{example['repo']}@main").diff
    )


def test_pairs_without_a_change_set_say_why(example, tmp_path, toy_subject):
    assert "builtin vs builtin" in csm.plan("builtin:reference", "builtin:regressed")
    other = tmp_path / "other"
    sc.make_history().build(other)
    why = csm.plan(f"git:{example['repo']}@main", f"git:{other}@main")
    assert isinstance(why, str) and "different repositories" in why
    why = csm.plan(str(toy_subject), str(Path(sc.pair(tmp_path)["v1"])))
    assert isinstance(why, str) and "versions of one package" in why


def test_documentation_is_listed_but_never_searched(tmp_path):
    made = sc.history(tmp_path, [("Docs", [("README.md", "", "# tinyrl\n")])])
    cs = csm.change_set(f"git:{made['repo']}@{made['commits'][0]}", f"git:{made['repo']}@main")
    assert cs.commits[-1].hunks == [] and cs.commits[-1].excluded == ["README.md"]
    assert cs.excluded == ["README.md"] and cs.diff == []


def test_a_hunk_changing_a_default_maps_to_the_subsystem_config_keys_names(tmp_path):
    made = sc.history(
        tmp_path, [("Faster learning", [("tinyrl/train.py", "lr: float = 0.5", "lr: float = 2.0")])]
    )
    cs = csm.change_set(f"git:{made['repo']}@{made['commits'][0]}", f"git:{made['repo']}@main")
    map_config_keys(cs, CONFIG_KEYS, {"lr": 0.5, "gamma": 0.95}, {"lr": 2.0, "gamma": 0.95})
    (hunk,) = cs.commits[0].hunks
    assert hunk.subsystem == "optimizer" and hunk.affinity["optimizer"] == KEY_WEIGHT
    assert any("default of lr: 0.5 -> 2.0" in r for r in hunk.reasons)


def test_names_trace_and_audit_priors_order_the_hunks(history):
    cs = history
    c3 = cs.commits[2]
    harmful = sc.find(c3.hunks, "np.stack(b_obs, axis=1)")
    comment = sc.find(c3.hunks, "# one-hot rows")
    map_names(cs, CONFIG_KEYS)
    assert harmful.subsystem == "trainer"  # train.collect, by the default name rules
    executed = {"candidate": {"tinyrl/train.py::collect": ["loss"], "tinyrl/agent.py::Agent.act": ["agents"]}}
    map_trace(cs, executed)
    assert harmful.affinity["loss"] == TRACE_WEIGHT and harmful.executed is True
    assert comment.executed is False  # Agent.probs never ran in the traced probes
    prioritize(cs, {"loss": 3.0})
    assert harmful.prior > 10 * comment.prior
    assert c3.prior == pytest.approx(sum(h.prior for h in c3.hunks))
    # without audit evidence, a cosmetic hunk still comes after a code hunk of the same size
    prioritize(cs, {})
    same_size = sc.find(c3.hunks, "import discounted_returns")
    assert same_size.prior > comment.prior > 0
