"""Every statement on the hot path of a public operation is served by an index.

White-box test of the SQLite adapter: it records the SQL that each public operation
executes (with bound values) and asks SQLite for its query plan. A full table scan or a
sort of a whole result would make the cost grow with the store instead of the answer.
Scans of a statement's own common table expressions (and of its constant rows) read only
what the statement computed, not a table, and are allowed.
"""

from __future__ import annotations

import io
import itertools
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    HashingEmbedder,
    MemoryDraft,
    MemoryStatus,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    ScopeMismatch,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other-subject")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=4))


def _event(event_id: str, scope: Scope = SCOPE) -> RawEventDraft:
    source = SourceRef("src", "chat", NOW, TrustLevel.CONFIRMED)
    return RawEventDraft(event_id, scope, source, f"body of {event_id}", RETENTION)


def _memory(memory_id: str, sources: tuple[str, ...], kind: str = "fact") -> MemoryDraft:
    return MemoryDraft(memory_id, SCOPE, "memory body", sources, kind, TrustLevel.OBSERVED, NOW)


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[TrueHeart, list[str]]]:
    repository = SQLiteRepository(tmp_path / "store.db")
    service = TrueHeart(repository, clock=lambda: NOW)
    for index in range(30):
        service.ingest_event(_event(f"e{index}"))
        service.materialize_once(_memory(f"m{index}", (f"e{index}",)))
    statements: list[str] = []
    repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        yield service, statements
    finally:
        repository.close()


def _plans(path: Path, statements: list[str]) -> list[tuple[str, str, bool]]:
    """Each plan step of each statement, and whether it runs once per row of an outer
    step (inside a correlated subquery)."""
    raw = sqlite3.connect(path)
    try:
        plans = []
        for statement in statements:
            head = statement.split(None, 1)[0].upper()
            if head not in ("SELECT", "UPDATE", "DELETE", "WITH", "INSERT"):
                continue
            rows = raw.execute(f"EXPLAIN QUERY PLAN {statement}").fetchall()
            # A view the plan computes first (the audit log, the pending search rows: a
            # clustered table and the write buffer, each read by the scope) is computed
            # by its own steps, which are checked; the scan of what it yields is not a
            # scan of a table.
            views = {m.group(1) for row in rows if (m := _COMPUTED.match(str(row[3])))}
            aliases = {alias: source for source, alias in _SOURCE.findall(statement)}
            parents = {row[0]: (row[1], str(row[3])) for row in rows}
            # A sort whose sibling step reads the write buffer sorts the buffer's rows.
            buffered = {row[1] for row in rows if _BUFFER_READ.match(str(row[3]))}
            for row in rows:
                correlated, parent = False, row[1]
                while parent in parents:
                    correlated = correlated or "CORRELATED" in parents[parent][1]
                    parent = parents[parent][0]
                scanned = _SCAN.match(str(row[3]))
                if scanned and aliases.get(scanned.group(1), scanned.group(1)) in views:
                    continue
                if "TEMP B-TREE" in str(row[3]) and row[1] in buffered:
                    continue
                plans.append((statement, str(row[3]), correlated))
        return plans
    finally:
        raw.close()


# ``WITH name [(columns)] AS [MATERIALIZED] (`` and ``, name AS (`` define a CTE.
_CTE = re.compile(r"(?:\bWITH|,)\s+(\w+)\s*(?:\([^()]*\)\s*)?AS\s+(?:MATERIALIZED\s+)?\(", re.I)
_SOURCE = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)(?=\s+(?:AS\s+)?(\w+))", re.I)
_SCAN = re.compile(r"^SCAN (?:TABLE |SUBQUERY )?(\w+)(?: AS (\w+))?")
_BUFFER_READ = re.compile(r"^(?:SCAN|SEARCH) write_buffer\b")
_COMPUTED = re.compile(r"^(?:CO-ROUTINE|MATERIALIZE) (\w+)")


def _computed_sources(statement: str) -> set[str]:
    """The statement's CTE names and the aliases it gives them."""
    names = set(_CTE.findall(statement))
    return names | {alias for source, alias in _SOURCE.findall(statement) if source in names}


