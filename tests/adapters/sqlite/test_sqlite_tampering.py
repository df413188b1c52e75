"""Rows tampered with behind the library's back: reads fail closed with a body-free
``RepositoryCorruption``, ``verify_integrity`` reports the row and changes nothing, and
clean rows keep working. The statements edit the SQLite file directly."""

from __future__ import annotations

import io
import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    assert_not_chained,
    command,
    event,
    memory,
    msg,
)
from sqlite_builders import store_bytes, tamper

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    IntegrityProblem,
    IntegrityReport,
    RecallQuery,
    RepositoryCorruption,
    Scope,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.ports import MemoryRow
from trueheart_core.service.records.memories import _memory_digest

SECRET_EVENT = "integrity-secret-event-body-5c2a"
SECRET_MEMORY = "integrity-secret-memory-body-9e41"
SCOPE_ID_SQL = "(SELECT scope_id FROM scopes WHERE subject_id = ?)"
DEEP_JSON = "[" * 5000 + "]" * 5000


def _populate(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", content=SECRET_EVENT, metadata={"k": [1]}))
    service.ingest_event(event("evt-2"))
    service.materialize_once(memory("mem-1", ("evt-1",), content=SECRET_MEMORY))
    service.materialize_once(memory("mem-2", ("evt-2",), kind="other"))
    service.ingest_event(event("evt-gone"))
    service.govern(command(GovernanceAction.DELETE, "evt-gone", entity_type=EntityType.RAW_EVENT))


def _dump(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        rows: list[tuple[Any, ...]] = []
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        for table in tables:
            rows.extend((table, *row) for row in conn.execute(f'SELECT * FROM "{table}"'))
        return rows
    finally:
        conn.close()


def _assert_problem(
    report: IntegrityReport, entity_type: str | tuple[str, ...], entity_id: str
) -> None:
    types = (entity_type,) if isinstance(entity_type, str) else entity_type
    assert not report.ok
    assert report.problems, report
    matching = [p for p in report.problems if p.entity_type in types and p.entity_id == entity_id]
    assert matching, report.problems
    for problem in report.problems:
        assert isinstance(problem, IntegrityProblem)
        assert isinstance(problem.code, str)
        assert problem.code.strip()
    text = repr(report) + str(report)
    assert SECRET_EVENT not in text
    assert SECRET_MEMORY not in text
    assert "TAMPERED" not in text


MEMORY_TAMPERS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "content": ("UPDATE memories SET content = ? WHERE memory_id = 'mem-1'", ("TAMPERED",)),
    "metadata": ("UPDATE memories SET metadata = ? WHERE memory_id = 'mem-1'", ('{"x":1}',)),
    "created_at": ("UPDATE memories SET created_at = created_at + 1 WHERE memory_id = 'mem-1'", ()),
    "clear_until": (
        "UPDATE memories SET clear_until = clear_until - 1 WHERE memory_id = 'mem-1'",
        (),
    ),
    "recall_until": (
        "UPDATE memories SET recall_until = recall_until - 1 WHERE memory_id = 'mem-1'",
        (),
    ),
    "trust": ("UPDATE memories SET trust = ? WHERE memory_id = 'mem-1'", (0,)),
    "kind": ("UPDATE memories SET kind = ? WHERE memory_id = 'mem-1'", ("TAMPERED",)),
    "fingerprint": (
        "UPDATE memories SET dependency_fingerprint = ? WHERE memory_id = 'mem-1'",
        ("0" * 64,),
    ),
    # deeper than Python's JSON decoder can read: damage, not a RecursionError
    "sources": ("UPDATE memories SET sources = ? WHERE memory_id = 'mem-1'", (DEEP_JSON,)),
}


@pytest.mark.parametrize("column", sorted(MEMORY_TAMPERS))
def test_tampered_memory_is_never_served(service: TrueHeart, db_path: Path, column: str) -> None:
    _populate(service)
    sql, params = MEMORY_TAMPERS[column]
    assert tamper(db_path, sql, params) == 1
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ) as info:
        service.recall(RecallQuery(SCOPE, NOW + timedelta(days=1), 100))
    assert_not_chained(info.value)
    assert SECRET_MEMORY not in str(info.value)
    with pytest.raises(RepositoryCorruption):
        service.materialize_once(memory("mem-1", ("evt-1",), content=SECRET_MEMORY))
    _assert_problem(service.verify_integrity(), "memory", "mem-1")
    _assert_problem(service.verify_integrity(SCOPE), "memory", "mem-1")


