"""Connections to the server and the one place where driver errors become library errors.

:func:`translate` is the adapter's single choke point: every statement of a unit of work,
of opening and of the post-commit maintenance runs inside it, and :func:`translated` is
total over every exception (``tests/adapters/postgres/test_postgres_errors.py`` checks
each SQLSTATE class and every exception class psycopg defines).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import psycopg
import psycopg_pool
from psycopg.conninfo import conninfo_to_dict

from trueheart_core.adapters.postgres.watchdog import Watchdog
from trueheart_core.adapters.sql.failures import MALFORMED, forget
from trueheart_core.errors import (
    RepositoryBusy,
    RepositoryConflict,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    RepositoryUnavailable,
    TrueHeartError,
)

_CONFLICT = frozenset({"40001", "40P01", "23505", "26000"})
"""Serialization failure, deadlock, a unique key taken by a concurrent transaction (what
the service checked absent was inserted by another writer meanwhile), and a prepared
statement the session no longer has (``DEALLOCATE ALL`` or ``DISCARD ALL`` ran on it;
``wire`` prepares its statements again): the whole call can run again, and see the
other's change."""
_BUSY = frozenset({"55P03", "57014", "53300", "55006"})
"""A lock not granted within the lock timeout, a statement cancelled by the statement
timeout, too many connections, an object in use."""
_READ_ONLY = frozenset({"25006", "42501"})
"""A read-only transaction or server (a hot standby), and a role without the privilege."""


def translated(error: BaseException, diagnostic: str) -> TrueHeartError:
    """The library error for any exception raised while talking to the server.

    ``RepositoryConflict`` for a serialization failure, a deadlock, a concurrent
    unique key or a prepared statement the session lost; ``RepositoryBusy`` for lock
    and statement timeouts, too many connections and a pool with no free connection in
    time; ``RepositoryReadOnly`` for a read-only transaction or server and a missing
    privilege; ``RepositoryFull`` for the server's insufficient resources (disk full,
    out of memory); ``RepositoryUnavailable`` for a connection that cannot be made or
    was lost, and a server shutting down; everything else (an unexpected driver error,
    a malformed row) is ``RepositoryCorruption``.
    """
    if isinstance(error, psycopg_pool.PoolTimeout):
        return RepositoryBusy(diagnostic)
    if isinstance(error, psycopg_pool.PoolClosed):
        return RepositoryUnavailable(diagnostic)
    state = getattr(error, "sqlstate", None) if isinstance(error, psycopg.Error) else None
    if isinstance(state, str):
        if state in _CONFLICT:
            return RepositoryConflict(diagnostic)
        if state in _BUSY:
            return RepositoryBusy(diagnostic)
        if state in _READ_ONLY:
            return RepositoryReadOnly(diagnostic)
        if state.startswith("53"):
            return RepositoryFull(diagnostic)
        if state.startswith("08") or state in ("57P01", "57P02", "57P03"):
            return RepositoryUnavailable(diagnostic)
        return RepositoryCorruption(diagnostic)
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        # No SQLSTATE: the connection could not be made, or it broke mid-call.
        return RepositoryUnavailable(diagnostic)
    return RepositoryCorruption(diagnostic)


@contextlib.contextmanager
def translate(diagnostic: str) -> Iterator[None]:
    """Turn every driver (or malformed-row) error raised inside the block into the
    library error :func:`translated` names, with the operation's fixed ``diagnostic``.

    The driver's exception, left as the ``__context__`` Python always records, is
    stripped of its arguments, traceback and chain first, so no body survives in it
    (a server's message may quote a value of the statement).
    """
    try:
        yield
    except TrueHeartError:
        raise
    except (psycopg.Error, psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed) as error:
        failure = translated(error, diagnostic)
        forget(error)
        raise failure from None
    except MALFORMED as error:
        forget(error)
        raise RepositoryCorruption(diagnostic) from None


def connection_settings(
    *, schema: str, lock_timeout: float, statement_timeout: float | None, read_only: bool
) -> dict[str, Any]:
    """The session settings every pooled connection starts with, as libpq ``options``."""
    return {
        "search_path": schema,
        "lock_timeout": f"{int(lock_timeout * 1000)}ms",
        "statement_timeout": (
            "0" if statement_timeout is None else f"{int(statement_timeout * 1000)}ms"
        ),
        "idle_in_transaction_session_timeout": "0",
        # What a pipeline without BEGIN runs at (see ``Session.one_and_commit``).
        "default_transaction_isolation": "read committed",
        "default_transaction_read_only": "on" if read_only else "off",
        "client_encoding": "UTF8",
        "TimeZone": "UTC",
    }


def options_text(settings: dict[str, Any]) -> str:
    """``settings`` as the libpq ``options`` parameter (``-c name=value`` each; a space or
    backslash of a value escaped with a backslash, as libpq reads them)."""
    return " ".join(f"-c {name}={_escaped(str(value))}" for name, value in settings.items())


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace(" ", "\\ ")


