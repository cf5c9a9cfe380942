"""How a finding's evidence reads: each value says what statistic it is, and the baseline comes first."""

from __future__ import annotations

from rlaudit.display import evidence_lines
from rlaudit.findings import Evidence, Finding, Severity, Status


def _finding(**evidence: object) -> Finding:
    return Finding(
        id="trainer/learning",
        subsystem="trainer",
        status=Status.NOTED,
        severity=Severity.LOW,
        hypothesis="The candidate learns as well as the baseline",
        evidence=Evidence(**evidence),
    )


def test_a_value_label_names_the_statistic_beside_both_values() -> None:
    lines = evidence_lines(
        _finding(baseline=0.118, candidate=0.0694, value_label="final heart.get, IQM over seeds")
    )
    assert lines[:2] == [
        ("baseline (final heart.get, IQM over seeds)", "0.118"),
        ("candidate (final heart.get, IQM over seeds)", "0.0694"),
    ]


def test_without_a_label_the_values_stand_alone_baseline_first() -> None:
    lines = evidence_lines(_finding(baseline=1.0, candidate=2.0, effect=1.0, effect_label="difference"))
    assert [label for label, _ in lines] == ["baseline", "candidate", "effect"]


def test_a_label_survives_the_findings_json() -> None:
    finding = _finding(baseline=1.0, candidate=2.0, value_label="SD over seeds")
    assert Finding.from_dict(finding.to_dict()).evidence.value_label == "SD over seeds"


def test_a_pivot_tables_headers_read_as_words_not_tuples() -> None:
    import pandas as pd

    from rlaudit.display import frame_html

    frame = pd.DataFrame({("definition", ""): ["mean of 100"], ("max_error", "baseline"): [0.5]})
    html = frame_html(frame)
    assert "<th>definition</th>" in html and "<th>max error · baseline</th>" in html
    assert "(" not in html.split("<tbody>")[0]


def test_a_side_suffix_is_spelled_out_in_a_header() -> None:
    from rlaudit.display import column_label

    assert column_label("std_b") == "std (baseline)" and column_label("dead_c") == "dead (candidate)"
    assert column_label("steps_per_s") == "steps per s" and column_label("n_a") == "n a"


def test_a_header_without_its_unit_or_meaning_is_caught() -> None:
    from rlaudit.display import bare_header

    for bare in ("ratio", "ci_low", "ci high", "first", "last", "value", "delta", "effect", "low_b",
                 ("ratio", "candidate"), "ci low (baseline)", "Difference", "95% CI high"):  # fmt: skip
        assert bare_header(bare), bare
    for named in ("candidate / baseline", "95% CI low (bytes per 1000 env steps)", "bytes at the first snapshot",
                  "final heart.get", "baseline", "side", ("max_error", "baseline"), "effect (% of baseline mean)",
                  "difference (candidate − baseline)", "first non-finite step"):  # fmt: skip
        assert not bare_header(named), named


def test_a_confidence_level_is_not_read_as_a_percentage_column() -> None:
    import pandas as pd

    from rlaudit.display import frame_html

    page = frame_html(pd.DataFrame({"95% CI low (candidate / baseline)": [0.82], "share of the gap": [0.25]}))
    assert '<td class="rl-num">0.82</td>' in page and '<td class="rl-num">25%</td>' in page
