"""The async API: many calls in flight from one event loop, one store.

Run it from anywhere: ``python examples/async_memory.py``. Ten writes are awaited
together; the face runs them one at a time in its own worker thread, so the event loop
stays free and the store sees one transaction at a time. A search and a recall follow,
then the face closes, with its thread and its store. It uses a fixed clock and a
temporary SQLite file that is removed on exit; its output is deterministic.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trueheart_core import (
    AsyncTrueHeart,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("synthetic-tenant", "synthetic-owner", "synthetic-subject")
WEEK = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=365))
NOTES = (
    "Prefers short answers.",
    "Drinks green tea in the morning.",
    "Is learning Japanese.",
    "Cycles to work on Mondays.",
    "Keeps a vegetable garden.",
    "Reads science fiction.",
    "Plays the cello on weekends.",
    "Is allergic to peanuts.",
    "Visits Kyoto in April.",
    "Writes Python for a living.",
)


def _event(number: int) -> RawEventDraft:
    source = SourceRef(f"chat-{number}", "chat", NOW, TrustLevel.OBSERVED)
    return RawEventDraft(f"evt-{number}", SCOPE, source, NOTES[number], WEEK)


def _memory(number: int) -> MemoryDraft:
    return MemoryDraft(
        f"mem-{number}", SCOPE, NOTES[number], (f"evt-{number}",), "note", TrustLevel.OBSERVED, NOW
    )


async def _run(path: Path) -> None:
    async with AsyncTrueHeart(SQLiteRepository(path), clock=lambda: NOW) as memory:
        # All ten writes are in flight at once; the face runs them one after another.
        await asyncio.gather(*(memory.ingest_event(_event(n)) for n in range(len(NOTES))))
        await asyncio.gather(*(memory.materialize_once(_memory(n)) for n in range(len(NOTES))))
        capsule, recalled = await asyncio.gather(
            memory.search(SearchQuery(SCOPE, "What does the user drink?", NOW)),
            memory.recall(RecallQuery(SCOPE, NOW, limit=20)),
        )
        print(f"{len(recalled)} memories recalled")
        print(f"search: {capsule.items[0].memory.memory_id}: {capsule.items[0].memory.content}")
    print("closed")


def main(*, temporary_root: Path | None = None) -> None:
    """Run the example in a temporary directory (under ``temporary_root`` if given)."""
    with tempfile.TemporaryDirectory(dir=temporary_root) as directory:
        asyncio.run(_run(Path(directory) / "memory.db"))


if __name__ == "__main__":
    main()
