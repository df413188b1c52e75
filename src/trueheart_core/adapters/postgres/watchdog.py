"""A bound on waiting for a server that stopped answering.

``statement_timeout`` and ``lock_timeout`` are enforced by the server: a server that
stops answering without closing its connections (its host or its network gone, its
processes stopped) never sends the error they would raise, and a call would wait for its
reply without end. The :class:`Watchdog` of a repository knows every connection of its
pool and which of them a call is using; while one has been in use for longer than its
``probe_after``, it checks that the server still answers, by opening a new connection
(bounded by ``connect_timeout``). A server that answers, even with a refusal (too many
connections, a failed authentication), is alive, and the call goes on waiting, however
long its statement runs. When no attempt completes in time, the server has stopped: the
watchdog shuts down the sockets of all the pool's connections, so that every call waiting
on one of them fails at once with a lost connection (``RepositoryUnavailable``, see
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
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from trueheart_core import logs


def server_answers(conninfo: str, kwargs: dict[str, Any]) -> bool:
    """Whether the server at ``conninfo`` answers a new connection (``kwargs`` as the
    pool connects, its ``connect_timeout`` included). Only an attempt that timed out is
    no answer: a connection made, a refusal (too many connections, a failed
    authentication, a server starting up or shutting down), a refused address or a
    failed name look-up count as an answer, and the call goes on waiting (a server that
    went down closes its connections by itself)."""
    try:
        with psycopg.connect(conninfo, **kwargs):
            return True
    except psycopg.errors.ConnectionTimeout:
        return False
    except Exception:
        return True


def sever(conn: psycopg.Connection[Any]) -> None:
    """Shut down the connection's socket in both directions: a wait on it (in this
    library or in psycopg) wakes up to a closed connection. Nothing when it is closed."""
    with contextlib.suppress(Exception):
        if conn.closed:
            return
        fd = conn.pgconn.socket
        copy = socket.socket(fileno=os.dup(fd))
        try:
            copy.shutdown(socket.SHUT_RDWR)
        finally:
            copy.close()


class Watchdog:
    """Checks that the server answers while a call waits on it (see the module).

    ``answers`` checks the server (see :func:`server_answers`); ``severed`` is called
    after the connections were shut down."""

    def __init__(
        self, answers: Callable[[], bool], probe_after: float, severed: Callable[[], None]
    ) -> None:
        self._answers = answers
        self._after = probe_after
        self._severed = severed
        self._lock = threading.Lock()
        self._known: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
        self._busy: dict[object, float] = {}
        self._running = False
        self._stopped = False

    def known(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection of the pool: one of those shut down when the server stops
        answering."""
        with self._lock:
            self._known.add(conn)

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Mark the block as waiting on the server (using a connection, or checking the
        pool's connections)."""
        token = object()
        with self._lock:
            self._busy[token] = time.monotonic()
            start = not self._running and not self._stopped
            self._running = self._running or start
        if start:
            self._start()
        try:
            yield
        finally:
            with self._lock:
                del self._busy[token]

    def stop(self) -> None:
        """Start no new thread (the repository is closing). A thread that runs goes on
        watching the calls still waiting, and ends when none is."""
        with self._lock:
            self._stopped = True

    def _start(self) -> None:
        try:
            threading.Thread(target=self._watch, name="trueheart-watchdog", daemon=True).start()
        except RuntimeError:
            # No thread to be had: the call goes on unwatched, and the next one tries again.
            with self._lock:
                self._running = False
            logs.STORE.warning("the server watchdog could not start its thread")

    def _watch(self) -> None:
        checked = float("-inf")
        try:
            while True:
                time.sleep(self._after / 2)
                now = time.monotonic()
                with self._lock:
                    if not self._busy:
                        self._running = False
                        return
                    overdue = any(now - since >= self._after for since in self._busy.values())
                # While a call's statement runs long, the server is checked once per
                # ``probe_after``, not at every wake.
                if not overdue or now - checked < self._after:
                    continue
                checked = now
                try:
                    self._check()
                except Exception:
                    logs.STORE.warning("the server watchdog's check failed")
        except BaseException:
            with self._lock:
                self._running = False
            raise

    def _check(self) -> None:
        if self._answers():
            return
        with self._lock:
            connections = list(self._known)
        for conn in connections:
            sever(conn)
        self._severed()
        logs.STORE.warning(
            "the server completed no new connection within the connect timeout: "
            "%d connections closed",
            len(connections),
        )
