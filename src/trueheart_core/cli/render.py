"""Rendering results: plain JSON-ready documents with stable keys, and aligned text
tables for people."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.model import (
    AuditRecord,
    IntegrityReport,
    MemoryRecord,
    RawEventReceipt,
    Scope,
)
from trueheart_core.domain.operations import (
    ArtifactCounts,
    BackupReport,
    ErasureReceipt,
    IndexRebuildReport,
    StoreStats,
)

Document = dict[str, Any]
_CELL = 60
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def when(value: datetime) -> str:
    """An instant as ISO 8601 in UTC, to the microsecond only when it has one (a time
    given with another offset is converted)."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def scope_text(scope: Scope | None) -> str | None:
    return None if scope is None else format_scope(scope)


def _seconds(value: timedelta) -> int | float:
    seconds = value.total_seconds()
    return int(seconds) if seconds.is_integer() else seconds


def number_of(n: int, singular: str, plural: str) -> str:
    """``n`` and the word for that many (``1 event``, ``2 events``)."""
    return f"{n} {singular if n == 1 else plural}"


def counts(value: ArtifactCounts | None) -> dict[str, int] | None:
    return None if value is None else {artifact.value: n for artifact, n in value.items()}


def stats(value: StoreStats) -> Document:
    return {
        "scope": scope_text(value.scope),
        "events": value.events,
        "events_with_body": value.events_with_body,
        "events_without_body": value.events_without_body,
        "memories": value.memories,
        "active_memories": value.active_memories,
        "sealed_memories": value.sealed_memories,
        "memories_by_kind": dict(value.memories_by_kind),
        "claims": value.claims,
        "extraction_records": value.extraction_records,
        "tombstones": value.tombstones,
        "audit_records": value.audit_records,
        "search_entries": value.search_entries,
        "search_terms": value.search_terms,
        "search_postings": value.search_postings,
        "vectors": value.vectors,
        "storage_bytes": value.storage_bytes,
        "database_bytes": value.database_bytes,
        "wal_bytes": value.wal_bytes,
    }


def integrity(value: IntegrityReport) -> Document:
    return {
        "ok": value.ok,
        "rows_checked": value.rows_checked,
        "problems": [
            {
                "entity_type": p.entity_type,
                "entity_id": p.entity_id,
                "scope": scope_text(p.scope),
                "code": p.code,
            }
            for p in value.problems
        ],
    }


def audit(value: AuditRecord) -> Document:
    return {
        "audit_id": value.audit_id,
        "occurred_at": when(value.occurred_at),
        "action": value.action,
        "entity_type": value.entity_type.value,
        "entity_id": value.entity_id,
        "reason": value.reason,
    }


def memory(value: MemoryRecord) -> Document:
    return {
        "memory_id": value.memory_id,
        "scope": format_scope(value.scope),
        "status": value.status.value,
        "kind": value.kind,
        "trust": value.trust.name.lower(),
        "created_at": when(value.created_at),
        "clear_until": when(value.clear_until),
        "recall_until": when(value.recall_until),
        "source_event_ids": list(value.source_event_ids),
        "dependency_fingerprint": value.dependency_fingerprint,
        "metadata": dict(value.metadata),
        "content": value.content,
    }


def receipt(value: RawEventReceipt) -> Document:
    return {
        "event_id": value.event_id,
        "scope": format_scope(value.scope),
        "source_id": value.source.source_id,
        "source_type": value.source.source_type,
        "occurred_at": when(value.source.occurred_at),
        "trust": value.source.trust.name.lower(),
        "content_hash": value.content_hash,
        "ingested_at": when(value.ingested_at),
        "raw_expires_at": when(value.raw_expires_at),
        "clear_for_seconds": _seconds(value.clear_for),
        "recall_for_seconds": _seconds(value.recall_for),
        "content_available": value.content_available,
        "metadata": dict(value.metadata),
    }


def erasure(value: ErasureReceipt) -> Document:
    return {
        "scope": format_scope(value.scope),
        "occurred_at": when(value.occurred_at),
        "dry_run": value.dry_run,
        "erased": counts(value.erased),
        "remaining": counts(value.remaining),
        "verified": value.verified,
        "event_ids": list(value.event_ids),
        "memory_ids": list(value.memory_ids),
        "claim_ids": list(value.claim_ids),
    }


