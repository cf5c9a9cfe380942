"""The change search in the report: the summary notebook's section, the hunk explorer, and the executive
summary's sentences about each culprit.

- :func:`section`: which commits and hunks explain the gap, as tables (commits with their verdicts, the arms
  with their shares, the culprits, what was spent against a per-commit and a per-hunk sweep, unresolved
  hybrids, the search log) and the culprits' diffs.
- :func:`explore`: in JupyterLab, a picker over every hunk showing its diff and the arms that reverted or
  applied it; elsewhere (papermill, nbval, the HTML report) the culprits' diffs, statically.
- :func:`summary_sentences` and :func:`culprit_rows`: what the executive summary says about each culprit
  (commit and subject line, file and function, the shares with intervals, the reverse check, the cost).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from rlaudit.attribution.arms import DEFAULT_DELTA, ci_label
from rlaudit.attribution.culprits import ChangeResult, Culprit
from rlaudit.changes.priors import hunk_table
from rlaudit.evidence import settle_phrase

METRIC_WORDS = {"sps": "the CPU time per step lost"}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _share(e: Any) -> str:
    if e is None:
        return "not measured"
    seeds = "1 seed" if e.n == 1 else f"{e.n} seeds"
    return f"{_pct(e.point)} ({ci_label(getattr(e, 'family', 1))} {_pct(e.low)}..{_pct(e.high)}, {seeds})"


def _label(metric: str) -> str:
    return "throughput" if metric == "sps" else metric


class Diff:
    """A unified diff shown as a coloured block (HTML) or plain text; a table value of a section."""

    def __init__(self, text: str, title: str = "") -> None:
        self.text = text
        self.title = title

    def _repr_html_(self) -> str:
        lines = []
        for line in self.text.splitlines():
            colour = ""
            if line.startswith("+") and not line.startswith("+++"):
                colour = "background:#e6ffec"
            elif line.startswith("-") and not line.startswith("---"):
                colour = "background:#ffebe9"
            elif line.startswith("@@"):
                colour = "color:#6a737d"
            lines.append(
                f'<span style="{colour}">{html.escape(line)}</span>' if colour else html.escape(line)
            )
        head = f"<p><b>{html.escape(self.title)}</b></p>" if self.title else ""
        return (
            head
            + '<pre class="rl-diff" style="font-size:85%;line-height:1.25">'
            + "\n".join(lines)
            + "</pre>"
        )

    def __repr__(self) -> str:
        return (self.title + "\n" if self.title else "") + self.text


def culprit_rows(result: ChangeResult) -> list[dict[str, Any]]:
    """One row per culprit: rank, commit and subject, file, function, header, shares and reverse checks."""
    rows = []
    for rank, c in enumerate(result.culprits, start=1):
        h = c.hunks[0]
        row: dict[str, Any] = {
            "rank": rank,
            "commit": f"{h.short_commit} {c.commit.subject}" if c.commit else "(no history)",
            "file": ", ".join(dict.fromkeys(x.path for x in c.hunks)),
            "function": ", ".join(dict.fromkeys(x.where or "(module)" for x in c.hunks)),
            "hunk": "; ".join(x.header for x in c.hunks),
            "subsystem": c.subsystem,
            "verdict": c.verdict,
        }
        for m in result.active:
            row[f"restores {_label(m)} gap"] = _share(c.effects.get(m))
            row[f"reproduces {_label(m)} gap alone"] = _share(c.reproduced.get(m))
            if m in c.together:
                row[f"reproduces {_label(m)} gap with its partners"] = _share(c.together[m])
        row["note"] = c.note
        rows.append(row)
    return rows


def cost_sentence(result: ChangeResult) -> str:
    """What the search spent against a per-commit and a per-hunk sweep at the profile's seeds."""
    s = result.spent
    per_commit = (
        f", a per-commit sweep {s['per_commit_sweep_runs']}"
        if s.get("per_commit_sweep_runs") is not None
        else ""
    )
    return (
        f"The change search spent {s['runs']} training runs ({s['cached_runs']} from the cache), baseline and "
        f"candidate included; at {s['seeds_per_arm_max']} seeds a per-hunk sweep of its {s['hunks']} hunks "
        f"would cost {s['per_hunk_sweep_runs']}{per_commit} ({s['runs'] / max(1, s['per_hunk_sweep_runs']):.0%} "
        "of the per-hunk sweep)."
    )