def test_tampered_memory_status_is_never_served(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    assert tamper(db_path, "UPDATE memories SET status = 'active' WHERE memory_id = 'mem-1'") == 1
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ):
        service.recall(RecallQuery(SCOPE, NOW, 100))
    _assert_problem(service.verify_integrity(), "memory", "mem-1")


def test_tampered_memory_id_is_never_served(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert tamper(db_path, "UPDATE memories SET memory_id = 'mem-0' WHERE memory_id = 'mem-1'") == 1
    with pytest.raises(RepositoryCorruption, match=r"^repository corruption: "):
        service.recall(RecallQuery(SCOPE, NOW, 100))
    assert not service.verify_integrity().ok


RAW_TAMPERS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "metadata": ("UPDATE raw_events SET metadata = ? WHERE event_id = 'evt-1'", ('{"k":[2]}',)),
    "source_metadata": (
        "UPDATE raw_events SET source_metadata = ? WHERE event_id = 'evt-1'",
        ('{"x":1}',),
    ),
    "trust": ("UPDATE raw_events SET trust = ? WHERE event_id = 'evt-1'", (2,)),
    "content_hash": (
        "UPDATE raw_events SET content_hash = ? WHERE event_id = 'evt-1'",
        ("0" * 64,),
    ),
    "raw_expires_at": (
        "UPDATE raw_events SET raw_expires_at = raw_expires_at + 1 WHERE event_id = 'evt-1'",
        (),
    ),
    "source_id": ("UPDATE raw_events SET source_id = ? WHERE event_id = 'evt-1'", ("TAMPERED",)),
    "clear_for": ("UPDATE raw_events SET clear_for = ? WHERE event_id = 'evt-1'", ("1000000",)),
}


@pytest.mark.parametrize("column", sorted(RAW_TAMPERS))
def test_tampered_raw_event_is_never_served(service: TrueHeart, db_path: Path, column: str) -> None:
    _populate(service)
    sql, params = RAW_TAMPERS[column]
    assert tamper(db_path, sql, params) == 1
    invalid_event = msg("repository corruption: invalid raw event record")
    with pytest.raises(RepositoryCorruption, match=invalid_event) as info:
        service.ingest_event(event("evt-1", content=SECRET_EVENT, metadata={"k": [1]}))
    assert_not_chained(info.value)
    assert SECRET_EVENT not in str(info.value)
    with pytest.raises(RepositoryCorruption, match=invalid_event):
        service.materialize_once(memory("mem-new", ("evt-1",), kind="fresh"))
    _assert_problem(service.verify_integrity(), "raw_event", "evt-1")


