"""Hybrid subjects: a side with some hunks applied or reverted, materialized once and fingerprinted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlaudit.changes import changeset as csm
from rlaudit.changes import hybrids
from rlaudit.changes.hunks import Hunk
from rlaudit.changes.trees import Tree, list_files, read_file
from rlaudit.engine.store import subject_fingerprint
from rlaudit.engine.subjects import parse_spec
from support import changes as sc


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> csm.ChangeSet:
    made = sc.history(tmp_path_factory.mktemp("history"))
    return csm.change_set(f"git:{made['repo']}@{made['commits'][0]}", f"git:{made['repo']}@main")


def _files(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(directory).parts
    }


def _tree(tree: Tree) -> dict[str, bytes]:
    return {path: read_file(tree, path) or b"" for path in list_files(tree)}


def test_reverting_every_commit_gives_the_baseline_and_applying_them_the_candidate(history, tmp_cache):
    everything = history.searched
    back = hybrids.materialize(history.candidate, hybrids.stages_for(history, everything, reverse=True))
    assert back.ok and _files(back.directory) == _tree(history.baseline)
    forth = hybrids.materialize(history.baseline, hybrids.stages_for(history, everything, reverse=False))
    assert forth.ok and _files(forth.directory) == _tree(history.candidate)
    # later commits' hunks sit on earlier ones: reverting newest first is what makes this work
    stages = hybrids.stages_for(history, everything, reverse=True)
    assert [s[0][0].commit for s in stages] == [c.sha for c in reversed(history.commits)]


def test_a_hybrid_is_content_addressed_and_fingerprinted_like_a_checkout(history, tmp_cache):
    harmful = sc.find(history.commits[2].hunks, "np.stack(b_obs, axis=1)")
    stages = hybrids.stages_for(history, [harmful], reverse=True)
    one = hybrids.materialize(history.candidate, stages)
    again = hybrids.materialize(history.candidate, stages)
    assert one.directory == again.directory == tmp_cache / "hybrids" / one.key
    assert (one.directory / "tinyrl" / "train.py").read_text().count("np.concatenate(b_obs)") == 1
    fp = subject_fingerprint(one.spec())
    assert fp == subject_fingerprint(again.spec())
    # files a run writes beside the code do not change what the hybrid is
    (one.directory / "runs").mkdir()
    (one.directory / "runs" / "log.json").write_text("{}")
    assert subject_fingerprint(one.spec()) == fp
    other = hybrids.materialize(
        history.candidate, hybrids.stages_for(history, history.commits[3].hunks, reverse=True)
    )
    assert other.key != one.key and subject_fingerprint(other.spec()) != fp
    # its commit is made at a fixed date by a fixed author: the same content gives the same commit anywhere
    head = subprocess.run(
        ["git", "-C", str(one.directory), "log", "-1", "--format=%an %aI"], capture_output=True, text=True
    )
    assert head.stdout.strip() == f"rlaudit {hybrids.FIXED_DATE}"


def test_a_hybrid_runs_like_the_side_it_comes_from(history, tmp_cache):
    like = parse_spec(str(Path(history.candidate.root) / "subject.py"), env={"OMP_NUM_THREADS": "1"})
    hybrid = hybrids.materialize(
        history.candidate, hybrids.stages_for(history, history.commits[3].hunks, reverse=True)
    )
    spec = hybrid.spec(like, label="without commit 4")
    assert spec.scheme == "file" and Path(spec.target) == hybrid.directory / "subject.py"
    assert dict(spec.env) == {"OMP_NUM_THREADS": "1"} and spec.label == "without commit 4"
    assert spec.cwd == str(hybrid.directory)  # the subject's own directory, as for any subject file


def test_a_hunk_whose_lines_a_later_commit_rewrote_is_unresolved(history, tmp_cache):
    # commit 2 appended _move after step's return line, which commit 4 rewrote
    late = sc.find(history.commits[1].hunks, "def _move(")
    hybrid = hybrids.materialize(history.candidate, hybrids.stages_for(history, [late], reverse=True))
    assert not hybrid.ok and hybrid.directory is None
    assert "does not apply" in hybrid.unresolved and late.id in hybrid.unresolved
    with pytest.raises(ValueError, match="unresolved"):
        hybrid.spec()
    assert "does not apply" in hybrids.check(history.candidate, [late], reverse=True)
    # it still applies to its own commit
    own = Tree("git", history.candidate.root, history.commits[1].sha)
    assert hybrids.check(own, [late], reverse=True) == ""


def test_a_hybrid_that_does_not_parse_is_unresolved_without_a_run(tmp_path, tmp_cache):
    base = tmp_path / "base"
    base.mkdir()
    (base / "subject.py").write_text("def f():\n    return 1\n")
    broken = Hunk("x#1", "subject.py", 2, 1, 2, 1, ("-    return 1\n", "+    return (1\n"))
    tree = Tree("dir", str(base))
    hybrid = hybrids.materialize(tree, [([broken], False)])
    assert not hybrid.ok and "does not parse" in hybrid.unresolved and "line 2" in hybrid.unresolved


def test_files_added_and_deleted_by_hunks(tmp_path, tmp_cache):
    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        d.mkdir()
        (d / "subject.py").write_text("x = 1\n")
    (old / "gone.py").write_text("a = 1\n")
    (new / "added.py").write_text("b = 2\n")
    cs = csm.build(Tree("dir", str(old)), Tree("dir", str(new)))
    assert {h.status for h in cs.diff} == {"added", "deleted"}
    forth = hybrids.materialize(cs.baseline, [(cs.diff, False)])
    assert _files(forth.directory) == {"added.py": b"b = 2\n", "subject.py": b"x = 1\n"}
    back = hybrids.materialize(cs.candidate, [(cs.diff, True)])
    assert _files(back.directory) == {"gone.py": b"a = 1\n", "subject.py": b"x = 1\n"}