def summary_sentences(result: ChangeResult | None) -> list[str]:
    """The executive summary's sentences: each culprit named with its commit, file, function and hunk, the
    share of each gap reverting it restores and applying it alone reproduces, and the cost."""
    if result is None:
        return []
    if not result.active:
        return ["Code changes: no measurable gap to attribute to them."]
    out = []
    for c in result.culprits:
        if c.verdict not in ("cause", "minor"):
            continue
        h = c.hunks[0]
        where = f"{h.path}, {h.where or 'module level'}, {h.header}"
        if len(c.hunks) > 1:
            where += f" (with {len(c.hunks) - 1} more hunk{'s' if len(c.hunks) > 2 else ''})"
        commit = f"commit {h.short_commit} “{c.commit.subject}”: " if c.commit else ""
        shares = []
        for m in result.active:
            e = c.effects.get(m)
            if e is None or not e.contributes(DEFAULT_DELTA):
                continue  # no share of this gap to speak of (its interval reaches down to noise)
            text = f"reverting it restores {_share(e)} of {METRIC_WORDS.get(m, f'the {m} gap')}"
            r = c.reproduced.get(m)
            if r is not None:
                text += f"; applied alone to the baseline it reproduces {_pct(r.point)} ({_pct(r.low)}..{_pct(r.high)})"
            if m in c.together:
                t = c.together[m]
                text += f", {_pct(t.point)} with its partners"
            shares.append(text)
        kind = "Culprit" if c.verdict == "cause" else "Minor contributor"
        out.append(f"{kind}: {commit}{where}: " + "; ".join(shares) + ".")
    if not out:
        out.extend(_undecided_sentences(result))
    if not out:
        out.append("Code changes: no commit or hunk restores a meaningful share of a gap on its own.")
    out.extend(_incomparable_sentences(result))
    out.append(cost_sentence(result))
    return out


def _incomparable_sentences(result: ChangeResult) -> list[str]:
    """One sentence per metric whose shares the search could not decide because their runs were timed at too
    different loads (``incomparable``): how many arms, and why, with both loads."""
    out = []
    for m in result.active:
        reasons = [r for a in result.arms if (r := (a.get("effects", {}).get(m) or {}).get("incomparable"))]
        if reasons:
            out.append(
                f"Code changes, {METRIC_WORDS.get(m, f'the {m} gap')}: {len(reasons)} "
                f"share{'s' if len(reasons) != 1 else ''} undecided, whatever their intervals: {reasons[0]}."
            )
    return out


def _undecided_sentences(result: ChangeResult) -> list[str]:
    """When no hunk is decided a cause, what the search did narrow down, so that the summary never says "no
    commit restores a meaningful share" above a log that names culprits: the undecided hunks with their shares
    and the seeds that would decide them, else the commits the bisection called culprits, with their ranges'
    shares."""
    words = {m: METRIC_WORDS.get(m, f"the {m} gap") for m in result.active}
    out = []
    for c in [c for c in result.culprits if c.verdict == "undecided"][:3]:
        h = c.hunks[0]
        commit = f"commit {h.short_commit} “{c.commit.subject}”: " if c.commit else ""
        effects = {m: e for m, e in c.effects.items() if m in words}
        shares = "; ".join(f"{_share(e)} of {words[m]}" for m, e in effects.items())
        needed = [n for e in effects.values() if (n := e.seeds_to_decide(DEFAULT_DELTA))]
        settle = f"; {settle_phrase(max(needed), per='arm', verb='decide it')}" if needed else ""
        out.append(
            f"Narrowed down but undecided: {commit}{h.path}, {h.where or 'module level'}, {h.header}: reverting "
            f"it restores {shares}, an interval too wide at the seeds spent to call it a cause or rule it out"
            f"{settle}."
        )
    if out:
        return out
    for row in [r for r in result.commits if str(r.get("verdict", "")).startswith("culprit")][:3]:
        ranges = [r for r in result.ranges if r["first"] <= row["index"] <= r["last"] and r["effects"]]
        effects = ranges[-1]["effects"] if ranges else {}
        shares = "; ".join(
            f"{_pct(e['point'])} ({_pct(e['low'])}..{_pct(e['high'])}) of {words[m]}"
            for m, e in effects.items()
            if m in words
        )
        restores = f": reverting it restores {shares}" if shares else ""
        out.append(
            f"The bisection names commit {str(row['sha'])[:7]} “{row['subject']}” as a culprit{restores}; no "
            "single hunk of it is shown to restore a meaningful share on its own at the seeds spent (the search "
            "log below says what ran)."
        )
    return out


