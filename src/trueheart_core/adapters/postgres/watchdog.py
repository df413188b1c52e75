"""A bound on waiting for a server that stopped answering.

``statement_timeout`` and ``lock_timeout`` are enforced by the server: a server that
stops answering without closing its connections (its host or its network gone, its
processes stopped) never sends the error they would raise, and a call would wait for its
reply without end. The :class:`Watchdog` of a repository knows every connection of its
pool, the address of the server each one is attached to, and which of them calls are
waiting on. While one has waited for longer than ``probe_after``, it checks that a
server process still answers at that connection's address (:func:`server_answers`:
one connection to the very address, and the first message of the protocol, within
``connect_timeout``). A server that answers, whatever it answers, is alive, and the call
goes on waiting, however long its statement runs; so is one that could not be checked
(a failure on this side: no free file descriptor or local port). When nothing answers
in time, or the address refuses or cannot be reached, the server is gone: the watchdog
shuts down the sockets of the pool's connections to that address, so that every call
waiting on one of them fails at once with a lost connection (``RepositoryUnavailable``,
see ``connection.translated``) and the pool replaces them.

The watchdog's thread runs while calls wait; it ends at a check that finds none waiting
(at most ``probe_after / 2`` later), and the next call starts it again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import struct
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from trueheart_core import logs

Address = tuple[str, str, int]
"""Where a connection's server is: ``(host, hostaddr, port)`` as libpq reports them
(``hostaddr`` empty for a Unix-domain socket, whose directory ``host`` is)."""

_GSSENC_REQUEST = struct.pack("!ii", 8, 80877104)
"""The protocol's request for GSSAPI encryption: every server process answers it at once,
before any authentication (one byte, ``G`` or ``N``, or an error message from a server
too old to know it)."""


def address_of(conn: psycopg.Connection[Any]) -> Address | None:
    """The address of the server ``conn`` is attached to (``None``: it is closed)."""
    try:
        info = conn.info
        return (info.host, info.hostaddr, int(info.port))
    except Exception:
        return None


_GONE = (errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EHOSTDOWN, errno.ENOENT)
"""Errors of a connect that say no server process is at the address: refused, no route to
it, or (a Unix-domain socket) no socket file."""


def server_answers(address: Address, timeout: float) -> bool | None:
    """Whether a server process answers at ``address`` within ``timeout`` seconds: a
    connection to that very address (its IP address, or its Unix-domain socket; one
    attempt), then the protocol's GSSAPI encryption request. ``True``: a reply, or the
    process closing or resetting the connection. ``False``: no reply in time, or the
    address refuses the connection or cannot be reached. ``None``: the check could not
    be made here (no free file descriptor or local port, an address libpq did not
    report), which says nothing of the server."""
    host, hostaddr, port = address
    deadline = time.monotonic() + timeout
    try:
        if hostaddr:
            sock = socket.create_connection((hostaddr, port), timeout=timeout)
        elif host.startswith("/"):
            sock = _unix_connection(f"{host}/.s.PGSQL.{port}", deadline)
        else:
            return None
    except TimeoutError:
        return False
    except OSError as error:
        return False if error.errno in _GONE else None
    with sock:
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(_GSSENC_REQUEST)
            sock.recv(1)
        except TimeoutError:
            return False
        except OSError:
            return True  # the process reset the connection: something is there
    return True


def _unix_connection(path: str, deadline: float) -> socket.socket:
    """A connection to the Unix-domain socket at ``path``. A full listen queue refuses a
    connect at once (``EAGAIN``), where TCP would wait: it is tried again until the
    deadline, then taken as no reply."""
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            sock.connect(path)
            return sock
        except BlockingIOError:
            sock.close()
            if time.monotonic() >= deadline:
                raise TimeoutError from None
            time.sleep(0.01)
        except BaseException:
            sock.close()
            raise


def sever(conn: psycopg.Connection[Any]) -> int:
    """Shut down the connection's socket in both directions: a wait on it (in this
    library or in psycopg) wakes up to a closed connection. 1 when it did, 0 when the
    connection was closed already."""
    with contextlib.suppress(Exception):
        if conn.closed:
            return 0
        fd = conn.pgconn.socket
        copy = socket.socket(fileno=os.dup(fd))
        try:
            copy.shutdown(socket.SHUT_RDWR)
        finally:
            copy.close()
        return 1
    return 0


class Watchdog:
    """Checks that the server answers while a call waits on it (see the module).

    ``timeout`` bounds each check; ``severed`` is called after connections were shut
    down."""

    def __init__(self, probe_after: float, timeout: float, severed: Callable[[], None]) -> None:
        self._after = probe_after
        self._timeout = timeout
        self._severed = severed
        self._lock = threading.Lock()
        self._known: weakref.WeakKeyDictionary[psycopg.Connection[Any], Address] = (
            weakref.WeakKeyDictionary()
        )
        self._busy: dict[object, tuple[float, psycopg.Connection[Any] | None]] = {}
        self._running = False

    def known(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection of the pool, and where its server is."""
        address = address_of(conn)
        if address is not None:
            with self._lock:
                self._known[conn] = address

    @contextlib.contextmanager
    def busy(self, conn: psycopg.Connection[Any] | None = None) -> Iterator[None]:
        """Mark the block as waiting on the server of ``conn`` (``None``: on the
        servers of all the pool's connections, as its checks do)."""
        token = object()
        with self._lock:
            self._busy[token] = (time.monotonic(), conn)
            start = not self._running
            self._running = True
        if start:
            self._start()
        try:
            yield
        finally:
            with self._lock:
                del self._busy[token]

    def _start(self) -> None:
        try:
            threading.Thread(target=self._watch, name="trueheart-watchdog", daemon=True).start()
        except RuntimeError:
            # No thread to be had: the call goes on unwatched, and the next one tries again.
            with self._lock:
                self._running = False
            logs.STORE.warning("the server watchdog could not start its thread")

    def _watch(self) -> None:
        checked: dict[Address, float] = {}
        try:
            while True:
                time.sleep(self._after / 2)
                now = time.monotonic()
                with self._lock:
                    if not self._busy:
                        self._running = False
                        return
                    overdue = self._overdue(now)
                # While a call's statement runs long, its server is checked once per
                # ``probe_after``, not at every wake.
                for address in overdue:
                    if now - checked.get(address, float("-inf")) < self._after:
                        continue
                    checked[address] = now
                    try:
                        self._check(address)
                    except Exception:
                        logs.STORE.warning("the server watchdog's check failed")
        except BaseException:
            with self._lock:
                self._running = False
            raise

    def _overdue(self, now: float) -> set[Address]:
        """The addresses of the servers calls have waited on past ``probe_after``."""
        found: set[Address] = set()
        for since, conn in self._busy.values():
            if now - since < self._after:
                continue
            if conn is None:
                found.update(self._known.values())
            elif (address := self._known.get(conn)) is not None:
                found.add(address)
        return found

    def _check(self, address: Address) -> None:
        answered = server_answers(address, self._timeout)
        if answered is None:
            logs.STORE.warning("the server watchdog could not check the server from here")
            return
        if answered:
            return
        with self._lock:
            connections = [c for c, at in self._known.items() if at == address]
        closed = sum(sever(conn) for conn in connections)
        if closed:
            self._severed()
            logs.STORE.warning(
                "the server did not answer within the connect timeout: %d connections closed",
                closed,
            )
