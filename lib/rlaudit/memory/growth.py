"""Where does memory grow? tracemalloc allocation sites inside the subject's code, live objects by type and
containers reachable from the environment, each fitted per 1000 episodes and compared with the baseline's
counterpart (case 004's label dictionary gained an entry per episode and was never pruned).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.env.analysis import sizes
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.memory import plots, probes
from rlaudit.memory.common import BYTES_PER_1000_EPISODES, ENTRIES_PER_1000_EPISODES, kib
from rlaudit.notebook import Section


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of the columns of ``y`` (n, k) against ``x`` (n,)."""
    xc = x - x.mean()
    sxx = float((xc * xc).sum())
    if sxx == 0:
        return np.zeros(y.shape[1])
    return (xc[:, None] * (y - y.mean(axis=0))).sum(axis=0) / sxx


def growth_per_episode(values: pd.DataFrame, points: pd.DataFrame, key: str, value: str) -> pd.DataFrame:
    """Per item (``key``), the least-squares growth of ``value`` per 1000 episodes over the snapshots.

    The first snapshot (taken right after reset) is left out of the fit when there are four or more, so a
    structure filled once at the start (a table built on the first update) does not read as growth; and an
    item only counts as growing ``linearly`` when the second half of the snapshots still grows at half the
    overall rate or more (a leak keeps growing, a cache that filled up does not).

    Args:
        values: Long table with ``snapshot``, ``key`` and ``value`` columns (absent = 0 at that snapshot).
        points: The snapshots' ``snapshot`` and ``episodes``.

    Returns:
        ``item``, ``first``, ``last``, ``per_1000_episodes``, ``monotone`` (never shrinks by more than 5%),
        ``linear``, sorted by growth, largest first.
    """
    columns = ["item", "first", "last", "per_1000_episodes", "monotone", "linear"]
    if values.empty or len(points) < 3:
        return pd.DataFrame(columns=columns)
    wide = (
        values.pivot_table(index="snapshot", columns=key, values=value, aggfunc="sum")
        .reindex(points["snapshot"])
        .fillna(0.0)
    )
    x = points.set_index("snapshot").loc[wide.index, "episodes"].to_numpy(dtype=float)
    y = wide.to_numpy(dtype=float)
    fit = slice(1, None) if len(x) >= 4 else slice(None)
    if np.ptp(x[fit]) == 0:
        return pd.DataFrame(columns=columns)
    slope = _slope(x[fit], y[fit])
    half = len(x) // 2
    late = _slope(x[half:], y[half:]) if np.ptp(x[half:]) > 0 else slope
    drops = np.diff(y, axis=0)
    monotone = (drops >= -0.05 * np.maximum(np.abs(y[:-1]), 1.0)).all(axis=0)
    out = pd.DataFrame(
        {
            "item": wide.columns.astype(str),
            "first": y[0],
            "last": y[-1],
            "per_1000_episodes": 1000.0 * slope,
            "monotone": monotone,
            "linear": late >= 0.5 * slope,
        }
    )
    return out.sort_values("per_1000_episodes", ascending=False, ignore_index=True)


