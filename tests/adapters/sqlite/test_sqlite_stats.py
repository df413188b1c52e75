"""Store statistics against the SQLite file: every count equals the live rows of its
table, counted with plain sqlite3, and the sizes are those of the file and its WAL."""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path

from conformance_builders import populate_for_stats

from trueheart_core import SQLiteRepository, TrueHeart, ValidationError


def test_statistics_match_the_file(service: TrueHeart, db_path: Path) -> None:
    populate_for_stats(service)
    stats = service.stats()
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        # The kept tables hold erased rows too: only live ones count.
        live = {"raw_events", "raw_bodies", "memories", "claims", "search_terms", "vectors"}
        counts = {
            table: conn.execute(
                f"SELECT COUNT(*) FROM {table}{' WHERE erased IS NOT 1' if table in live else ''}"
            ).fetchone()[0]
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
        # A pending addition holds one entry and a posting per pair; a pending removal
        # takes them away.
        (entries, pending) = conn.execute(
            "SELECT IFNULL(SUM(change), 0), "
            "IFNULL(SUM(change * json_array_length(postings)), 0) FROM search_pending"
        ).fetchone()
        counts["search_docs"] += entries
        counts["search_postings"] += pending
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


def test_statistics_racing_a_close_are_refused_as_closed(db_path: Path) -> None:
    """The file sizes are read before the call's unit; a close by another thread at that
    moment is the documented ``ValidationError``, never an error of the repository's
    own bookkeeping. Threads switch as often as they can, so that the close falls
    between any two steps of the read."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    outcomes: list[str] = []
    try:
        for _ in range(300):
            service = TrueHeart(SQLiteRepository(db_path))
            started = threading.Event()

            def read(service: TrueHeart = service, started: threading.Event = started) -> None:
                started.set()
                for _ in range(20):
                    try:
                        service.stats()
                    except ValidationError as error:
                        outcomes.append(str(error))
                        return
                    except BaseException as error:
                        outcomes.append(f"raw {type(error).__name__}")
                        return

            reader = threading.Thread(target=read)
            reader.start()
            started.wait()
            service.close()
            reader.join(timeout=30)
            assert not reader.is_alive()
    finally:
        sys.setswitchinterval(before)
    assert outcomes and set(outcomes) == {"repository: is closed"}


def test_file_sizes_of_0_5_are_kept(tmp_path: Path) -> None:
    """``SQLiteRepository.file_sizes()`` of 0.5.0: ``(database bytes, WAL bytes)`` of a file
    store, the figures ``storage_sizes()`` names; ``None`` for ``:memory:``."""
    with SQLiteRepository(tmp_path / "store.db") as repository:
        populate_for_stats(TrueHeart(repository))
        sizes = repository.file_sizes()
        assert sizes == (
            (tmp_path / "store.db").stat().st_size,
            (tmp_path / "store.db-wal").stat().st_size,
        )
        assert sizes == tuple(size for _, size in repository.storage_sizes() or ())
    # As in 0.5.0, it reads the files alone: after close too.
    database, _ = repository.file_sizes() or (0, 0)
    assert database == (tmp_path / "store.db").stat().st_size
    with SQLiteRepository(":memory:") as repository:
        assert repository.file_sizes() is None
