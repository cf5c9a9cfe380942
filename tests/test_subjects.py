"""Spec strings, pair files, capabilities and the adapter registry (rlaudit.engine.subjects)."""

from __future__ import annotations

import argparse
import os
import sys
import types
from pathlib import Path

import pytest

from rlaudit.adapters.template import run_new_subject
from rlaudit.engine import subjects
from rlaudit.engine.subjects import (
    CAPABILITIES,
    SubjectSpec,
    capabilities,
    load_pair_file,
    load_subject,
    loader_for,
    parse_spec,
)

# --- each form ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("builtin:reference", "reference"),
        ("builtin:regressed", "regressed"),
        ("builtin:reference+lr_schedule,env_rebuild", "reference+lr_schedule,env_rebuild"),
        ("builtin:regressed-gae_off_by_one", "regressed-gae_off_by_one"),
    ],
)
def test_builtin_forms(text: str, target: str) -> None:
    spec = parse_spec(text)
    assert (spec.scheme, spec.target, spec.text, spec.label) == ("builtin", target, text, text)
    assert spec.python == "" and spec.interpreter == sys.executable


@pytest.mark.parametrize("text", ["builtin:", "builtin:ref erence", "builtin:a/b", "builtin"])
def test_malformed_builtin_says_what_was_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"builtin:<"):
        parse_spec(text)


def test_file_spec_relative_to_base_dir(toy_subject: Path) -> None:
    spec = parse_spec("toy/subject.py", base_dir=toy_subject.parent.parent)
    assert spec.scheme == "file"
    assert spec.text == spec.target == str(toy_subject)
    assert spec.cwd == str(toy_subject.parent)  # a subject runs in its own directory by default
    assert spec.label == "toy/subject.py"  # reports show what the user wrote


def test_directory_means_its_subject_py(toy_subject: Path) -> None:
    assert parse_spec(str(toy_subject.parent)).target == str(toy_subject)


def test_missing_subject_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.py.*not found.*looked for"):
        parse_spec(str(tmp_path / "nope.py"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"has no subject\.py"):
        parse_spec(str(tmp_path / "empty"))


def test_module_forms(tmp_path: Path) -> None:
    spec = parse_spec("mypkg.subject", base_dir=tmp_path)
    assert (spec.scheme, spec.target, spec.attr, spec.cwd) == ("module", "mypkg.subject", "", str(tmp_path))
    spec = parse_spec("mypkg.subjects:Baseline.v1")
    assert (spec.scheme, spec.target, spec.attr) == ("module", "mypkg.subjects", "Baseline.v1")


def test_git_forms(tmp_path: Path) -> None:
    spec = parse_spec("git:https://github.com/me/proj.git@abc123:tools/subject.py")
    assert (spec.scheme, spec.target, spec.ref, spec.path) == (
        "git",
        "https://github.com/me/proj.git",
        "abc123",
        "tools/subject.py",
    )
    # '@' and ':' inside the repository address; default subject path.
    spec = parse_spec("git:git@github.com:me/proj.git@release/v2")
    assert (spec.target, spec.ref, spec.path) == ("git@github.com:me/proj.git", "release/v2", "subject.py")
    # a local repository is made absolute
    (tmp_path / "repo").mkdir()
    spec = parse_spec("git:repo@HEAD~1", base_dir=tmp_path)
    assert spec.target == str(tmp_path / "repo")
    with pytest.raises(ValueError, match=r"git:<repo>@<ref>"):
        parse_spec("git:https://github.com/me/proj.git")


def test_sb3_form_parses_and_checks_the_file(tmp_path: Path) -> None:
    (tmp_path / "ppo.yaml").write_text("algo: ppo\n")
    spec = parse_spec("sb3:ppo.yaml", base_dir=tmp_path)
    assert (spec.scheme, spec.target) == ("sb3", str(tmp_path / "ppo.yaml"))
    with pytest.raises(FileNotFoundError, match="SB3 setup file"):
        parse_spec("sb3:missing.yaml", base_dir=tmp_path)


def test_unknown_scheme_lists_known_schemes() -> None:
    with pytest.raises(ValueError, match=r"unknown subject scheme 'hf'.*builtin, git, sb3"):
        parse_spec("hf:org/some-model")


@pytest.mark.parametrize("text", ["", "   ", "two words", "a..b"])
def test_malformed_spec_lists_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match="expected one of: builtin:<name>"):
        parse_spec(text)


