"""Erasing a subject with 10,000 memories: one transaction, every row counted, and none of
the subject's words left anywhere in the backend's storage (``Capability.FORENSICS``).

The subject's rows are interleaved with another subject's in every table, so deleting
them reorganises storage around rows that stay (in SQLite: merges b-tree pages); what is
rebuilt must not keep stale copies of erased rows, with the rewrite of the file and
without it (where the erased rows are overwritten in place before they go, so that the
merges copy only blanks). The build takes a few seconds (ingest
batches, then one materialisation per memory); the test has no timed assertion.
"""

from __future__ import annotations

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, event, found_in_storage, memory

from trueheart_core import ArtifactCounts, SearchQuery, TrueHeart
from trueheart_core.ports import Capability, Repository

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


@pytest.mark.requires(Capability.FORENSICS)
@pytest.mark.parametrize("rewrite", [True, False], ids=["rewrite", "in-place"])
def test_erasing_ten_thousand_memories(
    repository: Repository, service: TrueHeart, rewrite: bool
) -> None:
    _build(service)
    kept = service.stats(OTHER_SCOPE)
    assert found_in_storage(repository, ["zqxbulkraw9999 ", "zqxbulkmem9999 "]) == [
        "zqxbulkraw9999 ",
        "zqxbulkmem9999 ",
    ]
    receipt = service.erase_subject(SCOPE, occurred_at=NOW, rewrite=rewrite)
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
    # Every word of the subject's bodies starts with this; the other subject's never do.
    assert found_in_storage(repository, ["zqxbulk"]) == []
    kept_words = [f"keepmem{i} " for i in range(0, MEMORIES, OTHER_EVERY)]
    assert found_in_storage(repository, kept_words) == kept_words
