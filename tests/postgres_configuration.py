"""The PostgreSQL configuration of the conformance fixtures, and its one shared server.

The server is started on first use (see ``postgres_cluster``) and stopped when the test
session ends. Each target is a schema of its own (``th_<n>``) in one database of that
server, dropped with the database when the session ends; a target's text is
``"<schema> <conninfo>"``. Where no server can be had, every test on this configuration
is skipped with the reason, unless ``TRUEHEART_REQUIRE_POSTGRES=1`` (set by ``.ci/run``),
which turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import threading
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
    ahead = _state.pop("ahead", None)
    if isinstance(ahead, _Ahead):
        ahead.stop()
    found = _state.pop("cluster", None)
    if isinstance(found, postgres_cluster.Cluster):
        database = _state.pop("database", None)
        if isinstance(database, str):
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


class _Ahead:
    """Stores made ahead of the tests that will take them, by a thread of their own: a
    new store's tables take the server a few hundred milliseconds to create, which this
    overlaps with the tests that run meanwhile. Each is created by ``PostgresRepository``
    itself, exactly as a test's own first open would, and nothing else touches it."""

    def __init__(self, url: str, depth: int = 3) -> None:
        self._url = url
        self._ready: queue.Queue[str | BaseException] = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._make, daemon=True, name="stores-ahead")
        self._stopped = threading.Event()
        self._thread.start()

    def _make(self) -> None:
        from trueheart_core import PostgresRepository

        while not self._stopped.is_set():
            name = f"th_{os.getpid()}_{next(_schemas)}"
            try:
                PostgresRepository(self._url, schema=name, max_connections=1).close()
            except BaseException as error:
                self._ready.put(error)
                return
            while not self._stopped.is_set():
                try:
                    self._ready.put(name, timeout=0.5)
                    break
                except queue.Full:
                    continue

    def take(self) -> str:
        made = self._ready.get(timeout=120)
        if isinstance(made, BaseException):
            raise made
        return made

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)


def _ahead() -> _Ahead:
    found = _state.get("ahead")
    if isinstance(found, _Ahead):
        return found
    made = _Ahead(database_url())
    _state["ahead"] = made
    return made


def fresh_target() -> str:
    """A new, empty store of its own (a schema no other target had) in the session's
    test database. Schemas are not dropped one by one (that takes longer than making
    them): the database goes when the session ends."""
    url = database_url()
    return f"{_ahead().take()} {url}"


@contextlib.contextmanager
def new_target(workspace: Path) -> Iterator[str]:
    """:func:`fresh_target`, as the conformance fixtures take a target."""
    yield fresh_target()


def open_target(target: str, *, read_only: bool = False) -> object:
    from trueheart_core import PostgresRepository

    name, conninfo = split_target(target)
    return PostgresRepository(conninfo, schema=name, read_only=read_only, max_connections=4)
