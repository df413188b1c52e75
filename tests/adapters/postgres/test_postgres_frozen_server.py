"""A server that stops answering without closing its connections (its processes stopped
with ``SIGSTOP``): a call waiting on it raises ``RepositoryUnavailable`` instead of
waiting without end, whether it was waiting for a statement's reply, for the check of an
idle connection, for the checks of the pool's connections after one was found broken, or
while another thread closed the repository; once the server runs again, the same
repository works. A slow statement on a server that answers is not cut, even when no new
session could be opened on it (a role at its connection limit).

These tests stop and continue the processes of a throwaway cluster of their own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")
pytest.importorskip("psycopg_pool", reason="needs the postgres extra")

from conformance_builders import SCOPE, event  # noqa: E402

from trueheart_core import (  # noqa: E402
    PostgresRepository,
    RepositoryUnavailable,
    TrueHeart,
)

pytestmark = pytest.mark.slow

PATIENCE = 60.0
"""Seconds a call is given to return or raise before the test calls it a hang (the
repository's bound here is a few seconds)."""


def _server_processes(cluster: Any) -> list[int]:
    """The postmaster and every process it started."""
    postmaster = int((cluster.data_directory / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(
        ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
    ).stdout.split()
    return [postmaster, *map(int, children)]


@contextlib.contextmanager
def _frozen(cluster: Any, *, sparing: int | None = None) -> Iterator[None]:
    """Every process of the server (but ``sparing``) stopped for the block, continued
    after it (a process may end between the listing and the signal)."""
    processes = [pid for pid in _server_processes(cluster) if pid != sparing]
    try:
        for pid in processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        yield
    finally:
        for pid in processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


class _Call(threading.Thread):
    """A call run in a thread of its own, with what it raised."""

    def __init__(self, call: Callable[[], object]) -> None:
        super().__init__(daemon=True)
        self._call = call
        self.raised: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self._call()
        except BaseException as error:
            self.raised = error

    def outcome(self) -> BaseException | None:
        """What the call raised (``None``: it returned). Fails the test if it neither
        returns nor raises within :data:`PATIENCE`."""
        self.join(PATIENCE)
        assert not self.is_alive(), "the call waited on a stopped server without end"
        return self.raised


def _outcome(call: Callable[[], object]) -> BaseException | None:
    return _Call(call).outcome()


def _waiting_for_a_lock(url: str) -> int:
    """The process ID of the session that waits for a lock, once one does."""
    deadline = time.monotonic() + PATIENCE
    with psycopg.connect(url, autocommit=True) as watcher:
        while time.monotonic() < deadline:
            row = watcher.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone()
            if row is not None:
                return int(row[0])
            time.sleep(0.02)
    raise AssertionError("no session waited for the lock")


@pytest.fixture
def service(own_cluster: Any) -> Iterator[TrueHeart]:
    repository = PostgresRepository(own_cluster.create_database(), connect_timeout=1, probe_after=1)
    with TrueHeart(repository) as opened:
        opened.ingest_event(event("e0"))
        yield opened


def test_a_call_waiting_for_a_reply_from_a_stopped_server_raises(
    own_cluster: Any, service: TrueHeart
) -> None:
    with _frozen(own_cluster):
        failure = _outcome(lambda: service.verify_integrity(SCOPE))
    assert isinstance(failure, RepositoryUnavailable)
    assert str(failure) == "repository unavailable: integrity check failed"
    # The server runs again: the same repository reads and writes.
    assert service.verify_integrity(SCOPE).ok
    service.ingest_event(event("e1"))
    assert service.verify_integrity(SCOPE).ok


def test_a_call_whose_idle_connection_is_checked_on_a_stopped_server_raises(
    own_cluster: Any, service: TrueHeart
) -> None:
    # Idle for over a second, the pool's connection is checked (one empty round trip)
    # before it is lent: on a stopped server, that check is what waits.
    time.sleep(1.5)
    with _frozen(own_cluster):
        failure = _outcome(lambda: service.ingest_event(event("e1")))
    assert isinstance(failure, RepositoryUnavailable)
    service.ingest_event(event("e1"))
    assert service.verify_integrity(SCOPE).ok


def test_a_slow_statement_on_a_server_that_answers_is_not_cut(own_cluster: Any) -> None:
    url = own_cluster.create_database()
    repository = PostgresRepository(url, connect_timeout=1, probe_after=0.2, lock_timeout=30)
    with TrueHeart(repository) as service:
        service.ingest_event(event("e0"))
        with psycopg.connect(url) as holder:
            # Another session holds the store's tables locked for three seconds: the
            # call waits on the server, which answers every probe meanwhile.
            holder.execute("LOCK TABLE trueheart.meta IN ACCESS EXCLUSIVE MODE")
            release = threading.Timer(3.0, holder.rollback)
            release.start()
            started = time.monotonic()
            try:
                failure = _outcome(lambda: service.ingest_event(event("e1")))
            finally:
                release.join()
            waited = time.monotonic() - started
        assert failure is None
        assert waited >= 2.5  # it did wait for the lock, through several probes
        assert service.verify_integrity(SCOPE).ok


def test_a_call_waiting_while_another_thread_closes_the_repository_still_raises(
    own_cluster: Any,
) -> None:
    repository = PostgresRepository(own_cluster.create_database(), connect_timeout=1, probe_after=1)
    service = TrueHeart(repository)
    service.ingest_event(event("e0"))
    with _frozen(own_cluster):
        call = _Call(lambda: service.verify_integrity(SCOPE))
        time.sleep(0.2)
        service.close()
        failure = call.outcome()
    assert isinstance(failure, RepositoryUnavailable)


def test_the_checks_after_a_broken_connection_do_not_wait_on_a_stopped_server(
    own_cluster: Any,
) -> None:
    url = own_cluster.create_database()
    repository = PostgresRepository(url, connect_timeout=1, probe_after=1, lock_timeout=60)
    with TrueHeart(repository) as service:
        service.ingest_event(event("e0"))
        both = threading.Barrier(2)

        def read() -> None:
            with repository.unit_of_work("stats", write=False):
                both.wait()

        readers = [threading.Thread(target=read) for _ in range(2)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()  # the pool holds two connections, both idle
        with psycopg.connect(url) as holder:
            holder.execute("LOCK TABLE trueheart.meta IN ACCESS EXCLUSIVE MODE")
            call = _Call(lambda: service.ingest_event(event("e1")))
            backend = _waiting_for_a_lock(url)
            # The call's session ends while the rest of the server is stopped: the call
            # finds its connection broken, and the pool's other connection is checked.
            with _frozen(own_cluster, sparing=backend):
                os.kill(backend, signal.SIGTERM)
                failure = call.outcome()
            holder.rollback()
        assert isinstance(failure, RepositoryUnavailable)
        service.ingest_event(event("e1"))
        assert service.verify_integrity(SCOPE).ok


def test_a_server_at_its_connection_limit_is_not_taken_for_a_stopped_one(
    own_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trueheart_core.adapters.postgres import watchdog

    checks: list[bool | None] = []
    check = watchdog.server_answers
    url = own_cluster.create_database()
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])

    def counted(address: watchdog.Address, timeout: float) -> bool | None:
        answered = check(address, timeout)
        if address[2] == port:  # not another repository's watchdog of this process
            checks.append(answered)
        return answered

    monkeypatch.setattr(watchdog, "server_answers", counted)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE ROLE capped LOGIN CONNECTION LIMIT 2")
        admin.execute("GRANT ALL ON DATABASE " + url.rsplit("/", 1)[1] + " TO capped")
    capped = url.replace("postgres@", "capped@", 1)
    repository = PostgresRepository(
        capped, max_connections=1, connect_timeout=1, probe_after=0.2, lock_timeout=30
    )
    with TrueHeart(repository) as service:
        service.ingest_event(event("e0"))
        with psycopg.connect(url) as holder, psycopg.connect(capped):
            # The role's second and last connection is taken: no new session of it
            # could be opened while the call waits for the lock.
            holder.execute("LOCK TABLE trueheart.meta IN ACCESS EXCLUSIVE MODE")
            call = _Call(lambda: service.ingest_event(event("e1")))
            _waiting_for_a_lock(url)
            time.sleep(2.0)  # about ten checks
            holder.rollback()
            failure = call.outcome()
        assert failure is None
        assert len(checks) >= 3 and all(checks)
        assert service.verify_integrity(SCOPE).ok
