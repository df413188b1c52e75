"""A store moves from SQLite to PostgreSQL and back with the library's own tools (an
export and an import, through the API and through the command line), and every answer
of the store (recall, search, claims, listings, audit, statistics, integrity, each
memory, receipt and extraction) is the same after each move."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from conformance_builders import NOW
from test_portable import answers, exported, populate

import postgres_configuration
from trueheart_core import PostgresRepository, SQLiteRepository, TrueHeart


def _same(before: dict[str, object], after: dict[str, object]) -> None:
    assert after.keys() == before.keys()
    for key, value in before.items():
        assert after[key] == value, key


def test_a_store_moves_to_postgresql_and_back_with_every_answer_unchanged(
    tmp_path: Path, repository: PostgresRepository
) -> None:
    source = TrueHeart(SQLiteRepository(tmp_path / "source.db"), clock=lambda: NOW)
    populate(source)
    before = answers(source)
    text, receipt = exported(source)
    source.close()

    server = TrueHeart(repository, clock=lambda: NOW)
    imported = server.import_store(io.StringIO(text))
    assert (imported.rows, imported.digest) == (receipt.rows, receipt.digest)
    _same(before, answers(server))
    assert server.verify_integrity().problems == ()

    again, _ = exported(server)
    # Rows come in each backend's storage order; the rows themselves are the same.
    assert sorted(again.splitlines()[1:-1]) == sorted(text.splitlines()[1:-1])
    back = TrueHeart(SQLiteRepository(tmp_path / "back.db"), clock=lambda: NOW)
    back.import_store(io.StringIO(again))
    _same(before, answers(back))
    assert back.verify_integrity().problems == ()
    back.close()


def _trueheart(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trueheart_core.cli", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_command_line_moves_a_store_to_a_server_url(tmp_path: Path, pg_schema: str) -> None:
    source_path = tmp_path / "source.db"
    source = TrueHeart(SQLiteRepository(source_path), clock=lambda: NOW)
    populate(source)
    before = answers(source)
    source.close()
    dump = tmp_path / "store.jsonl"
    assert _trueheart("export", str(source_path), "--output", str(dump)).returncode == 0
    url = f"{postgres_configuration.database_url()}?schema={pg_schema}"
    done = _trueheart("import", url, str(dump))
    assert done.returncode == 0, done.stderr
    verified = _trueheart("verify", url, "--json")
    assert verified.returncode == 0, verified.stderr
    server = TrueHeart(
        PostgresRepository(postgres_configuration.database_url(), schema=pg_schema),
        clock=lambda: NOW,
    )
    _same(before, answers(server))
    server.close()


def test_a_refused_import_leaves_the_new_schema_empty_and_importable(
    tmp_path: Path, pg_schema: str
) -> None:
    source_path = tmp_path / "source.db"
    with TrueHeart(SQLiteRepository(source_path), clock=lambda: NOW) as source:
        populate(source)
    dump = tmp_path / "store.jsonl"
    assert _trueheart("export", str(source_path), "--output", str(dump)).returncode == 0
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_bytes(dump.read_bytes()[:-10])
    url = f"{postgres_configuration.database_url()}?schema={pg_schema}"
    refused = _trueheart("import", url, str(truncated))
    assert refused.returncode == 1, refused.stderr
    # The schema the import created stays, as an empty store.
    with TrueHeart(
        PostgresRepository(postgres_configuration.database_url(), schema=pg_schema)
    ) as left:
        assert left.scopes() == ()
    done = _trueheart("import", url, str(dump))
    assert done.returncode == 0, done.stderr