# --- python, cwd, env ------------------------------------------------------------------------------------


def test_interpreter_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"interpreter .* not found or not executable"):
        parse_spec("builtin:reference", python=str(tmp_path / "venv/bin/python"))
    with pytest.raises(FileNotFoundError, match="not on PATH"):
        parse_spec("builtin:reference", python="python-rlaudit-does-not-exist")


def test_interpreter_symlink_is_kept(tmp_path: Path) -> None:
    link = tmp_path / "python-alt"
    link.symlink_to(sys.executable)
    spec = parse_spec("builtin:reference", python="./python-alt", base_dir=tmp_path)
    # Not resolved: a venv's python is a symlink, and resolving it would leave the venv.
    assert spec.python == str(link) == spec.interpreter


def test_env_values_become_strings_and_nesting_is_refused() -> None:
    spec = parse_spec("builtin:reference", env={"OMP_NUM_THREADS": 1, "SCALE": 0.5})
    assert dict(spec.env) == {"OMP_NUM_THREADS": "1", "SCALE": "0.5"}
    with pytest.raises(ValueError, match=r"boolean.*quote it"):  # YAML's `DEBUG: on` is True, not "on"
        parse_spec("builtin:reference", env={"DEBUG": True})
    with pytest.raises(ValueError, match="must be a string or number"):
        parse_spec("builtin:reference", env={"X": {"nested": 1}})


def test_cwd_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="working directory"):
        parse_spec("builtin:reference", cwd=str(tmp_path / "nowhere"))


def test_spec_round_trips_and_hashes() -> None:
    spec = parse_spec("builtin:reference", env={"A": "1"}, label="ref")
    again = SubjectSpec.from_dict(spec.to_dict())
    assert again == spec and hash(again) == hash(spec)
    assert len({spec, again, spec.replace(env={"A": "2"})}) == 2
    assert str(spec) == "builtin:reference" and spec.display == "ref"


# --- pair files ------------------------------------------------------------------------------------------


def _old_and_new(tmp_path: Path, toy_subject: Path) -> Path:
    """A layout like a user's: ../old with its own venv python, ./ with the pair file."""
    old = tmp_path / "old"
    (old / ".venv/bin").mkdir(parents=True)
    (old / "subject.py").write_text(toy_subject.read_text())
    (old / ".venv/bin/python").symlink_to(sys.executable)
    new = tmp_path / "new"
    new.mkdir()
    (new / "subject.py").write_text(toy_subject.read_text())
    return new


def test_pair_file_resolves_paths_against_its_directory(tmp_path: Path, toy_subject: Path) -> None:
    new = _old_and_new(tmp_path, toy_subject)
    (new / "pair.yaml").write_text(
        "baseline:  {spec: ../old/subject.py, python: ../old/.venv/bin/python, env: {OMP_NUM_THREADS: '1'}}\n"
        "candidate: {spec: ./subject.py, label: my change}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = os.getcwd()
    os.chdir(elsewhere)  # the pair file's directory is the base, not the current one
    try:
        baseline, candidate = load_pair_file(new / "pair.yaml")
    finally:
        os.chdir(cwd)
    assert baseline.target == str(tmp_path / "old/subject.py")
    assert baseline.python == str(tmp_path / "old/.venv/bin/python")
    assert dict(baseline.env) == {"OMP_NUM_THREADS": "1"}
    assert candidate.target == str(new / "subject.py") and candidate.label == "my change"
    assert candidate.python == ""


def test_pair_file_accepts_plain_spec_strings(tmp_path: Path) -> None:
    (tmp_path / "pair.yaml").write_text("baseline: builtin:reference\ncandidate: builtin:regressed\n")
    baseline, candidate = load_pair_file(tmp_path / "pair.yaml")
    assert (baseline.text, candidate.text) == ("builtin:reference", "builtin:regressed")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (
            "baseline: builtin:reference\ncandidate: builtin:regressed\nthird: x\n",
            "unknown top-level key.*third",
        ),
        (
            "baseline: {spec: builtin:reference, pyhton: x}\ncandidate: builtin:regressed\n",
            "unknown key.*pyhton",
        ),
        ("baseline: builtin:reference\n", "does not declare candidate"),
        ("baseline: {python: x}\ncandidate: builtin:regressed\n", "mapping with spec:"),
        ("baseline: [unclosed\n", "not valid YAML"),
        ("- just\n- a list\n", "must be a mapping"),
    ],
)
def test_bad_pair_files_say_what_is_wrong(tmp_path: Path, content: str, match: str) -> None:
    (tmp_path / "pair.yaml").write_text(content)
    with pytest.raises(ValueError, match=match):
        load_pair_file(tmp_path / "pair.yaml")


