"""Upgrading older SQLite stores in place: a version-1 store (no search index) and a
version-4 store (vectors without sketches); the file is turned into exactly what that
version wrote, with sqlite3, and opened again."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import multiprocessing
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from byte_search import leftovers
from conformance_builders import (
    ERASED_AT,
    NOW,
    OTHER_SCOPE,
    OTHER_WORDS,
    SCOPE,
    SUBJECT_WORDS,
    bm25_reference,
    check_capsule,
    command,
    event,
    memory,
    msg,
    populate_subject,
)
from semantic_builders import DenseEmbedder
from sqlite_builders import downgrade_to_6, store_bytes

from trueheart_core import (
    ClaimQuery,
    EntityType,
    GovernanceAction,
    MemoryCapsule,
    RecallItem,
    RecallQuery,
    RepositoryCorruption,
    RepositoryReadOnly,
    Scope,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
)
from trueheart_core.adapters.sqlite import connection
from trueheart_core.adapters.sqlite.buffer import drain
from trueheart_core.adapters.sqlite.migrations import MIGRATIONS
from trueheart_core.adapters.sqlite.schema import (
    SCHEMA_VERSION,
    definitions,
    object_names,
)
from trueheart_core.domain.search.tokenize import TOKENIZER_ID
from trueheart_core.domain.semantic.sketch import sketch_of

Catalog = set[tuple[str, str, str, str]]

ACTIVE = {
    "mem-1": "green tea with lemon",
    "mem-3": "the user drinks tea every morning",
    "mem-4": "coffee and tea",
}
SEALED = {"mem-2": "black tea"}
OTHER = {"mem-o": "tea in the other scope"}
QUERIES = ("tea", "green tea", "black", "morning coffee")


def _catalog(conn: sqlite3.Connection) -> Catalog:
    return {
        (kind, name, table, sql)
        for kind, name, table, sql in conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
        )
        if not name.startswith("sqlite_")
    }


def _catalog_built_by(statements: list[str]) -> Catalog:
    conn = sqlite3.connect(":memory:")
    try:
        for statement in statements:
            conn.execute(statement)
        return _catalog(conn)
    finally:
        conn.close()


def _inspect(path: Path) -> tuple[int, Catalog, object]:
    """user_version, catalog and stored tokenizer identity (None without search_meta)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        catalog = _catalog(conn)
        tokenizer = None
        if any(name == "search_meta" for _, name, _, _ in catalog):
            row = conn.execute("SELECT tokenizer FROM search_meta").fetchone()
            tokenizer = None if row is None else row[0]
        return version, catalog, tokenizer
    finally:
        conn.close()


def _search(service: TrueHeart, text: str, scope: Scope = SCOPE) -> MemoryCapsule:
    capsule = service.search(SearchQuery(scope, text, NOW + timedelta(hours=1), limit=100))
    check_capsule(capsule)
    return capsule


def _open(path: Path, *, read_only: bool = False) -> TrueHeart:
    return TrueHeart(SQLiteRepository(path, read_only=read_only), clock=lambda: NOW)


def _build_v2(path: Path) -> tuple[dict[str, MemoryCapsule], tuple[RecallItem, ...]]:
    """A version-2 store with active and sealed memories in two scopes, a forgotten
    memory, and the answers it gives before any downgrade."""
    with _open(path) as service:
        service.ingest_event(event("evt-1"))
        service.ingest_event(event("evt-1", scope=OTHER_SCOPE))
        for memory_id, content in {**ACTIVE, **SEALED, "mem-gone": "tea to forget"}.items():
            service.materialize_once(memory(memory_id, content=content))
        for memory_id, content in OTHER.items():
            service.materialize_once(memory(memory_id, scope=OTHER_SCOPE, content=content))
        service.govern(command(GovernanceAction.SEAL, "mem-2"))
        service.govern(command(GovernanceAction.FORGET, "mem-gone"))
        answers = {text: _search(service, text) for text in QUERIES}
        recall = service.recall(RecallQuery(SCOPE, NOW, 100))
    return answers, recall


