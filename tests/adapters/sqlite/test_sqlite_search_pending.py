"""The search index's pending rows and their merge (white-box): a seal waits in a pending
row, an erasure of another holder of the same terms reaches through it, and the merge
that follows keeps every count exact."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from byte_search import key_bytes, leftovers
from conformance_builders import NOW, SCOPE, command, event, memory
from sqlite_builders import merge_pending_of

from trueheart_core import (
    ArtifactClass,
    EntityNotFound,
    GovernanceAction,
    RepositoryCorruption,
    Scope,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
)
from trueheart_core.adapters.sqlite import pending as pending_module
from trueheart_core.adapters.sqlite.pending import LARGE_ROW, PENDING_BOUND
from trueheart_core.service.records import scope_key


def _found(service: TrueHeart, text: str) -> list[str]:
    capsule = service.search(SearchQuery(SCOPE, text, NOW + timedelta(hours=1), limit=100))
    return sorted(item.memory.memory_id for item in capsule.items)


def _merged(service: TrueHeart, db_path: Path, **contents: str) -> None:
    """Memories (by ID, their content) of one source, their entries merged."""
    service.ingest_event(event("evt-1"))
    for memory_id, content in contents.items():
        service.materialize_once(memory(memory_id, content=content))
    merge_pending_of(db_path)


def test_forgetting_the_last_holder_of_a_term_whose_other_holder_is_sealed(
    service: TrueHeart, db_path: Path
) -> None:
    _merged(service, db_path, **{"mem-a": "zqxrare", "mem-b": "zqxrare second"})
    sealed = service.govern(command(GovernanceAction.SEAL, "mem-a"))
    # mem-b still holds the term: the seal takes out the entry only.
    assert sealed.removed == (ArtifactClass.SEARCH_ENTRY,)
    assert _found(service, "zqxrare") == ["mem-b"]
    forgotten = service.govern(command(GovernanceAction.FORGET, "mem-b"))
    # No active memory holds the term now: it goes with mem-b.
    assert ArtifactClass.SEARCH_TERM in forgotten.removed
    assert service.verify_integrity().ok
    assert leftovers(db_path, [key_bytes("zqxrare"), b"zqxrare second"]) == {}
    assert _found(service, "zqxrare") == []
    merge_pending_of(db_path)  # the seal's removal merged afterwards
    assert service.verify_integrity().ok
    # Restoring the sealed memory brings the term back, under a new row.
    service.govern(command(GovernanceAction.RESTORE, "mem-a"))
    assert _found(service, "zqxrare") == ["mem-a"]
    assert service.verify_integrity().ok


def test_the_write_that_reaches_the_bound_merges_and_answers_stay_the_same(
    service: TrueHeart,
) -> None:
    service.ingest_event(event("evt-1"))
    for number in range(PENDING_BOUND - 1):
        service.materialize_once(memory(f"mem-{number:03d}", content=f"tea {number} green"))
    before = _found(service, "green tea")
    service.govern(command(GovernanceAction.SEAL, "mem-000"))  # the bound-th pending row
    assert _found(service, "green tea") == [m for m in before if m != "mem-000"]
    assert service.verify_integrity().ok
    service.govern(command(GovernanceAction.RESTORE, "mem-000"))
    assert _found(service, "green tea") == before
    assert service.verify_integrity().ok


def _pending_rows(db_path: Path) -> int:
    with sqlite3.connect(db_path) as conn:
        (rows,) = conn.execute("SELECT COUNT(*) FROM search_pending").fetchone()
    return int(rows)


def _live_terms(db_path: Path, term: str) -> int:
    with sqlite3.connect(db_path) as conn:
        (rows,) = conn.execute(
            "SELECT COUNT(*) FROM search_terms WHERE term = ? AND erased IS NOT 1",
            (key_bytes(term),),
        ).fetchone()
    conn.close()
    return int(rows)


def test_a_memory_of_many_distinct_words_is_merged_as_it_is_written(
    service: TrueHeart, db_path: Path
) -> None:
    # No pending row holds more than LARGE_ROW pairs: searches, seals and forgets that
    # read pending rows never meet a large one, and no merge moves more than one large
    # memory and the small rows before it.
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-small", content="green tea"))
    assert _pending_rows(db_path) == 1
    words = " ".join(f"zq{n:05d}" for n in range(LARGE_ROW + 1))
    service.materialize_once(memory("mem-large", content=f"green {words}"))
    assert _pending_rows(db_path) == 0
    capsule = service.search(SearchQuery(SCOPE, "green", NOW + timedelta(hours=1)))
    assert sorted(entry.memory_id for entry in capsule.trace) == ["mem-large", "mem-small"]
    assert service.verify_integrity().ok


def test_pending_changes_are_the_same_read_either_way(
    service: TrueHeart, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many terms: each pending row parsed once; few: each row's text searched per term.
    service.ingest_event(event("evt-1"))
    for number in range(20):
        service.materialize_once(
            memory(f"mem-{number:02d}", content=" ".join(f"w{n}" for n in range(number, 60)))
        )
    service.govern(command(GovernanceAction.SEAL, "mem-03"))  # a pending removal too
    repository = service._repository  # white-box: the adapter's own reads
    with repository.unit_of_work("search", write=False) as uow:  # type: ignore[attr-defined]
        index = uow.search.pending
        sid = uow.search._scope_id(scope_key(SCOPE))
        conn = uow._session.conn
        (ids,) = zip(*conn.execute("SELECT term_id FROM search_terms"), strict=True)
        parsed = index.changes(sid, list(ids))
        monkeypatch.setattr(pending_module, "_SEARCHED_TERMS", len(ids) + 1)
        searched = index.changes(sid, list(ids))
    assert parsed == searched and sum(parsed.values()) > 0


def test_the_store_s_terms_are_each_scope_s_terms_with_its_pending_changes(
    tmp_path: Path,
) -> None:
    # Several scopes, each with merged postings, pending additions and a pending
    # removal: the whole store's term rows are exactly those of its scopes.
    repository = SQLiteRepository(tmp_path / "store.db")
    service = TrueHeart(repository, clock=lambda: NOW)
    scopes = [Scope("tenant", "owner", f"subject-{k}") for k in range(3)]
    for k, scope in enumerate(scopes):
        service.ingest_event(event("evt-1", scope=scope))
        for i in range(PENDING_BOUND + 5 + k):  # a merge, then pending rows
            service.materialize_once(
                memory(f"m{i}", ("evt-1",), scope=scope, content=f"shared word{i} s{k}")
            )
        service.govern(command(GovernanceAction.SEAL, "m0", scope=scope))
    with repository.unit_of_work("verify", write=False) as uow:
        whole = sorted(uow.search.iter_terms(None), key=repr)
        each = sorted(
            (row for scope in scopes for row in uow.search.iter_terms(scope_key(scope))),
            key=repr,
        )
    assert whole == each
    # "word0" left with the sealed memory of each scope; "shared" is held by the rest.
    assert len(whole) == sum(1 + (PENDING_BOUND + 4 + k) + 1 for k in range(3))
    assert service.verify_integrity().ok
    service.close()


def test_the_merge_of_a_sealed_sole_holder_erases_its_terms(
    service: TrueHeart, db_path: Path
) -> None:
    # The seal's removal waits in a pending row; the write that reaches the bound merges
    # it, and the terms no entry holds any longer go (their rows overwritten), while a
    # term an addition of the same merge brings stays.
    _merged(service, db_path, **{"mem-solo": "zqxsolo shared"})
    service.govern(command(GovernanceAction.SEAL, "mem-solo"))
    for number in range(PENDING_BOUND - 1):
        service.materialize_once(memory(f"mem-{number:03d}", content=f"shared {number}"))
    assert _pending_rows(db_path) == 0
    assert service.verify_integrity().ok
    assert _live_terms(db_path, "zqxsolo") == 0
    assert _live_terms(db_path, "shared") == 1
    assert _found(service, "zqxsolo") == []
    assert len(_found(service, "shared")) == PENDING_BOUND - 1
    service.govern(command(GovernanceAction.RESTORE, "mem-solo"))
    assert _found(service, "zqxsolo") == ["mem-solo"]
    assert service.verify_integrity().ok


def test_a_pending_row_already_at_a_new_memory_s_row_is_damage(
    service: TrueHeart, db_path: Path
) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_once(memory("mem-1", content="green tea"))
    with sqlite3.connect(db_path) as conn:
        conn.execute(
            "INSERT INTO search_waiting SELECT scope_id, doc + 1, change, length, created_at, "
            "clear_until, recall_until, trust, kind, postings FROM search_pending"
        )
    conn.close()
    with pytest.raises(RepositoryCorruption):
        service.materialize_once(memory("mem-2", content="black tea"))
    assert service.get_memory(SCOPE, "mem-1").memory_id == "mem-1"
    with pytest.raises(EntityNotFound):
        service.get_memory(SCOPE, "mem-2")


def _rows_of(db_path: Path, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute(
            f"SELECT doc, change, {pending_module.ENTRY_COLUMNS}, postings FROM {table}"
        ).fetchall()
    conn.close()
    return rows


def _merged_copies(db_path: Path) -> dict[object, tuple[object, ...]]:
    """Each merged entry as a removal of it copies it: ``-1``, its columns, and its
    postings as :func:`pending_module.pairs_text` writes them, in term order."""
    with sqlite3.connect(db_path) as conn:
        entries = conn.execute(
            f"SELECT doc, {pending_module.ENTRY_COLUMNS} FROM search_docs"
        ).fetchall()
        copies = {}
        for doc, *columns in entries:
            pairs = conn.execute(
                "SELECT term_id, tf FROM search_postings WHERE doc = ? ORDER BY term_id", (doc,)
            ).fetchall()
            copies[doc] = (doc, -1, *columns, pending_module.pairs_text(pairs))
    conn.close()
    return copies


def test_a_seal_queues_an_exact_copy_of_the_merged_entry(service: TrueHeart, db_path: Path) -> None:
    _merged(
        service,
        db_path,
        **{
            "mem-a": "zqxonly shared words shared twice",
            "mem-b": "shared words elsewhere",
            "mem-c": "... !!",
        },
    )
    copies = _merged_copies(db_path)
    assert len(copies) == 3  # the entry of mem-c holds no postings
    # mem-a alone holds a term: the seal reports it, the term waits for the merge.
    assert service.govern(command(GovernanceAction.SEAL, "mem-a")).removed == (
        ArtifactClass.SEARCH_ENTRY,
        ArtifactClass.SEARCH_TERM,
    )
    assert service.govern(command(GovernanceAction.SEAL, "mem-b")).removed == (
        ArtifactClass.SEARCH_ENTRY,
        ArtifactClass.SEARCH_TERM,  # "shared" and "words" went with mem-a's removal
    )
    assert service.govern(command(GovernanceAction.SEAL, "mem-c")).removed == (
        ArtifactClass.SEARCH_ENTRY,
    )
    assert sorted(_rows_of(db_path, "search_pending"), key=str) == sorted(copies.values(), key=str)
    assert _found(service, "zqxonly shared words") == []
    merge_pending_of(db_path)
    assert _pending_rows(db_path) == 0
    assert _live_terms(db_path, "zqxonly") == 0
    assert service.verify_integrity().ok
    service.govern(command(GovernanceAction.RESTORE, "mem-a"))
    assert _found(service, "zqxonly") == ["mem-a"]


def test_a_seal_beside_a_waiting_row_or_a_damaged_posting_takes_the_general_path(
    service: TrueHeart, db_path: Path
) -> None:
    _merged(service, db_path, **{"mem-a": "zqxmerged tea"})
    service.materialize_once(memory("mem-b", content="zqxwaiting tea"))
    # mem-b's addition still waits: the seal drops it instead of queueing a removal.
    assert service.govern(command(GovernanceAction.SEAL, "mem-b")).removed == (
        ArtifactClass.SEARCH_ENTRY,
        ArtifactClass.SEARCH_TERM,
    )
    assert _pending_rows(db_path) == 0
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE search_postings SET tf = 0")
    conn.close()
    before = _rows_of(db_path, "search_pending")
    # A posting that is not a positive pair is not copied by the one statement; the
    # general path reads the entry and queues it as it reads.
    service.govern(command(GovernanceAction.SEAL, "mem-a"))
    after = _rows_of(db_path, "search_pending")
    assert before == [] and len(after) == 1 and after[0][1] == -1
    assert [tf for _, tf in json.loads(str(after[0][-1]))] == [0, 0]
    assert not service.verify_integrity().ok