def compare_growth(base: pd.DataFrame, cand: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Items whose candidate growth per 1000 episodes exceeds ``threshold``, is monotone and linear, and is
    more than twice the baseline's growth of the same item (and beyond it by ``threshold``)."""
    b = base.set_index("item")["per_1000_episodes"] if len(base) else pd.Series(dtype=float)
    rows = []
    for r in cand.itertuples():
        gb = float(b.get(r.item, 0.0))
        if (
            r.per_1000_episodes > threshold
            and r.monotone
            and r.per_1000_episodes > 2 * max(gb, 0.0)
            and (r.per_1000_episodes - gb > threshold)
        ):
            rows.append(
                {
                    "item": r.item,
                    "first": r.first,
                    "last": r.last,
                    "candidate per 1000 episodes": r.per_1000_episodes,
                    "baseline per 1000 episodes": gb,
                }
            )
    return pd.DataFrame(
        rows, columns=["item", "first", "last", "candidate per 1000 episodes", "baseline per 1000 episodes"]
    )


def site_key(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``sites`` table with a ``site`` column, ``file: code``: a site is matched across versions by file
    and source text (line numbers shift between versions)."""
    out = frame.copy()
    out["site"] = out["file"].astype(str) + ": " + out["code"].astype(str)
    return out


def growth_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
    """The :func:`rlaudit.memory.probes.growth_sites` parameters at the workbench's profile (the check's and
    the site picker's, so both read one cache entry)."""
    sz = sizes(wb.profile)
    return {"seed": seed, "steps": sz.memory_site_steps, "snapshots": sz.memory_snapshots}


GROWTH_UNITS = {
    "containers": "entries, or bytes for an array's #bytes",
    "sites": "bytes held by the site",
    "types": "live objects",
}
"""What the first, last and per-1000-episodes columns of each growth table count (a table's name says it)."""

GROWTH_UNIT = {"containers": "entries (bytes for #bytes)", "sites": "bytes", "types": "objects"}
"""The unit of each growth table's numbers, short, for its headers."""


def _headed(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """A growth table with its unit on every number's header (``first`` -> ``bytes at the first snapshot``)."""
    unit = GROWTH_UNIT[kind]
    return frame.rename(
        columns={
            "first": f"{unit} at the first snapshot",
            "last": f"{unit} at the last snapshot",
            "per_1000_episodes": f"{unit} per 1000 episodes",
            "candidate per 1000 episodes": f"candidate: {unit} per 1000 episodes",
            "baseline per 1000 episodes": f"baseline: {unit} per 1000 episodes",
        }
    )


def _first(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The first non-empty flagged table, in order of evidence strength (containers, sites, types)."""
    return next(t for t in tables.values() if len(t))


@check(
    "memory/growth-sites",
    title="Where does memory grow?",
    probe=probes.growth_sites,
    params=growth_params,
    desc="memory: where it grows",
    reads=("curriculum", "env"),
)
def growth_sites(c: Check, pair: Pair) -> Section:
    """Nothing in the candidate grows with every episode that does not grow in the baseline.

    tracemalloc allocation sites, live objects by type, and containers reachable from the env.
    """
    grow: dict[str, dict[str, pd.DataFrame]] = {}
    for s in SIDES:
        points = pair[s].table("points")
        sites = site_key(pair[s].table("sites"))
        grow[s] = {
            "sites": growth_per_episode(sites, points, "site", "size"),
            "subject_sites": growth_per_episode(sites[sites["subject"]], points, "site", "size"),
            "types": growth_per_episode(pair[s].table("types"), points, "type", "count"),
            "containers": growth_per_episode(pair[s].table("containers"), points, "path", "size"),
        }
    base, cand = grow["baseline"], grow["candidate"]
    flagged = {
        "containers": compare_growth(base["containers"], cand["containers"], ENTRIES_PER_1000_EPISODES),
        "sites": compare_growth(base["sites"], cand["sites"], BYTES_PER_1000_EPISODES),
        "types": compare_growth(base["types"], cand["types"], ENTRIES_PER_1000_EPISODES),
    }
    # Byte-counting containers (numpy arrays, "#bytes") use the byte threshold instead of the entry one.
    cont = flagged["containers"]
    is_bytes = cont["item"].str.endswith("#bytes")
    flagged["containers"] = cont[~is_bytes | (cont["candidate per 1000 episodes"] > BYTES_PER_1000_EPISODES)]
    episodes = {s: int(pair[s].table("points")["episodes"].max()) for s in SIDES}
    parts = []
    if len(flagged["containers"]):
        r = flagged["containers"].iloc[0]
        parts.append(
            f"`{r['item']}` grew from {fmt(r['first'])} to {fmt(r['last'])} "
            f"(+{fmt(r['candidate per 1000 episodes'])} per 1000 episodes; baseline "
            f"{fmt(r['baseline per 1000 episodes'])})"
        )
    if len(flagged["sites"]):
        r = flagged["sites"].iloc[0]
        parts.append(
            f"allocation site `{r['item']}` holds +{kib(r['candidate per 1000 episodes'])} per 1000 "
            f"episodes (baseline {kib(r['baseline per 1000 episodes'])})"
        )
    if len(flagged["types"]):
        r = flagged["types"].iloc[0]
        parts.append(f"live `{r['item']}` objects +{fmt(r['candidate per 1000 episodes'])} per 1000 episodes")
    tables = {f"flagged {k} ({GROWTH_UNITS[k]})": _headed(v, k) for k, v in flagged.items() if len(v)}
    for s in SIDES:
        tables[f"fastest-growing sites in the subject's code ({s}; {GROWTH_UNITS['sites']})"] = _headed(
            grow[s]["subject_sites"].head(8), "sites"
        )
    if parts:
        confirmed = len(flagged["containers"]) and (len(flagged["sites"]) or len(flagged["types"]))
        r = _first(flagged).iloc[0]
        finding = c.finding(
            Status.CONFIRMED if confirmed else Status.SUSPECT,
            Severity.HIGH,
            baseline=f"{fmt(r['baseline per 1000 episodes'])} per 1000 episodes",
            candidate=f"{fmt(r['candidate per 1000 episodes'])} per 1000 episodes ({r['item']})",
            effect=float(r["candidate per 1000 episodes"] - r["baseline per 1000 episodes"]),
            effect_label="extra growth per 1000 episodes",
            summary=f"grows with every episode in the candidate only (over {episodes['candidate']} episodes): "
            + "; ".join(parts)
            + " (case 004's unbounded per-episode dictionary)",
            details={k: v.to_dict("records") for k, v in flagged.items()},
            remediation="Bound the growing structure: key it by task (not by episode), prune it, or drop it; "
            "a per-episode entry that is never removed costs memory and slows every lookup.",
            figures=["what grows"],
        )
    else:
        top_c = cand["subject_sites"].head(1)
        what = (
            (
                f"; the fastest-growing site in the subject's code, `{top_c['item'].iloc[0]}`, grows "
                f"{kib(top_c['per_1000_episodes'].iloc[0])} per 1000 episodes in both"
            )
            if len(top_c)
            else ""
        )
        finding = c.finding(
            Status.CLEARED,
            baseline=f"{episodes['baseline']} episodes",
            candidate=f"{episodes['candidate']} episodes",
            summary="no allocation site, object type or container grows per episode in the "
            "candidate beyond the baseline" + what,
            remediation="Nothing to do.",
            figures=["what grows"],
        )
    return c.section(
        finding,
        tables=tables,
        figures={"what grows": _growth_figure(grow, flagged)},
        notes=[
            "tracemalloc snapshots after a garbage collection at evenly spaced points of a random-"
            "policy rollout; sites are matched across versions by file and source line text. "
            f"Flagged: growth above {fmt(ENTRIES_PER_1000_EPISODES)} entries or "
            f"{kib(BYTES_PER_1000_EPISODES)} per 1000 episodes, never shrinking, and more than "
            "twice the baseline's."
        ],
    )


def _growth_figure(grow: dict[str, dict[str, pd.DataFrame]], flagged: dict[str, pd.DataFrame]) -> Any:
    """Bars of the flagged items' growth on both sides (the candidate's fastest subject sites when none is)."""
    items: set[str] = set()
    for k in ("containers", "sites"):
        items |= set(flagged[k]["item"].head(5))
    if not items:
        items = set(grow["candidate"]["subject_sites"]["item"].head(5))
    bars = [
        {"item": r.item[:70], "side": s, "per_1000_episodes": r.per_1000_episodes}
        for s in SIDES
        for kind in ("containers", "sites")
        for r in grow[s][kind][grow[s][kind]["item"].isin(items)].itertuples()
    ]
    return plots.growth_bars(
        pd.DataFrame(bars, columns=["item", "side", "per_1000_episodes"]), "what grows per 1000 episodes"
    )
