"""The ``rlaudit report`` and ``rlaudit audit`` commands, and ``rlaudit bench report``.

:func:`run_report` executes the notebooks (:mod:`rlaudit.report.execution`, on the lanes of
:mod:`rlaudit.report.lanes`, longest first by :mod:`rlaudit.report.costs`), renders their pages
(:mod:`rlaudit.report.pages`) and writes the index (:mod:`rlaudit.report.index`). :func:`run_audit` runs the
same audits without notebooks (:func:`rlaudit.rooms.run_audits`).
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rlaudit import exits
from rlaudit.engine.fingerprint import EXCLUDE_VARIABLE
from rlaudit.engine.validate import check_inputs
from rlaudit.findings import (
    SUBSYSTEMS,
    Evidence,
    Finding,
    Status,
    load_findings,
    notebook_name,
    save_findings,
    sort_findings,
)
from rlaudit.report.costs import expected_costs, save_costs, schedule
from rlaudit.report.execution import NotebookRun, discover_notebooks, execute, notebook_environment, settle
from rlaudit.report.index import write_index
from rlaudit.report.lanes import Lanes, shared_kernels
from rlaudit.report.overview import Overview, collect_findings, format_seconds, is_summary, worst_status
from rlaudit.report.pages import render


def _parameters(args: Any) -> dict[str, Any]:
    from rlaudit.engine.paths import user_dir
    from rlaudit.profiles import get_profile

    pair = str(getattr(args, "pair", "") or "")
    if pair:
        pair_path = user_dir() / Path(pair).expanduser()
        if not pair_path.exists():
            raise FileNotFoundError(
                f"pair file {pair} does not exist; pass a YAML file declaring both subjects"
            )
        pair = str(pair_path.resolve())
    names = (str(args.baseline), str(args.candidate))
    if pair:
        from rlaudit.engine.subjects import load_pair_file

        # The pair file decides the subjects; the report names them as the file does (the notebooks get the
        # file itself and ignore these names).
        names = tuple(spec.display for spec in load_pair_file(pair))  # type: ignore[assignment]
    return {
        "baseline": names[0],
        "candidate": names[1],
        "profile": get_profile(getattr(args, "profile", None)).name,
        "pair_file": pair,
        "fresh": bool(getattr(args, "fresh", False)),
        "metric": str(getattr(args, "metric", "") or ""),
    }


def _summary_parameters(args: Any, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The summary's parameters: the pair's, plus the variant arms and the change-set search switch."""
    return {
        **parameters,
        "variants": str(getattr(args, "variants", "") or ""),
        "changes": str(getattr(args, "changes", "") or "auto"),
    }


def _command_line(parameters: Mapping[str, Any], jobs: int, notebooks: str) -> str:
    """The command that reproduces this report."""
    words = [
        "rlaudit",
        "report",
        "--baseline",
        parameters["baseline"],
        "--candidate",
        parameters["candidate"],
    ]
    if parameters.get("pair_file"):
        words += ["--pair", parameters["pair_file"]]
    for key in ("metric", "variants"):
        if parameters.get(key):
            words += [f"--{key}", str(parameters[key])]
    if parameters.get("changes") not in (None, "", "auto"):
        words += ["--changes", str(parameters["changes"])]
    words += ["--profile", parameters["profile"], "-j", str(jobs)]
    if parameters.get("fresh"):
        words.append("--fresh")
    if notebooks:
        words += ["--notebooks", notebooks]
    return shlex.join(words)


_PRINT_LOCK = threading.Lock()


def _print(line: str = "") -> None:
    with _PRINT_LOCK:  # the lanes' threads print too: one line at a time
        print(line, flush=True)


def _excluding(current: str, path: Path) -> str:
    """``current`` (an ``os.pathsep`` list) with ``path`` added."""
    return os.pathsep.join(p for p in (current, str(path)) if p)