def test_pair_file_missing_interpreter_and_file(tmp_path: Path) -> None:
    (tmp_path / "pair.yaml").write_text(
        "baseline: {spec: builtin:reference, python: ../old/.venv/bin/python}\ncandidate: builtin:regressed\n"
    )
    with pytest.raises(FileNotFoundError, match=r"interpreter '\.\./old/\.venv/bin/python'"):
        load_pair_file(tmp_path / "pair.yaml")
    with pytest.raises(FileNotFoundError, match="pair file"):
        load_pair_file(tmp_path / "absent.yaml")


def test_requirements_resolve_against_the_base_and_are_part_of_the_spec(tmp_path: Path) -> None:
    spec = parse_spec(
        "builtin:reference", requirements="envs/req.txt", system_site_packages=True, base_dir=tmp_path
    )
    # resolved, but not required to exist yet: a missing file is the subject's own error at worker start
    assert spec.requirements == str(tmp_path / "envs" / "req.txt") and spec.system_site_packages is True
    assert spec.interpreter == sys.executable  # the base the environment is built from
    again = SubjectSpec.from_dict(spec.to_dict())
    assert again == spec and hash(again) == hash(spec)
    plain = parse_spec("builtin:reference")
    assert (plain.requirements, plain.system_site_packages) == ("", False)
    assert len({plain, spec, spec.replace(system_site_packages=False)}) == 3
    # an existing spec takes them as overrides too
    assert parse_spec(plain, requirements="r.txt", base_dir=tmp_path).requirements == str(tmp_path / "r.txt")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"requirements": "r.txt", "system_site_packages": "yes"}, "must be true or false, got 'yes'"),
        ({"system_site_packages": True}, "system_site_packages but no requirements file"),
        ({"requirements": ""}, "must be the path of a pip requirements file"),
    ],
)
def test_bad_requirements_settings(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_spec("builtin:reference", **kwargs)


def test_pair_file_requirements_and_system_site_packages(tmp_path: Path, toy_subject: Path) -> None:
    new = _old_and_new(tmp_path, toy_subject)
    (new / "pair.yaml").write_text(
        "baseline:  {spec: ../old/subject.py, python: ../old/.venv/bin/python,\n"
        "            requirements: ../old/requirements.txt, system_site_packages: true}\n"
        "candidate: {spec: ./subject.py, requirements: requirements-new.txt}\n"
    )
    cwd = os.getcwd()
    os.chdir(tmp_path)  # relative to the pair file's directory, not the current one
    try:
        baseline, candidate = load_pair_file(new / "pair.yaml")
    finally:
        os.chdir(cwd)
    assert baseline.requirements == str(tmp_path / "old" / "requirements.txt")
    assert baseline.system_site_packages is True
    assert baseline.python == str(tmp_path / "old/.venv/bin/python")  # the base of the environment
    assert candidate.requirements == str(new / "requirements-new.txt")
    assert candidate.system_site_packages is False and candidate.python == ""
    (new / "bad.yaml").write_text(
        "baseline: {spec: ./subject.py, requirements: r.txt, system_site_packages: 'no'}\n"
        "candidate: ./subject.py\n"
    )
    with pytest.raises(ValueError, match=r"system_site_packages of subject .* must be true or false"):
        load_pair_file(new / "bad.yaml")
    (new / "typo.yaml").write_text(
        "baseline: {spec: ./subject.py, requirement: r.txt}\ncandidate: ./subject.py\n"
    )
    with pytest.raises(ValueError, match=r"unknown key.*requirement.*expected.*requirements"):
        load_pair_file(new / "typo.yaml")


# --- capabilities and loading ------------------------------------------------------------------------------


def test_capabilities_are_the_callables_present() -> None:
    subject = types.SimpleNamespace(config=lambda: {}, make_env="not callable", train=print, other=print)
    assert capabilities(subject) == {"config", "train"}
    assert set(CAPABILITIES) >= {"config", "make_env", "train", "load_checkpoint", "config_keys"}


def test_load_file_subject(toy_subject: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    module = load_subject(parse_spec(str(toy_subject)))
    assert capabilities(module) == {"config", "make_env"}
    assert module.config()["lr"] == 0.1
    assert sys.path[0] == str(toy_subject.parent)  # its neighbours import, as under `python subject.py`
    monkeypatch.delitem(sys.modules, module.__name__)


def test_load_module_subject_with_attr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "rlaudit_toy_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "subj.py").write_text(
        "class Candidate:\n    @staticmethod\n    def config():\n        return {'a': 1}\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    subject = load_subject(parse_spec("rlaudit_toy_pkg.subj:Candidate", base_dir=tmp_path))
    assert subject.config() == {"a": 1}
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        load_subject(parse_spec("rlaudit_toy_pkg.subj:Nope", base_dir=tmp_path))
    monkeypatch.delitem(sys.modules, "rlaudit_toy_pkg.subj")
    monkeypatch.delitem(sys.modules, "rlaudit_toy_pkg")


def test_load_failure_propagates(broken_subject: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(ModuleNotFoundError, match="rlaudit_no_such_module_for_tests"):
        load_subject(parse_spec(str(broken_subject)))


def test_unregistered_scheme_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ppo.yaml").write_text("algo: ppo\n")
    spec = parse_spec("sb3:ppo.yaml", base_dir=tmp_path)
    monkeypatch.setattr(subjects, "ADAPTERS", dict(subjects.ADAPTERS))
    # registered by name, but its module does not exist (yet): not loadable
    subjects.register_adapter("sb3", subjects.lazy_loader("rlaudit_no_such_adapter_module:load"))
    with pytest.raises(ValueError, match=r"no adapter is registered for scheme 'sb3'.*builtin, file"):
        loader_for(spec)
    del subjects.ADAPTERS["sb3"]  # not registered at all
    with pytest.raises(ValueError, match=r"schemes that can be loaded: builtin, file, .*module"):
        load_subject(spec)


def test_registered_adapter_plugs_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subjects, "ADAPTERS", dict(subjects.ADAPTERS))
    seen = []

    def load(spec: SubjectSpec) -> object:
        seen.append(spec.target)
        return types.SimpleNamespace(config=lambda: {"from": spec.target})

    subjects.register_adapter("toyhub", load)
    spec = parse_spec("toyhub:org/model")  # would be an unknown scheme without the registration
    assert (spec.scheme, spec.target) == ("toyhub", "org/model")
    assert load_subject(spec).config() == {"from": "org/model"} and seen == ["org/model"]


def test_lazy_loader_imports_on_first_use() -> None:
    loader = subjects.lazy_loader("copy:copy")
    spec = parse_spec("builtin:reference")
    assert loader(spec) == spec


def test_new_subject_writes_a_loadable_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    args = argparse.Namespace(dir=str(tmp_path / "mine"), force=False)
    assert run_new_subject(args) == 0
    module = load_subject(parse_spec(str(tmp_path / "mine")))  # the template imports as a subject
    assert capabilities(module) <= set(CAPABILITIES)
    with pytest.raises(ValueError, match="--force"):
        run_new_subject(args)
    monkeypatch.delitem(sys.modules, module.__name__, raising=False)


def test_relative_paths_resolve_against_the_directory_the_user_ran_the_command_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make report BASELINE=data/x/subject.py` runs its notebooks in notebooks/; the path still means
    "from where I typed it" (RLAUDIT_WORKDIR, which the CLI sets)."""
    project = tmp_path / "project"
    (project / "data" / "v1").mkdir(parents=True)
    (project / "data" / "v1" / "subject.py").write_text("def config():\n    return {}\n")
    (project / "data" / "setup.yaml").write_text("algo: ppo\n")
    (project / "pair.yaml").write_text("baseline: data/v1/subject.py\ncandidate: data/v1/subject.py\n")
    elsewhere = tmp_path / "notebooks"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("RLAUDIT_WORKDIR", str(project))
    spec = parse_spec("data/v1/subject.py")
    assert spec.target == str(project / "data" / "v1" / "subject.py")
    assert spec.label == "data/v1/subject.py"
    assert parse_spec("sb3:data/setup.yaml").target == str(project / "data" / "setup.yaml")
    baseline, _ = load_pair_file("pair.yaml")
    assert baseline.target == spec.target
    monkeypatch.delenv("RLAUDIT_WORKDIR")
    with pytest.raises(FileNotFoundError, match="looked for"):
        parse_spec("data/v1/subject.py")