_RECENT = 1.0
"""Seconds after its return within which a pooled connection is lent again unchecked."""
_last_returned: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = (
    weakref.WeakKeyDictionary()
)
_broken_at = [float("-inf")]
"""When a connection was last found broken during a call (the one item): connections
returned before then are checked before they are lent again, however recently they were
used (a server that ended one session has often ended the others too)."""


def _found_broken() -> None:
    """Note that connections were found broken (or closed by the watchdog) now: every
    connection returned before is checked before it is lent again."""
    _broken_at[0] = time.monotonic()


def returned(conn: psycopg.Connection[Any]) -> None:
    """Note that ``conn`` was in use a moment ago (called as a unit of work ends, before
    the connection goes back to its pool; see :func:`make_pool`)."""
    _last_returned[conn] = time.monotonic()


def _check_if_idle(conn: psycopg.Connection[Any]) -> None:
    """Check a connection before it is lent (one empty round trip), unless it was in
    use a moment ago and no connection was found broken since: a connection the server
    dropped while it sat idle (a restart, an idle timeout, its sessions ended) is
    replaced before any call sees it, without a round trip for every unit of work of a
    busy process."""
    last = _last_returned.get(conn)
    if last is not None and last > _broken_at[0] and time.monotonic() - last < _RECENT:
        return
    psycopg_pool.ConnectionPool.check_connection(conn)


class Lender:
    """Lends a pool's connections, counting those lent: a pool that gives none in time
    while none is lent could not connect to the server (``RepositoryUnavailable``); one
    whose connections are all lent is busy (``RepositoryBusy``). A connection lent is
    in use for the pool's :class:`~trueheart_core.adapters.postgres.watchdog.Watchdog`.
    """

    def __init__(
        self,
        pool: psycopg_pool.ConnectionPool[psycopg.Connection[tuple[Any, ...]]],
        watchdog: Watchdog,
    ):
        self.pool = pool
        self.watchdog = watchdog
        self._lock = threading.Lock()
        self._lent = 0

    @contextlib.contextmanager
    def connection(self, diagnostic: str) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A connection for the block (see the class). When the block leaves its
        connection broken (closed), the pool's idle connections are checked at once, and
        any connection returned before then is checked before it is lent again: the
        server that ended one session has often ended the others."""
        broke = False
        try:
            with self.pool.connection() as conn, self.watchdog.busy(conn):
                with self._lock:
                    self._lent += 1
                try:
                    yield conn
                finally:
                    with self._lock:
                        self._lent -= 1
                    broke = conn.closed
        except psycopg_pool.PoolTimeout:
            with self._lock:
                idle_pool = self._lent == 0
            if idle_pool:
                raise RepositoryUnavailable(diagnostic) from None
            raise
        finally:
            if broke:
                self._replace_broken()

    def _replace_broken(self) -> None:
        _found_broken()
        # Best effort: what it misses, ``_check_if_idle`` checks before lending. The
        # checks wait on the server, so the watchdog watches them too.
        with contextlib.suppress(Exception), self.watchdog.busy():
            self.pool.check()


def make_pool(
    conninfo: str,
    *,
    options: str,
    max_connections: int,
    connect_timeout: float,
    probe_after: float,
) -> Lender:
    """A connection pool that opens connections lazily (at least one is made and
    checked before this returns) and checks a connection before lending it, with the
    lender of its connections and the watchdog that checks the server answers while a
    connection has been in use for ``probe_after`` seconds or more.

    ``options`` (the library's session settings) follow the ``options`` of
    ``conninfo`` or, when it has none, of the ``PGOPTIONS`` environment variable, as
    libpq would take them: the caller's settings apply, and where both set the same
    parameter the library's, coming later, win."""
    own = conninfo_to_dict(conninfo).get("options")
    if own is None:
        # libpq reads the variable only when no ``options`` are passed, and the pool
        # always passes the library's.
        own = os.environ.get("PGOPTIONS")
    if isinstance(own, str) and own.strip():
        options = f"{own} {options}"
    watchdog = Watchdog(probe_after, connect_timeout, _found_broken)

    def check(conn: psycopg.Connection[Any]) -> None:
        with watchdog.busy(conn):
            _check_if_idle(conn)

    pool: psycopg_pool.ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = (
        psycopg_pool.ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_connections,
            kwargs={
                "options": options,
                "connect_timeout": max(1, int(connect_timeout)),
                "autocommit": True,
                # psycopg prepares nothing of its own on these connections: it would
                # deallocate every prepared statement of the session after a
                # ``ROLLBACK`` it runs, the unit of work's included (see ``wire``).
                "prepare_threshold": None,
            },
            timeout=connect_timeout,
            # No ``reset`` callback: with one, the pool hands every returned connection
            # to a worker thread, and the next unit of work waits for that thread.
            check=check,
            configure=watchdog.known,
            open=False,
            name="trueheart",
            reconnect_timeout=connect_timeout,
        )
    )
    try:
        pool.open(wait=True, timeout=connect_timeout)
    except psycopg_pool.PoolTimeout:
        # No first connection could be made in time: the server is not there.
        pool.close(timeout=0)
        raise RepositoryUnavailable("could not connect to the server") from None
    return Lender(pool, watchdog)
