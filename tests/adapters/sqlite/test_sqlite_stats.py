"""Store statistics against the SQLite file: every count equals the rows of its table,
counted with plain sqlite3, and the sizes are those of the file and its WAL."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from conformance_builders import NOW, OTHER_SCOPE, claim, command, event, memory

from trueheart_core import CanonicalClaimExtractor, GovernanceAction, TrueHeart


def _populate(service: TrueHeart) -> None:
    service.ingest_events(
        [
            event("evt-1"),
            event("evt-2", raw_ttl=timedelta(days=1)),
            event("evt-3"),
            event("evt-1", scope=OTHER_SCOPE),
        ]
    )
    service.ingest_extracted(
        event("evt-x", content="Canonical claim: subject=user:a; predicate=likes; value=tea."),
        CanonicalClaimExtractor(),
    )
    service.materialize_once(memory("mem-1", ("evt-1",), content="alpha beta"))
    service.materialize_once(memory("mem-2", ("evt-2",), content="beta gamma", kind="plan"))
    service.materialize_once(memory("mem-3", ("evt-3",), content="gamma delta"))
    service.materialize_once(memory("mem-4", ("evt-3",), content="delta epsilon", kind="plan"))
    service.materialize_claim(claim("claim-1", ("evt-1",)))
    service.materialize_once(memory("mem-1", ("evt-1",), scope=OTHER_SCOPE, content="alpha"))
    service.govern(command(GovernanceAction.SEAL, "mem-3"))
    service.govern(command(GovernanceAction.FORGET, "mem-4"))
    service.expire_raw_content(as_of=NOW + timedelta(days=1))


def test_statistics_match_the_file(service: TrueHeart, db_path: Path) -> None:
    _populate(service)
    stats = service.stats()
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        counts = {
            table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in (
                "raw_events",
                "raw_bodies",
                "memories",
                "claims",
                "extractions",
                "tombstones",
                "audit",
                "search_docs",
                "search_terms",
                "search_postings",
                "vectors",
            )
        }
    finally:
        conn.close()
    assert (stats.events, stats.events_with_body, stats.memories) == (
        counts["raw_events"],
        counts["raw_bodies"],
        counts["memories"],
    )
    assert (stats.claims, stats.extraction_records, stats.tombstones, stats.audit_records) == (
        counts["claims"],
        counts["extractions"],
        counts["tombstones"],
        counts["audit"],
    )
    assert (stats.search_entries, stats.search_terms, stats.search_postings) == (
        counts["search_docs"],
        counts["search_terms"],
        counts["search_postings"],
    )
    assert stats.vectors == counts["vectors"]
    assert stats.database_bytes == db_path.stat().st_size
    wal = Path(f"{db_path}-wal")
    assert stats.wal_bytes == (wal.stat().st_size if wal.exists() else 0)
    assert stats.storage_detail == (("database", stats.database_bytes), ("wal", stats.wal_bytes))
    assert stats.storage_bytes == stats.database_bytes + stats.wal_bytes
