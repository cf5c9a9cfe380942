"""git:<repo>@<ref>[:<subject.py>] subjects: one worktree per commit under the cache, clear errors."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rlaudit.adapters import git as gitad
from rlaudit.engine.subjects import parse_spec

SUBJECT = """
from helper import LR


def config(overrides=None):
    return {{"lr": LR, "version": {version}}}
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two commits of a tiny subject (tag v1 on the first) and a branch `dev`."""
    repo = tmp_path / "proj"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for version, lr in ((1, 0.1), (2, 0.5)):
        (repo / "subject.py").write_text(SUBJECT.format(version=version))
        (repo / "helper.py").write_text(f"LR = {lr}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"version {version}")
        if version == 1:
            _git(repo, "tag", "v1")
            _git(repo, "branch", "dev")
    return repo


def test_resolve_and_fingerprint_is_the_commit(repo: Path, tmp_cache: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD")
    first = _git(repo, "rev-parse", "v1")
    spec = parse_spec(f"git:{repo}@main")
    checkout = gitad.resolve(spec)
    assert checkout.commit == head and checkout.path == "subject.py"
    assert checkout.worktree.parent.parent == tmp_cache / "worktrees"
    assert checkout.worktree.name == head
    assert gitad.git_fingerprint(spec) == head
    assert gitad.git_fingerprint(f"git:{repo}@v1") == first
    assert not checkout.worktree.exists()  # resolving changes nothing on disk


def test_worktree_made_once_and_reused(repo: Path, tmp_cache: Path) -> None:
    spec = parse_spec(f"git:{repo}@v1")
    checkout = gitad.ensure_worktree(spec)
    assert checkout.subject_file.read_text() == SUBJECT.format(version=1)
    assert (checkout.worktree / "helper.py").read_text() == "LR = 0.1\n"
    marker = checkout.worktree / "untracked-marker"
    marker.write_text("still here")
    again = gitad.ensure_worktree(spec)
    assert again.worktree == checkout.worktree and marker.exists()  # reused, not checked out again
    listed = _git(repo, "worktree", "list", "--porcelain")
    assert listed.count(str(checkout.worktree)) == 1


def test_concurrent_requests_make_one_worktree(repo: Path, tmp_cache: Path) -> None:
    spec = parse_spec(f"git:{repo}@dev")

    def request(_: int) -> tuple[gitad.GitCheckout, bool]:
        checkout = gitad.ensure_worktree(spec)
        return checkout, checkout.subject_file.is_file()  # what the caller finds the moment it is told

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(request, range(4)))
    results = [checkout for checkout, _ in answers]
    assert all(found for _, found in answers)
    assert len({r.worktree for r in results}) == 1
    worktree = results[0].worktree
    assert _git(worktree, "rev-parse", "HEAD") == _git(repo, "rev-parse", "dev")
    assert _git(repo, "worktree", "list", "--porcelain").count(str(worktree)) == 1


def test_a_checkout_still_being_written_is_not_handed_out(repo: Path, tmp_cache: Path) -> None:
    # `git worktree add` sets the worktree's HEAD before it writes the files: a caller that trusted the HEAD
    # loaded a subject file that was not there yet. --no-checkout leaves a worktree in that state.
    spec = parse_spec(f"git:{repo}@main")
    worktree = gitad.resolve(spec).worktree
    worktree.parent.mkdir(parents=True)
    _git(repo, "worktree", "add", "--detach", "--no-checkout", str(worktree), "main")
    assert _git(worktree, "rev-parse", "HEAD") == _git(repo, "rev-parse", "main")
    assert not (worktree / "subject.py").exists()
    checkout = gitad.ensure_worktree(spec)
    assert checkout.subject_file.read_text() == SUBJECT.format(version=2)
    assert (worktree / "helper.py").read_text() == "LR = 0.5\n"


def test_worktree_rebuilt_after_the_cache_was_cleaned(repo: Path, tmp_cache: Path) -> None:
    import shutil

    spec = parse_spec(f"git:{repo}@main")
    worktree = gitad.ensure_worktree(spec).worktree
    shutil.rmtree(tmp_cache)
    assert gitad.ensure_worktree(spec).subject_file.is_file()
    assert worktree.is_dir()


def test_not_a_git_repository(tmp_path: Path, tmp_cache: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(gitad.GitSubjectError, match="is not a git repository"):
        gitad.resolve(parse_spec(f"git:{plain}@main"))
    with pytest.raises(gitad.GitSubjectError, match="does not exist"):
        gitad.resolve(parse_spec(f"git:{tmp_path / 'missing'}@main"))


def test_unknown_ref_lists_branches_and_tags(repo: Path, tmp_cache: Path) -> None:
    with pytest.raises(gitad.GitSubjectError) as info:
        gitad.resolve(parse_spec(f"git:{repo}@v9"))
    message = str(info.value)
    assert "unknown ref 'v9'" in message and "dev, main" in message and "tags: v1" in message
    assert "version 2" in message  # recent commits


def test_missing_subject_file_lists_top_level(repo: Path, tmp_cache: Path) -> None:
    with pytest.raises(gitad.GitSubjectError) as info:
        gitad.resolve(parse_spec(f"git:{repo}@v1:tools/subject.py"))
    message = str(info.value)
    assert "'tools/subject.py' does not exist at ref 'v1'" in message
    assert "helper.py, subject.py" in message


def test_malformed_git_spec() -> None:
    with pytest.raises(ValueError, match=r"git:<repo>@<ref>"):
        parse_spec("git:/some/repo")


def test_two_commits_run_side_by_side_in_workers(repo: Path, tmp_cache: Path, tmp_path: Path) -> None:
    """The same module names at two commits, loaded through the worker (each in its own process)."""
    from rlaudit.config import probes
    from rlaudit.engine.workbench import Workbench

    with Workbench(baseline=f"git:{repo}@v1", candidate=f"git:{repo}@main", profile="smoke") as wb:
        assert wb.fingerprints["baseline"] != wb.fingerprints["candidate"]
        pair = wb.run(probes.resolved_config)
        assert pair.baseline.ok and pair.candidate.ok, (pair.baseline.error, pair.candidate.error)
        assert pair.baseline.json("config") == {"lr": 0.1, "version": 1}
        assert pair.candidate.json("config") == {"lr": 0.5, "version": 2}


def test_bad_ref_fails_when_the_workbench_is_made(repo: Path, tmp_cache: Path) -> None:
    """The fingerprint resolves the ref, so a typo fails before any worker starts, with the clear message."""
    from rlaudit.engine.workbench import Workbench

    with pytest.raises(ValueError, match=r"unknown ref 'nope'.*branches: dev, main"):
        Workbench(baseline=f"git:{repo}@v1", candidate=f"git:{repo}@nope", profile="smoke")
