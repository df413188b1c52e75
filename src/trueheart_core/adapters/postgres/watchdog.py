"""A bound on waiting for a server that stopped answering.

``statement_timeout`` and ``lock_timeout`` are enforced by the server: a server that
stops answering without closing its connections (its host or its network gone, its
processes stopped) never sends the error they would raise, and a call would wait for its
reply without end. The :class:`Watchdog` of a repository knows every connection of its
pool and which of them a call is using; while one has been in use for longer than its
``probe_after``, it checks that the server still answers, by opening a new connection
(bounded by ``connect_timeout``). A server that answers, even with a refusal (too many
connections, a failed authentication), is alive, and the call goes on waiting, however
long its statement runs. One that gives no answer in time has stopped: the watchdog
shuts down the sockets of all the pool's connections, so that every call waiting on one
of them fails at once with a lost connection (``RepositoryUnavailable``, see
``connection.translated``) and the pool replaces them.

The watchdog's thread runs only while connections are in use: it ends at a check that
finds none, and the next use starts it again.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg

from trueheart_core import logs


def server_answers(conninfo: str, kwargs: dict[str, Any]) -> bool:
    """Whether the server at ``conninfo`` answers a new connection (``kwargs`` as the
    pool connects, its ``connect_timeout`` included): a connection made, or refused by
    the server with an error of its own (which has a SQLSTATE). No answer in time, a
    refused or unreachable address: False."""
    try:
        with psycopg.connect(conninfo, **kwargs):
            return True
    except psycopg.Error as error:
        return isinstance(getattr(error, "sqlstate", None), str)


def sever(conn: psycopg.Connection[Any]) -> None:
    """Shut down the connection's socket in both directions: a wait on it (in this
    library or in psycopg) wakes up to a closed connection. Nothing when it is closed."""
    with contextlib.suppress(Exception):
        fd = conn.pgconn.socket
        copy = socket.socket(fileno=os.dup(fd))
        try:
            copy.shutdown(socket.SHUT_RDWR)
        finally:
            copy.close()


class Watchdog:
    """Checks that the server answers while a call waits on it (see the module)."""

    def __init__(
        self, answers: Callable[[], bool], probe_after: float, severed: Callable[[], None]
    ) -> None:
        self._answers = answers
        self._after = probe_after
        self._severed = severed
        self._lock = threading.Lock()
        self._known: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
        self._busy: dict[int, tuple[psycopg.Connection[Any], float]] = {}
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def known(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection of the pool."""
        with self._lock:
            self._known.add(conn)

    @contextlib.contextmanager
    def busy(self, conn: psycopg.Connection[Any]) -> Any:
        """Mark ``conn`` in use for the block."""
        key = id(conn)
        with self._lock:
            self._known.add(conn)
            self._busy[key] = (conn, time.monotonic())
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(
                    target=self._watch, name="trueheart-watchdog", daemon=True
                )
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._busy.pop(key, None)

    def stop(self) -> None:
        """End the thread (at its next wake) and start no other."""
        self._stopped.set()

    def _watch(self) -> None:
        checked = float("-inf")
        while not self._stopped.wait(self._after / 2):
            now = time.monotonic()
            with self._lock:
                if not self._busy:
                    self._thread = None
                    return
                overdue = any(now - since >= self._after for _, since in self._busy.values())
            # While a call's statement runs long, the server is checked once per
            # ``probe_after``, not at every wake.
            if not overdue or now - checked < self._after:
                continue
            checked = now
            if not self._answers():
                with self._lock:
                    connections = list(self._known)
                logs.STORE.warning(
                    "the server did not answer within the connect timeout: %d connections closed",
                    len(connections),
                )
                for conn in connections:
                    sever(conn)
                self._severed()
        with self._lock:
            self._thread = None
