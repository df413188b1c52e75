"""The results of the tools as JSON documents: memories, claims and the items of a
search, from the library's records.

Each builder gives every field its result schema requires (see :mod:`.schemas`), with
times as ISO 8601 in UTC ending in ``Z`` and trust levels by name, so that a result
matches the ``outputSchema`` a client was shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from trueheart_core import CapsuleItem, ClaimRecord, ClaimView, MemoryRecord
from trueheart_core.integrations.mcp_server.trust import trust_name

__all__ = ["Document", "claim", "claim_view", "memory", "search_item", "when"]

Document = dict[str, Any]


def when(value: datetime) -> str:
    """A time as the results write it: ISO 8601 in UTC, with ``Z`` for its offset."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _maybe(value: datetime | None) -> str | None:
    return None if value is None else when(value)


def _plain(value: object) -> object:
    """Stored metadata (read-only mappings, tuples) as plain JSON containers."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def memory(record: MemoryRecord) -> Document:
    """A memory as ``get_memory`` returns it, and as the other results carry it."""
    return {
        "memory_id": record.memory_id,
        "kind": record.kind,
        "trust": trust_name(record.trust),
        "status": record.status.value,
        "created_at": when(record.created_at),
        "clear_until": when(record.clear_until),
        "recall_until": when(record.recall_until),
        "source_event_ids": list(record.source_event_ids),
        "metadata": _plain(record.metadata),
        "content": record.content,
    }


def claim(record: ClaimRecord) -> Document:
    """A claim as ``remember_claim`` returns it, with the trust and sources of the
    memory that carries it."""
    return {
        "claim_id": record.claim_id,
        "subject": record.subject,
        "predicate": record.predicate,
        "value": record.value,
        "valid_from": _maybe(record.valid_from),
        "valid_to": _maybe(record.valid_to),
        "supersedes": record.supersedes,
        "trust": trust_name(record.memory.trust),
        "created_at": when(record.created_at),
        "source_event_ids": list(record.memory.source_event_ids),
    }


def claim_view(view: ClaimView) -> Document:
    """A claim with its status at the time asked about, as ``claims`` lists it and a
    search item carries it."""
    return {
        **claim(view.claim),
        "status": view.status.value,
        "superseded_by": list(view.superseded_by),
    }


def search_item(item: CapsuleItem) -> Document:
    """One item of a search: its rank, score, clarity and cost in tokens, its memory,
    and its claim when the memory is one."""
    return {
        "rank": item.rank,
        "score": item.score,
        "clarity": item.clarity,
        "tokens": item.tokens,
        **memory(item.memory),
        "claim": None if item.claim is None else claim_view(item.claim),
    }
