"""What the SQLite adapter writes into its rows: body-free extraction and tombstone rows,
in order, and metadata as canonical JSON, read back with plain sqlite3."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from conformance_builders import NOW, command, event, memory
from sqlite_builders import micros

from trueheart_core import CanonicalClaimExtractor, EntityType, GovernanceAction, TrueHeart

DELETE, FORGET = GovernanceAction.DELETE, GovernanceAction.FORGET
RAW = EntityType.RAW_EVENT
CANONICAL = CanonicalClaimExtractor()
ADA = (
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark; "
    "valid_from=2026-04-18T09:30:00Z; confidence=1.000; authority=application."
)


def test_the_stored_extraction_row_holds_no_body(service: TrueHeart, db_path: Path) -> None:
    service.ingest_extracted(event("evt-1", content=f"Hidden hunter2.\n{ADA}"), CANONICAL)
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute("SELECT * FROM extractions").fetchall()
    finally:
        conn.close()
    assert len(rows) == 1
    text = repr(rows)
    assert "hunter2" not in text and "user:ada" not in text and "dark" not in text
    assert "trueheart.canonical-claim/1" in text


def test_tombstone_rows_are_body_free_and_ordered(service: TrueHeart, db_path: Path) -> None:
    service.ingest_event(event("evt-1"))
    mem_b = service.materialize_once(memory("mem-b"))
    mem_a = service.materialize_once(memory("mem-a", kind="other"))
    when = NOW + timedelta(days=2, microseconds=7)
    service.govern(command(DELETE, "evt-1", entity_type=RAW, occurred_at=when, reason="why"))
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute(
            "SELECT entity_type, entity_id, fingerprint, deleted_at, reason "
            "FROM tombstones ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    deleted_at = micros(when)
    assert rows == [
        ("raw_event", "evt-1", None, deleted_at, "governance requested"),
        ("memory", "mem-a", mem_a.dependency_fingerprint, deleted_at, "governance requested"),
        ("memory", "mem-b", mem_b.dependency_fingerprint, deleted_at, "governance requested"),
    ]


def test_forget_tombstone_carries_the_fingerprint(service: TrueHeart, db_path: Path) -> None:
    service.ingest_event(event())
    record = service.materialize_once(memory())
    service.govern(command(FORGET))
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute("SELECT entity_type, entity_id, fingerprint FROM tombstones").fetchall()
    finally:
        conn.close()
    assert rows == [("memory", "mem-1", record.dependency_fingerprint)]


def test_metadata_is_stored_as_canonical_json(service: TrueHeart, db_path: Path) -> None:
    metadata = {"z": [1, 1.0, True, None], "a": {"\u00e9": "caf\u00e9", "b": -0.5}}
    service.ingest_event(event(metadata=metadata, source_metadata={"y": 2, "x": 1}))
    service.materialize_once(memory(metadata=metadata))
    conn = sqlite3.connect(db_path)
    try:
        (raw_meta, source_meta) = conn.execute(
            "SELECT metadata, source_metadata FROM raw_events"
        ).fetchone()
        (memory_meta,) = conn.execute("SELECT metadata FROM memories").fetchone()
        audit_meta = {m for (m,) in conn.execute("SELECT metadata FROM audit")}
    finally:
        conn.close()
    canonical = '{"a":{"b":-0.5,"\u00e9":"caf\u00e9"},"z":[1,1.0,true,null]}'
    assert raw_meta == canonical
    assert memory_meta == canonical
    assert source_meta == '{"x":1,"y":2}'
    assert audit_meta == {"{}"}
