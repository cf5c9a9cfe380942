"""Build the change-search examples from the tinyrl trainer in this directory.

``python make_history.py DEST`` writes a git repository to ``DEST`` (a new directory, or an earlier build of
this example, rebuilt with the same commit hashes; nothing is written here) whose first commit (tagged ``baseline``) is this directory's trainer and whose four later commits (up to
``main``) are a realistic stretch of work on it::

    c0  tinyrl: REINFORCE on a vectorized corridor        (the baseline)
    c1  Record the episode lengths                       harmless: new statistics
    c2  Refactor: the corridor's moves in one helper     harmless refactor (same random draws)
    c3  Tidy the rollout and the returns helper          the culprit: six hunks, one harmful
    c4  Observations from a per-walker helper            a throughput regression in another file

In c3, ``collect`` starts stacking observations and actions walker-major while the returns stay time-major,
so every update pairs steps with the wrong returns (case 001's desync, in miniature); its other hunks are a
rename of ``discounted`` to ``discounted_returns`` spread over two files (which only import together), a
docstring and a comment. c4 builds each observation in a Python loop over walkers, costing CPU time on every
step; returns are unchanged.

``python make_history.py DEST --pair`` writes two directories instead, ``DEST/v1`` and ``DEST/v2``, whose
difference holds a regression that needs two hunks together: ``collect`` stops copying observations (safe
while the environment returns a fresh array each step) and the environment starts writing observations into
one reused buffer (safe while the trainer copies them). Each alone is harmless; together every stored
observation of a rollout is the last one. v2 also carries harmless hunks.

Used by the tests (``tests/changes``) and by the README's worked example.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = (
    "subject.py",
    "tinyrl/__init__.py",
    "tinyrl/agent.py",
    "tinyrl/env.py",
    "tinyrl/returns.py",
    "tinyrl/train.py",
)

Edit = tuple[str, str, str]  # (path, old text, new text): old must occur exactly once ("": a new file)

C1: list[Edit] = [
    (
        "tinyrl/train.py",
        "        self.finished: list[float] = []\n",
        "        self.finished: list[float] = []\n        self.lengths: list[int] = []\n",
    ),
    (
        "tinyrl/train.py",
        "            self.finished.append(float(self.ret[i]))\n",
        "            self.finished.append(float(self.ret[i]))\n            self.lengths.append(int(self.length[i]))\n",
    ),
    (
        "tinyrl/train.py",
        '    return {"episodes": len(stats.finished), "final_return": stats.final_return()}\n',
        '    mean_length = float(np.mean(stats.lengths)) if stats.lengths else float("nan")\n'
        '    return {"episodes": len(stats.finished), "final_return": stats.final_return(), "mean_length": mean_length}\n',
    ),
]

C2: list[Edit] = [
    (
        "tinyrl/env.py",
        '"""A vectorized corridor:',
        '"""A vectorized corridor (one numpy array per quantity, no Python loop over walkers):',
    ),
    (
        "tinyrl/env.py",
        "        moves = np.where(actions == 1, 1, -1)\n"
        "        slipped = self.rng.random(self.num_envs) < self.slip\n"
        "        moves = np.where(slipped, -moves, moves)\n"
        "        self.pos = np.clip(self.pos + moves, 0, self.length - 1)\n",
        "        self.pos = self._move(self.pos, actions)\n",
    ),
    (
        "tinyrl/env.py",
        "        return self.eye[self.pos], reward, done\n",
        "        return self.eye[self.pos], reward, done\n\n"
        "    def _move(self, pos: np.ndarray, actions: np.ndarray) -> np.ndarray:\n"
        '        """Cells after one move of every walker: right for action 1, left for 0, reversed on a slip."""\n'
        "        moves = np.where(actions == 1, 1, -1)\n"
        "        slipped = self.rng.random(self.num_envs) < self.slip\n"
        "        moves = np.where(slipped, -moves, moves)\n"
        "        return np.clip(pos + moves, 0, self.length - 1)\n",
    ),
]

