"""A damaged write buffer (or audit log) is reported by the whole-store check, stops no
write (in its scope or any other), and never makes a call drop or misplace an audit row.

White-box tests of the SQLite adapter: they change rows of ``write_buffer`` and
``audit_log`` behind the library's back (one of them a single byte of a record
header, which no constraint sees)."""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, command, event, memory
from sqlite_builders import drain_buffer_of

from trueheart_core import (
    GovernanceAction,
    RepositoryCorruption,
    SQLiteRepository,
    TrueHeart,
)
from trueheart_core.adapters.sqlite.buffer import BUFFER_BOUND


def _service(path: Path) -> TrueHeart:
    return TrueHeart(SQLiteRepository(path), clock=lambda: NOW)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Four events and memories moved out of the buffer, then two more of each whose
    audit and pending rows wait in it (row IDs 1 to 4: audit, pending, audit, ...)."""
    path = tmp_path / "store.db"
    with _service(path) as service:
        for number in range(4):
            service.ingest_event(event(f"evt-{number}"))
            service.materialize_once(memory(f"mem-{number}", (f"evt-{number}",)))
    drain_buffer_of(path)
    with _service(path) as service:
        for number in (10, 11):
            service.ingest_event(event(f"evt-{number}"))
            service.materialize_once(memory(f"mem-{number}", (f"evt-{number}",)))
    return path


def _sql(path: Path, statement: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(statement).fetchall()
    finally:
        conn.close()


def _codes(service: TrueHeart) -> set[str]:
    return {p.code for p in service.verify_integrity().problems}


def _give_first_audit_row_a_memory(path: Path) -> str:
    """One byte of a record header: the serial type of ``doc`` in the first buffered
    audit row goes from 0 (NULL) to 8 (the integer 0, stored in no bytes)."""
    ((audit_id,),) = _sql(path, "SELECT audit_id FROM write_buffer WHERE jid = 1")
    assert isinstance(audit_id, str)
    _sql(path, "PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    at = data.find(audit_id.encode())
    assert at > 0 and data.find(audit_id.encode(), at + 1) < 0
    # Before the audit ID: occurred_at (8 bytes) and seq (1 byte); before them the
    # header, whose first byte is its own length, then the serial types of jid (NULL:
    # the row ID stands for it), scope_id (9: the integer 1), doc (0: NULL) and
    # occurred_at (6: a 64-bit integer).
    end = at - 9
    start = next(h for h in range(end - 40, end) if data[h] == end - h)
    assert bytes(data[start + 1 : start + 5]) == bytes([0, 9, 0, 6])
    data[start + 3] = 8
    path.write_bytes(bytes(data))
    assert _sql(path, "SELECT doc FROM write_buffer WHERE jid = 1") == [(0,)]
    return audit_id


def test_an_audit_row_given_a_memory_stays_an_audit_row(store: Path) -> None:
    audit_id = _give_first_audit_row_a_memory(store)
    with _service(store) as service:
        # Still read as an audit row (a pending row has no audit ID), and reported.
        listed = {r.audit_id for r in service.audit(SCOPE, limit=100)}
        assert audit_id in listed
        assert "storage_check_failed" in _codes(service)
        # Neither a rebuild of the search index nor an erasure (which keeps a scope's
        # audit rows) removes it with the pending rows.
        service.rebuild_search_index()
        assert service.erase_subject(SCOPE, occurred_at=NOW).remaining is not None
    assert _sql(store, f"SELECT COUNT(*) FROM write_buffer WHERE audit_id = '{audit_id}'") == [(1,)]
    with _service(store) as service:
        # Moved with the rows around it, as an audit row: the memory it was given goes.
        for number in range(2 * BUFFER_BOUND):
            service.ingest_event(event(f"evt-more-{number}", scope=OTHER_SCOPE))
        assert service.verify_integrity().ok
        assert audit_id in {r.audit_id for r in service.audit(SCOPE, limit=100)}
    assert _sql(store, f"SELECT COUNT(*) FROM audit_log WHERE audit_id = '{audit_id}'") == [(1,)]


def test_the_largest_row_id_in_the_buffer_stops_no_write(store: Path) -> None:
    _sql(store, "UPDATE write_buffer SET jid = 9223372036854775807 WHERE jid = 4")
    with _service(store) as service:
        for number in range(2 * BUFFER_BOUND):
            service.ingest_event(event(f"evt-more-{number}"))
        assert service.verify_integrity().ok
        listed = [r.entity_id for r in service.audit(SCOPE, limit=3)]
        assert listed == [f"evt-more-{n}" for n in (63, 62, 61)]


def test_row_ids_below_one_do_not_reorder_the_audit_log(store: Path) -> None:
    _sql(store, "UPDATE write_buffer SET jid = jid - 100")
    with _service(store) as service:
        service.ingest_event(event("evt-70"))  # the same claimed time as every other row
        assert service.audit(SCOPE, limit=1)[0].entity_id == "evt-70"
        assert service.verify_integrity().ok


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE write_buffer SET seq = NULL WHERE jid = 1",
        "UPDATE write_buffer SET seq = 1 WHERE jid = 1",  # a key audit_log holds
        "UPDATE write_buffer SET seq = (SELECT seq FROM write_buffer WHERE jid = 3), "
        "occurred_at = (SELECT occurred_at FROM write_buffer WHERE jid = 3) WHERE jid = 1",
        "UPDATE write_buffer SET change = NULL WHERE jid = 2",
        "UPDATE write_buffer SET postings = 7 WHERE jid = 2",
        "UPDATE write_buffer SET reason = 'x' WHERE jid = 2",
        "UPDATE write_buffer SET kind = 'x' WHERE jid = 1",
        "UPDATE audit_log SET seq = 'x' WHERE audit_id = (SELECT MIN(audit_id) FROM audit_log)",
        "UPDATE audit_log SET seq = 9223372036854775807 "
        "WHERE seq = (SELECT MAX(seq) FROM audit_log)",
    ],
)
def test_a_row_the_buffer_cannot_move_is_reported_and_stops_no_write(
    store: Path, damage: str
) -> None:
    assert _sql(store, damage) == []
    with _service(store) as service:
        # Reported by the whole-store check, or refused by a check that reads the row.
        with contextlib.suppress(RepositoryCorruption):
            assert "storage_check_failed" in _codes(service)
        # A row that cannot be moved stays; one of a kind's columns and another's moves
        # with its own kind's columns only. Writes go on either way.
        for number in range(2 * BUFFER_BOUND):
            service.ingest_event(event(f"evt-more-{number}", scope=OTHER_SCOPE))
        assert len(service.audit(OTHER_SCOPE, limit=100)) == 2 * BUFFER_BOUND


def test_the_checks_pass_on_a_sound_store(store: Path) -> None:
    with _service(store) as service:
        assert service.verify_integrity().ok
        service.govern(command(GovernanceAction.SEAL, "mem-10"))
        out = io.StringIO()
        service.export_store(out)
        assert service.verify_integrity().ok


@pytest.mark.parametrize("value", ["'x'", "x'00'", "9223372036854775807", "2.5", "0", "-7"])
def test_a_damaged_write_order_lends_nothing_to_the_next(store: Path, value: str) -> None:
    # Every row has the same claimed time (the clock is fixed): the next write order of
    # a new row is counted from the sound ones only.
    drain_buffer_of(store)
    assert (
        _sql(
            store,
            f"UPDATE audit_log SET seq = {value} "
            "WHERE seq = (SELECT MAX(seq) FROM audit_log WHERE typeof(seq) = 'integer')",
        )
        == []
    )
    with _service(store) as service:
        written = [f"evt-more-{number}" for number in range(3 * BUFFER_BOUND)]
        for event_id in written:
            service.ingest_event(event(event_id))
        assert sum(1 for _ in _sql(store, "SELECT jid FROM write_buffer")) < BUFFER_BOUND
        # The damaged row sorts where its value puts it; the new rows, in write order.
        listed = [r.entity_id for r in service.audit(SCOPE, limit=len(written) + 1)]
        assert [e for e in listed if e in set(written)] == written[::-1]
        assert "storage_check_failed" in _codes(service)


def test_an_audit_row_given_a_memory_and_stripped_of_its_id_stays_an_audit_row(
    store: Path,
) -> None:
    ((audit_id,),) = _sql(store, "SELECT audit_id FROM write_buffer WHERE jid = 1")
    _sql(store, "UPDATE write_buffer SET doc = 0, audit_id = NULL WHERE jid = 1")
    with _service(store) as service:
        # Its digest still marks it an audit row: read as one (and refused, its ID gone),
        # never removed with the pending rows.
        with pytest.raises(RepositoryCorruption):
            service.audit(SCOPE, limit=100)
        service.rebuild_search_index()
        service.erase_subject(SCOPE, occurred_at=NOW)
    assert _sql(store, "SELECT COUNT(*) FROM write_buffer WHERE jid = 1") == [(1,)]
    assert audit_id