def test_tampered_raw_body_is_reported(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert tamper(
        db_path,
        "UPDATE raw_bodies SET content = ? WHERE rid = (SELECT rid FROM raw_events WHERE "
        "event_id = 'evt-1')",
        ("TAMPERED",),
    )
    # the body may be reported as its own entity type, tied to the event id
    _assert_problem(service.verify_integrity(), ("raw_event", "raw_body"), "evt-1")
    _assert_problem(service.verify_integrity(SCOPE), ("raw_event", "raw_body"), "evt-1")
    assert service.verify_integrity(OTHER_SCOPE).ok is True


# Where audit rows are kept: the write buffer holds the newest until it moves them.
AUDIT_TABLES = ("audit_log", "write_buffer")


def test_tampered_audit_row_fails_the_audit_read(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    changed = sum(
        tamper(
            db_path, f"UPDATE {table} SET reason = ? WHERE action = 'materialize'", ("TAMPERED",)
        )
        for table in AUDIT_TABLES
    )
    assert changed == 2
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid audit record")
    ):
        service.audit(SCOPE)
    assert not service.verify_integrity().ok


def test_tampered_audit_metadata_fails_the_audit_read(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert (
        sum(
            tamper(
                db_path, f"UPDATE {table} SET metadata = ? WHERE action = 'ingest'", ('{"a":1}',)
            )
            for table in AUDIT_TABLES
        )
        == 3
    )
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid audit record")
    ):
        service.audit(SCOPE)


def test_tampered_tombstone_fails_closed(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert tamper(db_path, "UPDATE tombstones SET deleted_at = deleted_at + 1") == 1
    invalid_tombstone = msg("repository corruption: invalid tombstone")
    with pytest.raises(RepositoryCorruption, match=invalid_tombstone):
        service.ingest_event(event("evt-gone"))
    # the missing-entity diagnosis reads the same tombstone
    with pytest.raises(RepositoryCorruption, match=invalid_tombstone):
        service.materialize_once(memory("mem-new", ("evt-gone",)))
    with pytest.raises(RepositoryCorruption, match=invalid_tombstone):
        service.govern(
            command(GovernanceAction.DELETE, "evt-gone", entity_type=EntityType.RAW_EVENT)
        )
    assert not service.verify_integrity().ok


def test_tampered_lineage_fails_closed(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    changed = tamper(
        db_path,
        "UPDATE lineage SET trust = ? WHERE memory_id = 'mem-1'",
        (int(TrustLevel.CONFIRMED),),
    )
    assert changed == 1
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ):
        service.materialize_once(memory("mem-1", ("evt-1",), content=SECRET_MEMORY))
    governance = r"^repository corruption: invalid memory (lineage|governance state)$"
    with pytest.raises(RepositoryCorruption, match=governance):
        service.govern(command(GovernanceAction.SEAL, "mem-1"))
    with pytest.raises(RepositoryCorruption, match=governance):
        service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert not service.verify_integrity().ok


def test_tampering_elsewhere_does_not_block_other_scopes(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    service.materialize_once(memory("mem-1", ("evt-1",), scope=OTHER_SCOPE))
    changed = tamper(
        db_path,
        f"UPDATE memories SET content = 'TAMPERED' WHERE memory_id = 'mem-1' "
        f"AND scope_id = {SCOPE_ID_SQL}",
        (SCOPE.subject_id,),
    )
    assert changed == 1
    assert [i.memory.memory_id for i in service.recall(RecallQuery(OTHER_SCOPE, NOW))] == ["mem-1"]
    assert service.verify_integrity(OTHER_SCOPE).ok is True
    _assert_problem(service.verify_integrity(SCOPE), "memory", "mem-1")
    full = service.verify_integrity()
    assert all(p.scope in (SCOPE, None) for p in full.problems)


def test_verify_integrity_never_mutates(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    tamper(db_path, "UPDATE memories SET content = 'TAMPERED' WHERE memory_id = 'mem-1'")
    before = _dump(db_path)
    first = service.verify_integrity()
    second = service.verify_integrity()
    assert first == second
    assert _dump(db_path) == before


def test_problem_scope_is_reported(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    tamper(db_path, "UPDATE memories SET kind = 'TAMPERED' WHERE memory_id = 'mem-2'")
    report = service.verify_integrity()
    (problem,) = [p for p in report.problems if p.entity_id == "mem-2"]
    assert problem.scope == SCOPE
    assert isinstance(problem.scope, Scope)
    assert problem.entity_type == "memory"


def test_clean_reads_keep_working_after_detection(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    original = _dump(db_path)
    tamper(db_path, "UPDATE memories SET trust = 0 WHERE memory_id = 'mem-1'")
    with pytest.raises(RepositoryCorruption):
        service.recall(RecallQuery(SCOPE, NOW))
    tamper(db_path, "UPDATE memories SET trust = 1 WHERE memory_id = 'mem-1'")
    assert _dump(db_path) == original
    assert len(service.recall(RecallQuery(SCOPE, NOW + timedelta(days=1)))) == 2
    assert service.verify_integrity().ok is True


def test_replay_with_vanished_source_row_is_corruption(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    tamper(
        db_path,
        "DELETE FROM raw_bodies WHERE rid = (SELECT rid FROM raw_events WHERE event_id = 'evt-1')",
    )
    assert tamper(db_path, "DELETE FROM raw_events WHERE event_id = 'evt-1'") == 1
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ):
        service.materialize_once(memory("mem-1", ("evt-1",), content=SECRET_MEMORY))
    assert not service.verify_integrity().ok


def test_recall_never_reads_raw_bodies(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert tamper(db_path, "UPDATE raw_bodies SET content = 'TAMPERED' WHERE erased IS NOT 1") == 2
    items = service.recall(RecallQuery(SCOPE, NOW))
    assert sorted(i.memory.memory_id for i in items) == ["mem-1", "mem-2"]


def test_expiry_validates_only_eligible_rows(service: TrueHeart, db_path: Path) -> None:
    service.ingest_event(event("evt-soon", raw_ttl=timedelta(days=1)))
    service.ingest_event(event("evt-late", raw_ttl=timedelta(days=30), scope=OTHER_SCOPE))
    tamper(db_path, "UPDATE raw_events SET metadata = '{\"x\":1}' WHERE event_id = 'evt-late'")
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1


def test_expiry_fails_closed_on_a_tampered_eligible_row(service: TrueHeart, db_path: Path) -> None:
    service.ingest_event(event("evt-a", raw_ttl=timedelta(days=1)))
    service.ingest_event(event("evt-b", raw_ttl=timedelta(days=1)))
    tamper(db_path, "UPDATE raw_events SET trust = 2 WHERE event_id = 'evt-b'")
    before = _dump(db_path)
    with pytest.raises(RepositoryCorruption, match=r"^repository corruption: ") as info:
        service.expire_raw_content(as_of=NOW + timedelta(days=1))
    assert_not_chained(info.value)
    # rolled back: evt-a was not expired either
    assert _dump(db_path) == before
    tamper(db_path, "UPDATE raw_events SET trust = 1 WHERE event_id = 'evt-b'")
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 2


def test_renamed_scope_row_fails_closed(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert (
        tamper(db_path, "UPDATE scopes SET subject_id = 'evil' WHERE subject_id = 'subject'") == 1
    )
    evil = Scope("tenant", "owner", "evil")
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ):
        service.recall(RecallQuery(evil, NOW))
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid audit record")
    ):
        service.audit(evil)
    report = service.verify_integrity()
    assert not report.ok
    assert {p.entity_id for p in report.problems} >= {"evt-1", "mem-1"}


def test_missing_body_of_an_active_event_is_corruption(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert (
        tamper(
            db_path,
            "DELETE FROM raw_bodies WHERE rid = (SELECT rid FROM raw_events WHERE event_id = "
            "'evt-1')",
        )
        == 1
    )
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid raw event record")
    ):
        service.ingest_event(event("evt-1", content=SECRET_EVENT, metadata={"k": [1]}))
    with pytest.raises(RepositoryCorruption, match=r"^repository corruption: "):
        service.expire_raw_content(as_of=NOW + timedelta(days=30))
    _assert_problem(service.verify_integrity(), ("raw_event", "raw_body"), "evt-1")


def test_a_lineage_edge_moved_to_another_source_is_never_served(
    service: TrueHeart, db_path: Path
) -> None:
    _populate(service)
    changed = tamper(db_path, "UPDATE lineage SET event_id = 'evt-2' WHERE memory_id = 'mem-1'", ())
    assert changed == 1
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ):
        service.recall(RecallQuery(SCOPE, NOW))
    _assert_problem(service.verify_integrity(), "memory", "mem-1")


def test_a_deleted_lineage_edge_is_never_served(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert tamper(db_path, "DELETE FROM lineage WHERE memory_id = 'mem-2'", ()) == 1
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ):
        service.recall(RecallQuery(SCOPE, NOW, kinds=("other",)))
    assert not service.verify_integrity().ok


def test_an_index_that_disagrees_with_its_table_is_reported(
    service: TrueHeart, db_path: Path
) -> None:
    _populate(service)
    assert not [p for p in service.verify_integrity().problems if p.entity_type == "storage"]
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'memories_recall_clear'"
        ).fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    finally:
        conn.close()
    data = bytearray(db_path.read_bytes())
    data[root * page_size - 50] ^= 0xFF  # inside the index's cell content, not the table's
    db_path.write_bytes(bytes(data))
    with TrueHeart(SQLiteRepository(db_path)) as fresh:  # a connection with no cached pages
        report = fresh.verify_integrity()
    storage = [p for p in report.problems if p.entity_type == "storage"]
    assert [(p.entity_id, p.scope, p.code) for p in storage] == [("", None, "storage_check_failed")]


# Damage to what governance of mem-1 must validate first, and the message every action
# on it raises. A memory's tombstone carries its dependency fingerprint, which only valid
# lineage vouches for, so forget and delete fail closed here too.
GOVERNANCE_DAMAGE: dict[str, tuple[str, str]] = {
    "edge gone": ("DELETE FROM lineage WHERE memory_id = 'mem-1'", "invalid memory lineage"),
    "source receipt gone": (
        "DELETE FROM raw_events WHERE event_id = 'evt-1'",
        "invalid memory lineage",
    ),
    "unknown status": (
        "UPDATE memories SET status = 'unknown' WHERE memory_id = 'mem-1'",
        "invalid memory governance state",
    ),
    # The row's list of its sources, which leads the read to its edges: whatever it
    # holds, the edges found must be the memory's whole lineage.
    **{
        f"sources {name}": (
            f"UPDATE memories SET sources = {value} WHERE memory_id = 'mem-1'",
            "invalid memory lineage",
        )
        for name, value in (
            ("not JSON", "'[\"evt-1\"'"),
            ("a number", "7"),
            ("bytes", "X'5B226576742D31225D'"),
            ("an object", """'{"a": "evt-1"}'"""),
            ("with a number", """'["evt-1", 1]'"""),
            ("twice", """'["evt-1", "evt-1"]'"""),
            ("another event", """'["evt-2"]'"""),
            ("none", "'[]'"),
        )
    },
}


@pytest.mark.parametrize(
    "action", [GovernanceAction.SEAL, GovernanceAction.FORGET, GovernanceAction.DELETE]
)
@pytest.mark.parametrize("damage", sorted(GOVERNANCE_DAMAGE))
def test_governing_a_memory_whose_checked_state_is_damaged_changes_nothing(
    service: TrueHeart, db_path: Path, damage: str, action: GovernanceAction
) -> None:
    _populate(service)
    sql, message = GOVERNANCE_DAMAGE[damage]
    assert tamper(db_path, sql) == 1
    before = _dump(db_path)
    expected = msg(f"repository corruption: {message}")
    with pytest.raises(RepositoryCorruption, match=expected) as info:
        service.govern(command(action, "mem-1"))
    assert_not_chained(info.value)
    assert _dump(db_path) == before
    assert not service.verify_integrity(SCOPE).ok


def _forge_memory(path: Path, memory_id: str, column: str, value: object) -> None:
    """Set one column of a memory row and sign the row again, as only a forger (who
    recomputes the digest) could: the digest then vouches for the forged value."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            (rid,) = conn.execute(
                "SELECT rid FROM memories WHERE memory_id = ?", (memory_id,)
            ).fetchone()
            conn.execute(f"UPDATE memories SET {column} = ? WHERE rid = ?", (value, rid))
            stored = conn.execute(
                "SELECT s.tenant_id, s.owner_id, s.subject_id, m.memory_id, m.content, "
                "m.dependency_fingerprint, m.kind, m.trust, m.created_at, m.clear_until, "
                "m.recall_until, m.status, m.metadata, m.sources FROM memories m "
                "JOIN scopes s ON s.scope_id = m.scope_id WHERE m.rid = ?",
                (rid,),
            ).fetchone()
            row = MemoryRow((stored[0], stored[1], stored[2]), *stored[3:13], "")
            digest = _memory_digest(row, sorted(json.loads(stored[13])))
            conn.execute("UPDATE memories SET digest = ? WHERE rid = ?", (digest, rid))
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("column", "value"),
    # The kind is part of the lineage fingerprint: a forged one fails the lineage check.
    [
        ("content", 7),
        ("content", b"body"),
        ("trust", "2"),
        ("created_at", 1.5),
        ("recall_until", "x"),
    ],
)
def test_a_restore_refuses_a_forged_row_whose_entry_columns_have_other_types(
    service: TrueHeart, db_path: Path, column: str, value: object
) -> None:
    # Seal and restore check the row's digest, not its values (the contract leaves
    # content, dates and metadata to the reads); a restore still refuses to copy values
    # of another type into the search index.
    _populate(service)
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    _forge_memory(db_path, "mem-1", column, value)
    before = _dump(db_path)
    expected = msg("repository corruption: invalid memory governance state")
    with pytest.raises(RepositoryCorruption, match=expected) as info:
        service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert_not_chained(info.value)
    assert _dump(db_path) == before


def test_a_forged_row_whose_metadata_is_nested_too_deep_is_damage(
    service: TrueHeart, db_path: Path
) -> None:
    # The digest vouches for the value (a forger signed it), which no JSON decoder of
    # Python's can read: the row is damage, never a RecursionError.
    _populate(service)
    _forge_memory(db_path, "mem-1", "metadata", DEEP_JSON)
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid memory record")
    ) as info:
        service.recall(RecallQuery(SCOPE, NOW + timedelta(days=1), 100))
    assert_not_chained(info.value)
    _assert_problem(service.verify_integrity(), "memory", "mem-1")
    _assert_problem(service.verify_integrity(SCOPE), "memory", "mem-1")


def test_deleting_an_event_whose_dependent_memory_row_is_gone_changes_nothing(
    service: TrueHeart, db_path: Path
) -> None:
    _populate(service)
    assert tamper(db_path, "DELETE FROM memories WHERE memory_id = 'mem-1'") == 1
    before = _dump(db_path)
    with pytest.raises(
        RepositoryCorruption, match=msg("repository corruption: invalid raw deletion state")
    ):
        service.govern(command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT))
    assert _dump(db_path) == before


@pytest.mark.parametrize(
    "damage",
    [
        *(GOVERNANCE_DAMAGE[name][0] for name in sorted(GOVERNANCE_DAMAGE)),
        "DELETE FROM memories WHERE memory_id = 'mem-1'",
    ],
)
def test_subject_erasure_removes_what_damage_keeps_governance_from(
    service: TrueHeart, db_path: Path, damage: str
) -> None:
    """The way out that docs/threat-model.md names: erasing the subject needs none of the
    checks a single forget or delete makes, and leaves none of its bytes."""
    _populate(service)
    assert tamper(db_path, damage) == 1
    receipt = service.erase_subject(SCOPE, occurred_at=NOW + timedelta(minutes=5))
    assert receipt.remaining is not None
    assert receipt.remaining.total == 0
    data = store_bytes(db_path)
    assert SECRET_EVENT.encode() not in data
    assert SECRET_MEMORY.encode() not in data
    assert service.verify_integrity(SCOPE).ok
    with pytest.raises(EntityDeleted):
        service.ingest_event(event("evt-2"))


@pytest.mark.parametrize("fingerprint", ["not a fingerprint", 7, None])
def test_the_tombstone_of_an_erased_memory_with_a_damaged_fingerprint_verifies_and_round_trips(
    service: TrueHeart, db_path: Path, tmp_path: Path, fingerprint: object
) -> None:
    """Erasure keeps a damaged fingerprint as text in the memory's tombstone (it is not
    blocked by the damage of what it erases); that tombstone is one a real store holds,
    so it verifies, is exported, and imports."""
    _populate(service)
    sql = "UPDATE memories SET dependency_fingerprint = ? WHERE memory_id = 'mem-1'"
    assert tamper(db_path, sql, (fingerprint,)) == 1
    service.erase_subject(SCOPE, occurred_at=NOW + timedelta(minutes=5))
    conn = sqlite3.connect(db_path)
    try:
        kept = conn.execute(
            "SELECT fingerprint FROM tombstones WHERE entity_id = 'mem-1'"
        ).fetchone()
    finally:
        conn.close()
    assert kept == (str(fingerprint),)
    assert service.verify_integrity().ok
    out = io.StringIO()
    exported = service.export_store(out)
    with TrueHeart(SQLiteRepository(tmp_path / "copy.db")) as target:
        assert target.import_store(io.StringIO(out.getvalue())).digest == exported.digest
        assert target.verify_integrity().ok
        with pytest.raises(EntityDeleted):
            target.get_memory(SCOPE, "mem-1")


@pytest.mark.parametrize("damaged_id", ["  ", "m" * 200])
def test_the_receipt_of_an_erasure_names_a_damaged_id_as_stored(
    service: TrueHeart, db_path: Path, damaged_id: str
) -> None:
    """A memory whose stored ID breaks the rules of IDs is erased and tombstoned with
    that ID, and the receipt of the committed erasure names it: the call does not
    fail after its change was made."""
    _populate(service)
    sql = "UPDATE memories SET memory_id = ? WHERE memory_id = 'mem-1'"
    assert tamper(db_path, sql, (damaged_id,)) == 1
    receipt = service.erase_subject(SCOPE, occurred_at=NOW + timedelta(minutes=5))
    assert damaged_id in receipt.memory_ids
    assert receipt.remaining is not None
    assert receipt.remaining.total == 0
    assert SECRET_MEMORY.encode() not in store_bytes(db_path)


def test_a_body_whose_receipt_is_lost_is_reported_counted_and_erased(
    service: TrueHeart, db_path: Path
) -> None:
    """Bodies are found through their receipts; one whose receipt row is lost is found
    because the scope's audit log names an event with neither a receipt nor a tombstone."""
    _populate(service)
    service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
    lose = f"DELETE FROM raw_events WHERE event_id = 'evt-1' AND scope_id = {SCOPE_ID_SQL}"
    assert tamper(db_path, lose, (SCOPE.subject_id,)) == 1
    report = service.verify_integrity(SCOPE)
    assert sorted((p.entity_type, p.code) for p in report.problems) == [
        ("memory", "missing_source"),  # mem-1 derives from evt-1
        ("raw_body", "body_without_receipt"),
    ]
    assert service.verify_integrity(OTHER_SCOPE).ok
    when = NOW + timedelta(minutes=5)
    plan = service.erase_subject(SCOPE, occurred_at=when, dry_run=True)
    assert plan.erased.raw_body == 2  # evt-2's body and the one without a receipt
    receipt = service.erase_subject(SCOPE, occurred_at=when)
    assert receipt.erased.raw_body == 2
    assert receipt.remaining is not None
    assert receipt.remaining.total == 0
    assert SECRET_EVENT.encode() not in store_bytes(db_path)
    assert service.verify_integrity().ok
    assert service.stats(OTHER_SCOPE).events_with_body == 1


def test_rows_whose_scope_row_is_lost_stay_out_of_a_new_scope(
    service: TrueHeart, db_path: Path
) -> None:
    """A row names its scope by the ID of the scope's row. When that row is lost, a new
    scope must not get the same ID (SQLite would reuse the largest), or the orphaned rows
    would be counted, read and erased as the new scope's."""
    _populate(service)
    service.ingest_event(event("evt-o", scope=OTHER_SCOPE))  # the scope with the largest ID
    lose = "DELETE FROM scopes WHERE subject_id = ?"
    assert tamper(db_path, lose, (OTHER_SCOPE.subject_id,)) == 1
    newcomer = Scope("tenant", "owner", "newcomer")
    with TrueHeart(SQLiteRepository(db_path)) as fresh:  # no scope ID remembered
        fresh.ingest_event(event("evt-n", scope=newcomer))
        fresh.materialize_once(memory("mem-n", ("evt-n",), scope=newcomer))
        assert fresh.stats(newcomer).events == 1
        assert [r.memory.memory_id for r in fresh.recall(RecallQuery(newcomer, NOW))] == ["mem-n"]
        assert fresh.verify_integrity(newcomer).ok
        assert fresh.verify_integrity(SCOPE).ok
        storage = [p for p in fresh.verify_integrity().problems if p.entity_type == "storage"]
        assert [(p.code, p.scope) for p in storage] == [("storage_check_failed", None)]


@pytest.mark.parametrize(
    ("table", "where"),
    [
        ("raw_events", "event_id = 'evt-alone'"),
        ("raw_bodies", "rid = (SELECT rid FROM raw_events WHERE event_id = 'evt-alone')"),
        ("memories", "memory_id = 'mem-1'"),
    ],
)
def test_a_live_row_that_damage_marked_erased_is_reported_and_compaction_removes_it(
    service: TrueHeart, db_path: Path, table: str, where: str
) -> None:
    """Only an erasure sets the mark, in the statement that overwrites the row's text: a
    row marked erased that still holds text was marked by damage, and every read and
    erasure passes it by. The whole-store check finds it; ``compact`` removes it."""
    _populate(service)
    service.ingest_event(event("evt-alone", content="zqxleftbehind text"))
    assert service.verify_integrity().ok
    assert tamper(db_path, f"UPDATE {table} SET erased = 1 WHERE {where}", ()) == 1
    with TrueHeart(SQLiteRepository(db_path)) as fresh:
        storage = [p for p in fresh.verify_integrity().problems if p.entity_type == "storage"]
        assert [(p.code, p.scope) for p in storage] == [("storage_check_failed", None)]
        fresh.compact()
        report = fresh.verify_integrity()
    assert not [p for p in report.problems if p.entity_type == "storage"]
    if table == "raw_bodies":  # the marked row held the text
        assert b"zqxleftbehind" not in store_bytes(db_path)


def test_the_scoped_tables_are_every_table_with_a_scope(db_path: Path) -> None:
    from trueheart_core.adapters.sqlite.scope_statements import SCOPED_TABLES

    SQLiteRepository(db_path).close()
    conn = sqlite3.connect(db_path)
    try:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        scoped = {
            name
            for name in tables
            if any(
                column[1] == "scope_id" for column in conn.execute(f'PRAGMA table_info("{name}")')
            )
        }
    finally:
        conn.close()
    assert scoped - {"scopes"} == set(SCOPED_TABLES)


def test_a_lost_tombstone_of_a_forget_or_delete_is_reported(
    service: TrueHeart, db_path: Path
) -> None:
    """Tombstones are never removed, and every forget or delete is audited: an audited
    one whose tombstone is gone (after ``compact`` nothing else would block the ID) is
    reported under the entity it names."""
    _populate(service)  # evt-gone was deleted
    service.govern(command(GovernanceAction.FORGET, "mem-2"))
    assert service.verify_integrity().ok
    service.compact()
    assert tamper(db_path, "DELETE FROM tombstones") == 2
    problems = {(p.entity_type, p.entity_id, p.code) for p in service.verify_integrity().problems}
    assert problems == {
        ("raw_event", "evt-gone", "tombstone_missing"),
        ("memory", "mem-2", "tombstone_missing"),
    }
    assert service.verify_integrity(SCOPE).problems == service.verify_integrity().problems
    assert service.verify_integrity(OTHER_SCOPE).ok


def test_tombstones_bind_when_their_scope_index_lost_its_entries(db_path: Path) -> None:
    # Each tombstone is looked up through the index of what it is looked up by (the ID,
    # the fingerprint): a lost entry of another index must not let a forgotten memory
    # back in.
    first = TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW)
    first.ingest_event(event("evt-1"))
    first.materialize_once(memory("mem-1", ("evt-1",), content="secret orchard"))
    first.govern(command(GovernanceAction.FORGET, "mem-1"))
    first.close()
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'tombstones_by_scope'"
        ).fetchone()
        conn.execute("DROP INDEX tombstones_by_scope")
        conn.execute(f"{sql} WHERE seq < 0")  # the b-tree holds no entry
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'tombstones_by_scope'", (sql,))
        conn.execute("PRAGMA writable_schema = OFF")
    finally:
        conn.close()
    service = TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW)
    for _ in range(2):  # and again, once the store has been read
        with pytest.raises(EntityDeleted):
            service.materialize_once(memory("mem-1", ("evt-1",), content="secret orchard"))
        with pytest.raises(EntityDeleted):  # the forgotten memory's fingerprint
            service.materialize_once(memory("mem-1b", ("evt-1",), content="secret orchard"))
    service.close()


