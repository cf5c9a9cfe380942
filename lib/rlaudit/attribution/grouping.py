"""Units of hunks, as the group testing splits and merges them: halves, chunks, sets of hunks that name each
other (connected components), and the labels and digests that name a unit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rlaudit.changes.hunks import Hunk
from rlaudit.changes.scopes import linked

# ------------------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------------------


def flat(units: Sequence[Sequence[Hunk]]) -> list[Hunk]:
    return [h for u in units for h in u]


def halves(units: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    half = (len(units) + 1) // 2
    return list(units[:half]), list(units[half:])


def connected(n: int, related: Callable[[int, int], bool]) -> list[list[int]]:
    """The indices ``0..n-1`` grouped into connected components of ``related`` (union-find over every pair),
    each component in index order, components in the order of their first index."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a in range(n):
        for b in range(a + 1, n):
            if related(a, b):
                parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def components(hunks: Sequence[Hunk]) -> list[list[Hunk]]:
    """``hunks`` grouped into sets that name each other (:func:`~rlaudit.changes.scopes.linked`,
    transitively), each set in the order of ``hunks``, sets in the order of their first hunk."""
    return [
        [hunks[i] for i in members]
        for members in connected(len(hunks), lambda a, b: linked(hunks[a], hunks[b]))
    ]


def chunks(units: Sequence[Any], n: int) -> list[list[Any]]:
    n = max(1, min(n, len(units)))
    size, extra = divmod(len(units), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(list(units[start:end]))
        start = end
    return out


def label(hunks: Sequence[Hunk]) -> str:
    """A short name for a set of hunks: ``"train.py:collect @@ -74,8 +77,8 @@"`` or ``"3 hunks (a, b, ...)"``."""
    if len(hunks) == 1:
        h = hunks[0]
        return (
            f"{h.short_commit + ':' if h.commit else ''}{h.path.split('/')[-1]}"
            + (f":{h.function}" if h.function else "")
            + f" {h.header}"
        )
    files = sorted({h.path.split("/")[-1] for h in hunks})
    return f"{len(hunks)} hunks in {', '.join(files[:3])}{'...' if len(files) > 3 else ''} ({digest(hunks)})"


def digest(hunks: Sequence[Hunk]) -> str:
    import hashlib

    return hashlib.sha256("\0".join(sorted(h.id for h in hunks)).encode()).hexdigest()[:6]
