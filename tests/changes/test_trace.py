"""Tracing which functions of the subject's files run, and the probe that traces other probes."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

from rlaudit.changes import probes as change_probes
from rlaudit.changes.trace import FunctionTrace, functions_by_subsystem
from rlaudit.probe import ProbeContext

SOURCE = """
class Walker:
    def step(self):
        return helper() + 1


def helper():
    return 1


def unused():
    return 2


def run():
    return Walker().step()
"""


def _module(tmp_path: Path, name: str = "traced_mod") -> types.ModuleType:
    path = tmp_path / "pkg" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_functions_that_ran_are_recorded_by_qualified_name(tmp_path):
    mod = _module(tmp_path)
    with FunctionTrace([tmp_path]) as trace:
        mod.run()
        mod.run()
    assert set(trace.functions) == {
        "pkg/traced_mod.py::run",
        "pkg/traced_mod.py::Walker.step",
        "pkg/traced_mod.py::helper",
    }
    # outside the roots nothing is recorded: the standard library ran too
    with FunctionTrace([tmp_path / "elsewhere"]) as trace:
        mod.run()
    assert trace.functions == {}


def test_a_tracer_already_installed_keeps_its_events_and_is_restored(tmp_path):
    mod = _module(tmp_path, "traced_mod2")
    seen: list[str] = []

    def outer(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(str(tmp_path)):
            seen.append(frame.f_code.co_name)
        return None

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        with FunctionTrace([tmp_path]) as trace:
            mod.run()
        assert sys.gettrace() is outer
    finally:
        sys.settrace(previous)
    if not hasattr(sys, "monitoring"):  # sys.settrace chains to the tracer that was there
        assert seen == ["run", "step", "helper"]
    assert "pkg/traced_mod2.py::helper" in trace.functions


def test_the_probe_traces_other_probes_in_the_subjects_process(tmp_path):
    root = tmp_path / "project"
    (root / "tools").mkdir(parents=True)
    (root / "lib.py").write_text("def keys():\n    return {'loss': ['gamma']}\n")
    subject_file = root / "tools" / "subject.py"
    subject_file.write_text("")
    sys.path.insert(0, str(root))
    try:
        import lib

        subject = types.SimpleNamespace(
            __file__=str(subject_file),
            config=lambda overrides=None: {"gamma": 0.9},
            config_keys=lambda: lib.keys(),
        )
        out = tmp_path / "out"
        out.mkdir()
        ctx = ProbeContext(subject, {"gamma": 0.9}, out, "x", frozenset({"config", "config_keys"}))
        probes = [
            {
                "label": "config",
                "subsystem": "config",
                "probe": "rlaudit.config.probes:resolved_config",
                "params": {},
            },
            {
                "label": "training",
                "subsystem": "training",
                "probe": "rlaudit.trainer.probes:train_run",
                "params": {"steps": 8, "seed": 0},
            },
            {"label": "nowhere", "subsystem": "env", "probe": "rlaudit.no_such_room:probe", "params": {}},
        ]
        result = change_probes.trace(ctx, probes=probes, up=1)
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("lib", None)
    import json

    written = json.loads((out / "functions.json").read_text())
    assert result["root"] == str(root.resolve())
    assert written["config"]["functions"] == {"lib.py::keys": 1}
    assert written["training"]["missing"] == ["train"]
    assert written["nowhere"]["error"].startswith("ModuleNotFoundError")
    assert functions_by_subsystem(written) == {"lib.py::keys": ["config"]}