def rebuild(value: IndexRebuildReport) -> Document:
    return {
        "search_entries_before": value.search_entries_before,
        "search_entries_after": value.search_entries_after,
        "search_entries_added": value.search_entries_added,
        "search_entries_removed": value.search_entries_removed,
        "search_terms_before": value.search_terms_before,
        "search_terms_after": value.search_terms_after,
        "search_terms_added": value.search_terms_added,
        "search_terms_removed": value.search_terms_removed,
        "claim_keys_repaired": value.claim_keys_repaired,
        "storage_indexes_rebuilt": value.storage_indexes_rebuilt,
        "vector_copies_repaired": value.vector_copies_repaired,
        "vectors_without_memory_removed": value.vectors_without_memory_removed,
        "vector_sketches_rebuilt": value.vector_sketches_rebuilt,
        "damaged_vectors_removed": value.damaged_vectors_removed,
        "changed": value.changed,
    }


def backup(value: BackupReport) -> Document:
    return {"path": value.path, "pages": value.pages, "bytes": value.size_bytes}


# --- text ----------------------------------------------------------------------------


def cell(value: object, clip: bool = False) -> str:
    """One table cell on one line: ``-`` for nothing, ``yes``/``no`` for booleans,
    otherwise the text with its unprintable characters escaped as :func:`printable`
    escapes them (a newline or a tab is shown, not turned into a space, so that two IDs
    that differ only there are told apart); clipped to 60 characters when ``clip``,
    never inside an escape."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    if text.isprintable() and (not clip or len(text) <= _CELL):
        return text
    pieces = _escaped(text)
    if not clip or sum(map(len, pieces)) <= _CELL:
        return "".join(pieces)
    kept: list[str] = []
    room = _CELL - 1
    for piece in pieces:
        room -= len(piece)
        if room < 0:
            break
        kept.append(piece)
    return "".join(kept) + "…"


def _escaped(text: str) -> list[str]:
    """The characters of ``text``, each unprintable one as its Python escape."""
    return [c if c.isprintable() else repr(c)[1:-1] for c in text]


def printable(text: str) -> str:
    """``text`` with every control or other unprintable character written as its Python
    escape (``\\x1b``, ``\\n``), so that stored text cannot break a line or drive the
    terminal."""
    if text.isprintable():
        return text
    return "".join(_escaped(text))


def table(
    out: TextIO,
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    clip: str | None = None,
) -> None:
    """Rows under upper-case headers, columns aligned, numbers right-aligned; the column
    named ``clip`` (a body) is clipped to 60 characters."""
    cells = [[cell(v, headers[i] == clip) for i, v in enumerate(row)] for row in rows]
    numeric = [
        bool(rows)
        and all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        for i in range(len(headers))
    ]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str], header: bool = False) -> str:
        parts = [
            v.rjust(w) if numeric[i] and not header else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    out.write(line([h.upper() for h in headers], header=True) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


def pairs(out: TextIO, items: Sequence[tuple[str, object]]) -> None:
    """``name  value`` lines, the values aligned."""
    names = [printable(name) for name, _ in items]
    width = max((len(name) for name in names), default=0)
    for name, (_, value) in zip(names, items, strict=True):
        out.write(f"{name.ljust(width)}  {cell(value)}".rstrip() + "\n")


def document(out: TextIO, value: Mapping[str, Any]) -> None:
    """One JSON document, keys sorted, followed by a newline. A lone surrogate (an
    argument's byte that is not UTF-8, as Python decodes it) is written as its ``\\u``
    escape: written as itself, it would put that byte back, and the output would not be
    UTF-8 text."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2)
    if not text.isascii():
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    out.write(text + "\n")


def command(*words: str) -> str:
    """A command to run, as a message quotes it: its words quoted for a POSIX shell, in
    single quotes when none of them needed quoting, and bare otherwise (quotes around a
    quoted word could not be pasted back)."""
    text = " ".join(shlex.quote(word) for word in words)
    return f"'{text}'" if "'" not in text else text
