"""Erasure on a PostgreSQL primary whose hot standby sends feedback.

With ``hot_standby_feedback = on`` a query running on the standby holds the primary's
cleanup horizon back through the primary's WAL sender, which belongs to no database. A
rewrite (``VACUUM FULL``) made meanwhile would copy the erased rows, which that query may
still see, into the new files: the erasure waits for it, and while it lasts the rewrite
stays owed (``RepositoryBusy("erasure rewrite incomplete")``). Runs on a throwaway
primary and standby of its own.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trueheart_core import RecallQuery, RepositoryBusy, TrueHeart

psycopg = pytest.importorskip("psycopg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters" / "postgres"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))

from conformance_builders import ERASED_AT, NOW, SCOPE, event, memory  # noqa: E402
from pg_files import checkpoint, locate, relation_files  # noqa: E402


@pytest.fixture
def primary() -> Iterator[Any]:
    import postgres_cluster

    if postgres_cluster.URL_VARIABLE in os.environ:
        pytest.skip("the server is named by the environment: no standby can be made of it")
    reason = postgres_cluster.unavailable()
    if reason:
        pytest.skip(reason)
    cluster = postgres_cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.slow
def test_a_standby_query_holds_the_rewrite_back_until_it_ends(primary: Any) -> None:
    from trueheart_core import PostgresRepository

    url = primary.create_database()
    word = f"zqx{uuid.uuid4().hex}"
    # Longer than the standby's feedback interval: an erasure waits for the standby to
    # report a horizon past it, even when no query runs there.
    service = TrueHeart(PostgresRepository(url, lock_timeout=3), clock=lambda: NOW)
    standby = primary.start_standby("hot_standby_feedback = on\nwal_receiver_status_interval = 1")
    admin = psycopg.connect(url, autocommit=True)
    try:
        service.ingest_event(event("evt-1", content=f"{word} body"))
        service.materialize_once(memory("mem-1", ("evt-1",), content=f"{word} memory"))
        database = url.rsplit("/", 1)[1]
        reader = psycopg.connect(standby.database_url(database))
        deadline = time.monotonic() + 30
        while True:  # the standby replays the rows, and its reader sees them
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            (seen,) = reader.execute("SELECT count(*) FROM trueheart.raw_events").fetchone()
            if seen:
                break
            reader.rollback()
            assert time.monotonic() < deadline, "the standby never replayed the rows"
            time.sleep(0.1)
        while admin.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'walsender' AND backend_xmin IS NOT NULL"
        ).fetchone() == (0,):
            assert time.monotonic() < deadline, "the standby's feedback never arrived"
            time.sleep(0.1)
        with pytest.raises(RepositoryBusy, match="erasure rewrite incomplete"):
            service.erase_subject(SCOPE, occurred_at=ERASED_AT)
        assert service.recall(RecallQuery(SCOPE, NOW)) == ()  # committed: gone from answers
        reader.close()
        service.compact()  # runs the owed rewrite, once the standby reports it may
        checkpoint(admin)
        assert primary.data_directory is not None
        files = relation_files(admin, primary.data_directory, "trueheart")
        assert locate(files, [word.encode()]) == {}
    finally:
        admin.close()
        service.close()
        standby.stop()
