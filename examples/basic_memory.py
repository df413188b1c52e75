"""The five-minute example: ingest one event, derive one memory, recall it.

Run it from anywhere: ``python examples/basic_memory.py``. It prints exactly
``1 governed memory recalled at clarity 1.00`` and leaves nothing behind.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trueheart_core import (
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)


def main(*, temporary_root: Path | None = None) -> None:
    """Run the example in a temporary directory (under ``temporary_root`` if given)."""
    now = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
    scope = Scope("synthetic-tenant", "synthetic-owner", "synthetic-subject")
    with (
        tempfile.TemporaryDirectory(dir=temporary_root) as directory,
        TrueHeart(SQLiteRepository(Path(directory) / "memory.db"), clock=lambda: now) as memory,
    ):
        memory.ingest_event(
            RawEventDraft(
                event_id="event-1",
                scope=scope,
                source=SourceRef("example-source", "synthetic", now, TrustLevel.OBSERVED),
                content="A synthetic preference was observed.",
                retention=RetentionPolicy(
                    raw_ttl=timedelta(days=7),
                    clear_for=timedelta(days=30),
                    recall_for=timedelta(days=90),
                ),
            )
        )
        memory.materialize_once(
            MemoryDraft(
                memory_id="memory-1",
                scope=scope,
                content="The synthetic subject prefers concise summaries.",
                source_event_ids=("event-1",),
                kind="preference",
                trust=TrustLevel.OBSERVED,
                created_at=now,
            )
        )
        items = memory.recall(RecallQuery(scope=scope, as_of=now))
        noun = "memory" if len(items) == 1 else "memories"
        print(f"{len(items)} governed {noun} recalled at clarity {items[0].clarity:.2f}")


if __name__ == "__main__":
    main()
