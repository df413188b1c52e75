"""Erasing a subject with 10,000 memories: one transaction, every row counted, and none of
the subject's words left in the database file or its WAL.

The subject's rows are interleaved with another subject's in every table, so deleting
them merges b-tree pages around rows that stay; the rebuilt pages must not keep stale
copies of erased cells. The build takes a few seconds (ingest batches, then one
materialisation per memory); the test has no timed assertion.
"""

from __future__ import annotations

from pathlib import Path

from byte_search import key_bytes, leftovers, store_bytes
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, event, memory

from trueheart_core import ArtifactCounts, SearchQuery, SQLiteRepository, TrueHeart

MEMORIES = 10_000
BATCH = 1_000
OTHER_EVERY = 10


def _build(service: TrueHeart) -> None:
    for start in range(0, MEMORIES, BATCH):
        drafts = []
        for i in range(start, start + BATCH):
            drafts.append(event(f"evt-{i}", content=f"raw zqxbulkraw{i} body"))
            if i % OTHER_EVERY == 0:
                drafts.append(event(f"evt-{i}", scope=OTHER_SCOPE, content=f"kept keepraw{i}"))
        service.ingest_events(drafts)
    for i in range(MEMORIES):
        service.materialize_once(
            memory(f"mem-{i}", (f"evt-{i}",), content=f"note zqxbulkmem{i} common{i % 7}")
        )
        if i % OTHER_EVERY == 0:
            service.materialize_once(
                memory(
                    f"mem-{i}",
                    (f"evt-{i}",),
                    scope=OTHER_SCOPE,
                    content=f"kept keepmem{i} common{i % 7}",
                )
            )


def test_erasing_ten_thousand_memories(db_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        _build(service)
        kept = service.stats(OTHER_SCOPE)
        assert b"zqxbulkraw9999 " in store_bytes(db_path)
        receipt = service.erase_subject(SCOPE, occurred_at=NOW)
        assert receipt.erased == ArtifactCounts(
            raw_event=MEMORIES,
            raw_body=MEMORIES,
            memory=MEMORIES,
            lineage_edge=MEMORIES,
            search_entry=MEMORIES,
            # every memory's own word, plus "note" and the seven shared words
            search_term=MEMORIES + 1 + 7,
        )
        assert len(receipt.memory_ids) == len(receipt.event_ids) == MEMORIES
        assert receipt.verified is True
        assert service.stats(SCOPE).tombstones == 2 * MEMORIES
        assert service.stats(OTHER_SCOPE).memories == kept.memories
        found = service.search(SearchQuery(OTHER_SCOPE, "common3", NOW, limit=100))
        assert found.matched == len([i for i in range(0, MEMORIES, OTHER_EVERY) if i % 7 == 3])
        assert service.verify_integrity().ok
    data = store_bytes(db_path)
    # Every word of the subject's bodies starts with this; the other subject's never do.
    assert leftovers(db_path, [b"zqxbulk"]) == {}
    keys = [key_bytes(f"zqxbulkmem{i}") for i in range(MEMORIES)]
    assert leftovers(db_path, keys) == {}
    assert all(f"keepmem{i} ".encode() in data for i in range(0, MEMORIES, OTHER_EVERY))
