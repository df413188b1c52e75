"""Erasure reaches the SQLite search index: a removed memory's terms leave the files.

Terms are stored only as 64-bit keys, which SQLite writes as 8-byte big-endian two's
complement integers, each in one row of a rowid table; every other search b-tree names a
term by its row ID. After a forget, a delete, or the delete of the memory's raw event,
neither a word of the memory (in clear) nor the key of a term only it held may remain
anywhere in the database file or its write-ahead log. The index is large enough for its
b-trees to have interior pages, and the secret memory is indexed between others, so its
rows sit inside b-trees that SQLite has reorganised.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from byte_search import key_bytes, locate
from byte_search import page_size as file_page_size
from conformance_builders import NOW, SCOPE, command, event, memory
from sqlite_builders import store_bytes

from trueheart_core import EntityType, GovernanceAction, SearchQuery, TrueHeart
from trueheart_core.domain.search.tokenize import term_key

SECRET = "zqxjvortex"
TYPO = "zqxjvotrex"  # one transposition away: found through the correction of a query
# Enough distinct terms that the memory's postings span several index pages.
SECRET_TERMS = (SECRET, *(f"{SECRET}{index}" for index in range(300)))
SHARED = "sharedmarmalade"
BUDGET = 100_000
FILLERS = 100
WORDS_PER_FILLER = 40
_INTERIOR_INDEX_PAGE = 0x02
_INTERIOR_TABLE_PAGE = 0x05
_LEAF_TABLE_PAGE = 0x0D
_SEARCH_BTREES = ("search_postings", "search_postings_by_doc", "search_terms")


def _build(service: TrueHeart) -> None:
    """A few thousand postings with the secret memory's rows in the middle."""
    drafts = [event(f"evt-{index}") for index in range(FILLERS)] + [event("evt-secret")]
    service.ingest_events(drafts)
    for index in range(FILLERS):
        if index == FILLERS // 2:
            content = " ".join(SECRET_TERMS) + f" {SHARED}"
            service.materialize_once(memory("mem-secret", ("evt-secret",), content=content))
        words = " ".join(f"filler{index}x{word}" for word in range(WORDS_PER_FILLER))
        extra = f" {SHARED}" if index == 7 else ""
        service.materialize_once(
            memory(f"mem-{index:03d}", (f"evt-{index}",), content=words + extra)
        )


def _page_types(data: bytes, needle: bytes) -> set[int]:
    """The b-tree page type of every page of the main file where ``needle`` occurs."""
    page_size = file_page_size(data)
    types = set()
    start = data.find(needle)
    while start >= 0:
        page = start // page_size
        header = page * page_size + (100 if page == 0 else 0)
        types.add(data[header])
        start = data.find(needle, start + 1)
    return types


def _root_page_types(path: Path, data: bytes) -> dict[str, int]:
    page_size = file_page_size(data)
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        roots = dict(
            raw.execute(
                "SELECT name, rootpage FROM sqlite_master WHERE name IN (?, ?, ?)", _SEARCH_BTREES
            ).fetchall()
        )
    finally:
        raw.close()
    return {name: data[(root - 1) * page_size] for name, root in roots.items()}


def _check_index_is_deep_and_holds_the_secret(service: TrueHeart, path: Path) -> None:
    # An erasing call on an unrelated memory checkpoints the WAL: every page is then in
    # the main file, where page types can be read.
    service.govern(command(GovernanceAction.FORGET, f"mem-{FILLERS - 1:03d}"))
    data = path.read_bytes()
    assert Path(f"{path}-wal").stat().st_size == 0
    assert _root_page_types(path, data) == {
        "search_postings": _INTERIOR_INDEX_PAGE,
        "search_postings_by_doc": _INTERIOR_INDEX_PAGE,
        "search_terms": _INTERIOR_TABLE_PAGE,
    }
    assert all(key_bytes(term) in data for term in SECRET_TERMS)
    assert SECRET.encode("utf-8") in data
    # The keys are held by the leaf rows of the terms table, and nowhere else.
    types = set().union(*(_page_types(data, key_bytes(t)) for t in SECRET_TERMS))
    assert types == {_LEAF_TABLE_PAGE}
    found = service.search(SearchQuery(SCOPE, SECRET, NOW, budget_tokens=BUDGET))
    assert [item.memory.memory_id for item in found.items] == ["mem-secret"]
    corrected = service.search(SearchQuery(SCOPE, TYPO, NOW, budget_tokens=BUDGET))
    assert [item.memory.memory_id for item in corrected.items] == ["mem-secret"]


def _assert_erased(service: TrueHeart, path: Path) -> None:
    data = store_bytes(path)
    assert not [term for term in SECRET_TERMS if term.encode("utf-8") in data]
    left = {term: locate(path, key_bytes(term)) for term in SECRET_TERMS if key_bytes(term) in data}
    assert not left
    # A term that a surviving memory shares stays indexed for it.
    assert key_bytes(SHARED) in data
    kept = service.search(SearchQuery(SCOPE, SHARED, NOW, budget_tokens=BUDGET))
    assert [item.memory.memory_id for item in kept.items] == ["mem-007"]
    assert service.search(SearchQuery(SCOPE, SECRET, NOW)).matched == 0
    # A misspelling corrects to nothing: the secret's keys are gone, and a search stores
    # none of the keys it looks up.
    assert service.search(SearchQuery(SCOPE, TYPO, NOW)).matched == 0
    assert key_bytes(TYPO) not in store_bytes(path)
    assert service.verify_integrity().ok


def test_secret_term_keys_are_8_byte_integers() -> None:
    # SQLite stores an integer in 8 bytes only when it needs more than 6.
    assert all(abs(term_key(term)) >= 2**47 for term in (*SECRET_TERMS, SHARED, TYPO))


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_erase_the_memory_terms(
    service: TrueHeart, db_path: Path, action: GovernanceAction
) -> None:
    _build(service)
    _check_index_is_deep_and_holds_the_secret(service, db_path)
    service.govern(command(action, "mem-secret"))
    _assert_erased(service, db_path)


def test_raw_event_delete_erases_the_dependent_memory_terms(
    service: TrueHeart, db_path: Path
) -> None:
    _build(service)
    _check_index_is_deep_and_holds_the_secret(service, db_path)
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-secret", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == ("evt-secret", "mem-secret")
    _assert_erased(service, db_path)


def test_sealed_memory_terms_are_erased_on_forget(service: TrueHeart, db_path: Path) -> None:
    _build(service)
    _check_index_is_deep_and_holds_the_secret(service, db_path)
    service.govern(command(GovernanceAction.SEAL, "mem-secret"))
    assert service.search(SearchQuery(SCOPE, SECRET, NOW)).matched == 0
    service.govern(command(GovernanceAction.FORGET, "mem-secret"))
    _assert_erased(service, db_path)