C3: list[Edit] = [
    # the rename, in three places that only import and run together
    ("tinyrl/returns.py", "def discounted(", "def discounted_returns("),
    (
        "tinyrl/train.py",
        "from tinyrl.returns import discounted\n",
        "from tinyrl.returns import discounted_returns\n",
    ),
    (
        "tinyrl/train.py",
        '        returns = discounted(batch["rewards"], batch["dones"], config.gamma)\n',
        '        returns = discounted_returns(batch["rewards"], batch["dones"], config.gamma)\n',
    ),
    # the harmful hunk: observations and actions walker-major, returns still time-major
    (
        "tinyrl/train.py",
        '        "obs": np.concatenate(b_obs),\n        "actions": np.concatenate(b_act),\n',
        '        "obs": np.stack(b_obs, axis=1).reshape(-1, obs.shape[1]),\n'
        '        "actions": np.stack(b_act, axis=1).reshape(-1),\n',
    ),
    # harmless: a docstring and a comment
    (
        "tinyrl/train.py",
        '    """Running return and length of every walker\'s episode; finished episodes go to the recorder."""\n',
        '    """Running return and length of every walker\'s episode.\n\n'
        "    Finished episodes go to the recorder with their undiscounted return and their length in steps.\n"
        '    """\n',
    ),
    (
        "tinyrl/agent.py",
        "        z = obs @ self.logits\n",
        "        z = obs @ self.logits  # one-hot rows pick each walker's cell\n",
    ),
]

C4: list[Edit] = [
    (
        "tinyrl/env.py",
        "        self.pos[:] = 0\n        self.t[:] = 0\n        return self.eye[self.pos]\n",
        "        self.pos[:] = 0\n        self.t[:] = 0\n        return self.observe()\n",
    ),
    (
        "tinyrl/env.py",
        "        return self.eye[self.pos], reward, done\n",
        "        return self.observe(), reward, done\n",
    ),
    (
        "tinyrl/env.py",
        "    def _move(self, pos: np.ndarray, actions: np.ndarray) -> np.ndarray:\n",
        "    def observe(self) -> np.ndarray:\n"
        '        """One-hot observation of every walker\'s cell, ``(num_envs, length)``, one walker at a time."""\n'
        "        return np.stack([self._cell(int(c)) for c in self.pos])\n\n"
        "    def _cell(self, cell: int) -> np.ndarray:\n"
        "        row = np.zeros(self.length, dtype=np.float32)\n"
        "        row[cell] = 1.0\n"
        "        return row\n\n"
        "    def _move(self, pos: np.ndarray, actions: np.ndarray) -> np.ndarray:\n",
    ),
]

HISTORY: list[tuple[str, list[Edit]]] = [
    ("Record the episode lengths", C1),
    ("Refactor: the corridor's moves in one helper", C2),
    ("Tidy the rollout and the returns helper", C3),
    ("Observations from a per-walker helper", C4),
]

# The two-hunks-together pair: v2 = v1 + these
PAIR: list[Edit] = [
    # harmless
    *C1[:2],
    C3[5],
    # x: no defensive copy (safe while the environment returns a fresh array every step)
    ("tinyrl/train.py", "        b_obs.append(obs.copy())\n", "        b_obs.append(obs)\n"),
    # y: observations written into one reused buffer (safe while the trainer copies them)
    (
        "tinyrl/env.py",
        "        self.t = np.zeros(num_envs, dtype=np.int64)\n",
        "        self.t = np.zeros(num_envs, dtype=np.int64)\n"
        "        self._obs = np.zeros((num_envs, length), dtype=np.float32)  # reused: no allocation per step\n",
    ),
    (
        "tinyrl/env.py",
        "        return self.eye[self.pos], reward, done\n",
        "        np.take(self.eye, self.pos, axis=0, out=self._obs)\n        return self._obs, reward, done\n",
    ),
]