def _downgrade(path: Path) -> None:
    """Turn a current file into exactly the file version 1 would have written."""
    downgrade_to_6(path)
    added = object_names(6) - object_names(1)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for kind, name in sorted(added):  # indexes first, then tables
            conn.execute(f"DROP {kind.upper()} IF EXISTS {name}")
        conn.execute("PRAGMA user_version = 1")
        conn.execute("COMMIT")
    finally:
        conn.close()
    version, catalog, tokenizer = _inspect(path)
    assert (version, tokenizer) == (1, None)
    assert catalog == _catalog_built_by(list(MIGRATIONS[1]))


def _v1_store(path: Path) -> tuple[dict[str, MemoryCapsule], tuple[RecallItem, ...]]:
    answers, recall = _build_v2(path)
    _downgrade(path)
    return answers, recall


def _assert_reference(service: TrueHeart, text: str, corpus: dict[str, str]) -> None:
    capsule = _search(service, text)
    texts = list(corpus.values())
    expected = {k: bm25_reference(text, texts, v) for k, v in corpus.items()}
    expected = {k: score for k, score in expected.items() if score > 0}
    assert {item.memory.memory_id for item in capsule.items} == set(expected)
    for item in capsule.items:
        assert math.isclose(item.score, expected[item.memory.memory_id], rel_tol=1e-12)


def test_a_read_only_open_of_a_version_1_store_is_refused(db_path: Path) -> None:
    _v1_store(db_path)
    for side in ("wal", "shm"):
        Path(f"{db_path}-{side}").unlink(missing_ok=True)
    beside = [False, False]
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    with pytest.raises(
        RepositoryReadOnly, match=msg("repository read-only: schema upgrade needs a writable store")
    ) as caught:
        SQLiteRepository(db_path, read_only=True)
    assert caught.value.__cause__ is None
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
    # Refused before SQLite opened it: no WAL or shared-memory file appeared beside it.
    assert [Path(f"{db_path}-{side}").exists() for side in ("wal", "shm")] == beside
    assert db_path.read_bytes()[60:64] == (1).to_bytes(4, "big")
    version, catalog, _ = _inspect(db_path)
    assert version == 1
    assert catalog == _catalog_built_by(list(MIGRATIONS[1]))
    # The refusal left nothing behind that stops a writable open.
    with _open(db_path) as service:
        assert service.verify_integrity().ok