def _scans_a_table(statement: str, detail: str, correlated: bool = False) -> bool:
    """Whether a plan step reads a whole table or index rather than a range of it.
    Scanning what the statement itself computed (its CTEs, constant rows, ``json_each``
    over one bound parameter or over one pending row's postings) is not scanning the
    store, and neither is reading the write buffer once (it holds fewer than
    ``BUFFER_BOUND`` rows); reading it once per row of another step is."""
    match = _SCAN.match(detail)
    if match is None:
        return False
    if "CONSTANT ROW" in detail or "json_each" in detail or "VIRTUAL TABLE" in detail:
        return False
    if match.group(1) == "write_buffer" and not correlated:
        return False
    return (match.group(2) or match.group(1)) not in _computed_sources(statement)


# A search of a table by the scope alone walks every row of the scope. Two tables are
# walked so on purpose: the audit log in its read order, stopped at the limit, and the
# pending search changes, fewer than a fixed bound per scope.
_SCOPE_WALK = re.compile(r"^SEARCH (\w+) USING .*\(scope_id=\?\)$")
_WALKED_BY_SCOPE = {"audit", "audit_log", "search_pending", "search_waiting"}
_SEARCH = re.compile(r"^SEARCH (\w+) USING .*\((.*)\)$")


def _walks_a_scope(statement: str, detail: str) -> bool:
    """Whether a plan step reads every row of the scope where it should probe keys."""
    match = _SCOPE_WALK.match(detail)
    if match is None:
        return False
    tables = {alias: source for source, alias in _SOURCE.findall(statement)}
    return tables.get(match.group(1), match.group(1)) not in _WALKED_BY_SCOPE


def _walks_per_row(detail: str, correlated: bool) -> bool:
    """Whether a step run once per outer row reads a range rather than probing a key."""
    match = _SEARCH.match(detail)
    return correlated and match is not None and ("<" in match.group(2) or ">" in match.group(2))


def _assert_indexed(path: Path, statements: list[str]) -> None:
    plans = _plans(path, statements)
    assert plans, "no statement was recorded"
    for statement, detail, correlated in plans:
        assert not _scans_a_table(statement, detail, correlated), (statement, detail)
        assert not _walks_a_scope(statement, detail), (statement, detail)
        assert not _walks_per_row(detail, correlated), (statement, detail)
        if "ORDER BY CAST(" in statement:
            # Ranking fading memories by their fade ratio: a top-`limit` sorter over an
            # index range (documented in docs/performance.md), never over the table.
            continue
        if "CROSS JOIN search_terms" in statement:
            # Relevance search sums the scores of the query terms' postings by memory and
            # finds the window's lowest score: both sorts are over the postings of the
            # query terms in the scope (documented in docs/search.md, "Cost"), which are
            # read by primary-key ranges, never over a table.
            continue
        assert "TEMP B-TREE" not in detail, (statement, detail)


def _recall_fading(service: TrueHeart) -> None:
    service.recall(RecallQuery(SCOPE, NOW + timedelta(days=3), limit=5, kinds=("fact",)))


def _govern_memory(service: TrueHeart, action: GovernanceAction, memory_id: str) -> None:
    service.govern(GovernanceCommand(SCOPE, action, EntityType.MEMORY, memory_id, NOW, "r"))


def _restore(service: TrueHeart) -> None:
    _govern_memory(service, GovernanceAction.SEAL, "m3")
    _govern_memory(service, GovernanceAction.RESTORE, "m3")


def _listing_name(
    status: MemoryStatus | None, kinds: tuple[str, ...], paged: bool, descending: bool
) -> str:
    name = f"list {'all' if status is None else status.value}"
    name += (" with kinds" if kinds else "") + (" after a cursor" if paged else "")
    return name + (", descending" if descending else "")


def _list(
    status: MemoryStatus | None, kinds: tuple[str, ...], paged: bool, descending: bool
) -> Callable[[TrueHeart], object]:
    def run(service: TrueHeart) -> object:
        for memory_id in ("m10", "m11", "m12", "m13", "m14"):
            _govern_memory(service, GovernanceAction.SEAL, memory_id)
        order = {"status": status, "kinds": kinds, "limit": 2, "descending": descending}
        page = service.list_memories(SCOPE, **order)  # type: ignore[arg-type]
        assert len(page.items) == 2
        if not paged:
            return page
        assert page.next_cursor is not None
        after = service.list_memories(
            SCOPE,
            cursor=page.next_cursor,
            **order,  # type: ignore[arg-type]
        )
        assert len(after.items) == 2
        return after

    return run