def edit(root: Path, edits: list[Edit]) -> None:
    """Apply text edits to files under ``root`` (an empty old text writes a new file).

    Raises:
        ValueError: An edit's old text does not occur exactly once (the sources changed under it), or a new
            file exists already.
    """
    for path, old, new in edits:
        target = root / path
        if not old:
            if target.exists():
                raise ValueError(f"{path} exists; an edit with no old text writes a new file")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(new)
            continue
        text = target.read_text()
        if text.count(old) != 1:
            raise ValueError(
                f"{path}: expected the text to replace exactly once, found {text.count(old)}: {old!r}"
            )
        target.write_text(text.replace(old, new))


def copy_sources(dest: Path) -> None:
    for rel in SOURCES:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HERE / rel, dest / rel)


def _git(repo: Path, *args: str, date: str = "") -> str:
    env = dict(os.environ)
    if date:  # author and committer dates fixed: the same example always has the same commit hashes
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    env.update(
        GIT_AUTHOR_NAME="Ada Example",
        GIT_AUTHOR_EMAIL="ada@example.org",
        GIT_COMMITTER_NAME="Ada Example",
        GIT_COMMITTER_EMAIL="ada@example.org",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
    )
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


FIRST_MESSAGE = "tinyrl: REINFORCE on a vectorized corridor"


def _built_here(dest: Path) -> bool:
    """True when ``dest`` is a repository this script wrote (its first commit is the example's)."""
    try:
        first = _git(dest, "log", "--reverse", "--format=%s").splitlines()
    except (subprocess.CalledProcessError, OSError):
        return False
    return bool(first) and first[0] == FIRST_MESSAGE and (dest / "tinyrl" / "train.py").is_file()


def build(dest: str | Path, history: list[tuple[str, list[Edit]]] | None = None) -> dict[str, object]:
    """Write the example repository to ``dest`` (a new or empty directory, or an earlier build of it, which is
    replaced: the commits and their hashes come out the same).

    Returns:
        ``{"repo", "commits" (oldest first, the baseline first), "subjects" (commit -> message),
        "culprit", "throughput"}`` (the last two: the commits holding the learning and the speed regression).
    """
    dest = Path(dest).resolve()
    if dest.exists() and any(dest.iterdir()):
        if not _built_here(dest):
            raise FileExistsError(f"{dest} is not empty; give a new directory for the example repository")
        # an earlier build of this example: build it again (the same commits, hashes included)
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    copy_sources(dest)
    _git(dest, "init", "-q", "-b", "main")
    commits = []
    steps = [
        (FIRST_MESSAGE, []),
        *list(HISTORY if history is None else history),
    ]
    for i, (message, edits) in enumerate(steps):
        edit(dest, edits)
        _git(dest, "add", "-A")
        date = f"2024-05-0{i + 1}T10:00:00+00:00"
        _git(dest, "-c", "commit.gpgsign=false", "commit", "-q", "-m", message, date=date)
        commits.append(_git(dest, "rev-parse", "HEAD"))
    _git(dest, "tag", "baseline", commits[0])  # git:DEST@baseline and git:DEST@main name the two sides
    return {
        "repo": str(dest),
        "commits": commits,
        "subjects": {sha: msg for sha, (msg, _) in zip(commits, steps, strict=True)},
        "culprit": commits[3] if history is None else None,
        "throughput": commits[4] if history is None else None,
    }


def build_pair(dest: str | Path) -> dict[str, str]:
    """Write ``dest/v1`` (the trainer) and ``dest/v2`` (with :data:`PAIR`'s hunks); returns both subject paths."""
    dest = Path(dest).resolve()
    out = {}
    for name, edits in (("v1", []), ("v2", PAIR)):
        root = dest / name
        if root.exists():
            raise FileExistsError(f"{root} exists; give a new directory for the example pair")
        copy_sources(root)
        edit(root, edits)
        out[name] = str(root / "subject.py")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", help="a new directory to write the example into")
    parser.add_argument(
        "--pair", action="store_true", help="write two directories v1, v2 instead of a repository"
    )
    args = parser.parse_args(argv)
    made = build_pair(args.dest) if args.pair else build(args.dest)
    json.dump(made, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
