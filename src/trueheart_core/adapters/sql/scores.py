"""Candidates of a lexical search from their terms' scores, shared by the SQL backends.

A statement sums each memory's terms' scores in whatever order its plan reads them, and
cuts at the ``window``-th best of those sums with ``ranking.SUM_SLACK`` to spare. It then
returns the kept memories' terms' scores (one row each, or one list per memory); this
module adds them exactly (``ranking.score``) and cuts again at the exact edge, so every
backend returns the same candidates with the same scores, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from trueheart_core.domain.search import ranking
from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import SearchCandidate

__all__ = ["SLACK_FACTOR", "from_groups", "from_parts"]

SLACK_FACTOR = 1.0 - ranking.SUM_SLACK
"""What a statement multiplies its rounded ``window``-th best sum by before cutting."""


def from_parts(rows: Iterable[Sequence[Any]], window: int) -> list[SearchCandidate]:
    """The candidates scoring at least the exact ``window``-th best score, unordered,
    from rows that begin ``(memory_id, part, created_at, clear_until, recall_until)``:
    one row per term a memory holds, its times repeated on each (later columns are
    ignored). A part that is not a double, or a score that is not finite (a damaged
    posting), is :class:`RepositoryCorruption`."""
    parts: dict[Any, list[Any]] = {}
    first: dict[Any, Sequence[Any]] = {}
    for row in rows:
        found = parts.get(row[0])
        if found is None:
            parts[row[0]] = [row[1]]
            first[row[0]] = row
        else:
            found.append(row[1])
    return _cut(
        {memory_id: (found, first[memory_id]) for memory_id, found in parts.items()}, window
    )


def from_groups(rows: Iterable[Sequence[Any]], window: int) -> list[SearchCandidate]:
    """:func:`from_parts` from rows that begin ``(memory_id, parts, created_at,
    clear_until, recall_until)``: one row per memory, with the list of its terms'
    scores."""
    grouped: dict[Any, tuple[Any, Sequence[Any]]] = {}
    for row in rows:
        if row[0] in grouped or not isinstance(row[1], list):
            raise RepositoryCorruption("invalid search index")
        grouped[row[0]] = (row[1], row)
    return _cut(grouped, window)


def _cut(grouped: dict[Any, tuple[Any, Sequence[Any]]], window: int) -> list[SearchCandidate]:
    scores: dict[str, float] = {}
    for memory_id, (found, _) in grouped.items():
        if type(memory_id) is not str or any(type(part) is not float for part in found):
            raise RepositoryCorruption("invalid search index")
        score = ranking.score(found)
        if not math.isfinite(score):
            raise RepositoryCorruption("invalid search index")
        scores[memory_id] = score
    floor = ranking.window_floor(scores.values(), window)
    return [
        SearchCandidate(memory_id, score, *grouped[memory_id][1][2:5])
        for memory_id, score in scores.items()
        if score >= floor
    ]
