"""The PostgreSQL configuration of the conformance fixtures, and its one shared server.

The server is started on first use (see ``postgres_cluster``) and stopped when the test
session ends. Each target is a schema of its own (``th_<n>``) in one database of that
server, dropped when the target's context ends; a target's text is
``"<schema> <conninfo>"``. Where no server can be had, every test on this configuration
is skipped with the reason, unless ``TRUEHEART_REQUIRE_POSTGRES=1`` (set by ``.ci/run``),
which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import postgres_cluster

REQUIRE_VARIABLE = "TRUEHEART_REQUIRE_POSTGRES"

_state: dict[str, object] = {}
_schemas = itertools.count(1)


def cluster() -> postgres_cluster.Cluster:
    """The session's server (started on first use), or a skip (or failure) saying why
    there is none."""
    found = _state.get("cluster")
    if isinstance(found, postgres_cluster.Cluster):
        return found
    reason = _state.get("unavailable")
    if reason is None:
        reason = postgres_cluster.unavailable()
        if reason is None:
            try:
                started = postgres_cluster.start()
            except Exception as error:  # a server that will not start is a reason too
                reason = f"the PostgreSQL test server did not start: {type(error).__name__}"
            else:
                _state["cluster"] = started
                _state["database"] = started.create_database()
                return started
        _state["unavailable"] = reason
    message = f"PostgreSQL unavailable: {reason}"
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(message + f" ({REQUIRE_VARIABLE}=1)", pytrace=False)
    pytest.skip(message)


def database_url() -> str:
    """The URL of the session's test database (created on first use)."""
    cluster()
    url = _state["database"]
    assert isinstance(url, str)
    return url


def stop() -> None:
    """Stop the session's server, if one was started."""
    found = _state.pop("cluster", None)
    if isinstance(found, postgres_cluster.Cluster):
        database = _state.pop("database", None)
        if isinstance(database, str) and found.data_directory is None:
            with contextlib.suppress(Exception):
                found.drop_database(database)
        found.stop()


def split_target(target: str) -> tuple[str, str]:
    """``(schema, conninfo)`` of a target made by :func:`new_target`."""
    name, _, conninfo = target.partition(" ")
    return name, conninfo


def drop_schema(conninfo: str, name: str) -> None:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@contextlib.contextmanager
def new_target(workspace: Path) -> Iterator[str]:
    """A schema name no other target had, in the session's test database."""
    url = database_url()
    name = f"th_{os.getpid()}_{next(_schemas)}"
    try:
        yield f"{name} {url}"
    finally:
        drop_schema(url, name)


def open_target(target: str, *, read_only: bool = False) -> object:
    from trueheart_core import PostgresRepository

    name, conninfo = split_target(target)
    return PostgresRepository(conninfo, schema=name, read_only=read_only, max_connections=4)