def run_report(args: Any) -> int:
    """``rlaudit report``: execute the notebooks, render the pages, write ``index.html``.

    Args:
        args: Parsed arguments of ``rlaudit report`` (baseline, candidate, pair, profile, fresh, jobs,
            executor, ray_address, out, notebooks).

    Returns:
        The exit code (:mod:`rlaudit.exits`): 3 when a notebook did not run or save its findings, else 4 for
        ERROR findings, 5 for a CONFIRMED one, 6 for a SUSPECT one, as far as ``args.fail_on`` looks; 0
        otherwise. The report is written either way.
    """
    from rlaudit.display import versions
    from rlaudit.engine.paths import notebooks_dir, reports_dir
    from rlaudit.profiles import get_profile

    wall_start = time.perf_counter()
    started = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    jobs = max(1, int(getattr(args, "jobs", 1) or 1))
    nb_dir = notebooks_dir()
    selected = discover_notebooks(nb_dir, getattr(args, "notebooks", "") or "")
    out = Path(args.out).expanduser().resolve() if getattr(args, "out", None) else reports_dir()
    # Bad input fails here, in seconds, with the same messages as `rlaudit audit`: not in every notebook.
    check_inputs(args, out=out, say=_print)
    parameters = _parameters(args)
    findings_dir = out / "findings"
    findings_dir.mkdir(parents=True, exist_ok=True)
    parameters["findings_dir"] = str(findings_dir)
    executor = getattr(args, "executor", "local")
    ray_address = getattr(args, "ray_address", "auto")
    fresh_since = time.time() if parameters["fresh"] else None
    # While up to -j notebooks run side by side each probes one job at a time; the summary runs alone and
    # may use all -j for its attribution runs.
    env = notebook_environment(
        jobs, executor, ray_address, probe_jobs=1 if jobs > 1 else None, fresh_since=fresh_since
    )
    env_last = notebook_environment(jobs, executor, ray_address, probe_jobs=jobs, fresh_since=fresh_since)
    for notebook_env in (env, env_last):
        # The report it writes is never part of a subject's fingerprint, even inside the subject's directory.
        notebook_env[EXCLUDE_VARIABLE] = _excluding(notebook_env.get(EXCLUDE_VARIABLE, ""), out)

    runs = [
        NotebookRun(
            name=p.stem,
            source=p,
            output=out / "notebooks" / p.name,
            html=out / f"{p.stem}.html",
            log=out / "logs" / f"{p.stem}.log",
            findings_path=findings_dir / f"{p.stem}.json",
        )
        for p in selected
    ]
    for run in runs:
        # A findings file left from an earlier run would hide a notebook that now fails to save one.
        run.findings_path.unlink(missing_ok=True)
    first = [r for r in runs if not is_summary(r.name)]
    last = [r for r in runs if is_summary(r.name)]

    _print(
        f"rlaudit report: {parameters['baseline']} vs {parameters['candidate']} · profile {parameters['profile']} · "
        f"{len(runs)} notebook{'s' if len(runs) != 1 else ''} · -j {jobs} · output {out}"
    )
    done = 0

    def finished(run: NotebookRun) -> None:
        nonlocal done
        settle(run, parameters)
        render(run)
        done += 1
        worst = worst_status(run.findings)
        verdict = f"{worst.mark} {worst.value}" if worst else "no findings"
        flag = "ok" if run.outcome == "ok" else f"FAILED ({run.error})"
        _print(
            f"  [{done}/{len(runs)}] {run.name:<18} {format_seconds(run.seconds):>8}  {flag} · worst {verdict}"
        )

    summary_parameters = _summary_parameters(args, parameters)

    lanes = Lanes(jobs, nb_dir, env, out / "logs") if shared_kernels() else None

    def start(run: NotebookRun, run_env: Mapping[str, str]) -> NotebookRun:
        _print(f"  started {run.name}")
        given = summary_parameters if is_summary(run.name) else parameters
        return execute(run, given, nb_dir, run_env, lanes=lanes)

    try:
        # Longest expected first, so that the -j lanes finish together instead of one waiting on a long tail.
        ordered = schedule(first, expected_costs(out, parameters["profile"]))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(start, run, env): run for run in ordered}
            try:
                for future in as_completed(futures):
                    finished(future.result())
            except BaseException:
                for future in futures:
                    future.cancel()
                if lanes is not None:
                    lanes.close(kill=True)  # else leaving this block would wait for the running notebooks
                raise
        for run in last:  # the summary reads everyone else's findings, so it runs after they all finished
            finished(start(run, env_last))
    except BaseException:
        if lanes is not None:
            lanes.close(kill=True)  # interrupted: do not wait for the notebooks running on them
        raise
    finally:
        if lanes is not None:
            lanes.close()
    if parameters["fresh"]:
        save_costs(out, parameters["profile"], [r for r in runs if r.outcome == "ok"])

    overview = collect_findings(findings_dir, exclude=(), parameters=parameters)
    profile = get_profile(parameters["profile"])
    info = {
        "parameters": parameters,
        "profile": profile.name,
        "profile_sizes": f"{profile.seeds} seeds, {profile.train_steps:,} train steps, "
        f"{profile.rollout_steps:,} rollout steps",
        "options": f"-j {jobs}, executor {executor}, fresh {'yes' if parameters['fresh'] else 'no'}",
        "versions": versions(),
        "started": started,
        "wall_seconds": time.perf_counter() - wall_start,
        "command": _command_line(summary_parameters, jobs, getattr(args, "notebooks", "") or ""),
    }
    index = write_index(out, overview, runs, info)
    wall = time.perf_counter() - wall_start

    failed = [r for r in runs if r.outcome != "ok"]
    _print()
    _print(f"report: {index}")
    if failed:
        _print(
            f"{len(failed)} notebook(s) did not finish cleanly: "
            + ", ".join(f"{r.name} ({r.error})" for r in failed)
        )
    _print("where the time went:")
    longest = max((r.seconds for r in runs), default=0.0) or 1.0
    for run in sorted(runs, key=lambda r: -r.seconds):
        bar = "█" * max(1, int(30 * run.seconds / longest))
        _print(
            f"  {run.name:<18} {format_seconds(run.seconds):>8}  cpu {format_seconds(run.cpu_seconds):>8}  {bar}"
        )
    _print(
        f"  total wall {format_seconds(wall)} (notebooks {format_seconds(sum(r.seconds for r in runs))} "
        f"summed over {jobs} job{'s' if jobs != 1 else ''}, cpu {format_seconds(sum(r.cpu_seconds for r in runs))}, "
        f"rendering {format_seconds(sum(r.render_seconds for r in runs))})"
    )
    code = exits.exit_code(
        [f for r in runs for f in r.findings],
        fail_on=getattr(args, "fail_on", exits.DEFAULT_FAIL_ON),
        notebooks_failed=len(failed),
    )
    if code:
        _print(exits.describe(code))
    return code


