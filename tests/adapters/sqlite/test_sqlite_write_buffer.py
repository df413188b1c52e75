"""The write buffer of the SQLite adapter: a write's audit row and pending search row wait
at the end of the file until the buffer holds ``BUFFER_BOUND`` rows, then move, sorted,
into ``audit_log`` and ``search_waiting``. Where a row waits changes no answer.

White-box tests: they count the buffer's rows with a connection of their own, and move
them behind the library's back with the adapter's own statements, to compare answers
with the rows in either place."""

from __future__ import annotations

import dataclasses
import io
import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, command, event, memory
from sqlite_builders import drain_buffer_of

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
)
from trueheart_core.adapters.sqlite.buffer import BUFFER_BOUND


def _buffered(path: Path) -> tuple[int, int]:
    """``(audit rows, pending search rows)`` waiting in the buffer."""
    conn = sqlite3.connect(path)
    try:
        (audit, pending) = conn.execute(
            "SELECT COUNT(*) FILTER (WHERE doc IS NULL), COUNT(*) FILTER (WHERE doc IS NOT NULL) "
            "FROM write_buffer"
        ).fetchone()
    finally:
        conn.close()
    return int(audit), int(pending)


def _answers(service: TrueHeart) -> dict[str, object]:
    """What the store answers that reads audit rows and pending search rows."""
    out = io.StringIO()
    service.export_store(out)
    lines = [line for line in out.getvalue().splitlines() if '"exported_at"' not in line]
    return {
        "audit": [service.audit(s, limit=100) for s in (SCOPE, OTHER_SCOPE)],
        "search": [
            service.search(SearchQuery(s, "green tea", NOW, limit=50)) for s in (SCOPE, OTHER_SCOPE)
        ],
        # Counts only: the sizes of the file and its log differ once the rows moved.
        "stats": [
            dataclasses.replace(
                service.stats(s), database_bytes=0, wal_bytes=0, storage_bytes=0, storage_detail=()
            )
            for s in (SCOPE, OTHER_SCOPE)
        ],
        "verify": service.verify_integrity(),
        # The trailer's digest covers the header's time: every other line is compared.
        "export": [line for line in lines if '"kind":"end"' not in line],
    }


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def test_the_buffer_never_holds_the_bound_and_answers_do_not_depend_on_it(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        for scope in (SCOPE, OTHER_SCOPE):
            service.ingest_event(event("evt-1", scope=scope))
        seen = set()
        for number in range(3 * BUFFER_BOUND):
            scope = (SCOPE, OTHER_SCOPE)[number % 3 == 0]
            service.materialize_once(
                memory(f"mem-{number:03d}", scope=scope, content=f"green tea {number}")
            )
            if number % 4 == 0:
                service.govern(command(GovernanceAction.SEAL, f"mem-{number:03d}", scope=scope))
            audit, pending = _buffered(db_path)
            assert audit + pending < BUFFER_BOUND
            seen.add(audit + pending)
        # The rows moved more than once, and waited in the buffer between.
        assert len(seen) > 5
        assert _buffered(db_path) != (0, 0)
        before = _answers(service)
        assert before["verify"].ok  # type: ignore[attr-defined]
    drain_buffer_of(db_path)
    assert _buffered(db_path) == (0, 0)
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        assert _answers(service) == before


def test_rows_of_one_claimed_time_keep_their_write_order_across_moves(db_path: Path) -> None:
    # Every row has the same claimed time: only the write order places them, and the rows
    # of one time are written before and after several moves of the buffer.
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        ids = [f"evt-{number:03d}" for number in range(2 * BUFFER_BOUND + 7)]
        assert len(ids) <= 100  # one page of ``audit``
        for event_id in ids:
            service.ingest_event(event(event_id))
            service.ingest_event(event(event_id, scope=OTHER_SCOPE))
        assert _buffered(db_path)[0] > 0
        listed = [r.entity_id for r in service.audit(SCOPE, limit=len(ids))]
        assert listed == ids[::-1]
        out = io.StringIO()
        service.export_store(out, scope=SCOPE)
        exported = [line for line in out.getvalue().splitlines() if '"kind":"audit"' in line]
        assert [ids.index(next(i for i in ids if f'"{i}"' in line)) for line in exported] == list(
            range(len(ids))
        )


def test_a_batch_larger_than_the_bound_moves_rows_inside_its_transaction(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        drafts = [event(f"evt-{number:04d}") for number in range(10 * BUFFER_BOUND + 3)]
        service.ingest_events(drafts)
        # The batch's rows moved as the buffer filled: what is left is less than the
        # bound, and the audit log lists every row in order.
        assert sum(_buffered(db_path)) < BUFFER_BOUND
        listed = [r.entity_id for r in service.audit(SCOPE, limit=100)]
        assert listed == [d.event_id for d in reversed(drafts)][:100]
        out = io.StringIO()
        assert ("audit", len(drafts)) in service.export_store(out).counts
        assert service.verify_integrity().ok


def test_a_rolled_back_write_leaves_the_buffer_as_it_was(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1"))
        for number in range(BUFFER_BOUND - 2):
            service.materialize_once(memory(f"mem-{number:03d}"))
        before = _buffered(db_path)
        # A batch refused by its last draft writes nothing, the first drafts' rows in the
        # buffer included.
        with pytest.raises(Exception) as caught:
            service.ingest_events([event("evt-2"), event("evt-3"), event("evt-1", content="x")])
        assert type(caught.value).__name__ == "IdempotencyConflict"
        assert _buffered(db_path) == before
        # The count the connection remembers is still right: the next writes move the
        # rows when the bound is reached, not before or after.
        service.ingest_event(event("evt-4"))
        assert sum(_buffered(db_path)) == sum(before) + 1
        service.materialize_once(memory("mem-last", ("evt-4",)))
        assert sum(_buffered(db_path)) == 0
        assert service.verify_integrity().ok


def test_another_connection_s_writes_are_counted(db_path: Path) -> None:
    with (
        TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as first,
        TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as second,
    ):
        first.ingest_event(event("evt-a"))
        second.ingest_event(event("evt-b"))
        for number in range(3 * BUFFER_BOUND):
            writer = (first, second)[number % 2]
            writer.ingest_event(event(f"evt-{number:03d}", content=f"body {number}"))
            assert sum(_buffered(db_path)) < BUFFER_BOUND
        assert first.verify_integrity().ok
        out = io.StringIO()
        assert ("audit", 3 * BUFFER_BOUND + 2) in second.export_store(out).counts


def test_erasure_removes_the_scope_s_pending_rows_from_the_buffer(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        for scope in (SCOPE, OTHER_SCOPE):
            service.ingest_event(event("evt-1", scope=scope))
            service.materialize_once(memory("mem-1", scope=scope, content="green tea"))
        assert _buffered(db_path)[1] == 2
        receipt = service.erase_subject(SCOPE, occurred_at=NOW + timedelta(seconds=1))
        assert receipt.verified
        # The other scope's pending row still waits; the erased scope's audit rows stay.
        assert _buffered(db_path)[1] == 1
        assert service.audit(SCOPE)[0].action == "erase_subject"
        assert [
            c.memory.memory_id
            for c in service.search(SearchQuery(OTHER_SCOPE, "green tea", NOW)).items
        ] == ["mem-1"]
        assert service.verify_integrity().ok


def test_the_buffer_is_moved_by_the_write_that_reaches_the_bound(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1"))  # one audit row
        # Each memory adds an audit row and a pending row: after k of them the buffer
        # holds 1 + 2k rows, until the row that would make it BUFFER_BOUND moves them.
        for number in range((BUFFER_BOUND - 1) // 2):
            service.materialize_once(memory(f"mem-{number:03d}"))
            assert sum(_buffered(db_path)) == 1 + 2 * (number + 1)
        # A seal of a memory whose pending row waits there takes that row out and adds
        # its audit row: as many rows as before.
        service.govern(
            GovernanceCommand(SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "mem-000", NOW, "r")
        )
        assert sum(_buffered(db_path)) == BUFFER_BOUND - 1
        service.ingest_event(event("evt-2"))  # the bound-th row
        assert _buffered(db_path) == (0, 0)
        assert service.verify_integrity().ok


def test_an_export_merges_buffered_rows_into_their_places(db_path: Path) -> None:
    # Rows written last claim the earliest times, and the first scope in the export's
    # order is written last: buffered rows go before stored ones, not after.
    ids = [f"mem-{number:03d}" for number in range(BUFFER_BOUND + 5)]
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        for scope in (SCOPE, OTHER_SCOPE):
            service.ingest_event(event("evt-1", scope=scope))
            for memory_id in ids:
                service.materialize_once(memory(memory_id, scope=scope))
        for scope in (SCOPE, OTHER_SCOPE):
            for number, memory_id in enumerate(ids):
                service.govern(
                    command(
                        GovernanceAction.SEAL,
                        memory_id,
                        scope=scope,
                        occurred_at=NOW - timedelta(seconds=number + 1),
                    )
                )
        # The first scope's receipt of a second event: its audit row waits whatever the
        # rows before it did.
        service.ingest_event(event("evt-2", scope=OTHER_SCOPE))
        assert _buffered(db_path)[0] > 0
        out = io.StringIO()
        service.export_store(out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    audit = [(r["scope"]["subject_id"], r["occurred_at"]) for r in rows if r.get("kind") == "audit"]
    # By scope (as text), then claimed time (each time written once per scope here).
    assert audit == sorted(audit)
    assert audit[0][0] == OTHER_SCOPE.subject_id


def test_a_second_pending_row_of_one_memory_is_reported_and_stays_in_the_buffer(
    db_path: Path,
) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1"))
        service.materialize_once(memory("mem-1", content="green tea"))
        drain_buffer_of(db_path)
        conn = sqlite3.connect(db_path)
        with conn:
            # Damage: the memory's pending row copied into the buffer.
            conn.execute(
                "INSERT INTO write_buffer (scope_id, doc, change, length, created_at, "
                "clear_until, recall_until, trust, kind, postings) SELECT scope_id, doc, "
                "change, length, created_at, clear_until, recall_until, trust, kind, postings "
                "FROM search_waiting"
            )
        conn.close()
        codes = {p.code for p in service.verify_integrity().problems}
        assert "posting_without_entry" in codes
        assert {p.code for p in service.verify_integrity(SCOPE).problems} <= codes
        assert "storage_check_failed" in codes  # the copy cannot be moved
        # The copy cannot join its original: it stays in the buffer while the rows
        # around it move, and stops no write; a rebuild of the index repairs it.
        for number in range(2 * BUFFER_BOUND):
            service.ingest_event(event(f"evt-more-{number}"))
        assert _buffered(db_path)[1] == 1
        assert "evt-more-0" in {r.entity_id for r in service.audit(SCOPE, limit=100)}
        assert "posting_without_entry" in {p.code for p in service.verify_integrity().problems}
        service.rebuild_search_index()
        assert service.verify_integrity().ok
        assert [
            c.memory.memory_id for c in service.search(SearchQuery(SCOPE, "tea", NOW)).items
        ] == ["mem-1"]


def test_rows_a_write_takes_out_of_the_buffer_are_subtracted_not_counted_again(
    db_path: Path,
) -> None:
    repository = SQLiteRepository(db_path)
    with TrueHeart(repository, clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1"))
        for number in range(3):
            service.materialize_once(memory(f"mem-{number}"))
        statements: list[str] = []
        repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
        # The seal takes the memory's pending row out of the buffer, then appends its
        # audit row: the count it keeps is the one it had, less the row taken out.
        service.govern(command(GovernanceAction.SEAL, "mem-0"))
        service.govern(command(GovernanceAction.RESTORE, "mem-0"))
        service.materialize_once(memory("mem-3"))
        repository._conn.set_trace_callback(None)  # type: ignore[union-attr]
        assert statements
        assert not [s for s in statements if "COUNT(*) FROM write_buffer" in s]
        # The count is right: the rows move exactly when the bound is reached.
        while sum(_buffered(db_path)) < BUFFER_BOUND - 1:
            service.ingest_event(event(f"evt-{sum(_buffered(db_path))}"))
        service.ingest_event(event("evt-last"))
        assert _buffered(db_path) == (0, 0)
        assert service.verify_integrity().ok
