"""The time order of a search's answer to a question about a period, shared by the SQL
backends, which read it in two statements and merge them here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trueheart_core.ports import RecallCandidate


def _newest_first(row: Sequence[Any]) -> tuple[int, str]:
    """``created_at`` descending, then ``memory_id`` ascending (a value of another type
    sorts as 0 or ``""``, for the service's checks to refuse)."""
    memory_id, created = row[0], row[1]
    created_key = -created if type(created) is int else 0
    return created_key, memory_id if isinstance(memory_id, str) else ""


def time_ordered(rows: Sequence[Sequence[Any]], newest: bool, limit: int) -> list[RecallCandidate]:
    """The first ``limit`` distinct ``(memory_id, created_at, clear_until,
    recall_until)`` rows, newest first (then by ID), or in the exact reverse order."""
    ordered = sorted({row[0]: row for row in rows}.values(), key=_newest_first)
    if not newest:
        ordered.reverse()
    return [RecallCandidate(*row[:4]) for row in ordered[:limit]]
