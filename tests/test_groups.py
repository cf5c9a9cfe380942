"""The pytest-xdist grouping of ``make test``: files and room folders stay whole, the report files start
first, one per worker."""

from __future__ import annotations

from support.groups import LONGEST, first_in_line, xdist_group_of
from support.reports import ROOT


def test_a_notebooks_cells_and_a_files_tests_stay_together() -> None:
    assert xdist_group_of("notebooks/15_summary.ipynb::Cell 0") == xdist_group_of(
        "notebooks/15_summary.ipynb::Cell 7"
    )
    assert xdist_group_of("tests/test_io.py::test_a[x]") == xdist_group_of("tests/test_io.py::test_b")
    assert xdist_group_of("tests/test_io.py::test_a") != xdist_group_of("tests/test_cache.py::test_a")


def test_the_report_files_are_groups_of_their_own_and_exist() -> None:
    groups = {xdist_group_of(f"{path}::test_x") for path in LONGEST}
    assert groups == set(LONGEST)  # two groups: two workers can run them side by side
    for path in LONGEST:
        assert (ROOT / path).is_file(), f"{path} is named in support/groups.py but does not exist"


def test_the_reports_start_first() -> None:
    assert first_in_line("tests/test_readme.py::test_a_readme_command_works_as_written[make report]")
    assert first_in_line(
        "tests/test_subject_matrix.py::test_a_subject_with_only_config_is_skipped_everywhere_else"
    )
    assert not first_in_line("notebooks/15_summary.ipynb::Cell 0")


def test_a_rooms_test_files_share_one_group_and_cross_room_files_do_not() -> None:
    loss = xdist_group_of("tests/rooms/loss/test_gae.py::test_a")
    assert loss == xdist_group_of("tests/rooms/loss/test_audit.py::test_b[x]") == "tests/rooms/loss/"
    assert loss != xdist_group_of("tests/rooms/env/test_audit.py::test_b")
    golden = xdist_group_of("tests/rooms/test_golden_findings.py::test_a")
    assert golden == "tests/rooms/test_golden_findings.py"
    assert golden != xdist_group_of("tests/rooms/test_two_faults_rank_on_top.py::test_a")


def test_every_room_folder_with_a_package_fixture_is_a_package() -> None:
    """A ``scope="package"`` fixture of a folder without ``__init__.py`` lives for the whole session."""
    for conftest in (ROOT / "tests" / "rooms").glob("*/conftest.py"):
        assert (conftest.parent / "__init__.py").is_file(), f"{conftest.parent} needs an __init__.py"
