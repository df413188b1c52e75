"""Subject erasure checked against the SQLite file itself: the receipt's counts and IDs
against the rows counted with plain sqlite3, a dry run against a dump of every table, the
subject's words and term keys against the bytes of the file and its WAL, and a foreign
reader that pins the WAL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from byte_search import key_bytes, leftovers
from conformance_builders import (
    ERASED_AT,
    NOW,
    OTHER_SCOPE,
    OTHER_WORDS,
    SCOPE,
    SUBJECT_WORDS,
    event,
    populate_subject,
)
from sqlite_builders import pinned_reader, store_bytes

from trueheart_core import (
    ArtifactClass,
    ArtifactCounts,
    RepositoryBusy,
    Scope,
    SQLiteRepository,
    TrueHeart,
)

TABLES = {
    ArtifactClass.RAW_EVENT: "raw_events",
    ArtifactClass.RAW_BODY: "raw_bodies",
    ArtifactClass.MEMORY: "memories",
    ArtifactClass.CLAIM: "claims",
    ArtifactClass.LINEAGE_EDGE: "lineage",
    ArtifactClass.EXTRACTION_RECORD: "extractions",
    ArtifactClass.SEARCH_ENTRY: "search_docs",
    ArtifactClass.SEARCH_TERM: "search_terms",
}
KEPT = {"raw_events", "raw_bodies", "memories", "claims", "search_terms"}


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _scope_id(conn: sqlite3.Connection, scope: Scope) -> int | None:
    row = conn.execute(
        "SELECT scope_id FROM scopes WHERE tenant_id = ? AND owner_id = ? AND subject_id = ?",
        (scope.tenant_id, scope.owner_id, scope.subject_id),
    ).fetchone()
    return None if row is None else int(row[0])


def _independent(path: Path, scope: Scope) -> dict[str, Any]:
    """The scope's rows per artifact class, and its IDs, read with plain sqlite3."""
    conn = _connect(path)
    try:
        sid = _scope_id(conn, scope)
        # The kept tables hold erased rows, overwritten, until compaction: live ones
        # count. A search entry is a merged one, or one waiting in a pending row.
        counts = {
            artifact.value: conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE scope_id = ?"
                f"{' AND erased IS NOT 1' if table in KEPT else ''}",
                (sid,),
            ).fetchone()[0]
            for artifact, table in TABLES.items()
        }
        counts[ArtifactClass.SEARCH_ENTRY.value] += conn.execute(
            "SELECT IFNULL(SUM(change), 0) FROM search_pending WHERE scope_id = ?", (sid,)
        ).fetchone()[0]

        def ids(sql: str) -> tuple[str, ...]:
            return tuple(sorted(r[0] for r in conn.execute(sql, (sid,))))

        return {
            "counts": counts,
            "events": ids("SELECT event_id FROM raw_events WHERE scope_id = ? AND erased IS NOT 1"),
            "memories": ids(
                "SELECT memory_id FROM memories WHERE scope_id = ? AND erased IS NOT 1"
            ),
            "claims": ids("SELECT claim_id FROM claims WHERE scope_id = ? AND erased IS NOT 1"),
            "tombstones": conn.execute(
                "SELECT COUNT(*) FROM tombstones WHERE scope_id = ?", (sid,)
            ).fetchone()[0],
            "audit": conn.execute(
                "SELECT COUNT(*) FROM audit WHERE scope_id = ?", (sid,)
            ).fetchone()[0],
        }
    finally:
        conn.close()


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the file, in a stable order."""
    conn = _connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in [*tables, "sqlite_master"]
        }
    finally:
        conn.close()


def _as_counts(found: dict[str, int]) -> ArtifactCounts:
    return ArtifactCounts(**found)


def test_receipt_counts_and_ids_match_the_file(service: TrueHeart, db_path: Path) -> None:
    populate_subject(service)
    before = _independent(db_path, SCOPE)
    other_before = _independent(db_path, OTHER_SCOPE)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert receipt.erased == _as_counts(before["counts"])
    assert receipt.event_ids == before["events"]
    assert receipt.memory_ids == before["memories"]
    assert receipt.claim_ids == before["claims"] and len(receipt.claim_ids) == 2
    assert receipt.erased.memory == 9 and receipt.erased.raw_event == 8
    assert receipt.erased.raw_body == 7 and receipt.erased.extraction_record == 1
    assert receipt.erased.claim == 2 and receipt.erased.search_entry == 8
    after = _independent(db_path, SCOPE)
    assert after["counts"] == dict.fromkeys(after["counts"], 0)
    assert receipt.remaining == ArtifactCounts()
    assert receipt.verified is True
    assert not receipt.dry_run
    assert receipt.occurred_at == ERASED_AT
    # one tombstone per event and memory, the earlier one kept; one audit row more
    assert after["tombstones"] == before["tombstones"] + 8 + 9
    assert after["audit"] == before["audit"] + 1
    assert _independent(db_path, OTHER_SCOPE) == other_before


def test_dry_run_changes_nothing_in_the_file(service: TrueHeart, db_path: Path) -> None:
    populate_subject(service)
    before = _dump(db_path)
    planned = service.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True)
    assert _dump(db_path) == before
    assert planned.dry_run and planned.remaining is None and planned.verified is None
    assert planned.erased == _as_counts(_independent(db_path, SCOPE)["counts"])
    done = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert (done.erased, done.event_ids, done.memory_ids, done.claim_ids) == (
        planned.erased,
        planned.event_ids,
        planned.memory_ids,
        planned.claim_ids,
    )


def test_erased_words_leave_the_file_and_the_wal(service: TrueHeart, db_path: Path) -> None:
    populate_subject(service)
    data = store_bytes(db_path)
    assert all(word.encode() in data for word in SUBJECT_WORDS if word != "zqxsubjexpired")
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    subject_terms = [f"zqxsubjraw{i}" for i in range(6)] + [f"zqxsubjmem{i}" for i in range(5)]
    needles = [w.encode() for w in SUBJECT_WORDS] + [key_bytes(t) for t in subject_terms]
    assert leftovers(db_path, needles) == {}
    data = store_bytes(db_path)
    assert all(word.encode() in data for word in OTHER_WORDS)
    # a term shared with the other subject stays indexed there
    assert key_bytes("shared") in data


def test_erasure_blocked_by_a_reader_is_busy_before_any_work(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path, busy_timeout=0.2), clock=lambda: NOW) as service:
        populate_subject(service)
        service.ingest_event(event("evt-late"))  # the WAL holds frames the reader pins
        stats = service.stats(SCOPE)
        reader = pinned_reader(db_path)
        try:
            with pytest.raises(RepositoryBusy, match=r"^repository busy: subject erasure failed$"):
                service.erase_subject(SCOPE, occurred_at=ERASED_AT)
        finally:
            reader.close()
        assert service.stats(SCOPE) == stats
        assert service.erase_subject(SCOPE, occurred_at=ERASED_AT).verified is True
        assert leftovers(db_path, [w.encode() for w in SUBJECT_WORDS]) == {}


def test_a_scrub_held_up_after_commit_is_finished_by_the_next_call(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path, busy_timeout=0.2), clock=lambda: NOW) as service:
        populate_subject(service)  # ends with an erasing call: the WAL is empty
        reader = pinned_reader(db_path)
        try:
            # The check before the work passes (nothing to checkpoint); the reader then
            # holds up the rewrite and checkpoint after the commit.
            with pytest.raises(
                RepositoryBusy, match=r"^repository busy: erasure checkpoint incomplete$"
            ):
                service.erase_subject(SCOPE, occurred_at=ERASED_AT)
        finally:
            reader.close()
        assert service.stats(SCOPE).memories == 0  # committed; this call scrubs first
        assert leftovers(db_path, [w.encode() for w in SUBJECT_WORDS]) == {}


def test_a_scope_the_store_never_held_is_looked_for_in_the_table_once(
    db_path: Path,
) -> None:
    # The look-up that does not trust the scopes' index reads the whole table: an
    # erasure of a scope no row names makes it once, whatever it asks about the scope.
    repository = SQLiteRepository(db_path)
    service = TrueHeart(repository, clock=lambda: NOW)
    populate_subject(service)
    unknown = Scope("tenant", "owner", "never-stored")
    statements: list[str] = []
    repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        dry = service.erase_subject(unknown, occurred_at=ERASED_AT, dry_run=True)
        scans_dry = sum("scopes NOT INDEXED" in s for s in statements)
        statements.clear()
        real = service.erase_subject(unknown, occurred_at=ERASED_AT)
        scans_real = sum("scopes NOT INDEXED" in s for s in statements)
    finally:
        repository._conn.set_trace_callback(None)  # type: ignore[union-attr]
    assert dry.erased == ArtifactCounts() and real.erased == ArtifactCounts()
    assert real.verified
    assert (scans_dry, scans_real) == (1, 1)
    service.close()
