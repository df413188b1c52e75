"""Semantic projection walkthrough: a host's embedder, hybrid search, repair and erasure.

Run it from anywhere: ``python examples/semantic.py``. The host plugs in its own model by
implementing the ``Embedder`` protocol; here a tiny, hand-written "concept" model stands
in for one (words of one group, such as "concise" and "brief", share a dimension), so the
output is deterministic and needs no download. It shows a paraphrase found without
shared words, the trace of each ranking's contribution, a failing model that loses no
write, the status and repair of the vectors, and forget removing a vector. It uses a fixed
clock and a temporary SQLite file that is removed on exit.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryCapsule,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SemanticProjectionError,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPE = Scope("synthetic-tenant", "support-agent", "synthetic-user")
RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=7), clear_for=timedelta(days=30), recall_for=timedelta(days=180)
)
CONCEPTS = (
    ("concise", "brief", "short", "terse"),
    ("summaries", "answers", "replies", "responses"),
    ("tea", "coffee", "drinks"),
    ("morning", "mornings", "early"),
)
MEMORIES = (
    ("mem-style", "Prefers concise summaries."),
    ("mem-drink", "Drinks green tea."),
    ("mem-time", "Works best in the morning."),
)


class ConceptEmbedder:
    """A stand-in for a real model: one dimension per concept, normalised."""

    def __init__(self) -> None:
        self.offline = False

    @property
    def identity(self) -> str:
        return "example-concepts-v1"

    @property
    def dimensions(self) -> int:
        return len(CONCEPTS)

    @property
    def normalized(self) -> bool:
        return True

    def _vector(self, text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        vector = [float(sum(word in group for word in words)) for group in CONCEPTS]
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self.offline:
            raise ConnectionError("model server unreachable")
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def _show(capsule: MemoryCapsule) -> None:
    semantic = capsule.semantic
    assert semantic is not None
    print(
        f"matched {capsule.matched} (semantic {semantic.matched} of {semantic.scanned} "
        f"scanned, {semantic.fusion})"
    )
    for entry in capsule.trace:
        signals = ", ".join(
            f"{s.source} #{s.rank} ({s.score:.3f}) +{s.contribution:.4f}" for s in entry.signals
        )
        print(
            f"  #{entry.rank} {entry.memory_id} {entry.decision} score {entry.score:.4f}: {signals}"
        )


def main(*, temporary_root: Path | None = None) -> None:
    """Run the walkthrough in a temporary directory (under ``temporary_root`` if given)."""
    embedder = ConceptEmbedder()
    with (
        tempfile.TemporaryDirectory(dir=temporary_root) as directory,
        TrueHeart(
            SQLiteRepository(Path(directory) / "memory.db"),
            clock=lambda: NOW,
            embedder=embedder,
        ) as memory,
    ):
        source = SourceRef("chat-1", "chat/user", NOW, TrustLevel.CONFIRMED)
        memory.ingest_event(
            RawEventDraft("turn-1", SCOPE, source, "Keep it short, I like tea.", RETENTION)
        )
        for memory_id, content in MEMORIES:
            memory.materialize_once(
                MemoryDraft(
                    memory_id, SCOPE, content, ("turn-1",), "preference", TrustLevel.CONFIRMED, NOW
                )
            )
        as_of = NOW + timedelta(hours=1)

        text = "brief answers over coffee"
        lexical = memory.search(SearchQuery(SCOPE, text, as_of, semantic=False))
        print(f"search {text!r}: lexical alone finds {len(lexical.items)}")
        _show(memory.search(SearchQuery(SCOPE, text, as_of)))

        embedder.offline = True
        try:
            memory.materialize_once(
                MemoryDraft(
                    "mem-coffee",
                    SCOPE,
                    "Also drinks coffee early.",
                    ("turn-1",),
                    "preference",
                    TrustLevel.CONFIRMED,
                    NOW,
                )
            )
        except SemanticProjectionError as error:
            print(f"{type(error).__name__}: {error} (committed: {error.evidence_committed})")
        status = memory.semantic_status(SCOPE)
        print(
            f"status: {status.indexed} of {status.memories} indexed, missing "
            f"{', '.join(status.missing_memory_ids)}"
        )
        embedder.offline = False
        status = memory.sync_semantic(
            SCOPE, progress=lambda done, total: print(f"  repaired {done} of {total}")
        )
        print(f"after sync: complete {status.complete}")

        memory.govern(
            GovernanceCommand(
                SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "mem-style", NOW, "user request"
            )
        )
        status = memory.semantic_status(SCOPE)
        print(f"after forget of mem-style: {status.indexed} vectors, complete {status.complete}")
        _show(memory.search(SearchQuery(SCOPE, text, as_of)))


if __name__ == "__main__":
    main()