OPERATIONS: dict[str, Callable[[TrueHeart], object]] = {
    "ingest": lambda s: s.ingest_event(_event("new")),
    "ingest replay": lambda s: s.ingest_event(_event("e1")),
    "ingest batch": lambda s: s.ingest_events([_event("b1"), _event("b2", OTHER)]),
    "materialize": lambda s: s.materialize_once(_memory("new-m", ("e1", "e2"))),
    "materialize replay": lambda s: s.materialize_once(_memory("m1", ("e1",))),
    "recall": lambda s: s.recall(RecallQuery(SCOPE, NOW, limit=5)),
    "recall with kinds": lambda s: s.recall(RecallQuery(SCOPE, NOW, kinds=("fact", "x"))),
    "recall fading": _recall_fading,
    "seal": lambda s: s.govern(
        GovernanceCommand(SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "m3", NOW, "r")
    ),
    "forget": lambda s: s.govern(
        GovernanceCommand(SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m4", NOW, "r")
    ),
    "delete event": lambda s: s.govern(
        GovernanceCommand(SCOPE, GovernanceAction.DELETE, EntityType.RAW_EVENT, "e5", NOW, "r")
    ),
    "expire": lambda s: s.expire_raw_content(as_of=NOW + timedelta(days=1)),
    "audit": lambda s: s.audit(SCOPE, limit=10),
    "restore": _restore,
    "search": lambda s: s.search(SearchQuery(SCOPE, "memory body", NOW, limit=5)),
    "search with filters": lambda s: s.search(
        SearchQuery(
            SCOPE,
            "Memory, body!",
            NOW,
            budget_tokens=3,
            limit=2,
            kinds=("fact", "x"),
            min_trust=TrustLevel.OBSERVED,
        )
    ),
    "search without matches": lambda s: s.search(SearchQuery(SCOPE, "nothing here", NOW)),
    "search of an unknown scope": lambda s: s.search(SearchQuery(OTHER, "memory", NOW)),
    "search about a period alone": lambda s: s.search(
        SearchQuery(SCOPE, "What happened today?", NOW, limit=2)
    ),
    "search about a period alone, oldest first": lambda s: s.search(
        SearchQuery(SCOPE, "what did I do for the first time in 2026?", NOW, limit=2)
    ),
    "get memory": lambda s: s.get_memory(SCOPE, "m2"),
    "get receipt": lambda s: s.get_receipt(SCOPE, "e2"),
    **{
        _listing_name(*listing): _list(*listing)
        for listing in itertools.product(
            (None, MemoryStatus.ACTIVE, MemoryStatus.SEALED),
            ((), ("fact", "x")),
            (False, True),
            (False, True),
        )
    },
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_operation_uses_indexes_only(
    operation: str, traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    OPERATIONS[operation](service)
    _assert_indexed(tmp_path / "store.db", statements)


def test_cross_scope_diagnosis_uses_indexes_only(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    with pytest.raises(ScopeMismatch):
        service.govern(
            GovernanceCommand(OTHER, GovernanceAction.DELETE, EntityType.RAW_EVENT, "e1", NOW, "r")
        )
    with pytest.raises(ScopeMismatch):
        service.govern(
            GovernanceCommand(OTHER, GovernanceAction.SEAL, EntityType.MEMORY, "m1", NOW, "r")
        )
    with pytest.raises(ScopeMismatch):
        service.get_memory(OTHER, "m1")
    with pytest.raises(ScopeMismatch):
        service.get_receipt(OTHER, "e1")
    _assert_indexed(tmp_path / "store.db", statements)


def test_missing_entity_diagnosis_of_reads_uses_indexes_only(
    traced: tuple[TrueHeart, list[str]], tmp_path: Path
) -> None:
    service, statements = traced
    _govern_memory(service, GovernanceAction.FORGET, "m4")
    with pytest.raises(EntityDeleted):
        service.get_memory(SCOPE, "m4")
    with pytest.raises(EntityNotFound):
        service.get_memory(SCOPE, "no-such-memory")
    with pytest.raises(EntityNotFound):
        service.get_receipt(SCOPE, "no-such-event")
    _assert_indexed(tmp_path / "store.db", statements)


def test_a_plan_that_scans_a_table_is_detected() -> None:
    statement = "SELECT m.memory_id FROM memories m WHERE m.content = ?"
    assert _scans_a_table(statement, "SCAN m")
    assert _scans_a_table(statement, "SCAN m USING COVERING INDEX memories_by_id")
    assert _scans_a_table("SELECT 1 FROM memories", "SCAN TABLE memories")
    computed = "WITH c AS MATERIALIZED (SELECT 1 AS x) SELECT x FROM c JOIN c d ON 1"
    assert not _scans_a_table(computed, "SCAN c")
    assert not _scans_a_table(computed, "SCAN d")
    assert not _scans_a_table(statement, "SEARCH m USING INDEX memories_by_id (scope_id=?)")
    assert not _scans_a_table("VALUES (1), (2)", "SCAN 2 CONSTANT ROWS")


def test_a_walk_of_a_whole_scope_is_detected() -> None:
    edges = "SELECT x.digest FROM lineage x WHERE x.scope_id = ? AND (x.event_id, x.memory_id) IN"
    assert _walks_a_scope(edges, "SEARCH x USING PRIMARY KEY (scope_id=?)")
    assert not _walks_a_scope(edges, "SEARCH x USING PRIMARY KEY (scope_id=? AND event_id=?)")
    pending = "SELECT doc FROM search_pending p WHERE p.scope_id = ?"
    assert not _walks_a_scope(pending, "SEARCH p USING PRIMARY KEY (scope_id=?)")
    recall = "SEARCH sm USING INDEX memories_recall_clear (scope_id=? AND created_at<?)"
    assert _walks_per_row(recall, correlated=True)
    assert not _walks_per_row(recall, correlated=False)
    assert not _walks_per_row("SEARCH sm USING INDEX memories_by_id (memory_id=?)", True)


def test_erasing_a_subject_reads_no_table_whole(tmp_path: Path) -> None:
    # Erasure walks its own scope, through the scope's indexes, and never a whole table:
    # vectors included, which another scope's memories fill.
    path = tmp_path / "store.db"
    repository = SQLiteRepository(path)
    service = TrueHeart(
        repository, clock=lambda: NOW, embedder=HashingEmbedder(32), auto_index=True
    )
    for scope in (SCOPE, OTHER):
        for index in range(5):
            service.ingest_event(_event(f"e{index}", scope))
            service.materialize_once(
                MemoryDraft(
                    f"m{index}",
                    scope,
                    "memory body",
                    (f"e{index}",),
                    "fact",
                    TrustLevel.OBSERVED,
                    NOW,
                )
            )
    statements: list[str] = []
    repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        service.erase_subject(SCOPE, occurred_at=NOW, dry_run=True)
        service.erase_subject(SCOPE, occurred_at=NOW)
    finally:
        repository.close()
    plans = _plans(path, statements)
    assert any("UPDATE vectors" in statement for statement, _, _ in plans)
    for statement, detail, _ in plans:
        assert not _scans_a_table(statement, detail), (statement, detail)


def _shape(statement: str) -> str:
    """A statement with its values taken out, so that the chunks of one read compare."""
    return re.sub(
        r"(?:'(?:[^']|'')*'|x'[0-9a-fA-F]*'|-?\d+)(?:\s*,\s*(?:'(?:[^']|'')*'|-?\d+))*",
        "v",
        statement,
    )


@pytest.mark.parametrize("operation", ["verify", "export"])
def test_a_scope_read_in_chunks_walks_the_scope_at_most_once(
    tmp_path: Path, operation: str
) -> None:
    # More memories than one chunk holds: a statement run for each chunk must find the
    # chunk's rows by key, not walk the scope from its start again (which would make
    # the read quadratic in the scope).
    path = tmp_path / "store.db"
    repository = SQLiteRepository(path)
    service = TrueHeart(repository, clock=lambda: NOW)
    service.ingest_events([_event(f"e{index}") for index in range(3)])
    for index in range(1_100):
        service.materialize_once(_memory(f"m{index:05d}", (f"e{index % 3}",), kind=f"k{index % 7}"))
    statements: list[str] = []
    repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        if operation == "verify":
            assert service.verify_integrity(SCOPE).ok
        else:
            service.export_store(io.StringIO(), scope=SCOPE)
    finally:
        repository.close()
    shapes = Counter(_shape(statement) for statement in statements)
    repeated = [s for s in statements if shapes[_shape(s)] > 1]
    assert repeated, "no statement read the scope in chunks"
    for statement, detail, _ in _plans(path, repeated):
        assert not _walks_a_scope(statement, detail), (statement[:200], detail)