@pytest.mark.parametrize("held", [True, False], ids=["error-kept", "error-dropped"])
def test_a_read_that_failed_on_a_damaged_row_does_not_hold_up_a_later_erasure(
    service: TrueHeart, db_path: Path, held: bool
) -> None:
    # The row that cannot be decoded sorts after the others, so the read fails part-way
    # through its rows; the erasure that follows must not find that read's statement
    # still active on the connection (its checkpoint would fail as if another
    # connection held the store, call after call).
    _populate(service)
    service.materialize_once(memory("mem-3", ("evt-2",), content="third memory"))
    tamper(
        db_path, "UPDATE memories SET digest = CAST(X'61FF62' AS TEXT) WHERE memory_id = 'mem-3'"
    )
    failures: list[RepositoryCorruption] = []
    with pytest.raises(RepositoryCorruption) as caught:
        service.list_memories(SCOPE)
    if held:
        failures.append(caught.value)
    del caught
    receipt = service.erase_subject(SCOPE, occurred_at=NOW + timedelta(days=1))
    assert sorted(receipt.memory_ids) == ["mem-1", "mem-2", "mem-3"]
    service.close()
    assert SECRET_MEMORY.encode() not in store_bytes(db_path)
    assert b"third memory" not in store_bytes(db_path)
