"""The watchdog's own rules, without a server: it checks only while a call has waited
past ``probe_after``, a failing check does not turn it off, a thread that cannot be
started does not fail the call, and it ends when no call waits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")

from trueheart_core.adapters.postgres.watchdog import Watchdog

PATIENCE = 30.0


def _eventually(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_no_check_while_no_call_has_waited_past_probe_after() -> None:
    checks: list[float] = []
    watchdog = Watchdog(lambda: checks.append(time.monotonic()) or True, 0.2, lambda: None)
    for _ in range(20):
        with watchdog.busy():
            time.sleep(0.01)
    time.sleep(0.5)
    assert checks == []
    with watchdog.busy():
        assert _eventually(lambda: len(checks) >= 2)
    watchdog.stop()


def test_a_check_that_raises_does_not_turn_the_watchdog_off() -> None:
    outcomes = iter([RuntimeError("first check failed"), False])
    severed = threading.Event()

    def answers() -> bool:
        outcome = next(outcomes, True)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    watchdog = Watchdog(answers, 0.1, severed.set)
    with watchdog.busy():
        assert severed.wait(PATIENCE)
    watchdog.stop()


def test_a_thread_that_cannot_start_leaves_the_call_unwatched_not_failed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    checks: list[int] = []
    watchdog = Watchdog(lambda: checks.append(1) or True, 0.1, lambda: None)
    with monkeypatch.context() as patched:
        patched.setattr(threading.Thread, "start", refuse)
        with watchdog.busy():
            pass
    assert "the server watchdog could not start its thread" in caplog.text
    # The next call starts the thread.
    with watchdog.busy():
        assert _eventually(lambda: bool(checks))
    watchdog.stop()


def test_the_thread_ends_when_no_call_waits_and_none_starts_after_stop() -> None:
    watchdog = Watchdog(lambda: True, 0.1, lambda: None)
    with watchdog.busy():
        assert watchdog._running
    assert _eventually(lambda: not watchdog._running)
    watchdog.stop()
    with watchdog.busy():
        assert not watchdog._running
