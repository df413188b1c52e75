"""The same governed memory on a PostgreSQL server, and a move from SQLite to it.

Needs the ``postgres`` extra (``pip install "trueheart-core[postgres]"``) and a server:
set ``TRUEHEART_POSTGRES_URL`` (for example ``postgresql://app@localhost:5432/agents``)
and run ``python examples/postgres.py``. It works in a schema of its own
(``trueheart_example``), which it drops at the end. Without the variable it says so and
exits with status 0, having done nothing.
"""

from __future__ import annotations

import io
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trueheart_core import (
    GovernanceAction,
    GovernanceCommand,
    EntityType,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SCHEMA = "trueheart_example"


def _fill(memory: TrueHeart, scope: Scope, now: datetime) -> None:
    retention = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
    source = SourceRef("example-source", "synthetic", now, TrustLevel.OBSERVED)
    for number, text in enumerate(
        ("The subject prefers concise summaries.", "The subject's team ships on Fridays."), 1
    ):
        memory.ingest_event(
            RawEventDraft(f"event-{number}", scope, source, f"Observed: {text}", retention)
        )
        memory.materialize_once(
            MemoryDraft(
                f"memory-{number}", scope, text, (f"event-{number}",), "fact",
                TrustLevel.OBSERVED, now,
            )
        )


def main(url: str) -> None:
    """Fill a SQLite store, move it to PostgreSQL with export and import, and use it."""
    from trueheart_core import PostgresRepository

    now = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
    scope = Scope("synthetic-tenant", "synthetic-owner", "synthetic-subject")
    exported = io.StringIO()
    with tempfile.TemporaryDirectory() as directory:
        with TrueHeart(SQLiteRepository(Path(directory) / "memory.db"), clock=lambda: now) as local:
            _fill(local, scope, now)
            local.export_store(exported)
    server = PostgresRepository(url, schema=SCHEMA)
    try:
        with TrueHeart(server, clock=lambda: now) as shared:
            shared.import_store(exported.getvalue().splitlines(keepends=True))
            hits = shared.search(SearchQuery(scope=scope, text="summaries", as_of=now)).items
            shared.govern(
                GovernanceCommand(
                    scope=scope,
                    action=GovernanceAction.FORGET,
                    entity_type=EntityType.MEMORY,
                    entity_id="memory-2",
                    occurred_at=now,
                    reason="the subject asked",
                )
            )
            left = shared.recall(RecallQuery(scope=scope, as_of=now))
            clean = shared.verify_integrity().ok
            print(f"moved 2 memories to PostgreSQL; search found {hits[0].memory.memory_id}")
            print(f"after forgetting one, {len(left)} recalled; integrity clean: {clean}")
    finally:
        _drop(url)


def _drop(url: str) -> None:
    """Remove the example's schema (the example leaves nothing behind)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


if __name__ == "__main__":
    target = os.environ.get("TRUEHEART_POSTGRES_URL")
    if not target:
        print("set TRUEHEART_POSTGRES_URL to a PostgreSQL server to run this example")
    else:
        main(target)