def _arm_rows(result: ChangeResult) -> list[dict[str, Any]]:
    rows = []
    for a in result.arms:
        if a["name"] in ("baseline", "candidate"):
            continue
        row: dict[str, Any] = {
            "arm": a["name"],
            "kind": a["kind"],
            "seeds": a["seeds"],
            "share": "reproduced in the baseline" if a["kind"] == "apply" else "restored",
        }
        for m in result.active:
            e = a["effects"].get(m)
            row[f"{_label(m)} gap"] = f"{_pct(e['point'])} ({_pct(e['low'])}..{_pct(e['high'])})" if e else ""
        row["unresolved"] = a["unresolved"]
        rows.append(row)
    return rows


def findings(result: ChangeResult | None) -> list[Any]:
    """The search's own verdicts: a NOTED finding for the hybrids that could not be built or run (unresolved,
    as in delta debugging: recorded, and the search split around them), naming each and why."""
    from rlaudit.findings import Evidence, Finding, Severity, Status

    if result is None or not result.unresolved:
        return []
    hunks = result.change_set.hunks()
    subs = [
        hunks[h].subsystem for u in result.unresolved for h in u["hunks"] if h in hunks and hunks[h].subsystem
    ]
    items = [f"{u['arm']}: {u['reason']}" for u in result.unresolved]
    return [
        Finding(
            id="summary/changes-unresolved",
            subsystem=max(subs, key=subs.count) if subs else "trainer",
            hypothesis="Every subset of the code changes the search tried builds and runs",
            status=Status.NOTED,
            severity=Severity.INFO,
            evidence=Evidence(
                summary=f"{len(items)} hybrid(s) or checkout(s) could not run (the search split around them): "
                + "; ".join(items[:5])
                + (f"; and {len(items) - 5} more" if len(items) > 5 else ""),
                details={"unresolved": result.unresolved},
            ),
            remediation="None needed: hunks that only import or run together are kept together by the search.",
        )
    ]


def section(result: ChangeResult | None, notes: Sequence[str] = ()) -> Any:
    """The summary notebook's section: which commit, which hunk, how much of the gap."""
    import pandas as pd

    from rlaudit.notebook import Section

    title = "Which commit, which hunk?"
    if result is None:
        return Section(title=title, notes=list(notes) or ["the code changes were not searched"])
    tables: dict[str, Any] = {}
    if result.commits:
        tables["commits"] = pd.DataFrame(
            [
                {
                    "#": r["index"],
                    "commit": r["sha"][:7],
                    "subject": r["subject"],
                    "hunks": r["hunks"],
                    "prior": round(r["prior"], 3),
                    "verdict": r["verdict"],
                    "decided by": r["decided_by"].removeprefix("range "),
                }
                for r in result.commits
            ]
        )
    if result.culprits:
        tables["culprits"] = pd.DataFrame(culprit_rows(result))
        for rank, c in enumerate(result.culprits[:3], start=1):
            tables[f"culprit {rank}: the diff"] = Diff(c.diff(), _culprit_title(c))
    tables["hunks searched, strongest prior first"] = pd.DataFrame(
        hunk_table(sorted(result.change_set.searched, key=lambda h: -h.prior))
    )
    tables["arms"] = pd.DataFrame(_arm_rows(result))
    tables["spent"] = pd.DataFrame([result.spent])
    if result.unresolved:
        tables["unresolved hybrids"] = pd.DataFrame(result.unresolved)
    if result.log:
        tables["search log"] = pd.DataFrame(
            {"step": range(1, len(result.log) + 1), "what ran and why": result.log}
        )
    return Section(
        title=title,
        findings=findings(result),
        tables=tables,
        notes=[*notes, *summary_sentences(result), *result.notes],
    )


