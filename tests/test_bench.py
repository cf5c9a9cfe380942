"""``rlaudit bench``: every benchmark it names resolves, and none lives in the built-in subjects' package."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlaudit.demo
from rlaudit.bench import BENCHMARKS, load_benchmark


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_benchmark_resolves_to_a_function(name: str) -> None:
    assert callable(load_benchmark(name))


def test_an_unknown_benchmark_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="expected one of env, trainer"):
        load_benchmark("nope")


def test_the_demo_package_holds_no_benchmark() -> None:
    # the built-in subjects' fingerprint hashes demo/: a benchmark there would invalidate their cache
    demo = Path(rlaudit.demo.__file__).parent
    assert not sorted(p.name for p in demo.glob("bench*.py"))
    assert all(not target.startswith("rlaudit.demo.") for target in BENCHMARKS.values())
