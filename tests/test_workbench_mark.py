"""The ``workbench`` mark (``support.workers``): which tests start workers, read from their source, and the
guard that fails an unmarked test that starts one anyway."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

from support import workers


def _builds_a_workbench() -> None:
    from rlaudit.engine.workbench import Workbench

    Workbench("builtin:reference", "builtin:regressed").close()


def _calls_a_helper_that_does() -> None:
    _builds_a_workbench()


def _only_shares_a_name() -> None:
    report = {"a": 1}  # a local variable named like a starter
    print(report)


def _names_ray_init(ray: Any) -> None:
    ray.init(address="auto")


def _calls_an_object_init() -> None:
    SimpleNamespace().__init__()


def _sample(name: str) -> Any:
    # fetched by name: a test that named these helpers would itself be read as starting workers
    return globals()[name]


def test_a_starter_named_in_a_function_or_a_helper_it_calls_is_found() -> None:
    assert workers.starts_workers(_sample("_builds_a_workbench"))
    assert workers.starts_workers(_sample("_calls_a_helper_that_does"))
    assert not workers.starts_workers(_sample("_only_shares_a_name"))
    assert workers.starts_workers(_sample("_names_ray_init"))
    assert not workers.starts_workers(_sample("_calls_an_object_init"))


def test_a_fixture_that_starts_workers_marks_the_test_that_uses_it() -> None:
    def plain_test() -> None:
        pass

    definition = SimpleNamespace(func=_sample("_calls_a_helper_that_does"))
    uses = SimpleNamespace(
        function=plain_test, _fixtureinfo=SimpleNamespace(name2fixturedefs={"wb": [definition]})
    )
    alone = SimpleNamespace(function=plain_test, _fixtureinfo=SimpleNamespace(name2fixturedefs={}))
    assert workers.item_starts_workers(uses) and not workers.item_starts_workers(alone)


def test_the_guard_records_worker_launches_only_while_watching() -> None:
    launch = [sys.executable, "-c", "import sys  # rlaudit.engine.worker stand-in"]
    workers.GUARD.watch()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    subprocess.run(launch, check=True)
    launched = workers.GUARD.stop()
    assert len(launched) == 1 and "rlaudit.engine.worker" in launched[0]
    subprocess.run(launch, check=True)  # not watching: not recorded
    assert workers.GUARD.stop() == []
    assert "STARTERS" in workers.explain("tests/x.py::test_y", launched)
