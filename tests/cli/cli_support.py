"""What the tests of the command line share: a small store, an in-process call of
``trueheart_core.cli.main``, the command run in a process of its own, a stdin that looks
like a terminal, and a call made by a user who cannot write the store."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.cli import main

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent", "user-1")
OTHER = Scope("acme", "agent", "user-2")
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
NOBODY = 65534
SRC = Path(__file__).resolve().parents[2] / "src"
COMMAND = [sys.executable, "-m", "trueheart_core.cli"]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child process that imports this checkout's source: this
    one's, without its ``PYTHON*`` variables, plus ``extra``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PYTHONPATH=str(SRC), **(extra or {}))
    return env


def run_text(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``trueheart`` run in a process of its own in ``cwd``, its output as text; stdin is
    not a terminal (so ``forget`` and ``erase-subject`` do not ask)."""
    return subprocess.run(
        [*COMMAND, *args],
        cwd=cwd,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_bytes(
    cwd: Path,
    *args: str | bytes,
    extra_env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """As :func:`run_text`, with arguments and output as bytes, ``extra_env`` set, and
    ``stdin`` piped in when given."""
    return subprocess.run(
        [*COMMAND, *args],
        cwd=cwd,
        env=child_env(extra_env),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )


def event(event_id: str, scope: Scope, content: str) -> RawEventDraft:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    return RawEventDraft(event_id, scope, source, content, RETENTION)


def memory(memory_id: str, scope: Scope, source: str, content: str) -> MemoryDraft:
    return MemoryDraft(memory_id, scope, content, (source,), "fact", TrustLevel.OBSERVED, NOW)


def build(path: Path) -> Path:
    """Two events and three memories in SCOPE (mem-1 from evt-1, mem-2 and mem-3 from
    evt-2), and one event and memory in OTHER, all at NOW."""
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events(
            [
                event("evt-1", SCOPE, "I drink green tea."),
                event("evt-2", SCOPE, "My sister lives in Lisbon."),
                event("evt-1", OTHER, "I prefer black tea."),
            ]
        )
        service.materialize_once(memory("mem-1", SCOPE, "evt-1", "Drinks green tea."))
        service.materialize_once(memory("mem-2", SCOPE, "evt-2", "Sister in Lisbon."))
        service.materialize_once(memory("mem-3", SCOPE, "evt-2", "Visits Lisbon often."))
        service.materialize_once(memory("mem-1", OTHER, "evt-1", "Takes black tea."))
    return path


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


class FakeTerminal(io.StringIO):
    """A stdin that says it is a terminal and holds the answer to type."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[Path]:
    """A copy of the store at ``path`` in a directory that, like the copy, the user
    :func:`as_reader` runs as cannot write."""
    directory = Path(tempfile.mkdtemp(prefix="trueheart-cli-ro-"))
    copy = directory / path.name
    shutil.copyfile(path, copy)
    copy.chmod(0o444)
    directory.chmod(0o555)
    try:
        yield copy
    finally:
        directory.chmod(0o755)
        shutil.rmtree(directory)


def as_reader(*args: str) -> tuple[int, str, str]:
    """``main(args)`` in a forked child, as ``nobody`` when the tests run as root
    (whom file modes do not stop) and as this user otherwise; returns the exit status,
    stdout and stderr."""
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read)
        out, err = io.StringIO(), io.StringIO()
        status = 99
        try:
            if os.geteuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            sys.stdin = io.StringIO("")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(list(args))
        finally:
            with os.fdopen(write, "wb") as pipe:
                pipe.write(pickle.dumps((status, out.getvalue(), err.getvalue())))
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    result: tuple[int, str, str] = pickle.loads(data)
    return result


@pytest.fixture
def sigint_restored() -> Iterator[None]:
    """Put SIGINT's handler back after a test whose command ignored it (the command line
    ignores a second Ctrl-C once it is stopping)."""
    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
