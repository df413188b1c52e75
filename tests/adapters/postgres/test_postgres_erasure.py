"""Erasure checked against the PostgreSQL server's own files.

After ``erase_subject`` (which rewrites the tables it removed rows from with
``VACUUM FULL`` after the commit), none of the subject's words, term keys or TOASTed
body bytes is left in any heap, index, TOAST table or TOAST index file of the store,
while the other subject's are all still there. ``erase_subject(rewrite=False)``,
``forget`` and ``delete`` remove the rows from every query, and leave the removed row
versions in the pages that held them (until the server's own vacuum turns them into
free page space, which keeps their bytes until it is reused): this is measured and
asserted, and ``compact`` removes them. What no erasure reaches is measured too: the
write-ahead log keeps every row written until its segment is overwritten. A snapshot
older than the erasure, held anywhere in the database, would make ``VACUUM FULL`` copy
the removed rows into the new files, so the rewrite waits for it and is owed meanwhile.
The server's
sample of each column for the planner (``pg_statistic``) never holds caller text.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from conformance_builders import (
    ERASED_AT,
    NOW,
    OTHER_SCOPE,
    OTHER_WORDS,
    SCOPE,
    SUBJECT_WORDS,
    command,
    event,
    memory,
    populate_subject,
)
from pg_files import (
    Place,
    catalog_file,
    checkpoint,
    locate,
    present,
    relation_files,
    wal_files,
)

import postgres_configuration
from trueheart_core import (
    ArtifactCounts,
    EntityType,
    GovernanceAction,
    HashingEmbedder,
    PostgresRepository,
    RecallQuery,
    RepositoryBusy,
    SearchQuery,
    TrueHeart,
)
from trueheart_core.adapters.postgres.session import TERMS_BY_KEY
from trueheart_core.domain.search.tokenize import term_key

SUBJECT_TERMS = [f"zqxsubjraw{i}" for i in range(6)] + [f"zqxsubjmem{i}" for i in range(5)]
TOASTED = 6000
"""Bytes of a body too long to stay in its row: stored in the TOAST table."""


def _incompressible(tag: str, seed: int) -> str:
    """``tag`` and ``TOASTED`` random letters and digits, which the server's compression
    cannot shrink by the quarter it needs: stored out of line, as they are."""
    rnd = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return tag + " " + "".join(rnd.choice(alphabet) for _ in range(TOASTED))


SUBJECT_BIG = _incompressible("zqxsubjtoast", 1)
OTHER_BIG = _incompressible("zqxothertoast", 2)


def _slices(text: str) -> list[bytes]:
    """Pieces of a long body, each shorter than a TOAST chunk, from its start to its end."""
    data = text.encode()
    return [data[i : i + 40] for i in range(0, len(data) - 40, 1500)]


def _key_bytes(term: str) -> bytes:
    """A term key as a ``BIGINT`` is stored on this machine (little-endian)."""
    return term_key(term).to_bytes(8, "little", signed=True)


def _populate(service: TrueHeart) -> None:
    """The conformance subject (every kind of artifact) beside another, and a TOASTed
    body and memory in each."""
    populate_subject(service)
    service.ingest_event(event("evt-big", content=SUBJECT_BIG))
    service.materialize_once(memory("mem-big", ("evt-big",), content=SUBJECT_BIG))
    service.ingest_event(event("evt-big", scope=OTHER_SCOPE, content=OTHER_BIG))


def _subject_needles() -> list[bytes]:
    return (
        [w.encode() for w in SUBJECT_WORDS]
        + [_key_bytes(t) for t in SUBJECT_TERMS]
        + _slices(SUBJECT_BIG)
    )


def _other_needles() -> list[bytes]:
    return [w.encode() for w in OTHER_WORDS] + _slices(OTHER_BIG)


@pytest.fixture
def files(pg: Any, data_directory: Path, pg_schema: str) -> Any:
    """``files()``: after a checkpoint, the files of every relation of the store."""

    def files_() -> dict[str, list[Path]]:
        checkpoint(pg)
        return relation_files(pg, data_directory, pg_schema)

    return files_


def _scoped_rows(pg: Any, scope: Any) -> dict[str, int]:
    """Rows of the scope in every table of data, read with plain SQL."""
    tables = [
        r[0]
        for r in pg.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
            "AND relkind = 'r' AND relname NOT IN ('meta', 'semantic_spaces') ORDER BY relname"
        )
    ]
    key = [scope.tenant_id.encode(), scope.owner_id.encode(), scope.subject_id.encode()]
    return {
        table: pg.execute(
            f"SELECT COUNT(*) FROM {table} WHERE tenant_id = %s AND owner_id = %s "
            "AND subject_id = %s",
            key,
        ).fetchone()[0]
        for table in tables
    }


_KEPT = {"scopes", "tombstones", "audit", "vector_generations"}


def _regions(found: dict[bytes, list[Place]]) -> set[tuple[str, str]]:
    return {(p.relation, p.region) for places in found.values() for p in places}


# --- erase_subject, the default: the tables rewritten ---------------------------------


def test_erase_subject_leaves_no_copy_in_any_relation_file(service: TrueHeart, files: Any) -> None:
    _populate(service)
    before = locate(files(), _subject_needles() + _other_needles())
    # Every word is there before (the expired body is gone from queries already).
    assert {w.encode() for w in SUBJECT_WORDS} - {b"zqxsubjexpired"} <= before.keys()
    assert all(s in before for s in _slices(SUBJECT_BIG))
    toasted = {p.relation for s in _slices(SUBJECT_BIG) for p in before[s]}
    assert {"raw_bodies (TOAST)", "memories (TOAST)"} <= toasted
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert receipt.verified is True and receipt.remaining == ArtifactCounts()
    after = locate(files(), _subject_needles() + _other_needles())
    assert {n: places for n, places in after.items() if n in _subject_needles()} == {}
    assert set(_other_needles()) <= after.keys(), "the other subject is untouched"
    assert _key_bytes("shared") in locate(files(), [_key_bytes("shared")])


def test_erase_subject_keeps_only_the_evidence_rows(service: TrueHeart, pg: Any) -> None:
    _populate(service)
    other = _scoped_rows(pg, OTHER_SCOPE)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    left = {table: n for table, n in _scoped_rows(pg, SCOPE).items() if n}
    assert set(left) <= _KEPT and left["tombstones"] > 0 and left["audit"] > 0
    assert _scoped_rows(pg, OTHER_SCOPE) == other


def test_a_body_whose_receipt_is_lost_is_reported_and_erased(service: TrueHeart, pg: Any) -> None:
    """A body is keyed by its scope here, so erasing the scope reaches one whose receipt
    row damage has lost, as on SQLite."""
    service.ingest_event(event("evt-lost"))
    service.ingest_event(event("evt-kept"))
    service.ingest_event(event("evt-lost", scope=OTHER_SCOPE))
    lost = pg.execute(
        "DELETE FROM raw_events WHERE subject_id = %s AND event_id = %s",
        [SCOPE.subject_id.encode(), b"evt-lost"],
    )
    assert lost.rowcount == 1
    problems = service.verify_integrity(SCOPE).problems
    assert [(p.entity_type, p.entity_id, p.code) for p in problems] == [
        ("raw_body", "evt-lost", "body_without_receipt")
    ]
    assert service.verify_integrity(OTHER_SCOPE).ok
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert receipt.erased.raw_body == 2
    assert receipt.remaining is not None and receipt.remaining.total == 0
    assert _scoped_rows(pg, SCOPE)["raw_bodies"] == 0
    assert _scoped_rows(pg, OTHER_SCOPE)["raw_bodies"] == 1


def test_a_lost_tombstone_of_a_delete_is_reported(service: TrueHeart, pg: Any) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", ("evt-1",)))
    service.govern(command(GovernanceAction.DELETE, "mem-1"))
    assert service.verify_integrity().ok
    assert pg.execute("DELETE FROM tombstones").rowcount == 1
    problems = [(p.entity_type, p.entity_id, p.code) for p in service.verify_integrity().problems]
    assert problems == [("memory", "mem-1", "tombstone_missing")]


# --- without a rewrite: gone from every query, copies left in free page space ----------


def _gone_from_queries(service: TrueHeart, pg: Any) -> None:
    assert {t: n for t, n in _scoped_rows(pg, SCOPE).items() if n and t not in _KEPT} == {}
    assert service.recall(RecallQuery(SCOPE, NOW)) == ()
    assert service.search(SearchQuery(SCOPE, "shared", NOW)).items == ()
    stats = service.stats(SCOPE)
    assert (stats.events, stats.memories, stats.claims, stats.search_terms) == (0, 0, 0, 0)


def test_without_a_rewrite_the_rows_leave_every_query_and_copies_stay_in_free_space(
    service: TrueHeart, pg: Any, files: Any
) -> None:
    _populate(service)
    receipt = service.erase_subject(SCOPE, occurred_at=ERASED_AT, rewrite=False)
    assert receipt.verified is True and receipt.remaining == ArtifactCounts()
    _gone_from_queries(service, pg)
    found = locate(files(), _subject_needles())
    # Measured: the removed rows stay in their pages as dead row versions (until the
    # server's own vacuum prunes them, which leaves their bytes in free page space until
    # it is reused); no read returns them. compact() rewrites the tables.
    assert found, "this test measures the copies an erasure without a rewrite leaves"
    assert {region for _, region in _regions(found)} <= {"free", "tuples"}, _regions(found)
    service.compact()
    assert locate(files(), _subject_needles()) == {}
    assert set(_other_needles()) <= locate(files(), _other_needles()).keys()


# --- index rebuilds ---------------------------------------------------------------------

STALE = b"zqxstaleentry"
"""The memory ID of a search entry with no memory (damage a rebuild removes)."""


@pytest.mark.parametrize("rebuild", ["rebuild_search_index", "rebuild_indexes"])
def test_a_rebuild_leaves_no_removed_entry_in_the_search_tables_files(
    service: TrueHeart, pg: Any, files: Any, rebuild: str
) -> None:
    _one_memory(service, "zqxrebuilt")
    pg.execute(
        "INSERT INTO search_postings SELECT tenant_id, owner_id, subject_id, term, %s, tf "
        "FROM search_postings LIMIT 1",
        (STALE,),
    )
    assert STALE in locate(files(), [STALE])
    getattr(service, rebuild)()
    assert service.verify_integrity().problems == ()
    assert locate(files(), [STALE]) == {}
    kept = [b"zqxrebuilt", _key_bytes("zqxrebuilt"), b"zqxkeptmemory"]
    assert set(kept) <= locate(files(), kept).keys()


def test_an_automatic_rebuild_inside_an_ordinary_write_owes_no_rewrite(
    service: TrueHeart, pg: Any
) -> None:
    """New tokenisation rules rebuild the index inside the write that meets them: the
    entries it replaces are of memories still held, and no later call pays a rewrite."""
    _one_memory(service, "zqxrebuilt")
    pg.execute("UPDATE meta SET tokenizer = 'th-lex-0'")
    service.materialize_once(memory("mem-three", ("evt-one",), content="zqxthird memory"))
    assert pg.execute("SELECT tokenizer FROM meta").fetchone()[0] != "th-lex-0"
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)
    assert service.rebuild_search_index() == 3
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)


# --- forget and delete of one memory -----------------------------------------------------


def _one_memory(service: TrueHeart, word: str) -> None:
    """A memory written after another of the same event: its row lies below the other's
    in their page, where the compaction of a VACUUM does not write over it."""
    service.ingest_event(event("evt-one", content="the source of one memory"))
    service.materialize_once(memory("mem-two", ("evt-one",), content="zqxkeptmemory stays"))
    service.materialize_once(memory("mem-one", ("evt-one",), content=f"{word} alone"))


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_remove_the_memory_from_every_query(
    service: TrueHeart, pg: Any, files: Any, action: GovernanceAction
) -> None:
    word = f"zqx{action.value}gone"
    _one_memory(service, word)
    needles = [word.encode(), _key_bytes(word)]
    assert set(needles) <= locate(files(), needles).keys()
    service.govern(command(action, "mem-one"))
    assert service.search(SearchQuery(SCOPE, word, NOW)).items == ()
    assert pg.execute(
        "SELECT COUNT(*) FROM memories WHERE memory_id = %s", [b"mem-one"]
    ).fetchone() == (0,)
    # As for an erasure without a rewrite: the dead row versions stay in their pages
    # until compact() rewrites the tables (the documented limit of forget and delete).
    assert word.encode() in locate(files(), needles)
    assert b"zqxkeptmemory" in locate(files(), [b"zqxkeptmemory"])
    service.compact()
    assert locate(files(), needles) == {}


# --- what no erasure of the adapter reaches ----------------------------------------------


def _delete_other_event(service: TrueHeart) -> None:
    """Delete ``evt-other`` of the other scope: an erasing call that runs an owed
    rewrite."""
    service.govern(
        command(
            GovernanceAction.DELETE,
            "evt-other",
            entity_type=EntityType.RAW_EVENT,
            scope=OTHER_SCOPE,
        )
    )


def _unique_subject(service: TrueHeart, count: int = 1) -> list[bytes]:
    """Events and memories in ``SCOPE`` whose words no other test writes."""
    words = [f"zqx{uuid.uuid4().hex}" for _ in range(count)]
    for n, word in enumerate(words):
        service.ingest_event(event(f"evt-unique-{n}", content=f"{word} body"))
        service.materialize_once(
            memory(f"mem-unique-{n}", (f"evt-unique-{n}",), content=f"{word} memory")
        )
    return [word.encode() for word in words]


def test_a_rewrite_naming_tables_not_of_the_store_is_reported_and_left_alone(
    service: TrueHeart, pg: Any, pg_schema: str
) -> None:
    """``meta`` edited to owe a rewrite of a table that is not the store's: the whole
    store check reports it, and the next erasing call rewrites none of the database's
    other tables (a VACUUM without a list would rewrite them all) and drops the name."""
    other = f"{pg_schema}_app"
    pg.execute(f'CREATE SCHEMA "{other}"')
    try:
        pg.execute(f'CREATE TABLE "{other}".kept (v integer)')
        pg.execute(f'INSERT INTO "{other}".kept VALUES (1)')
        node = f"SELECT pg_relation_filenode('\"{other}\".kept')"
        (before,) = pg.execute(node).fetchone()
        service.ingest_event(event("evt-other", scope=OTHER_SCOPE))
        pg.execute(
            "UPDATE meta SET rewrite_tables = ARRAY['kept'], rewrite_xid = pg_current_xact_id()"
        )
        report = service.verify_integrity()
        assert [problem.code for problem in report.problems] == ["storage_check_failed"]
        _delete_other_event(service)
        assert pg.execute(node).fetchone() == (before,)
        assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)
        assert service.verify_integrity().ok
    finally:
        pg.execute(f'DROP SCHEMA "{other}" CASCADE')


def _rows_read_and_dropped(pg: Any, sql: str, params: Any) -> int:
    """How many rows the plan of ``sql`` read only to drop them by a filter, over all its
    nodes (run with ``EXPLAIN ANALYZE`` in a transaction that is rolled back)."""
    pg.execute("BEGIN")
    try:
        ((plan,),) = pg.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchall()
    finally:
        pg.execute("ROLLBACK")
    nodes = [plan[0]["Plan"]]
    dropped = 0
    while nodes:
        node = nodes.pop()
        dropped += node.get("Rows Removed by Filter", 0) + node.get(
            "Rows Removed by Join Filter", 0
        )
        nodes.extend(node.get("Plans", []))
    return int(dropped)


def test_a_long_memory_s_terms_are_probed_by_key_in_a_store_without_statistics(
    service: TrueHeart, pg: Any, repository: PostgresRepository
) -> None:
    """A new store's tables have no statistics yet. Removing a memory's search entry,
    and reading the frequencies of its terms, probe each term's key: they read about
    the memory's own terms, not the scope's every term once per term of the memory
    (planned as a filter, whose cost was the product of the two)."""
    own = [f"zqxown{i}" for i in range(400)]
    service.ingest_events([event("evt-other"), event("evt-own")])
    service.materialize_once(
        memory("mem-other", ("evt-other",), content=" ".join(f"zqxoth{i}" for i in range(3000)))
    )
    service.materialize_once(memory("mem-own", ("evt-own",), content=" ".join(own)))
    key = (SCOPE.tenant_id, SCOPE.owner_id, SCOPE.subject_id)
    with repository.unit_of_work("read", write=False) as uow:
        removal = uow.search._unindexing(key, "mem-own")
    # The memory's terms (by their frequency: dropped or lowered) and the scope's
    # statistics row; a filter over the scope's terms would drop 3,000 for each term.
    assert _rows_read_and_dropped(pg, *removal) <= len(own) + 1
    terms = sorted(term_key(word) for word in own)
    frequencies = (terms, *(part.encode() for part in key))
    assert _rows_read_and_dropped(pg, TERMS_BY_KEY, frequencies) == 0
    with repository.unit_of_work("read", write=False) as uow:
        assert uow.search.term_frequencies(key, terms) == dict.fromkeys(terms, 1)


def test_the_write_ahead_log_keeps_erased_rows(
    service: TrueHeart, data_directory: Path, files: Any
) -> None:
    """Measured, not promised: every row written is in the WAL, and a segment keeps it
    (recycled segments too) until the server writes over it; erasure cannot reach it."""
    words = _unique_subject(service)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    assert locate(files(), words) == {}
    assert present(wal_files(data_directory), words) == set(words)


def test_no_statistics_sample_keeps_an_erased_value(
    service: TrueHeart, pg: Any, data_directory: Path
) -> None:
    """``ANALYZE`` (which autovacuum runs as tables grow) keeps a sample of each column
    in ``pg_statistic``, out of reach of an erasure: the columns of caller text are
    never sampled (``schema.UNSAMPLED``), while their IDs are."""
    words = _unique_subject(service, 20)
    pg.execute("ANALYZE raw_events, raw_bodies, memories, search_postings, search_terms")
    statistics = catalog_file(pg, data_directory, "pg_statistic")
    checkpoint(pg)
    assert present(statistics, words) == set()
    assert present(statistics, [b"mem-unique-1"]), "the IDs are sampled"
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    checkpoint(pg)
    assert present(statistics, words) == set()


def test_an_older_snapshot_postpones_the_rewrite_until_it_ends(pg_schema: str, files: Any) -> None:
    """Another session of the database holds a snapshot taken before the erasure (a
    long report, ``pg_dump``): ``VACUUM FULL`` would copy the rows it may still see into
    the new files, so the rewrite waits for it, up to the lock timeout, and is then
    owed: the erasure is committed, the call says ``erasure rewrite incomplete``, and the
    next erasing call rewrites first."""
    import psycopg

    repository = PostgresRepository(
        postgres_configuration.database_url(), schema=pg_schema, lock_timeout=0.3
    )
    service = TrueHeart(repository, clock=lambda: NOW)
    try:
        words = _unique_subject(service)
        holder = psycopg.connect(postgres_configuration.database_url())
        try:
            holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            holder.execute("SELECT 1 FROM pg_class LIMIT 1").fetchall()
            with pytest.raises(RepositoryBusy, match="erasure rewrite incomplete"):
                service.erase_subject(SCOPE, occurred_at=ERASED_AT)
            assert service.recall(RecallQuery(SCOPE, NOW)) == ()
            assert service.stats(SCOPE).memories == 0
        finally:
            holder.close()
        service.compact()
        assert locate(files(), words) == {}
    finally:
        service.close()


def test_a_snapshot_taken_after_the_commit_behind_an_older_transaction_is_waited_for(
    pg_schema: str, files: Any, pg: Any
) -> None:
    """A snapshot taken just after the erasure commits, while an older transaction is
    still open, keeps the server's horizon before the erasure: ``VACUUM FULL`` would
    count the removed rows as still visible and copy them. The rewrite waits for that
    snapshot too, not only for the transactions open at the commit."""
    import psycopg

    url = postgres_configuration.database_url()
    repository = PostgresRepository(url, schema=pg_schema, lock_timeout=30)
    service = TrueHeart(repository, clock=lambda: NOW)
    older = psycopg.connect(url, autocommit=True)
    later = psycopg.connect(url, autocommit=True)
    outcome: list[BaseException | None] = []
    try:
        words = _unique_subject(service)
        older.execute("BEGIN")
        older.execute("SELECT pg_current_xact_id()")  # a transaction older than the erasure

        def erase() -> None:
            try:
                service.erase_subject(SCOPE, occurred_at=ERASED_AT)
            except BaseException as error:  # reported below
                outcome.append(error)
            else:
                outcome.append(None)

        eraser = threading.Thread(target=erase)
        eraser.start()
        deadline = time.monotonic() + 60
        # The erasure is committed once the store owes its rewrite.
        while pg.execute("SELECT rewrite_xid FROM meta").fetchone()[0] is None:
            assert time.monotonic() < deadline, "the erasure never committed"
            time.sleep(0.01)
        later.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        later.execute("SELECT 1").fetchall()  # its snapshot's horizon: the older transaction
        older.execute("COMMIT")
        time.sleep(0.5)
        assert eraser.is_alive(), "the rewrite ran while the later snapshot held the rows"
        later.execute("COMMIT")
        eraser.join(timeout=60)
        assert outcome == [None]
        assert locate(files(), words) == {}
        assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)
    finally:
        older.close()
        later.close()
        service.close()


def _left_owed(pg_schema: str) -> list[bytes]:
    """A subject erased by a repository whose rewrite an older snapshot postponed, then
    closed while it still could not run: the rewrite stays owed in the store. The
    subject's words (still in the tables' files)."""
    import psycopg

    url = postgres_configuration.database_url()
    first = TrueHeart(
        PostgresRepository(url, schema=pg_schema, lock_timeout=0.3), clock=lambda: NOW
    )
    holder = psycopg.connect(url)
    try:
        words = _unique_subject(first)
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT 1").fetchall()
        with pytest.raises(RepositoryBusy, match="erasure rewrite incomplete"):
            first.erase_subject(SCOPE, occurred_at=ERASED_AT)
        first.close()  # the rewrite still cannot run: it stays owed
    finally:
        holder.close()
    return words


def test_an_owed_rewrite_outlives_the_repository_that_owed_it(
    pg_schema: str, files: Any, pg: Any
) -> None:
    """The store, not the process, keeps the rewrite it owes: a repository whose
    rewrite was postponed, then closed (or killed) while it still could not run, leaves
    it to the next erasing call of any other repository of the store."""
    words = _left_owed(pg_schema)
    tables, xid = pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone()
    assert "memories" in tables and "raw_bodies" in tables and xid is not None
    assert locate(files(), words) != {}
    url = postgres_configuration.database_url()
    with TrueHeart(PostgresRepository(url, schema=pg_schema), clock=lambda: NOW) as second:
        second.ingest_event(event("evt-other", scope=OTHER_SCOPE))
        _delete_other_event(second)
    assert locate(files(), words) == {}
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)


def test_an_owed_rewrite_is_run_by_the_close_of_a_repository_that_found_it(
    pg_schema: str, files: Any, pg: Any
) -> None:
    """A repository that made no erasing call but whose calls found a rewrite owed (left
    by another, postponed by an older snapshot that has since ended) runs it when it
    closes, as its next erasing call would."""
    words = _left_owed(pg_schema)
    assert locate(files(), words) != {}
    url = postgres_configuration.database_url()
    reader = TrueHeart(PostgresRepository(url, schema=pg_schema), clock=lambda: NOW)
    assert reader.stats(OTHER_SCOPE).memories == 0  # a read finds the rewrite owed
    reader.close()
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)
    assert locate(files(), words) == {}


def test_while_a_rewrite_is_owed_erasing_calls_still_make_their_change(
    pg_schema: str, files: Any, pg: Any
) -> None:
    """A rewrite owed while an older snapshot lives (a ``pg_dump``) does not stop later
    forgets, deletes, expiry or erasures: each commits its change, then tries the owed
    rewrite, and says ``erasure rewrite incomplete`` (its change committed, the rewrite
    owed) while it still cannot run."""
    import psycopg

    url = postgres_configuration.database_url()
    service = TrueHeart(
        PostgresRepository(url, schema=pg_schema, lock_timeout=0.3), clock=lambda: NOW
    )
    holder = psycopg.connect(url)
    try:
        words = _unique_subject(service)
        service.ingest_event(event("evt-other", scope=OTHER_SCOPE))
        service.materialize_once(memory("mem-other", ("evt-other",), scope=OTHER_SCOPE))
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT 1").fetchall()
        with pytest.raises(RepositoryBusy, match="erasure rewrite incomplete"):
            service.erase_subject(SCOPE, occurred_at=ERASED_AT)
        with pytest.raises(RepositoryBusy, match="erasure rewrite incomplete"):
            service.govern(command(GovernanceAction.FORGET, "mem-other", scope=OTHER_SCOPE))
        assert service.recall(RecallQuery(OTHER_SCOPE, NOW)) == ()  # forgotten
        holder.rollback()
        _delete_other_event(service)
        assert locate(files(), words) == {}
        assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)
    finally:
        holder.close()
        service.close()


def test_a_statement_timeout_does_not_stop_the_rewrite(pg_schema: str, files: Any) -> None:
    """The session's statement timeout bounds the store's statements, not the rewrite
    of the tables, which takes as long as copying them takes."""
    url = postgres_configuration.database_url()
    service = TrueHeart(
        PostgresRepository(url, schema=pg_schema, statement_timeout=0.05), clock=lambda: NOW
    )
    try:
        words = _unique_subject(service)
        # Enough rows of another scope that copying the tables takes longer than that.
        for batch in range(4):
            service.ingest_events(
                [
                    event(f"evt-bulk-{batch}-{n}", scope=OTHER_SCOPE, content="x" * 4000)
                    for n in range(250)
                ]
            )
        service.erase_subject(SCOPE, occurred_at=ERASED_AT)
        assert locate(files(), words) == {}
    finally:
        service.close()


def test_tables_an_older_erasure_adds_while_a_rewrite_runs_stay_owed(
    pg_schema: str, pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two erasures at once, the one with the older transaction committing last: it adds
    its tables to the owed list but keeps the newer transaction's ID there. The rewrite
    of the newer one, which read the list before that commit (and waited for the older
    transaction to end), settles only the tables it rewrote: the others stay owed, for
    the next erasing call."""
    import psycopg

    url = postgres_configuration.database_url()
    repository = PostgresRepository(url, schema=pg_schema)
    service = TrueHeart(repository, clock=lambda: NOW)
    _unique_subject(service)
    waited = PostgresRepository._older_horizons_ended
    added: list[bool] = []

    def older_erasure_commits(self: Any, conn: Any, xid: str) -> bool:
        if not added:
            # What the older erasure's commit does to the list while this one waits.
            with psycopg.connect(url, autocommit=True) as other:
                other.execute(
                    f'UPDATE "{pg_schema}".meta SET rewrite_tables = '
                    "ARRAY(SELECT DISTINCT t FROM unnest(rewrite_tables || "
                    "'{claims}'::text[]) AS t ORDER BY t) WHERE singleton = 1"
                )
            added.append(True)
        return bool(waited(self, conn, xid))

    monkeypatch.setattr(PostgresRepository, "_older_horizons_ended", older_erasure_commits)
    service.erase_subject(SCOPE, occurred_at=ERASED_AT)
    tables, xid = pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone()
    assert added and "claims" in tables and xid is not None
    monkeypatch.undo()
    service.ingest_event(event("evt-other", scope=OTHER_SCOPE))
    _delete_other_event(service)  # the next erasing call runs what is still owed
    assert pg.execute("SELECT rewrite_tables, rewrite_xid FROM meta").fetchone() == ([], None)
    service.close()