def test_a_writable_open_upgrades_in_place(
    db_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answers, recall = _v1_store(db_path)
    with caplog.at_level(logging.INFO, logger="trueheart_core.store"):
        upgraded = _open(db_path)
    assert [r.getMessage() for r in caplog.records if r.name == "trueheart_core.store"] == [
        f"schema upgraded from version 1 to {SCHEMA_VERSION}"
    ]
    with upgraded as service:
        version, catalog, tokenizer = _inspect(db_path)
        assert version == SCHEMA_VERSION
        with _open(tmp_path / "fresh.db"):
            _, fresh_catalog, fresh_tokenizer = _inspect(tmp_path / "fresh.db")
        assert catalog == fresh_catalog
        assert {(kind, name) for kind, name, _, _ in catalog} == object_names(SCHEMA_VERSION)
        assert (tokenizer, fresh_tokenizer) == ("", "")
        # An index not built yet is not a problem: it is built on first use.
        assert service.verify_integrity().ok
        assert service.recall(RecallQuery(SCOPE, NOW, 100)) == recall
        for text, answer in answers.items():
            assert _search(service, text) == answer, text
        assert _inspect(db_path)[2] == TOKENIZER_ID
        assert "mem-2" not in {i.memory.memory_id for a in answers.values() for i in a.items}
        assert _search(service, "black").matched == 0
        assert {i.memory.memory_id for i in _search(service, "tea").items} == set(ACTIVE)
        assert [i.memory.memory_id for i in _search(service, "tea", OTHER_SCOPE).items] == ["mem-o"]
        assert service.verify_integrity().ok
        assert service.rebuild_search_index() == len(ACTIVE) + len(OTHER)
    assert db_path.read_bytes()[60:64] == SCHEMA_VERSION.to_bytes(4, "big")
    with _open(db_path, read_only=True) as again:
        assert _search(again, "tea") == answers["tea"]
        assert again.verify_integrity().ok


def _materialize(service: TrueHeart) -> dict[str, str]:
    service.materialize_once(memory("mem-new", content="oolong tea", kind="note"))
    return {**ACTIVE, "mem-new": "oolong tea"}


def _seal(service: TrueHeart) -> dict[str, str]:
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    return {k: v for k, v in ACTIVE.items() if k != "mem-1"}


def _restore(service: TrueHeart) -> dict[str, str]:
    service.govern(command(GovernanceAction.RESTORE, "mem-2"))
    return {**ACTIVE, **SEALED}


def _forget(service: TrueHeart) -> dict[str, str]:
    service.govern(command(GovernanceAction.FORGET, "mem-3"))
    return {k: v for k, v in ACTIVE.items() if k != "mem-3"}


def _delete_event(service: TrueHeart) -> dict[str, str]:
    service.govern(command(GovernanceAction.DELETE, "evt-1", entity_type=EntityType.RAW_EVENT))
    return {}


FIRST_WRITES: dict[str, Callable[[TrueHeart], dict[str, str]]] = {
    "materialize": _materialize,
    "seal": _seal,
    "restore": _restore,
    "forget": _forget,
    "delete-event": _delete_event,
}


@pytest.mark.parametrize("first", sorted(FIRST_WRITES))
def test_a_first_write_after_the_upgrade_leaves_a_complete_index(db_path: Path, first: str) -> None:
    _v1_store(db_path)
    with _open(db_path) as service:
        active = FIRST_WRITES[first](service)
        # Before any search: whatever the write did, the index (once built) is exact.
        assert service.verify_integrity().ok
        for text in QUERIES:
            _assert_reference(service, text, active)
        assert [i.memory.memory_id for i in _search(service, "tea", OTHER_SCOPE).items] == ["mem-o"]
        assert _inspect(db_path)[2] == TOKENIZER_ID
        assert service.verify_integrity().ok


def test_a_materialize_right_after_the_upgrade_indexes_the_old_memories(db_path: Path) -> None:
    _v1_store(db_path)
    with _open(db_path) as service:
        service.materialize_once(memory("mem-new", content="oolong tea", kind="note"))
        # The write built the index first: it is current before any search.
        assert _inspect(db_path)[2] == TOKENIZER_ID
        assert service.verify_integrity().ok
    with _open(db_path, read_only=True) as reader:
        found = {i.memory.memory_id for i in _search(reader, "tea").items}
        assert found == {*ACTIVE, "mem-new"}


def test_a_partly_upgraded_version_1_file_is_refused(db_path: Path) -> None:
    _v1_store(db_path)
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("CREATE TABLE search_meta (singleton INTEGER PRIMARY KEY, tokenizer TEXT)")
        conn.commit()
    finally:
        conn.close()
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    for read_only in (False, True):
        with pytest.raises(
            RepositoryCorruption, match=msg("repository corruption: invalid schema catalog")
        ):
            SQLiteRepository(db_path, read_only=read_only)
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
    assert _inspect(db_path)[0] == 1


def test_a_newer_version_claim_still_in_the_wal_is_refused(db_path: Path) -> None:
    # A newer version in the file header is covered with the other bad files; here the
    # claim is committed but not yet checkpointed, so only the WAL holds it.
    _build_v2(db_path)
    writer = sqlite3.connect(db_path, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        assert Path(f"{db_path}-wal").stat().st_size > 0
        assert db_path.read_bytes()[60:64] == SCHEMA_VERSION.to_bytes(4, "big")
        for read_only in (False, True):
            with pytest.raises(
                RepositoryCorruption, match=msg("repository corruption: unsupported schema version")
            ):
                SQLiteRepository(db_path, read_only=read_only)
        (version,) = writer.execute("PRAGMA user_version").fetchone()
        assert version == SCHEMA_VERSION + 1
    finally:
        writer.close()


def test_a_newer_version_committed_while_open_refuses_every_later_call(db_path: Path) -> None:
    # The repository has already run units on the store (so it knows the store as it
    # was); another connection then claims a newer version.
    service = TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW)
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", ("evt-1",)))
    writer = sqlite3.connect(db_path, isolation_level=None)
    try:
        writer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    finally:
        writer.close()
    unsupported = msg("repository corruption: unsupported schema version")
    with pytest.raises(RepositoryCorruption, match=unsupported):
        service.materialize_once(memory("mem-2", ("evt-1",)))
    # Refused again, not only the first time: nothing of the refused unit is trusted.
    with pytest.raises(RepositoryCorruption, match=unsupported):
        service.recall(RecallQuery(SCOPE, NOW))
    with pytest.raises(RepositoryCorruption, match=unsupported):
        service.ingest_event(event("evt-2"))


# --- version 4 to version 5: vector sketches and generations ------------------------------


def _dense(path: Path, *, read_only: bool = False) -> TrueHeart:
    return TrueHeart(
        SQLiteRepository(path, read_only=read_only), clock=lambda: NOW, embedder=DenseEmbedder()
    )


def _hybrid(service: TrueHeart, text: str) -> MemoryCapsule:
    capsule = service.search(SearchQuery(SCOPE, text, NOW + timedelta(hours=1), limit=3))
    check_capsule(capsule)
    assert capsule.semantic is not None
    return capsule


def _build_v4(path: Path) -> dict[str, MemoryCapsule]:
    """A store with vectors, and the hybrid answers it gives before the downgrade."""
    with _dense(path) as service:
        service.ingest_event(event("evt-1"))
        for memory_id, content in {**ACTIVE, **SEALED, "mem-gone": "tea to forget"}.items():
            service.materialize_once(memory(memory_id, content=content))
        for index in range(40):
            service.materialize_once(memory(f"mem-f{index:02d}", content=f"filler {index}"))
        service.govern(command(GovernanceAction.SEAL, "mem-2"))
        service.govern(command(GovernanceAction.FORGET, "mem-gone"))
        return {text: _hybrid(service, text) for text in QUERIES}


def _downgrade_to_5(path: Path) -> None:
    """Turn a current file into exactly the file version 5 would have written: every
    posting merged and the objects of version 6 dropped."""
    downgrade_to_6(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for kind, name in sorted(object_names(6) - object_names(5)):
            conn.execute(f"DROP {kind.upper()} IF EXISTS {name}")
        conn.execute("PRAGMA user_version = 5")
        conn.execute("COMMIT")
    finally:
        conn.close()
    version, catalog, _ = _inspect(path)
    assert version == 5
    assert catalog == _catalog_built_by([s for step in range(1, 6) for s in MIGRATIONS[step]])


def _memory_rows(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT rid, scope_id, memory_id, digest FROM memories ORDER BY rid"
        ).fetchall()
    finally:
        conn.close()


def test_a_version_5_store_is_upgraded_with_its_searches_kept(
    db_path: Path, tmp_path: Path
) -> None:
    with _open(db_path) as service:
        service.ingest_event(event("evt-1"))
        fillers = {f"mem-f{i:03d}": f"filler tea {i}" for i in range(90)}
        for memory_id, content in {**ACTIVE, **SEALED, **fillers}.items():
            service.materialize_once(memory(memory_id, content=content))
        service.govern(command(GovernanceAction.SEAL, "mem-2"))
        service.govern(command(GovernanceAction.FORGET, "mem-f010"))
        answers = {text: _search(service, text) for text in (*QUERIES, "filler 7", "tea 42")}
    _downgrade_to_5(db_path)
    rows = _memory_rows(db_path)
    with _open(db_path) as service:
        version, catalog, _ = _inspect(db_path)
        with _open(tmp_path / "fresh.db"):
            _, fresh_catalog, _ = _inspect(tmp_path / "fresh.db")
        assert (version, catalog) == (SCHEMA_VERSION, fresh_catalog)
        assert _memory_rows(db_path) == rows
        assert service.verify_integrity().ok
        for text, answer in answers.items():
            assert _search(service, text) == answer, text
        # Writes after the upgrade wait in pending rows beside the merged postings.
        service.ingest_event(event("evt-2"))
        service.materialize_once(memory("mem-new", ("evt-2",), content="oolong tea"))
        assert _search(service, "oolong").items[0].memory.memory_id == "mem-new"
        assert service.verify_integrity().ok


def _downgrade_to_4(path: Path) -> None:
    """Turn a current file into exactly the file version 4 would have written: the
    objects of version 5 dropped, and the columns it added to the vectors."""
    downgrade_to_6(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for kind, name in sorted(object_names(6) - object_names(4)):
            conn.execute(f"DROP {kind.upper()} IF EXISTS {name}")
        for column in ("sketch_error", "sketch_scale", "sketch"):
            conn.execute(f"ALTER TABLE vectors DROP COLUMN {column}")
        conn.execute("PRAGMA user_version = 4")
        conn.execute("COMMIT")
    finally:
        conn.close()
    version, catalog, _ = _inspect(path)
    assert version == 4
    assert catalog == _catalog_built_by([s for step in range(1, 5) for s in MIGRATIONS[step]])


def _sketch_columns(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        # A version 7 store keeps a replaced vector row, erased, until compaction.
        live = " WHERE erased IS NOT 1" if _inspect(path)[0] >= 7 else ""
        return conn.execute(
            f"SELECT vector, sketch, sketch_scale, sketch_error FROM vectors{live} ORDER BY vid"
        ).fetchall()
    finally:
        conn.close()


def test_a_version_4_store_is_upgraded_and_its_vectors_compared_exactly(
    db_path: Path, tmp_path: Path
) -> None:
    answers = _build_v4(db_path)
    _downgrade_to_4(db_path)
    with _dense(db_path) as service:
        version, catalog, _ = _inspect(db_path)
        with _dense(tmp_path / "fresh.db"):
            _, fresh_catalog, _ = _inspect(tmp_path / "fresh.db")
        assert (version, catalog) == (SCHEMA_VERSION, fresh_catalog)
        rows = _sketch_columns(db_path)
        assert len(rows) == len(ACTIVE) + len(SEALED) + 40
        # Vectors stored before sketches have none: they are compared exactly.
        assert {row[1:] for row in rows} == {(None, None, None)}
        assert service.verify_integrity().ok
        for text, answer in answers.items():
            assert _hybrid(service, text) == answer, text
        report = service.rebuild_indexes()
        assert report.vector_sketches_rebuilt == len(rows) and report.changed
        assert [row[1:] for row in _sketch_columns(db_path)] == [sketch_of(row[0]) for row in rows]
        assert service.verify_integrity().ok
        for text, answer in answers.items():
            assert _hybrid(service, text) == answer, text
        assert service.rebuild_indexes().vector_sketches_rebuilt == 0
    with _dense(db_path, read_only=True) as reader:
        for text, answer in answers.items():
            assert _hybrid(reader, text) == answer, text


def test_a_write_after_the_upgrade_stores_a_sketch(db_path: Path) -> None:
    _build_v4(db_path)
    _downgrade_to_4(db_path)
    with _dense(db_path) as service:
        service.ingest_event(event("evt-2"))
        service.materialize_once(memory("mem-new", ("evt-2",), content="oolong tea"))
        assert service.verify_integrity().ok
        assert _hybrid(service, "oolong tea").items[0].memory.memory_id == "mem-new"
    (vector, *sketch) = _sketch_columns(db_path)[-1]
    assert tuple(sketch) == sketch_of(vector)


# --- version 6 to version 7: kept tables erased in place -----------------------------------


def _open_upgraded(
    path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, from_version: int
) -> TrueHeart:
    """Open a store of ``from_version``: the upgrade is logged once, and the file's
    catalog is then exactly a new store's."""
    with caplog.at_level(logging.INFO, logger="trueheart_core.store"):
        service = _open(path)
    assert [r.getMessage() for r in caplog.records if r.name == "trueheart_core.store"] == [
        f"schema upgraded from version {from_version} to {SCHEMA_VERSION}"
    ]
    version, catalog, _ = _inspect(path)
    with _open(tmp_path / "fresh.db"):
        _, fresh_catalog, _ = _inspect(tmp_path / "fresh.db")
    assert (version, catalog) == (SCHEMA_VERSION, fresh_catalog)
    return service


def _everything(service: TrueHeart) -> dict[str, object]:
    """What the store answers about both subjects."""
    scopes = (SCOPE, OTHER_SCOPE)
    return {
        "recall": [service.recall(RecallQuery(s, NOW + timedelta(hours=1), 100)) for s in scopes],
        "list": [service.list_memories(s, limit=100) for s in scopes],
        "search": [_search(service, "shared", s) for s in scopes],
        "claims": [service.claims(ClaimQuery(s, NOW)) for s in scopes],
        "audit": [service.audit(s) for s in scopes],
        "stats": [
            dataclasses.replace(
                service.stats(s),
                database_bytes=None,
                wal_bytes=None,
                storage_bytes=None,
                storage_detail=(),
            )
            for s in scopes
        ],
        "receipts": [service.get_receipt(s, "evt-1") for s in scopes],
    }


def test_a_version_6_store_is_upgraded_and_then_erased_in_place(
    db_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _open(db_path) as service:
        populate_subject(service)
        before = _everything(service)
    downgrade_to_6(db_path)
    assert _inspect(db_path)[0] == 6
    with _open_upgraded(db_path, tmp_path, caplog, 6) as service:
        assert service.verify_integrity().ok
        assert _everything(service) == before
        # The rebuilt tables hold only rows appended in order: an erasure in place is
        # exact at once, with no rewrite of the file.
        assert service.erase_subject(SCOPE, occurred_at=ERASED_AT).verified
        assert leftovers(db_path, [w.encode() for w in SUBJECT_WORDS]) == {}
        data = store_bytes(db_path)
        assert all(word.encode() in data for word in OTHER_WORDS)
        assert service.verify_integrity().ok


# --- version 7 to version 8: expiry in event-ID order --------------------------------------


def _step_down(path: Path, version: int, step: Callable[[sqlite3.Connection], None]) -> None:
    """Run ``step`` on the file in one transaction; the file is then exactly what
    ``version`` would have written."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        step(conn)
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    finally:
        conn.close()
    found, catalog, _ = _inspect(path)
    assert found == version
    assert catalog == {d for d in definitions(version) if not d[1].startswith("sqlite_")}


def _to_8(conn: sqlite3.Connection) -> None:
    """The buffered rows in their clustered tables, which take back their names, and no
    buffer."""
    drain(conn)
    conn.execute("DROP VIEW audit")
    conn.execute("DROP VIEW search_pending")
    conn.execute("DROP TABLE write_buffer")
    conn.execute("ALTER TABLE audit_log RENAME TO audit")
    conn.execute("ALTER TABLE search_waiting RENAME TO search_pending")
    conn.execute("DROP INDEX search_postings_by_doc")
    conn.execute("CREATE INDEX search_postings_by_doc ON search_postings (doc)")


def _to_7(conn: sqlite3.Connection) -> None:
    """Version 8's file, with its expiry index in deadline order alone."""
    (old,) = [s for s in MIGRATIONS[7] if "INDEX raw_events_expiry" in s]
    _to_8(conn)
    conn.execute("DROP INDEX raw_events_expiry")
    conn.execute(old)


def _downgrade_to_8(path: Path) -> None:
    _step_down(path, 8, _to_8)


def _downgrade_to_7(path: Path) -> None:
    _step_down(path, 7, _to_7)


def test_a_version_8_store_is_upgraded_to_the_write_buffer_and_answers_the_same(
    db_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _open(db_path) as service:
        populate_subject(service)
        before = _everything(service)
        audit_before = [service.audit(s, limit=100) for s in (SCOPE, OTHER_SCOPE)]
    _downgrade_to_8(db_path)
    with _open_upgraded(db_path, tmp_path, caplog, 8) as service:
        assert service.verify_integrity().ok
        assert _everything(service) == before
        assert [service.audit(s, limit=100) for s in (SCOPE, OTHER_SCOPE)] == audit_before
        # Writes after the upgrade wait in the buffer, beside the rows it moved.
        service.ingest_event(event("evt-after"))
        assert "evt-after" in {r.entity_id for r in service.audit(SCOPE, limit=100)}
        assert service.verify_integrity().ok


def test_a_version_7_store_is_upgraded_and_expires_in_event_id_order(
    db_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ids = ["evt-c", "evt-a", "evt-b"]
    with _open(db_path) as service:
        for event_id in ids:
            service.ingest_event(event(event_id, raw_ttl=timedelta(days=1)))
    _downgrade_to_7(db_path)
    with _open_upgraded(db_path, tmp_path, caplog, 7) as service:
        assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 3
        expired = [r.entity_id for r in service.audit(SCOPE) if r.action == "expire"]
        assert expired == sorted(ids, reverse=True)
        assert service.verify_integrity().ok


def test_an_upgrade_whose_log_finds_no_room_in_the_file_still_opens(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The upgrade commits into the WAL; copying the WAL into the file then finds the disk
    # full. The upgrade stands, the open succeeds and says so, and the store works.
    with _open(db_path) as service:
        service.ingest_event(event("evt-1", raw_ttl=timedelta(days=1)))
    _downgrade_to_7(db_path)

    def full(conn: sqlite3.Connection) -> bool:
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorcode = 13  # type: ignore[attr-defined]  # SQLITE_FULL
        raise error

    with monkeypatch.context() as patch:
        patch.setattr(connection, "checkpoint_truncate", full)
        with caplog.at_level(logging.WARNING, logger="trueheart_core.store"):
            service = _open(db_path)
    assert "schema upgraded, its log not copied yet: no room" in caplog.messages
    with service:
        assert _inspect(db_path)[0] == SCHEMA_VERSION
        assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1
        assert service.verify_integrity().ok


def _open_and_count(path: str, ready: Any, answers: Any) -> None:
    """In a child process: wait for the others, open the store writable (the first open
    upgrades it) and report what came of it."""
    ready.wait()
    try:
        with _open(Path(path)) as service:
            answers.put(f"events {service.stats(SCOPE).events}")
    except TrueHeartError as error:
        answers.put(f"{type(error).__name__}: {error}")


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork to start quickly"
)
def test_processes_opening_an_older_store_at_once_all_open_it(tmp_path: Path) -> None:
    """The first writable open upgrades the file while the others read its catalog: each
    of them reads it in one transaction (not version and tables apart, across the
    upgrade's commit), and a read without locks that met the file being written is read
    again under them. None takes the sound store for a damaged one."""
    context = multiprocessing.get_context("fork")
    answers: list[str] = []
    for round_ in range(8):
        path = tmp_path / f"store-{round_}.db"
        with _open(path) as service:
            populate_subject(service)
            events = service.stats(SCOPE).events
        (_downgrade_to_8 if round_ % 2 else downgrade_to_6)(path)
        for side in ("-wal", "-shm"):  # as a closed store is left
            Path(f"{path}{side}").unlink(missing_ok=True)
        ready, queue = context.Barrier(6), context.Queue()
        children = [
            context.Process(target=_open_and_count, args=(str(path), ready, queue))
            for _ in range(6)
        ]
        for child in children:
            child.start()
        answers += [queue.get(timeout=60) for _ in children]
        for child in children:
            child.join(timeout=60)
        with _open(path) as service:
            assert service.verify_integrity().ok
    assert answers == [f"events {events}"] * len(answers)
