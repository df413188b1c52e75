"""What the SQLite adapter logs when a store is refused or busy (the records of a whole
lifecycle are checked by the conformance suite)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from conformance_builders import NOW, SCOPE, event

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    RepositoryBusy,
    RepositoryCorruption,
    SQLiteRepository,
    TrueHeart,
)


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
    # Text only: a handler that keeps records keeps no exception and none of its frames.
    assert all(type(arg) is str for arg in refused[0].args or ())


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


def _erasure_messages(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [
        (r.levelno, r.getMessage()) for r in caplog.records if r.name == "trueheart_core.erasure"
    ]


def test_erasure_scrubs_are_logged_done_and_postponed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "store.db"
    repository = SQLiteRepository(path, busy_timeout=0.2)
    service = TrueHeart(repository, clock=lambda: NOW)
    for n in range(3):
        service.ingest_event(event(f"evt-zq{n}", content=f"zqx body {n}"))
    readers: list[sqlite3.Connection] = []

    def pin_a_snapshot_at_commit(statement: str) -> None:
        if statement == "COMMIT" and not readers:
            reader = sqlite3.connect(path, isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM raw_events").fetchone()
            readers.append(reader)

    delete = GovernanceCommand(
        SCOPE, GovernanceAction.DELETE, EntityType.RAW_EVENT, "evt-zq0", NOW, "request"
    )
    connection = repository._conn  # the adapter's connection, for the trace hook only
    assert connection is not None
    with caplog.at_level(logging.DEBUG, logger="trueheart_core"):
        connection.set_trace_callback(pin_a_snapshot_at_commit)
        try:
            with pytest.raises(RepositoryBusy):
                service.govern(delete)
        finally:
            connection.set_trace_callback(None)
            for reader in readers:
                reader.close()
        assert _erasure_messages(caplog) == [
            (logging.WARNING, "erasure scrub postponed: a reader holds the WAL")
        ]
        caplog.clear()
        service.stats()  # the next call finishes the scrub first
        (done,) = _erasure_messages(caplog)
        assert done[0] == logging.INFO
        assert done[1].startswith("erasure scrub: WAL copied into the file and truncated in ")
        caplog.clear()
        # An erasure overwrites rows in place: only the WAL is scrubbed after it.
        service.erase_subject(SCOPE, occurred_at=NOW)
        (erased,) = _erasure_messages(caplog)
        caplog.clear()
        service.compact()
        messages = _erasure_messages(caplog)
    assert erased[0] == logging.INFO
    assert erased[1].startswith("erasure scrub: WAL copied into the file and truncated in ")
    assert [level for level, _ in messages] == [logging.INFO, logging.INFO]
    assert messages[0][1].startswith("erasure scrub: database file rewritten in ")
    assert messages[1][1].startswith("erasure scrub: WAL copied into the file and truncated in ")
    assert "zqx" not in caplog.text and SCOPE.subject_id not in caplog.text
    repository.close()
