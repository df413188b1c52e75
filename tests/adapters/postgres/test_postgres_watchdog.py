"""The watchdog's own rules, on local sockets, without a server.

``server_answers`` takes any reply (or a process closing the connection) at the address
for an answer, and silence, a refused address or an unreachable one for none. The
watchdog checks only the servers calls have waited on past ``probe_after``, shuts down
the connections to a server that does not answer and no other, is not turned off by a
check that raises, does not fail a call when it cannot start its thread, and ends when no
call waits."""

from __future__ import annotations

import contextlib
import errno
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")

from trueheart_core.adapters.postgres import watchdog as watchdog_module
from trueheart_core.adapters.postgres.watchdog import Address, Watchdog, server_answers

PATIENCE = 30.0


def _eventually(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


@contextlib.contextmanager
def _listener(reply: bytes | None, *, accept: bool = True) -> Iterator[Address]:
    """A local TCP address whose process answers each connection with ``reply`` (then
    closes it; ``None``: closes it at once), or, with ``accept=False``, never accepts:
    the kernel completes connections into the backlog and nothing answers, as with a
    stopped server."""
    server = socket.create_server(("127.0.0.1", 0), backlog=16)
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(8)
                if reply is not None:
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    if accept:
        thread.start()
    try:
        yield ("127.0.0.1", "127.0.0.1", port)
    finally:
        stop.set()
        if accept:
            thread.join()
        server.close()


def _closed_port() -> Address:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return ("127.0.0.1", "127.0.0.1", port)


def test_a_reply_or_a_close_is_an_answer() -> None:
    with _listener(b"N") as address:
        assert server_answers(address, 2.0)
    with _listener(None) as address:
        assert server_answers(address, 2.0)


def test_silence_and_a_refused_address_are_no_answer() -> None:
    with _listener(b"N", accept=False) as address:
        started = time.monotonic()
        assert not server_answers(address, 0.3)
        assert time.monotonic() - started < PATIENCE
    assert not server_answers(_closed_port(), 2.0)


@contextlib.contextmanager
def _unix_server(backlog: int) -> Iterator[tuple[str, socket.socket]]:
    """A listening Unix-domain socket where libpq would look for port 5999 of a server
    whose socket directory is the first item."""
    with tempfile.TemporaryDirectory() as directory:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(str(Path(directory) / ".s.PGSQL.5999"))
            server.listen(backlog)
            yield directory, server
        finally:
            server.close()


def test_a_unix_domain_socket_is_checked_at_its_path() -> None:
    with _unix_server(4) as (directory, server):

        def serve() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(8)
                conn.sendall(b"N")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        assert server_answers((directory, "", 5999), 2.0)
        thread.join(PATIENCE)
        assert not server_answers((directory, "", 5998), 2.0)


def test_a_full_listen_queue_of_a_unix_socket_is_waited_on_until_the_timeout() -> None:
    with _unix_server(0) as (directory, server):
        path = str(Path(directory) / ".s.PGSQL.5999")
        queued: list[socket.socket] = []
        try:
            while True:  # fill the queue: a connect past it is refused at once
                client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                client.setblocking(False)
                queued.append(client)
                try:
                    client.connect(path)
                except BlockingIOError:
                    break

            def drain_then_answer() -> None:
                time.sleep(0.3)  # the server process goes on
                for client in queued:
                    client.close()  # their queued connections now read as closed
                server.settimeout(PATIENCE)
                while True:
                    conn, _ = server.accept()
                    with conn:
                        if conn.recv(8):
                            conn.sendall(b"N")
                            return

            thread = threading.Thread(target=drain_then_answer, daemon=True)
            thread.start()
            assert server_answers((directory, "", 5999), 5.0)
            thread.join(PATIENCE)
        finally:
            for client in queued:
                client.close()


def test_a_check_that_cannot_be_made_here_is_not_taken_for_a_stopped_server(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_descriptor(*args: object, **kwargs: object) -> socket.socket:
        raise OSError(errno.EMFILE, "Too many open files")

    with _listener(b"N", accept=False) as address:
        monkeypatch.setattr(socket, "create_connection", no_descriptor)
        assert server_answers(address, 0.5) is None
        conn = _Connection(address)
        watchdog = Watchdog(0.1, 0.5, lambda: None)
        try:
            with _watched(conn, watchdog):
                assert _eventually(lambda: "could not check the server" in caplog.text)
            assert not conn.severed()
        finally:
            conn.close()


class _Connection:
    """What the watchdog reads of a connection: its server's address, whether it is
    closed, and its socket (one end of a local pair, whose other end sees the shutdown)."""

    def __init__(self, address: Address) -> None:
        self.info = SimpleNamespace(host=address[0], hostaddr=address[1], port=address[2])
        self.ours, self.theirs = socket.socketpair()
        self.pgconn = SimpleNamespace(socket=self.ours.fileno())
        self.closed = False

    def severed(self) -> bool:
        self.theirs.settimeout(0)
        try:
            return self.theirs.recv(1) == b""
        except BlockingIOError:
            return False

    def close(self) -> None:
        self.ours.close()
        self.theirs.close()


def _watched(conn: _Connection, watchdog: Watchdog) -> Any:
    watchdog.known(conn)  # type: ignore[arg-type]
    return watchdog.busy(conn)  # type: ignore[arg-type]


def test_only_the_connections_to_a_server_that_does_not_answer_are_shut_down() -> None:
    with _listener(b"N", accept=False) as silent, _listener(b"N") as alive:
        stopped, running = _Connection(silent), _Connection(alive)
        severings: list[int] = []
        watchdog = Watchdog(0.2, 0.3, lambda: severings.append(1))
        try:
            with _watched(stopped, watchdog), _watched(running, watchdog):
                assert _eventually(stopped.severed)
                time.sleep(0.5)  # more checks of the server that answers
                assert not running.severed()
            assert severings
        finally:
            stopped.close()
            running.close()


def test_no_check_before_a_call_has_waited_past_probe_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checks: list[Address] = []
    ours = ("db", "10.0.0.1", 5432)

    def answers(address: Address, timeout: float) -> bool:
        if address == ours:  # other repositories' watchdogs of this process check too
            checks.append(address)
        return True

    monkeypatch.setattr(watchdog_module, "server_answers", answers)
    conn = _Connection(ours)
    watchdog = Watchdog(0.2, 1.0, lambda: None)
    try:
        for _ in range(20):
            with _watched(conn, watchdog):
                time.sleep(0.01)
        time.sleep(0.5)
        assert checks == []
        with _watched(conn, watchdog):
            assert _eventually(lambda: len(checks) >= 2)
        assert set(checks) == {ours}
    finally:
        conn.close()


def test_a_check_that_raises_does_not_turn_the_watchdog_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcomes = iter([RuntimeError("the first check failed"), False])

    def answers(address: Address, timeout: float) -> bool:
        if address != ("db", "10.0.0.1", 5432):
            return True  # another repository's watchdog of this process
        outcome = next(outcomes, True)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(watchdog_module, "server_answers", answers)
    conn = _Connection(("db", "10.0.0.1", 5432))
    severed = threading.Event()
    watchdog = Watchdog(0.1, 1.0, severed.set)
    try:
        with _watched(conn, watchdog):
            assert severed.wait(PATIENCE)
        assert conn.severed()
    finally:
        conn.close()


def test_a_thread_that_cannot_start_leaves_the_call_unwatched_not_failed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    watchdog = Watchdog(0.1, 1.0, lambda: None)
    with monkeypatch.context() as patched:
        patched.setattr(threading.Thread, "start", refuse)
        with watchdog.busy():
            pass
    assert "the server watchdog could not start its thread" in caplog.text
    with watchdog.busy():
        assert watchdog._running  # the next call starts it


def test_the_thread_ends_when_no_call_waits_and_the_next_call_starts_it() -> None:
    watchdog = Watchdog(0.1, 1.0, lambda: None)
    with watchdog.busy():
        assert watchdog._running
    assert _eventually(lambda: not watchdog._running)
    with watchdog.busy():
        assert watchdog._running
