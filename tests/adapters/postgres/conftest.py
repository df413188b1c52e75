"""Fixtures of the PostgreSQL adapter tests.

These tests are white-box: they read the server's catalog and the files of the store's
relations. Here ``repository`` (and so ``service``) is a :class:`PostgresRepository` on a
fresh schema of the session's test database (``postgres_cluster``, from
``tests/conftest.py``), ``pg`` is a plain autocommit connection to the same database
with that schema first on its search path, and the conformance builders
(``tests/conformance``) are importable. Tests that read files need a throwaway cluster
(``data_directory``); on a server named by the environment they are skipped.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import postgres_configuration
from trueheart_core import PostgresRepository

_CONFORMANCE = str(Path(__file__).resolve().parents[2] / "conformance")
if _CONFORMANCE not in sys.path:
    sys.path.insert(0, _CONFORMANCE)

_names = itertools.count(1)


@pytest.fixture
def pg_schema(postgres_cluster: Any) -> Iterator[str]:
    """A schema name no other test uses, dropped after the test."""
    name = f"th_pgtest_{os.getpid()}_{next(_names)}"
    try:
        yield name
    finally:
        postgres_configuration.drop_schema(postgres_configuration.database_url(), name)


@pytest.fixture
def repository(pg_schema: str) -> Iterator[PostgresRepository]:
    """A store in ``pg_schema``, closed after the test."""
    repo = PostgresRepository(
        postgres_configuration.database_url(), schema=pg_schema, max_connections=4
    )
    try:
        yield repo
    finally:
        repo.close()


@pytest.fixture
def pg(repository: PostgresRepository, pg_schema: str) -> Iterator[Any]:
    """An autocommit connection to the store's database, its schema on the search path."""
    import psycopg

    conn = psycopg.connect(postgres_configuration.database_url(), autocommit=True)
    try:
        conn.execute(f'SET search_path = "{pg_schema}"')
        yield conn
    finally:
        conn.close()


@pytest.fixture
def data_directory(postgres_cluster: Any) -> Path:
    """The data directory of the throwaway test cluster (the test is skipped on a server
    the environment names: its files cannot be read)."""
    found = postgres_cluster.data_directory
    if found is None:
        pytest.skip("needs the throwaway test cluster's data directory")
    return Path(found)