_BENCH_CELLS = (
    "import rlaudit.notebook as rn\n"
    "from rlaudit.findings import Evidence, Finding\n"
    "session = rn.Session(SUBSYSTEM, baseline, candidate, profile, pair_file=pair_file, fresh=fresh,\n"
    "                     findings_dir=findings_dir)",
    "session.add(Finding(id=SUBSYSTEM + '/bench', subsystem=SUBSYSTEM, hypothesis='The report runs',\n"
    "                    status='CLEARED', evidence=Evidence(baseline=1, candidate=1, summary='same')))",
    "session.finish()",
)


def bench_report(quick: bool = False) -> list[dict[str, Any]]:
    """``rlaudit bench report``: what the report machinery costs around the audits themselves.

    Runs trivial notebooks (a session, one finding, ``finish()``) through :func:`run_report` in a temporary
    home, once with ``-j 1`` and once with ``-j 2``, and writes an index of 14 x 10 synthetic findings.

    Returns:
        Figures (``name``, ``value``, ``unit``; the ``-j`` comparison also ``baseline``, ``candidate``,
        ``ratio``): per-notebook overhead (papermill + kernel start + rendering), render time per page,
        index time, and the wall time of the two runs.
    """
    import argparse
    import contextlib
    import io
    import tempfile

    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    count = 2 if quick else 4
    parameters = (
        'baseline: str = "a"  # baseline spec\ncandidate: str = "b"  # candidate spec\n'
        'profile: str = "smoke"  # profile\npair_file: str = ""  # pair file\nfresh: bool = False  # fresh\n'
        'findings_dir: str = ""  # findings dir'
    )
    figures: list[dict[str, Any]] = []
    saved = {k: os.environ.get(k) for k in ("RLAUDIT_HOME", "RLAUDIT_REPORTS", "RLAUDIT_PROFILE")}
    with tempfile.TemporaryDirectory(prefix="rlaudit-bench-") as tmp:
        home = Path(tmp)
        (home / "notebooks").mkdir()
        for subsystem in SUBSYSTEMS[:count]:
            cells = [new_code_cell(parameters, metadata={"tags": ["parameters"]})]
            cells += [new_code_cell(f"SUBSYSTEM = {subsystem!r}")] + [new_code_cell(c) for c in _BENCH_CELLS]
            nb = new_notebook(
                cells=cells,
                metadata={
                    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
                },
            )
            nbformat.write(nb, home / "notebooks" / f"{notebook_name(subsystem)}.ipynb")
        walls = {}
        try:
            os.environ["RLAUDIT_HOME"] = str(home)
            os.environ.pop("RLAUDIT_PROFILE", None)
            for jobs in (1, 2):
                out = home / f"reports-j{jobs}"
                os.environ["RLAUDIT_REPORTS"] = str(out)
                args = argparse.Namespace(
                    baseline="builtin:reference", candidate="builtin:regressed", pair="", profile="smoke",
                    fresh=False, jobs=jobs,
                    executor="local", ray_address="auto", out=str(out), notebooks="",
                )  # fmt: skip
                started = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    code = run_report(args)
                walls[jobs] = time.perf_counter() - started
                if code != 0:
                    raise RuntimeError(f"bench notebooks failed; see the logs in {out / 'logs'}")
                if jobs == 1:
                    metas = [load_findings(p)[1] for p in sorted((out / "findings").glob("*.json"))]
                    figures.append(
                        {"name": "report.notebook_seconds", "value": round(walls[1] / count, 2), "unit": "s",
                         "note": f"wall per trivial notebook at -j 1 ({count} notebooks): papermill, kernel, render"}
                    )  # fmt: skip
                    inside = sum(m.get("duration_seconds", 0.0) for m in metas) / max(1, len(metas))
                    figures.append({"name": "report.session_seconds", "value": round(inside, 3), "unit": "s"})
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        figures.append(
            {"name": "report.parallel_wall", "value": round(walls[2], 2), "unit": "s", "baseline": round(walls[1], 2),
             "candidate": round(walls[2], 2), "ratio": round(walls[2] / walls[1], 3), "note": "-j 2 over -j 1"}
        )  # fmt: skip

        # Rendering and the index, measured alone.
        run = NotebookRun(
            name="01_agents",
            source=home / "notebooks" / "01_agents.ipynb",
            output=home / "reports-j1" / "notebooks" / "01_agents.ipynb",
            html=home / "render" / "01_agents.html",
            log=home / "render" / "01_agents.log",
            findings_path=home / "render" / "01_agents.json",
        )
        started = time.perf_counter()
        for _ in range(2 if quick else 5):
            render(run)
        figures.append(
            {"name": "report.render_seconds", "value": round((time.perf_counter() - started) / (2 if quick else 5), 3),
             "unit": "s"}
        )  # fmt: skip
        findings = [
            Finding(id=f"{s}/check-{i}", subsystem=s, hypothesis=f"check {i}", status=list(Status)[i % len(Status)],
                    notebook=notebook_name(s), evidence=Evidence(baseline=i, candidate=i + 1, effect=0.1 * i,
                    ci=(0.0, 0.2 * i), ci_level=0.95, summary=f"check {i} of {s}"))
            for s in SUBSYSTEMS for i in range(10)
        ]  # fmt: skip
        overview = Overview(findings_dir=home / "render", findings=sort_findings(findings))
        started = time.perf_counter()
        write_index(home / "render", overview, [], {"parameters": {"baseline": "a", "candidate": "b"}})
        figures.append(
            {"name": "report.index_seconds", "value": round(time.perf_counter() - started, 3), "unit": "s",
             "note": "index of 140 findings"}
        )  # fmt: skip
    return figures


