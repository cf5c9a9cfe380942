"""rlaudit.engine.git: one environment for every git call (no prompts, no index.lock, C locale, the directory given
rather than an inherited GIT_DIR), failures returned rather than raised, and errors that quote git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlaudit.engine.git import failure, git_environment, have_git, run_git

pytestmark = pytest.mark.skipif(not have_git(), reason="needs the git command")


def test_the_environment_never_prompts_locks_or_follows_an_inherited_repository(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("GIT_WORK_TREE", "/elsewhere")
    env = git_environment({"GIT_AUTHOR_NAME": "x"})
    assert "GIT_DIR" not in env and "GIT_WORK_TREE" not in env
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_OPTIONAL_LOCKS"] == "0" and env["LC_ALL"] == "C"
    assert env["GIT_AUTHOR_NAME"] == "x"


def test_run_git_works_in_the_directory_given_even_with_an_inherited_git_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    done = run_git(tmp_path, "rev-parse", "--show-toplevel", timeout=30, text=True)
    assert done.returncode == 0 and Path(done.stdout.strip()).resolve() == tmp_path.resolve()
    as_bytes = run_git(tmp_path, "rev-parse", "--is-inside-work-tree", timeout=30)
    assert as_bytes.stdout == b"true\n"


def test_a_failed_command_is_returned_and_its_message_quotes_git(tmp_path: Path) -> None:
    args = ("rev-parse", "--verify", "no-such-ref")
    done = run_git(tmp_path, *args, timeout=30)  # not a repository: git fails, run_git does not raise
    assert done.returncode != 0
    message = failure(tmp_path, args, done)
    assert message.startswith(f"`git rev-parse --verify no-such-ref` failed in {tmp_path}: ")
    assert "not a git repository" in message  # git's own words, in English whatever the user's locale
