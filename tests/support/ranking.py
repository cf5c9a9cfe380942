"""The ranking matrix: every catalog fault alone against its built-in learner, and where its own subsystem lands
in "suspects by audit evidence" (the ranking `rlaudit audit` prints, before any experiment).

``python tests/support/ranking.py --profile standard`` prints the table and the top-1 / top-3 rates and
writes them as JSON (``--out``); ``--learner dqn`` does the same for the off-policy catalog against
``builtin:dqn``. ``tests/rooms/test_ranking_matrix.py`` asserts the rates under ``-m expensive``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Placement:
    """Where one fault's own subsystem lands in the evidence ranking.

    Attributes:
        fault: The catalog id.
        subsystem: The fault's own subsystem.
        rank: 1 for first place; 0 when the subsystem is not flagged at all.
        ranked: The ranked subsystems, strongest first (symptoms last).
        top: The first place's strongest findings (for a reader of a miss).
    """

    fault: str
    subsystem: str
    rank: int
    ranked: list[str]
    top: list[str]


LEARNERS = {"ppo": "builtin:reference", "dqn": "builtin:dqn"}
"""The built-in learners whose catalogs the matrix covers: the PPO pair's and the off-policy DQN's."""


def catalog(learner: str = "ppo") -> dict:
    """The fault catalog of a built-in learner (``ppo`` or ``dqn``)."""
    if learner == "dqn":
        from rlaudit.demo.dqn_subject import CATALOG
    elif learner == "ppo":
        from rlaudit.demo.faults import CATALOG
    else:
        raise ValueError(f"unknown learner {learner!r}; expected one of {', '.join(LEARNERS)}")
    return CATALOG


def place(fault: str, profile: str, learner: str = "ppo") -> Placement:
    """Run every audit on the learner's built-in spec against the same with ``+<fault>`` and place the fault."""
    from rlaudit.attribution.ranking import rank_causes
    from rlaudit.engine.workbench import Workbench
    from rlaudit.rooms import run_audits

    base = LEARNERS[learner]
    wb = Workbench(base, f"{base}+{fault}", profile=profile)
    try:
        causes = rank_causes(run_audits(wb))
    finally:
        wb.close()
    ranked = [c.subsystem for c in causes]
    own = catalog(learner)[fault].subsystem
    top = [f.id for f in causes[0].findings[:3]] if causes else []
    return Placement(fault, own, ranked.index(own) + 1 if own in ranked else 0, ranked, top)


def rates(placements: list[Placement]) -> dict[str, float]:
    """Share of faults whose own subsystem is first, and in the top three."""
    n = max(1, len(placements))
    return {
        "top1": sum(p.rank == 1 for p in placements) / n,
        "top3": sum(1 <= p.rank <= 3 for p in placements) / n,
        "faults": len(placements),
    }


def matrix(profile: str, faults: list[str] | None = None, learner: str = "ppo") -> list[Placement]:
    out = []
    for fault in faults or sorted(catalog(learner)):
        placement = place(fault, profile, learner)
        out.append(placement)
        print(
            f"{fault:<40} {placement.subsystem:<14} rank {placement.rank or '-':>2}  "
            f"first: {placement.ranked[0] if placement.ranked else '-'} {placement.top}",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--only", default="", help="comma-separated fault ids (default: the whole catalog)")
    parser.add_argument("--learner", default="ppo", choices=sorted(LEARNERS), help="whose catalog")
    parser.add_argument("--out", default="", help="write the placements and rates as JSON here")
    args = parser.parse_args(argv)
    placements = matrix(args.profile, [f for f in args.only.split(",") if f] or None, args.learner)
    summary = rates(placements)
    print(
        f"{args.learner}, profile {args.profile}: top-1 {summary['top1']:.0%}, top-3 {summary['top3']:.0%} of {summary['faults']}"
    )
    if args.out:
        payload = {
            "learner": args.learner,
            "profile": args.profile,
            "rates": summary,
            "placements": [asdict(p) for p in placements],
        }
        Path(args.out).write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
