"""Rebuilding indexes that were damaged behind the library's back: every storage index of
the file is rebuilt, and search entries, term statistics and claim keys edited with
sqlite3 are reported by verify_integrity and repaired by rebuild_indexes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conformance_builders import NOW, OTHER_SCOPE, SCOPE, claim, event, memory
from sqlite_builders import merge_pending_of, tamper

from trueheart_core import ClaimQuery, IntegrityProblem, SearchQuery, TrueHeart


def _populate(service: TrueHeart) -> None:
    service.ingest_events([event("evt-1"), event("evt-1", scope=OTHER_SCOPE)])
    service.materialize_once(memory("mem-1", content="alpha beta"))
    service.materialize_once(memory("mem-2", content="beta gamma"))
    service.materialize_once(memory("mem-1", scope=OTHER_SCOPE, content="alpha"))
    service.materialize_claim(claim("claim-1", subject="user:ada", value="dark"))
    service.materialize_claim(claim("claim-2", subject="user:bob", value="light"))


def _index_count(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(
            conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'").fetchone()[0]
        )
    finally:
        conn.close()


def _problems(service: TrueHeart) -> list[tuple[str, str, str]]:
    return [(p.entity_type, p.entity_id, p.code) for p in service.verify_integrity().problems]


def test_every_storage_index_is_rebuilt(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert service.rebuild_indexes().storage_indexes_rebuilt == _index_count(db_path)


def test_a_missing_search_entry_is_added_back(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    merge_pending_of(db_path)  # the entry deleted below is a merged one
    tamper(
        db_path,
        "DELETE FROM search_docs WHERE doc = "
        "(SELECT rid FROM memories WHERE memory_id = 'mem-2' AND scope_id = 1)",
    )
    assert ("search_index", "mem-2", "memory_not_indexed") in _problems(service)
    report = service.rebuild_indexes()
    assert (report.search_entries_added, report.search_entries_removed) == (1, 0)
    assert report.search_entries_after == report.search_entries_before + 1
    assert report.changed
    assert service.verify_integrity().ok
    found = service.search(SearchQuery(SCOPE, "gamma", NOW))
    assert [item.memory.memory_id for item in found.items] == ["mem-2"]


def test_a_changed_entry_and_an_orphan_entry_are_replaced(
    service: TrueHeart, db_path: Path
) -> None:
    _populate(service)
    merge_pending_of(db_path)  # the postings changed below are merged ones
    tamper(
        db_path,
        "UPDATE search_postings SET tf = tf + 1 WHERE doc = (SELECT MIN(doc) FROM search_docs)",
    )
    tamper(
        db_path,
        "INSERT INTO search_docs (doc, scope_id, length, created_at, clear_until, "
        "recall_until, trust, kind) VALUES (9999, 1, 1, 0, 0, 1, 1, 'fact')",
    )
    codes = {code for _, _, code in _problems(service)}
    assert {"index_entry_mismatch", "index_entry_without_memory"} <= codes
    report = service.rebuild_indexes()
    assert report.search_entries_removed == 2  # the changed entry and the orphan
    assert report.search_entries_added == 1  # the changed entry, recomputed
    assert report.search_entries_after == report.search_entries_before - 1
    assert service.verify_integrity().ok


def test_a_term_with_a_wrong_frequency_is_replaced(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    merge_pending_of(db_path)  # the frequency changed below is a merged one
    tamper(
        db_path,
        "UPDATE search_df SET df = df + 5 WHERE term_id = (SELECT MIN(term_id) FROM search_df)",
    )
    assert ("search_index", "", "term_count_mismatch") in _problems(service)
    report = service.rebuild_indexes()
    assert (report.search_terms_added, report.search_terms_removed) == (1, 1)
    assert report.search_terms_after == report.search_terms_before
    assert service.verify_integrity().ok


def test_drifted_claim_keys_are_reported_and_repaired(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    assert tamper(db_path, "UPDATE claims SET subject_key = 7 WHERE claim_id = 'claim-1'") == 1
    problem = IntegrityProblem("claim_index", "claim-1", SCOPE, "claim_key_mismatch")
    assert service.verify_integrity().problems == (problem,)
    assert service.verify_integrity(SCOPE).problems == (problem,)
    assert service.verify_integrity(OTHER_SCOPE).ok
    # A question by subject reads through the index, and misses the drifted row.
    assert service.claims(ClaimQuery(SCOPE, NOW, subject="user:ada")).claims == ()
    report = service.rebuild_indexes()
    assert report.claim_keys_repaired == 1 and report.changed
    assert service.verify_integrity().ok
    answer = service.claims(ClaimQuery(SCOPE, NOW, subject="user:ada"))
    assert [view.claim.claim_id for view in answer.claims] == ["claim-1"]