def ranked_suspects_text(findings: Sequence[Finding]) -> str:
    """The subsystems ranked by audit evidence alone (what `rlaudit audit` can say without experiments).

    Mechanisms (a changed layer, term, schedule, reward) are ranked by the strength of their evidence; checks
    whose declared ``reads`` name a subsystem with a flagged mechanism may only echo it and count a fifth
    (:func:`rlaudit.attribution.ranking.knock_on`); symptoms (a learning or speed gap every cause produces)
    come last and point at no subsystem.
    """
    from rlaudit.attribution import rank_causes

    causes = rank_causes(findings)
    if not causes:
        return "no subsystem flagged: nothing to rank"
    lines = ["suspects by audit evidence (run `rlaudit report` to measure which ones explain the gap):"]
    for i, c in enumerate(causes, 1):
        ids = ", ".join(f.id for f in c.findings[:3]) + (" …" if len(c.findings) > 3 else "")
        strength = "symptom only" if c.verdict == "symptom" else f"evidence {c.strength.score:.2f}"
        lines.append(f"  {i:>2}. {c.subsystem:<14} {strength:<14} {ids}")
    return "\n".join(lines)


def run_audit(args: Any) -> int:
    """``rlaudit audit``: run the audits without notebooks, print the findings, save them as JSON.

    Returns:
        The exit code (:mod:`rlaudit.exits`): 4 for ERROR findings, 5 for a CONFIRMED one, 6 for a SUSPECT
        one, as far as ``args.fail_on`` looks; 0 otherwise.

    Raises:
        ValueError: Unknown subsystem names.
        FileNotFoundError: The pair file does not exist.
    """
    from rlaudit.display import findings_text, versions
    from rlaudit.notebook import _new_workbench
    from rlaudit.rooms import run_audits

    wanted = [s.strip() for s in (getattr(args, "subsystems", "") or "").split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SUBSYSTEMS]
    if unknown:
        raise ValueError(
            f"--subsystems: unknown {', '.join(unknown)}; expected any of {', '.join(SUBSYSTEMS)}"
        )
    check_inputs(args, say=_print)
    parameters = _parameters(args)
    started = time.perf_counter()
    _print(
        f"rlaudit audit: {parameters['baseline']} vs {parameters['candidate']} · profile {parameters['profile']}"
    )
    # The findings file it writes is never part of a subject's fingerprint (see rlaudit.engine.fingerprint).
    os.environ[EXCLUDE_VARIABLE] = _excluding(
        os.environ.get(EXCLUDE_VARIABLE, ""), Path(args.json_out).expanduser().resolve()
    )
    executor = getattr(args, "executor", "local")
    if executor != "local":  # the workbench reads these, as the notebooks of `rlaudit report` do
        os.environ["RLAUDIT_EXECUTOR"] = executor
        os.environ["RLAUDIT_RAY_ADDRESS"] = getattr(args, "ray_address", "auto") or "auto"
    wb = _new_workbench(
        parameters["baseline"],
        parameters["candidate"],
        parameters["profile"],
        parameters["fresh"],
        parameters["pair_file"],
        parameters["metric"],
    )
    findings = sort_findings(run_audits(wb, wanted or None, progress=lambda line: _print("  " + line)))
    _print()
    _print(findings_text(findings))
    _print()
    _print(ranked_suspects_text(findings))
    from rlaudit.display import status_counts
    from rlaudit.notebook import _fingerprints

    meta = {
        "notebook": "audit",
        "parameters": parameters,
        "subjects": dict(getattr(wb, "labels", {}) or {}),
        "fingerprints": _fingerprints(wb),
        "profile": parameters["profile"],
        "subsystems": wanted or list(SUBSYSTEMS),
        "versions": versions(),
        "duration_seconds": round(time.perf_counter() - started, 3),
        "counts": status_counts(findings),
    }
    path = save_findings(args.json_out, findings, meta)
    _print(f"\nwrote {len(findings)} findings to {path} ({format_seconds(time.perf_counter() - started)})")
    if findings and all(f.status is Status.ERROR for f in findings):
        _print("every audit errored: nothing was checked")
    code = exits.exit_code(findings, fail_on=getattr(args, "fail_on", exits.DEFAULT_FAIL_ON))
    if code:
        _print(exits.describe(code))
    return code
