"""A server that stops answering without closing its connections (every process of it
stopped with ``SIGSTOP``): a call waiting on it raises ``RepositoryUnavailable`` instead
of waiting without end, whether it was waiting for a statement's reply or for the check
of an idle connection; once the server runs again, the same repository works. A slow
statement on a server that answers is never cut.

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
def _frozen(cluster: Any) -> Iterator[None]:
    """Every process of the server stopped for the block, continued after it."""
    processes = _server_processes(cluster)
    for pid in processes:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def _outcome(call: Callable[[], object]) -> BaseException | None:
    """Run ``call`` in a thread; what it raised (``None``: it returned). Fails the test
    if it neither returns nor raises within :data:`PATIENCE`."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(PATIENCE)
    assert not thread.is_alive(), "the call waited on a stopped server without end"
    return raised[0] if raised else None


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
