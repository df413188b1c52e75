"""Erasing a whole subject: everything held in one exact scope goes in one transaction,
with tombstones, one summary audit row and a receipt whose counts are checked against
the rows of the file, counted independently with plain sqlite3."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from byte_search import key_bytes, leftovers
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    claim,
    command,
    event,
    file_db_or_skip,
    memory,
    store_bytes,
)

from trueheart_core import (
    ArtifactClass,
    ArtifactCounts,
    CanonicalClaimExtractor,
    ClaimQuery,
    EntityDeleted,
    EntityType,
    ErasureReceipt,
    GovernanceAction,
    RecallQuery,
    RepositoryBusy,
    RepositoryReadOnly,
    Scope,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
    ValidationError,
)

ERASED_AT = NOW + timedelta(days=2)
# Words that only the erased subject's bodies hold, and words of the scope kept.
SUBJECT_WORDS = (
    "zqxsubjraw",
    "zqxsubjmem",
    "zqxsubjsealed",
    "zqxsubjexpired",
    "zqxsubjclaim",
    "zqxsubjvalue",
    "zqxsubjextracted",
)
OTHER_WORDS = ("zqxotherraw", "zqxothermem", "zqxotherclaim")
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


def _populate(service: TrueHeart) -> None:
    """A subject with every kind of artifact, next to another subject of the same owner."""
    service.ingest_events(
        [event(f"evt-{i}", content=f"raw zqxsubjraw{i} body shared") for i in range(6)]
        + [event("evt-old", content="zqxsubjexpired body", raw_ttl=timedelta(days=1))]
        + [
            event(f"evt-{i}", scope=OTHER_SCOPE, content=f"kept zqxotherraw{i} shared")
            for i in range(3)
        ]
    )
    service.ingest_extracted(
        event(
            "evt-x",
            content="Canonical claim: subject=user:zqxsubjextracted; predicate=likes; value=tea.",
        ),
        CanonicalClaimExtractor(),
    )
    for i in range(6):
        service.materialize_once(
            memory(f"mem-{i}", (f"evt-{i}",), content=f"memory zqxsubjmem{i} shared")
        )
    service.materialize_once(memory("mem-sealed", ("evt-0",), content="zqxsubjsealed note"))
    service.materialize_claim(
        claim("claim-1", ("evt-1",), subject="user:zqxsubjclaim", value="zqxsubjvalue")
    )
    service.materialize_once(memory("mem-old", ("evt-old",), content="from an old event"))
    for i in range(3):
        service.materialize_once(
            memory(f"mem-{i}", (f"evt-{i}",), scope=OTHER_SCOPE, content=f"zqxothermem{i} shared")
        )
    service.materialize_claim(
        claim("claim-1", ("evt-0",), scope=OTHER_SCOPE, subject="user:zqxotherclaim")
    )
    service.govern(command(GovernanceAction.SEAL, "mem-sealed"))
    service.govern(command(GovernanceAction.FORGET, "mem-5"))
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1


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
        counts = {
            artifact.value: conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE scope_id = ?", (sid,)
            ).fetchone()[0]
            for artifact, table in TABLES.items()
        }

        def ids(sql: str) -> tuple[str, ...]:
            return tuple(sorted(r[0] for r in conn.execute(sql, (sid,))))

        return {
            "counts": counts,
            "events": ids("SELECT event_id FROM raw_events WHERE scope_id = ?"),
            "memories": ids("SELECT memory_id FROM memories WHERE scope_id = ?"),
            "claims": ids("SELECT claim_id FROM claims WHERE scope_id = ?"),
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


def test_receipt_counts_and_ids_match_the_file(service: TrueHeart, tmp_path: Path) -> None:
    path = file_db_or_skip(tmp_path)
    _populate(service)
    before = _independent(path, SCOPE)
    other_before = _independent(path, OTHER_SCOPE)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert receipt.erased == _as_counts(before["counts"])
    assert receipt.event_ids == before["events"]
    assert receipt.memory_ids == before["memories"]
    assert receipt.claim_ids == before["claims"] and len(receipt.claim_ids) == 2
    assert receipt.erased.memory == 9 and receipt.erased.raw_event == 8
    assert receipt.erased.raw_body == 7 and receipt.erased.extraction_record == 1
    assert receipt.erased.claim == 2 and receipt.erased.search_entry == 8
    after = _independent(path, SCOPE)
    assert after["counts"] == dict.fromkeys(after["counts"], 0)
    assert receipt.remaining == ArtifactCounts()
    assert receipt.verified is True
    assert not receipt.dry_run
    assert receipt.occurred_at == ERASED_AT
    # one tombstone per event and memory, the earlier one kept; one audit row more
    assert after["tombstones"] == before["tombstones"] + 8 + 9
    assert after["audit"] == before["audit"] + 1
    assert _independent(path, OTHER_SCOPE) == other_before


def test_receipt_counts_match_the_statistics(service: TrueHeart) -> None:
    _populate(service)
    stats = service.stats(SCOPE)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert receipt.erased.raw_event == stats.events
    assert receipt.erased.raw_body == stats.events_with_body
    assert receipt.erased.memory == stats.memories
    assert receipt.erased.claim == stats.claims
    assert receipt.erased.extraction_record == stats.extraction_records
    assert receipt.erased.search_entry == stats.search_entries
    assert receipt.erased.search_term == stats.search_terms
    after = service.stats(SCOPE)
    assert (after.events, after.memories, after.claims, after.search_postings) == (0, 0, 0, 0)
    assert after.tombstones == stats.tombstones + receipt.erased.raw_event + stats.memories
    assert receipt.verified is True


def test_dry_run_changes_nothing_in_the_file(service: TrueHeart, tmp_path: Path) -> None:
    path = file_db_or_skip(tmp_path)
    _populate(service)
    before = _dump(path)
    planned = service.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True)
    assert _dump(path) == before
    assert planned.dry_run and planned.remaining is None and planned.verified is None
    assert planned.erased == _as_counts(_independent(path, SCOPE)["counts"])
    done = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert (done.erased, done.event_ids, done.memory_ids, done.claim_ids) == (
        planned.erased,
        planned.event_ids,
        planned.memory_ids,
        planned.claim_ids,
    )


def test_dry_run_changes_nothing_through_the_api(service: TrueHeart) -> None:
    _populate(service)
    stats, audit = service.stats(SCOPE), service.audit(SCOPE, limit=100)
    planned = service.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True)
    assert service.stats(SCOPE) == stats
    assert service.audit(SCOPE, limit=100) == audit
    assert service.get_memory(SCOPE, "mem-0").memory_id == "mem-0"
    assert planned.erased.memory == stats.memories == 9


def test_dry_run_works_on_a_read_only_store(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        _populate(service)
    with TrueHeart(SQLiteRepository(db_path, read_only=True)) as reader:
        planned = reader.erase_subject(SCOPE, occurred_at=ERASED_AT, dry_run=True)
        assert planned.erased.memory == 9
        assert reader.stats(SCOPE).memories == 9


def test_tombstones_stop_every_erased_id_coming_back(service: TrueHeart) -> None:
    _populate(service)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    for event_id in receipt.event_ids:
        with pytest.raises(EntityDeleted):
            service.ingest_event(event(event_id))
        with pytest.raises(EntityDeleted):
            service.get_receipt(SCOPE, event_id)
    # A new source event, so that only the tombstones can refuse the memories.
    service.ingest_event(event("evt-new"))
    for memory_id in receipt.memory_ids:
        with pytest.raises(EntityDeleted):
            service.materialize_once(memory(memory_id, ("evt-new",)))
        with pytest.raises(EntityDeleted):
            service.get_memory(SCOPE, memory_id)
    with pytest.raises(EntityDeleted):
        service.materialize_claim(claim("claim-1", ("evt-new",)))
    # The other scope keeps its own IDs.
    assert service.get_memory(OTHER_SCOPE, "mem-0").memory_id == "mem-0"
    assert service.verify_integrity().ok


def test_one_body_free_audit_row_is_written_and_earlier_ones_kept(service: TrueHeart) -> None:
    _populate(service)
    earlier = service.audit(SCOPE, limit=100)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    records = service.audit(SCOPE, limit=100)
    assert records[1:] == earlier
    newest = records[0]
    assert (newest.action, newest.entity_type, newest.entity_id) == (
        "erase_subject",
        EntityType.SUBJECT,
        SCOPE.subject_id,
    )
    assert (newest.occurred_at, newest.reason, dict(newest.metadata)) == (
        ERASED_AT,
        "subject erasure requested",
        {},
    )
    assert not [word for word in SUBJECT_WORDS if word in repr(records) + repr(receipt)]
    assert service.verify_integrity().ok


def test_other_scopes_are_untouched(service: TrueHeart) -> None:
    _populate(service)
    stats = service.stats(OTHER_SCOPE)
    recall = service.recall(RecallQuery(OTHER_SCOPE, NOW))
    found = service.search(SearchQuery(OTHER_SCOPE, "shared", NOW))
    claims = service.claims(ClaimQuery(OTHER_SCOPE, NOW))
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    after = service.stats(OTHER_SCOPE)
    assert (after.events, after.memories, after.claims, after.search_terms) == (
        stats.events,
        stats.memories,
        stats.claims,
        stats.search_terms,
    )
    assert (after.search_entries, after.search_postings, after.audit_records) == (
        stats.search_entries,
        stats.search_postings,
        stats.audit_records,
    )
    assert service.recall(RecallQuery(OTHER_SCOPE, NOW)) == recall
    assert service.search(SearchQuery(OTHER_SCOPE, "shared", NOW)) == found
    assert service.claims(ClaimQuery(OTHER_SCOPE, NOW)) == claims
    assert service.verify_integrity().ok


def test_nothing_of_the_subject_is_readable_afterwards(service: TrueHeart) -> None:
    _populate(service)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert service.recall(RecallQuery(SCOPE, NOW)) == ()
    assert service.search(SearchQuery(SCOPE, "shared zqxsubjmem0", NOW)).matched == 0
    assert service.claims(ClaimQuery(SCOPE, NOW)).claims == ()
    assert service.list_memories(SCOPE).items == ()
    assert service.verify_integrity(SCOPE).ok


def test_erased_words_leave_the_file_and_the_wal(service: TrueHeart, tmp_path: Path) -> None:
    path = file_db_or_skip(tmp_path)
    _populate(service)
    data = store_bytes(path)
    assert all(word.encode() in data for word in SUBJECT_WORDS if word != "zqxsubjexpired")
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    subject_terms = [f"zqxsubjraw{i}" for i in range(6)] + [f"zqxsubjmem{i}" for i in range(5)]
    needles = [w.encode() for w in SUBJECT_WORDS] + [key_bytes(t) for t in subject_terms]
    assert leftovers(path, needles) == {}
    data = store_bytes(path)
    assert all(word.encode() in data for word in OTHER_WORDS)
    # a term shared with the other subject stays indexed there
    assert key_bytes("shared") in data


def test_erasing_an_unknown_or_empty_scope_records_it(service: TrueHeart) -> None:
    nobody = Scope("tenant", "owner", "nobody")
    receipt = service.erase_subject(nobody, occurred_at=ERASED_AT)
    assert receipt.erased == ArtifactCounts() and receipt.verified is True
    assert (receipt.event_ids, receipt.memory_ids, receipt.claim_ids) == ((), (), ())
    assert [r.action for r in service.audit(nobody)] == ["erase_subject"]
    again = service.erase_subject(nobody, occurred_at=ERASED_AT + timedelta(hours=1))
    assert again.erased.total == 0
    assert len(service.audit(nobody)) == 2


def test_a_second_erasure_finds_nothing_left(service: TrueHeart) -> None:
    _populate(service)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    again = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert again.erased.total == 0 and again.verified is True
    assert again.event_ids == again.memory_ids == again.claim_ids == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scope": ("tenant", "owner", "subject")}, "scope: must be a Scope"),
        ({"occurred_at": datetime(2026, 8, 13)}, "occurred_at: must be timezone-aware"),
        ({"occurred_at": "2026-08-13"}, "occurred_at: must be timezone-aware"),
        ({"dry_run": 1}, "dry_run: must be a bool"),
    ],
)
def test_bad_arguments_are_refused_before_anything_changes(
    service: TrueHeart, kwargs: dict[str, Any], message: str
) -> None:
    _populate(service)
    stats = service.stats(SCOPE)
    arguments: dict[str, Any] = {"scope": SCOPE, "occurred_at": ERASED_AT, **kwargs}
    scope = arguments.pop("scope")
    with pytest.raises(ValidationError, match=f"^{message}$"):
        service.erase_subject(scope, **arguments)
    assert service.stats(SCOPE) == stats


def _pinned_reader(path: Path) -> sqlite3.Connection:
    """A foreign connection holding a read snapshot, which blocks WAL checkpoints."""
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM memories").fetchone()
    return reader


def test_erasure_blocked_by_a_reader_is_busy_before_any_work(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path, busy_timeout=0.2), clock=lambda: NOW) as service:
        _populate(service)
        service.ingest_event(event("evt-late"))  # the WAL holds frames the reader pins
        stats = service.stats(SCOPE)
        reader = _pinned_reader(db_path)
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
        _populate(service)  # ends with an erasing call: the WAL is empty
        reader = _pinned_reader(db_path)
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


def test_a_read_only_store_refuses_erasure(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        _populate(service)
    with TrueHeart(SQLiteRepository(db_path, read_only=True)) as reader:
        with pytest.raises(RepositoryReadOnly):
            reader.erase_subject(SCOPE, occurred_at=ERASED_AT)
        assert reader.stats(SCOPE).memories == 9


def test_receipt_validates_its_fields() -> None:
    counts = ArtifactCounts(memory=1)
    when = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ValidationError, match=r"^memory_ids: must be sorted and without dupl"):
        ErasureReceipt(SCOPE, when, False, counts, (), ("b", "a"), (), ArtifactCounts())
    with pytest.raises(ValidationError, match=r"^remaining: must be None in a dry run$"):
        ErasureReceipt(SCOPE, when, True, counts, (), (), (), ArtifactCounts())
    with pytest.raises(ValidationError, match=r"^remaining: must be an ArtifactCounts$"):
        ErasureReceipt(SCOPE, when, False, counts, (), (), ())
    left = ErasureReceipt(SCOPE, when, False, counts, (), ("a",), (), ArtifactCounts(claim=1))
    assert left.verified is False
    assert counts[ArtifactClass.MEMORY] == 1 and counts.total == 1
    with pytest.raises(ValidationError, match=r"^raw_event: must be a non-negative int$"):
        ArtifactCounts(raw_event=-1)


def test_artifact_counts_have_one_field_per_class() -> None:
    import dataclasses

    assert [f.name for f in dataclasses.fields(ArtifactCounts)] == [a.value for a in ArtifactClass]
    counts = ArtifactCounts(*range(len(ArtifactClass)))
    assert [count for _, count in counts.items()] == list(range(len(ArtifactClass)))
