"""The PostgreSQL server of the PostgreSQL benchmarks: the one named, or a throwaway
durable cluster (``tests/postgres_cluster.py``), and the few plain queries they make
on it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, cast

from harness import Clock

from trueheart_core import TrueHeart

try:
    import psycopg
except ImportError:  # pragma: no cover - reported by the programs
    psycopg = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[1]


class ClusterLike(Protocol):
    """What the benchmarks use of ``tests/postgres_cluster.Cluster``."""

    url: str

    def stop(self) -> None: ...


def start_cluster() -> ClusterLike:
    """A throwaway durable cluster from the tests' helper (loaded by path: ``tests`` is
    not a package)."""
    path = ROOT / "tests" / "postgres_cluster.py"
    spec = importlib.util.spec_from_file_location("postgres_cluster", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    reason = module.unavailable()
    if reason:
        raise SystemExit(f"no PostgreSQL server: {reason}; pass --url")
    start = cast(Callable[..., ClusterLike], module.start)
    return start(durable=True)


@contextmanager
def server(url: str | None) -> Iterator[str]:
    """The URL of the server to measure: the one named, or a throwaway cluster's."""
    if url:
        yield url
        return
    cluster = start_cluster()
    try:
        yield cluster.url
    finally:
        cluster.stop()


def drop_schemas(url: str, names: Sequence[str]) -> None:
    assert psycopg is not None
    with psycopg.connect(url, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def analyze_schema(url: str, schema: str) -> None:
    """``ANALYZE`` every table of ``schema``: the statistics autovacuum gives tables of
    that size at a moment of its own, so that the plans of what is measured next do not
    depend on whether it has run yet."""
    assert psycopg is not None
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (schema,)
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'ANALYZE "{schema}"."{table}"')


def create_floor_table(url: str, schema: str) -> None:
    """The schema and table of the plain committed insert of the write floors (the
    shape of ``bench.py``'s floor table)."""
    assert psycopg is not None
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(
            f'CREATE TABLE "{schema}".items (id BIGINT GENERATED ALWAYS AS IDENTITY '
            "PRIMARY KEY, scope TEXT NOT NULL, created_at BIGINT NOT NULL, body TEXT NOT NULL)"
        )


def server_settings(url: str) -> dict[str, str]:
    assert psycopg is not None
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
            (["server_version", "fsync", "synchronous_commit", "full_page_writes"],),
        ).fetchall()
    return {str(name): str(setting) for name, setting in rows}


def postgres(url: str, schema: str, **options: Any) -> TrueHeart:
    from trueheart_core import PostgresRepository

    clock = options.pop("clock", None) or Clock()
    return TrueHeart(PostgresRepository(url, schema=schema, **options), clock=clock)


def rolled_back(url: str) -> int:
    """The transactions the server rolled back in this database so far."""
    assert psycopg is not None
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0