def test_a_rebuild_leaves_no_removed_vector_in_the_vectors_files(
    repository: PostgresRepository, pg: Any, files: Any
) -> None:
    """A vector that fails its digest and one whose memory is gone are removed by the
    rebuild, and their bytes leave the table's files with them."""
    service = TrueHeart(repository, clock=lambda: NOW, embedder=HashingEmbedder())
    _one_memory(service, "zqxvectored")
    query = "SELECT length(vector) FROM vectors WHERE memory_id = 'mem-one'::bytea"
    (size,) = pg.execute(query).fetchone()
    damaged, orphan = b"ZQXDAMAGEDVECTOR", b"ZQXORPHANEDVECTR"
    pg.execute(
        "UPDATE vectors SET vector = %s WHERE memory_id = 'mem-one'::bytea",
        (damaged * (size // 16),),
    )
    columns = ", ".join(
        name
        for (name,) in pg.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = 'vectors' AND column_name NOT IN "
            "('memory_id', 'vector', 'vid') ORDER BY ordinal_position"
        )
    )
    pg.execute(
        f"INSERT INTO vectors ({columns}, memory_id, vector) SELECT {columns}, "
        "'mem-ghost'::bytea, %s FROM vectors WHERE memory_id = 'mem-two'::bytea",
        (orphan * (size // 16),),
    )
    assert {damaged, orphan} <= locate(files(), [damaged, orphan]).keys()
    report = service.rebuild_indexes()
    assert (report.damaged_vectors_removed, report.vectors_without_memory_removed) == (1, 1)
    assert service.verify_integrity().problems == ()
    assert locate(files(), [damaged, orphan]) == {}
    assert service.sync_semantic(SCOPE).complete
