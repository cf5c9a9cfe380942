"""`rlaudit new-subject DIR`: the subject template."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlaudit.adapters.template import run_new_subject, template_text, write_subject_template
from rlaudit.engine.paths import LIB_DIR
from rlaudit.engine.subjects import CAPABILITIES, capabilities


def _import(path: Path):
    spec = importlib.util.spec_from_file_location(f"tmpl_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_template_imports_cleanly_and_has_no_capabilities(tmp_path: Path) -> None:
    path = write_subject_template(tmp_path / "proj")
    assert path == tmp_path / "proj" / "subject.py"
    assert capabilities(_import(path)) == set()
    # and in a fresh interpreter, as the worker would import it
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_every_capability_is_documented_commented_out(tmp_path: Path) -> None:
    text = template_text()
    for name in CAPABILITIES:
        assert re.search(rf"^# def {name}\(", text, re.M), f"{name} missing from the template"
    for signature in (
        "config(overrides",
        "checkpoints(config: dict, run_dir=None)",
        "log_dir(config: dict, run_dir=None)",
        "train(config: dict, steps: int, seed: int, recorder, env_fn=None, resume_from=None)",
        "env_fn(num_envs: int, seed: int) -> gymnasium.vector.VectorEnv",
        "metrics() -> list[dict]",
    ):
        assert signature in text
    for recorder_call in ("recorder.watch(", "recorder.log(", "recorder.episode(", "recorder.phase("):
        assert recorder_call in text
    assert text.count("Must return") >= len(CAPABILITIES) - 1  # train "may return"
    # "return" is a keyword: the example must be valid Python as written
    assert 'recorder.episode(step=step, env=i, **{"return": r, "length": n})' in text
    assert "return=" not in text


def test_the_table_of_what_each_notebook_reads_names_every_notebook_and_capability() -> None:
    text = template_text()
    table = text[text.index("What each notebook reads") : text.index("The primary metric")]
    notebooks = sorted(p.stem for p in (LIB_DIR.parent / "notebooks").glob("[01][0-9]_*.ipynb"))
    assert len(notebooks) == 15
    for name in notebooks:
        assert re.search(rf"^  {name} ", table, re.M), f"{name} missing from the table"
    for name in CAPABILITIES:
        assert name in table, f"no notebook is said to read {name}"


def test_enabling_one_capability_gives_exactly_that_one(tmp_path: Path) -> None:
    path = write_subject_template(tmp_path)
    text = path.read_text()
    block = re.search(r"^# def config\(.*?^#     raise NotImplementedError\n", text, re.M | re.S).group(0)
    enabled = "\n".join(
        line[2:] if line.startswith("# ") else line.lstrip("#") for line in block.splitlines()
    )
    enabled = enabled.replace("    raise NotImplementedError", "    return {'lr': 1.0}")
    path.write_text(text.replace(block, enabled + "\n"))
    module = _import(path)
    assert capabilities(module) == {"config"}
    assert module.config() == {"lr": 1.0}


def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "subject.py"
    target.write_text("MINE = 1\n")
    with pytest.raises(ValueError, match=r"already exists.*--force"):
        write_subject_template(tmp_path)
    assert target.read_text() == "MINE = 1\n"
    write_subject_template(tmp_path, force=True)
    assert "def config" in target.read_text()


def test_cli_verb_writes_and_refuses(tmp_path: Path) -> None:
    env_cmd = [sys.executable, "-c", "import sys; from rlaudit.cli import main; sys.exit(main(sys.argv[1:]))"]
    env = {"PYTHONPATH": str(LIB_DIR), "PATH": "/usr/bin:/bin"}
    first = subprocess.run(
        [*env_cmd, "new-subject", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "subject.py").is_file() and "make report" in first.stdout
    second = subprocess.run(
        [*env_cmd, "new-subject", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert second.returncode == 2 and "already exists" in second.stderr and "Traceback" not in second.stderr


def test_run_new_subject_args_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    class Args:
        dir = str(tmp_path / "new")
        force = False

    assert run_new_subject(Args()) == 0
    assert "wrote" in capsys.readouterr().out
