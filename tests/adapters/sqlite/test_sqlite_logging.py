"""What the SQLite adapter logs when a store is refused or busy (the records of a whole
lifecycle are checked by the conformance suite)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from conformance_builders import NOW, event

from trueheart_core import RepositoryBusy, RepositoryCorruption, SQLiteRepository, TrueHeart


def test_a_foreign_file_is_refused_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE zqxforeign (secret TEXT)")
    conn.execute("INSERT INTO zqxforeign VALUES ('zqxbody')")
    conn.commit()
    conn.close()
    with (
        caplog.at_level(logging.DEBUG, logger="trueheart_core"),
        pytest.raises(RepositoryCorruption),
    ):
        SQLiteRepository(path)
    refused = [r for r in caplog.records if r.name == "trueheart_core.store"]
    assert [r.levelno for r in refused] == [logging.WARNING]
    assert refused[0].getMessage().startswith("store refused: RepositoryCorruption: ")
    assert "zqx" not in caplog.text and str(tmp_path) not in caplog.text


def test_a_write_refused_as_busy_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "store.db"
    with TrueHeart(SQLiteRepository(path, busy_timeout=0), clock=lambda: NOW) as service:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with (
                caplog.at_level(logging.DEBUG, logger="trueheart_core"),
                pytest.raises(RepositoryBusy),
            ):
                service.ingest_event(event("evt-zq"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        busy = [r for r in caplog.records if r.name == "trueheart_core.busy"]
        assert [r.getMessage() for r in busy] == [
            "ingest refused, repository busy: event ingest failed"
        ]
        timed = [r for r in caplog.records if r.name == "trueheart_core.slow"]
        assert len(timed) == 1 and timed[0].getMessage().startswith("write operation ingest")
        service.ingest_event(event("evt-zq"))  # the store is usable again
