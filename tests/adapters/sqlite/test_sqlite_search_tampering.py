"""A search index tampered with behind the library's back (with sqlite3): verify_integrity
reports each kind of damage, rebuild_search_index repairs it, and an index built by other
tokenizer rules is rebuilt by the next search or write."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    assert_bm25_reference,
    assert_not_chained,
    check_capsule,
    command,
    materialize_all,
    memory,
)
from sqlite_builders import drain_buffer_of, merge_pending_of, tamper

from trueheart_core import (
    GovernanceAction,
    IntegrityProblem,
    MemoryCapsule,
    RepositoryCorruption,
    Scope,
    SearchQuery,
    TrueHeart,
)

SEAL = GovernanceAction.SEAL


def _search(service: TrueHeart, text: str, scope: Scope = SCOPE) -> MemoryCapsule:
    capsule = service.search(SearchQuery(scope, text, NOW + timedelta(hours=1), limit=100))
    check_capsule(capsule)
    return capsule


def _scores(capsule: MemoryCapsule) -> dict[str, float]:
    return {item.memory.memory_id: item.score for item in capsule.items}


DOC = "(SELECT rid FROM memories WHERE memory_id = 'mem-1')"
FIRST_TERM = f"(SELECT MIN(term_id) FROM search_postings WHERE doc = {DOC})"

# Each statement damages the index (populated with mem-1 and mem-2 active and mem-3
# sealed, in SCOPE) and the problems verify_integrity must report, as
# (entity_id, whole-store scope, code).
INDEX_TAMPERS: dict[str, tuple[str, set[tuple[str, Scope | None, str]]]] = {
    "delete-posting": (
        f"DELETE FROM search_postings WHERE doc = {DOC} AND term_id = {FIRST_TERM}",
        {("mem-1", SCOPE, "index_entry_mismatch"), ("", SCOPE, "term_count_mismatch")},
    ),
    "change-df": (
        f"UPDATE search_df SET df = df + 1 WHERE term_id = {FIRST_TERM}",
        {("", SCOPE, "term_count_mismatch")},
    ),
    "duplicate-term": (
        "INSERT INTO search_terms (scope_id, term) "
        f"SELECT scope_id, term FROM search_terms WHERE term_id = {FIRST_TERM}",
        # The copy is also a term row that no posting holds.
        {("", SCOPE, "duplicate_term"), ("", SCOPE, "term_count_mismatch")},
    ),
    "change-tf": (
        f"UPDATE search_postings SET tf = tf + 1 WHERE doc = {DOC} AND term_id = {FIRST_TERM}",
        {("mem-1", SCOPE, "index_entry_mismatch")},
    ),
    "change-entry": (
        f"UPDATE search_docs SET recall_until = recall_until + 1 WHERE doc = {DOC}",
        {("mem-1", SCOPE, "index_entry_mismatch")},
    ),
    "delete-entry": (
        f"DELETE FROM search_docs WHERE doc = {DOC}",
        {
            ("mem-1", SCOPE, "memory_not_indexed"),
            ("", SCOPE, "statistics_mismatch"),
            ("", None, "posting_without_entry"),
        },
    ),
    "index-sealed": (
        "INSERT INTO search_docs SELECT rid, scope_id, 2, created_at, clear_until, "
        "recall_until, trust, kind FROM memories WHERE memory_id = 'mem-3'",
        {("mem-3", SCOPE, "inactive_memory_indexed"), ("", SCOPE, "statistics_mismatch")},
    ),
    "entry-without-memory": (
        "INSERT INTO search_docs SELECT MAX(rid) + 100, scope_id, 2, created_at, clear_until, "
        "recall_until, trust, kind FROM memories",
        {("", SCOPE, "index_entry_without_memory"), ("", SCOPE, "statistics_mismatch")},
    ),
    "change-stats-docs": (
        "UPDATE search_stats SET docs = docs + 1",
        {("", SCOPE, "statistics_mismatch")},
    ),
    "change-stats-length": (
        "UPDATE search_stats SET length = length - 1",
        {("", SCOPE, "statistics_mismatch")},
    ),
}


def _populate_index(service: TrueHeart) -> None:
    materialize_all(service, {"mem-1": "green tea", "mem-2": "black tea", "mem-3": "tea too"})
    service.govern(command(SEAL, "mem-3"))


def _problems(service: TrueHeart, scope: Scope | None = None) -> set[tuple[str, Scope | None, str]]:
    report = service.verify_integrity(scope)
    assert all(p.entity_type == "search_index" for p in report.problems)
    found = {(p.entity_id, p.scope, p.code) for p in report.problems}
    assert len(found) == len(report.problems)
    return found


# The same for the entry of mem-1 while it waits as a pending row: in the write buffer
# (the store is far below its bound), or in ``search_waiting`` once the buffer moved it
# there (``{table}``).
PENDING_TAMPERS: dict[str, tuple[str, set[tuple[str, Scope | None, str]]]] = {
    "change-pending-tf": (
        "UPDATE {table} SET postings = json_replace(postings, '$[0][1]', "
        f"json_extract(postings, '$[0][1]') + 1) WHERE doc = {DOC}",
        {("mem-1", SCOPE, "index_entry_mismatch")},
    ),
    "drop-pending-posting": (
        f"UPDATE {{table}} SET postings = json_remove(postings, '$[0]') WHERE doc = {DOC}",
        {("mem-1", SCOPE, "index_entry_mismatch")},
    ),
    "delete-pending-row": (
        f"DELETE FROM {{table}} WHERE doc = {DOC}",
        {("mem-1", SCOPE, "memory_not_indexed"), ("", SCOPE, "term_count_mismatch")},
    ),
    "change-pending-entry": (
        f"UPDATE {{table}} SET recall_until = recall_until + 1 WHERE doc = {DOC}",
        {("mem-1", SCOPE, "index_entry_mismatch")},
    ),
    "pending-beside-a-merged-entry": (
        "INSERT INTO search_docs (doc, scope_id, length, created_at, clear_until, "
        "recall_until, trust, kind) SELECT doc, scope_id, length, created_at, clear_until, "
        f"recall_until, trust, kind FROM {{table}} WHERE doc = {DOC}",
        {("", SCOPE, "statistics_mismatch"), ("", None, "posting_without_entry")},
    ),
}
WAITING_IN = ("write_buffer", "search_waiting")

TAMPERS = {
    **INDEX_TAMPERS,
    **{
        f"{case} in {table}": (sql.format(table=table), expected)
        for case, (sql, expected) in PENDING_TAMPERS.items()
        for table in WAITING_IN
    },
}


@pytest.mark.parametrize("case", sorted(TAMPERS))
def test_a_tampered_index_is_reported_and_rebuilt(
    service: TrueHeart, db_path: Path, case: str
) -> None:
    _populate_index(service)
    healthy = _search(service, "tea")
    sql, expected = TAMPERS[case]
    if case in INDEX_TAMPERS:
        merge_pending_of(db_path)  # the postings these statements damage are merged
        assert _search(service, "tea") == healthy
        assert service.verify_integrity().ok
    elif case.endswith("in search_waiting"):
        drain_buffer_of(db_path)
        assert _search(service, "tea") == healthy
        assert service.verify_integrity().ok
    assert tamper(db_path, sql) == 1
    assert _problems(service) == expected
    # A check of the scope names the scope wherever the whole-store check could not.
    assert _problems(service, SCOPE) == {(i, SCOPE, code) for i, _, code in expected}
    assert service.verify_integrity(OTHER_SCOPE).ok
    assert service.rebuild_search_index() == 2
    assert service.verify_integrity().ok
    assert _search(service, "tea") == healthy


# A pending row of mem-1 that cannot be read at all. ``verify_integrity`` reports the
# scope's index as unreadable (and, in a whole-store check, the store's) and goes on with
# the other checks; ``rebuild_search_index`` writes the index anew. ``search_waiting``
# refuses a NULL in these columns.
UNREADABLE = {
    "postings-not-json": "postings = '[[1,'",
    "postings-bytes": "postings = CAST(postings AS BLOB)",
    "postings-null": "postings = NULL",
    # deeper than Python's JSON decoder (and SQLite's) can read
    "postings-nested-too-deep": "postings = '" + "[" * 5000 + "]" * 5000 + "'",
    "change-null": "change = NULL",
    "change-text": "change = 'x'",
    "change-two": "change = 2",
}


@pytest.mark.parametrize(
    ("case", "table"),
    [
        (case, table)
        for case in sorted(UNREADABLE)
        for table in WAITING_IN
        if not (table == "search_waiting" and case.endswith("-null"))
    ],
)
def test_an_unreadable_pending_row_is_reported_and_rebuilt(
    service: TrueHeart, db_path: Path, case: str, table: str
) -> None:
    _populate_index(service)
    healthy = _search(service, "tea")
    if table == "search_waiting":
        drain_buffer_of(db_path)
    sound = service.verify_integrity()
    assert sound.ok
    assert tamper(db_path, f"UPDATE {table} SET {UNREADABLE[case]} WHERE doc = {DOC}") == 1
    whole = service.verify_integrity()
    unreadable = [p for p in whole.problems if p.code == "index_unreadable"]
    assert unreadable == [
        IntegrityProblem("search_index", "", SCOPE, "index_unreadable"),
        IntegrityProblem("search_index", "", None, "index_unreadable"),
    ]
    # The other checks ran: every row was read and checked but the index entries of the
    # two active memories, which the unreadable index could not give.
    assert whole.rows_checked >= sound.rows_checked - 2
    assert {p.entity_type for p in whole.problems} <= {"search_index", "storage"}
    scoped = service.verify_integrity(SCOPE)
    assert [p for p in scoped.problems if p.code == "index_unreadable"] == unreadable[:1]
    assert service.verify_integrity(OTHER_SCOPE).ok
    # A search of the scope fails closed: it would leave the unreadable row out.
    with pytest.raises(RepositoryCorruption, match="invalid search index") as info:
        _search(service, "tea")
    assert_not_chained(info.value)
    assert service.rebuild_search_index() == 2
    assert service.verify_integrity().ok
    assert _search(service, "tea") == healthy


def test_an_index_built_by_other_rules_is_reported_and_rebuilt_by_search(
    service: TrueHeart, db_path: Path
) -> None:
    _populate_index(service)
    healthy = _search(service, "tea")
    assert tamper(db_path, "UPDATE search_meta SET tokenizer = 'other'") == 1
    (problem,) = service.verify_integrity().problems
    assert problem == IntegrityProblem("search_index", "", None, "index_built_by_other_rules")
    assert service.verify_integrity(SCOPE).problems == (problem,)
    assert _search(service, "tea") == healthy
    assert service.verify_integrity().ok


def test_a_stale_index_built_by_other_rules_is_replaced_whole(
    service: TrueHeart, db_path: Path
) -> None:
    _populate_index(service)
    # Stale entries under another identity: counts that disagree and a missing entry.
    merge_pending_of(db_path)
    tamper(db_path, "UPDATE search_df SET df = df + 5")
    tamper(db_path, f"DELETE FROM search_docs WHERE doc = {DOC}")
    tamper(db_path, "UPDATE search_meta SET tokenizer = 'other'")
    assert [p.code for p in service.verify_integrity().problems] == ["index_built_by_other_rules"]
    service.materialize_once(memory("mem-4", content="oolong tea"))  # rebuilds, then indexes
    assert service.verify_integrity().ok
    active = {"mem-1": "green tea", "mem-2": "black tea", "mem-4": "oolong tea"}
    assert_bm25_reference(_search(service, "tea"), "tea", active)
    assert_bm25_reference(_search(service, "green"), "green", active)