def _culprit_title(c: Culprit) -> str:
    commit = f"{c.hunks[0].short_commit} {c.commit.subject} — " if c.commit else ""
    return f"{commit}{c.name.split(' ', 1)[1] if c.commit else c.name}"


def hunk_arms(result: ChangeResult, hunk_id: str) -> list[dict[str, Any]]:
    """The arms that reverted or applied ``hunk_id`` (alone or in a group), with their shares."""
    arms = [a for a in result.arms if a["name"] not in ("baseline", "candidate")]
    return [row for row, a in zip(_arm_rows(result), arms, strict=True) if hunk_id in a["hunks"]]


class _Note:
    """A one-line note shown in place of a widget."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return f'<p class="rl-muted">{html.escape(self.text)}</p>'

    def __repr__(self) -> str:
        return self.text


def explore(result: ChangeResult | None) -> Any:
    """Pick a hunk, see its diff and the arms that reverted or applied it: ipywidgets in JupyterLab; elsewhere
    (papermill, nbval, the HTML report) a note, since :func:`section` already shows the culprits' diffs."""
    from rlaudit.display import interactive

    if result is None:
        return _Note("the code changes were not searched")
    hunks = result.change_set.searched
    if not interactive():
        return _Note(
            f"{len(hunks)} hunks searched; the culprits' diffs are above (open the notebook in JupyterLab to pick "
            "any hunk and see its diff and arms)"
        )
    import ipywidgets as widgets
    import pandas as pd
    from IPython.display import HTML, display

    culprit_ids = {h.id for c in result.culprits for h in c.hunks}
    options = [(("★ " if h.id in culprit_ids else "") + f"{h.id} {h.function}", h.id) for h in hunks]
    pick = widgets.Dropdown(options=options, description="hunk", layout=widgets.Layout(width="80%"))
    by_id = {h.id: h for h in hunks}

    def show(hunk_id: str) -> None:
        h = by_id[hunk_id]
        display(
            HTML(
                Diff(h.text(), f"{h.id}: {h.subsystem or 'no subsystem'}, prior {h.prior:.3g}")._repr_html_()
            )
        )
        rows = hunk_arms(result, hunk_id)
        display(pd.DataFrame(rows) if rows else HTML("<p>no arm reverted or applied this hunk</p>"))

    out = widgets.interactive_output(show, {"hunk_id": pick})
    return widgets.VBox([pick, out])


def diff_html(text: str, title: str = "") -> str:
    """A unified diff as a coloured HTML block (for pages that render the summary's ``changes``)."""
    return Diff(text, title)._repr_html_()


def payload(result: ChangeResult | None) -> dict[str, Any] | None:
    """What ``attribution.json`` keeps of the change search: the culprits (commit, subject, path, function,
    header, diff, shares and reverse checks), the commits' verdicts, what it spent, its sentences."""
    if result is None:
        return None
    return {
        "sentences": summary_sentences(result),
        "culprits": [c.to_dict() for c in result.culprits],
        "commits": result.commits,
        "spent": result.spent,
        "unresolved": result.unresolved,
        "notes": result.notes,
    }


NOT_SEARCHED = (
    "The code changes were not searched: the two sides are not versions of one source (git: refs of one "
    "repository, or two directories of one package), or CHANGES=off."
)


def notebook_section(wb: Any, findings_dir: str = "") -> Any:
    """The summary notebook's section for the last change search on this workbench's pair (run by attribution),
    saved as ``changes.json`` beside the findings."""
    from rlaudit.attribution.code_changes import last_result, save

    result = last_result(wb)
    if result is not None and findings_dir:
        save(result, findings_dir)
    return section(result, [] if result is not None else [NOT_SEARCHED])


def explore_last(wb: Any) -> Any:
    """:func:`explore` over the last change search on this workbench's pair."""
    from rlaudit.attribution.code_changes import last_result

    return explore(last_result(wb))
