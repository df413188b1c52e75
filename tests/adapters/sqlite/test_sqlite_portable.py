"""Export and import on SQLite files: the format's schema version is the version of the
store's rows, and a row tampered with behind the library's back is not exported."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from conformance_builders import NOW, event, memory

from trueheart_core import RepositoryCorruption, SQLiteRepository, TrueHeart
from trueheart_core.adapters.sqlite import schema
from trueheart_core.domain import portable

# For each SQLite schema version, the schema version of the rows an export carries. A
# schema change must decide it: version 9 only moved where recent audit and pending search
# rows wait (the write buffer), and every row an export carries reads as in version 8.
ROWS_OF_SCHEMA = {8: 8, 9: 8}


def test_the_format_carries_the_schema_version_of_the_store() -> None:
    assert ROWS_OF_SCHEMA[schema.SCHEMA_VERSION] == portable.SCHEMA


def test_a_tampered_row_is_not_exported(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1", content="tampered-body-secret"))
        service.materialize_once(memory("mem-1", ("evt-1",)))
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE raw_bodies SET content = 'changed-body-secret'")
    conn.close()
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        out = io.StringIO()
        with pytest.raises(RepositoryCorruption) as caught:
            service.export_store(out)
        assert str(caught.value) == "repository corruption: invalid raw body record"
        assert "secret" not in out.getvalue()
        assert caught.value.__context__ is None
