"""The ``trueheart`` command as a child process, where the operating system is involved:
a reader that closes the pipe early, Ctrl-C (SIGINT) during a long command and at a
prompt, SIGTERM while a command writes a new file, and the confirmation prompts of
``forget`` and ``erase-subject`` on a real terminal (a pseudo-terminal from :mod:`pty`)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_dump import dump

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

pty = pytest.importorskip("pty")
fcntl = pytest.importorskip("fcntl")

SRC = Path(__file__).resolve().parents[2] / "src"
NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent", "user-1")
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
BIG = 20_000  # events: enough for verify to run for a while after its progress line


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(SRC)
    return env


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "trueheart_core.cli", *args]


def _event(event_id: str, content: str) -> RawEventDraft:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    return RawEventDraft(event_id, SCOPE, source, content, RETENTION)


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scope with many events (and so many audit records); only read."""
    path = tmp_path_factory.mktemp("big") / "big.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event(f"evt-{i}", f"event number {i}") for i in range(BIG)])
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event("evt-1", "I drink green tea.")])
        service.materialize_once(
            MemoryDraft(
                "mem-1", SCOPE, "Drinks green tea.", ("evt-1",), "fact", TrustLevel.OBSERVED, NOW
            )
        )
    return path


# --- a closed pipe -----------------------------------------------------------------------


@pytest.mark.parametrize("extra", [(), ("--json",)], ids=["text", "json"])
def test_a_reader_that_closes_after_one_line(big_store: Path, extra: tuple[str, ...]) -> None:
    args = ("audit", str(big_store), "--scope", "acme/agent/user-1", "--limit", "100", *extra)
    whole = subprocess.run(
        _command(*args), env=_env(), capture_output=True, check=True, stdin=subprocess.DEVNULL
    ).stdout
    read_end, write_end = os.pipe()
    try:
        # A small pipe, so that the command cannot have written everything before the
        # reader goes away.
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
        capacity = fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ)
        child = subprocess.Popen(
            _command(*args),
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(write_end)
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(read_end, 1)
        assert byte, "the command wrote no line"
        line += byte
    os.close(read_end)
    _, err = child.communicate(timeout=120)
    assert len(whole) > capacity + len(line)  # the premise: the rest could not fit
    assert line == whole.splitlines(keepends=True)[0]
    assert child.returncode == 141
    assert b"Traceback" not in err and b"Exception ignored" not in err
    assert err == b""


# --- an output that cannot be written -----------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    ("args", "status", "line"),
    [
        (("export", "{store}"), 1, "trueheart: standard output: No space left on device"),
        (("stats", "{store}"), 1, "trueheart: standard output: No space left on device"),
        (("stats", "{store}", "--json"), 1, "trueheart: standard output: No space left on device"),
        (("stats", "missing.db", "--json"), 3, "trueheart: missing.db: database not found"),
        (("stats", "--bogus", "--json"), 2, None),
    ],
)
def test_an_output_on_a_full_disk_is_named_as_such(
    store: Path, args: tuple[str, ...], status: int, line: str | None
) -> None:
    """Standard output that cannot be written is reported as such (not as the store's
    failure), in one line and without a traceback, with or without ``--json``."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            _command(*(arg.format(store=store) for arg in args)),
            env=_env(),
            cwd=store.parent,
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    err = done.stderr.decode()
    assert done.returncode == status, err
    assert "Traceback" not in err and "Exception ignored" not in err
    if line is not None:
        assert err.splitlines() == [line]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["export", "import", "ingest"])
def test_a_standard_error_that_cannot_be_written_stops_nothing(
    store: Path, tmp_path: Path, command: str
) -> None:
    """Progress lines and hints tell of the work and are not the work: with stderr on a
    full disk, the command still does what it was asked and succeeds."""
    exported = tmp_path / "export.jsonl"
    assert (
        subprocess.run(
            _command("export", str(store), "--output", str(exported)),
            env=_env(),
            capture_output=True,
            timeout=120,
            check=False,
        ).returncode
        == 0
    )
    args = {
        "export": ("export", str(store)),
        "import": ("import", str(tmp_path / "copy.db"), str(exported), "--json"),
        "ingest": ("ingest", str(store), str(tmp_path / "in.jsonl"), "--json"),
    }[command]
    line = {
        "type": "event",
        "event_id": "evt-late",
        "scope": "acme/agent/user-1",
        "content": "A late note.",
        "source_id": "chat",
        "source_type": "chat",
        "occurred_at": "2026-08-13T12:00:00Z",
        "trust": "observed",
    }
    (tmp_path / "in.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            _command(*args),
            env=_env(),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=full,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0
    if command == "export":
        # The same rows as an export made before; only the header's time differs.
        assert done.stdout.splitlines()[1:] == exported.read_bytes().splitlines()[1:]
    elif command == "import":
        assert json.loads(done.stdout)["rows"] > 0
        with TrueHeart(SQLiteRepository(tmp_path / "copy.db", read_only=True)) as copy:
            assert copy.verify_integrity().ok
    else:
        assert json.loads(done.stdout) == {"events": 1, "memories": 0}
        with TrueHeart(SQLiteRepository(store, read_only=True)) as stored:
            assert stored.get_receipt(SCOPE, "evt-late").event_id == "evt-late"


# --- an input that cannot be read --------------------------------------------------------


MEM = "/proc/self/mem"  # opens, but reading its first page fails: Input/output error


@pytest.mark.skipif(not os.path.exists(MEM), reason=f"needs {MEM}")
@pytest.mark.parametrize("command", ["import", "ingest"])
@pytest.mark.parametrize("from_stdin", [False, True], ids=["file", "stdin"])
def test_an_input_that_cannot_be_read_is_named(
    store: Path, tmp_path: Path, command: str, from_stdin: bool
) -> None:
    """An operating-system error while ``import`` or ``ingest`` reads its input names
    that input (or stdin), not the store, on stderr and in the ``--json`` error."""
    db = "new.db" if command == "import" else str(store)
    with open(MEM, "rb") as unreadable:  # this process's: it stays mapped in the child
        done = subprocess.run(
            _command(command, db, "-" if from_stdin else MEM, "--json"),
            env=_env(),
            cwd=tmp_path,
            stdin=unreadable if from_stdin else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    message = f"{'stdin' if from_stdin else MEM}: Input/output error"
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == f"trueheart: {message}"
    assert json.loads(done.stdout) == {"error": "OSError", "message": message, "exit_status": 1}
    assert not [name for name in os.listdir(tmp_path) if "new.db" in name]


# --- a closed standard stream ---------------------------------------------------------


def _closing(fd: int) -> Callable[[], None]:
    """A ``preexec_fn`` that starts the command without descriptor ``fd`` (``>&-``)."""
    return lambda: os.close(fd)


@pytest.mark.parametrize(
    "extra", [(), ("--json",), ("--help",), ("--version",)], ids=["text", "json", "help", "version"]
)
def test_a_command_started_without_stdout_says_so_in_one_line(
    store: Path, extra: tuple[str, ...]
) -> None:
    before = dump(store)
    args = extra if extra in (("--help",), ("--version",)) else ("stats", str(store), *extra)
    done = subprocess.run(
        _command(*args),
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_closing(1),
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == "trueheart: standard output: Bad file descriptor\n"
    assert dump(store) == before


@pytest.mark.parametrize("command", ["import", "ingest"])
def test_a_command_started_without_stdin_names_it(
    store: Path, tmp_path: Path, command: str
) -> None:
    db = "new.db" if command == "import" else str(store)
    before = dump(store)
    done = subprocess.run(
        _command(command, db, "-"),
        env=_env(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        preexec_fn=_closing(0),
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == "trueheart: stdin: Bad file descriptor"
    assert not [name for name in os.listdir(tmp_path) if "new.db" in name]
    assert dump(store) == before


def test_main_called_in_process_leaves_signals_and_streams_alone(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the program (``command``) holds closed streams and ignores a late Ctrl-C:
    ``main()`` on the process's arguments, called by a host, changes neither."""
    from trueheart_core.cli import main

    monkeypatch.setattr(sys, "argv", ["trueheart", "stats", str(store)])
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert main() == 0
    assert "events" in capsys.readouterr().out
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


# --- Ctrl-C ------------------------------------------------------------------------------


@contextlib.contextmanager
def _running(*args: str, cwd: Path | None = None) -> Iterator[subprocess.Popen[str]]:
    """The command running as a child process (text pipes for stdout and stderr, no
    stdin), killed if the test leaves it running."""
    child = subprocess.Popen(
        _command(*args),
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_sigint_during_verify_exits_130_without_a_traceback(big_store: Path) -> None:
    with _running("verify", str(big_store)) as child:
        # The progress line comes just before the verification starts.
        assert child.stderr is not None
        assert child.stderr.readline() == f"trueheart: verifying {big_store}\n"
        deadline = time.monotonic() + 10
        while child.poll() is None and time.monotonic() < deadline:
            child.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=0.5)
        out, err = child.communicate(timeout=60)
    assert child.returncode == 130
    assert err == "trueheart: interrupted\n"
    assert out == ""


# --- SIGTERM ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_export(big_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big-export") / "big.jsonl"
    subprocess.run(
        _command("export", str(big_store), "--output", str(path)),
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    )
    return path


def _begun(directory: Path, command: str) -> bool:
    """Whether ``command`` has begun its new file: the export, or the import's
    temporary store."""
    if command == "export":
        out = directory / "out.jsonl"
        return out.exists() and out.stat().st_size > 0
    return any(".import-" in name for name in os.listdir(directory))


@pytest.mark.parametrize("command", ["export", "import"])
def test_sigterm_while_a_new_file_is_written_removes_it(
    big_store: Path, big_export: Path, tmp_path: Path, command: str
) -> None:
    """SIGTERM (``timeout``, ``systemctl stop``) part-way through an export to a file or
    an import into a new store exits with status 143, as Ctrl-C exits with 130, and
    leaves no partial export (it holds bodies) and no temporary store behind."""
    if command == "export":
        args = ("export", str(big_store), "--output", "out.jsonl")
        line = f"trueheart: exporting {big_store} to out.jsonl\n"
    else:
        args = ("import", "new.db", str(big_export))
        line = f"trueheart: importing {big_export} into new.db\n"
    with _running(*args, cwd=tmp_path) as child:
        assert child.stderr is not None
        assert child.stderr.readline() == line
        deadline = time.monotonic() + 30
        while not _begun(tmp_path, command) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert child.poll() is None, "the command ended before the signal"
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    assert (child.returncode, out, err) == (143, "", "trueheart: terminated\n")
    assert os.listdir(tmp_path) == []


# --- prompts on a terminal ---------------------------------------------------------------


class Terminal:
    """A command whose stdin is a pseudo-terminal; stdout and stderr are pipes."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.master, slave = pty.openpty()
        try:
            self.child = subprocess.Popen(
                _command(*args),
                cwd=cwd,
                env=_env(),
                stdin=slave,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        finally:
            os.close(slave)
        self.err = b""

    def wait_for(self, ending: bytes) -> str:
        """stderr up to (and with) ``ending``, waiting at most 60 seconds."""
        assert self.child.stderr is not None
        fd = self.child.stderr.fileno()
        deadline = time.monotonic() + 60
        while not self.err.endswith(ending):
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no prompt; stderr so far: {self.err!r}"
            byte = os.read(fd, 1)
            assert byte, f"no prompt; stderr: {self.err!r}"
            self.err += byte
        return self.err.decode()

    def type(self, text: str) -> None:
        os.write(self.master, text.encode() + b"\n")

    def finish(self) -> tuple[int, str, str]:
        try:
            out, err = self.child.communicate(timeout=60)
        finally:
            os.close(self.master)
            if self.child.poll() is None:
                self.child.kill()
                self.child.wait()
        return self.child.returncode, out.decode(), (self.err + err).decode()


ERASE_PROMPT = (
    "trueheart: erase everything held in acme/agent/user-1? "
    "type the subject ID (user-1) to confirm: "
)
FORGET_PROMPT = "trueheart: forget mem-1 in acme/agent/user-1? [y/N] "


@pytest.mark.parametrize("answer", ["", "no", "User-1", "user-1 please"])
def test_erase_subject_declined_on_a_terminal_changes_nothing(store: Path, answer: str) -> None:
    before = dump(store)
    terminal = Terminal(store.parent, "erase-subject", str(store), "--scope", "acme/agent/user-1")
    assert terminal.wait_for(b"to confirm: ") == ERASE_PROMPT
    terminal.type(answer)
    status, out, err = terminal.finish()
    assert (status, out) == (1, "")
    assert err == ERASE_PROMPT + "trueheart: not confirmed\n"
    assert dump(store) == before


def test_erase_subject_confirmed_on_a_terminal(store: Path) -> None:
    terminal = Terminal(
        store.parent, "erase-subject", str(store), "--scope", "acme/agent/user-1", "--json"
    )
    assert terminal.wait_for(b"to confirm: ") == ERASE_PROMPT
    terminal.type("user-1")
    status, out, err = terminal.finish()
    assert status == 0, err
    assert '"verified": true' in out
    assert err == ERASE_PROMPT + f"trueheart: erasing acme/agent/user-1 in {store}\n"
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert service.stats(SCOPE).memories == 0


def test_forget_on_a_terminal_declined_then_confirmed(store: Path) -> None:
    args = ("forget", str(store), "--scope", "acme/agent/user-1", "mem-1")
    before = dump(store)
    terminal = Terminal(store.parent, *args)
    assert terminal.wait_for(b"[y/N] ") == FORGET_PROMPT
    terminal.type("n")
    assert terminal.finish() == (1, "", FORGET_PROMPT + "trueheart: not confirmed\n")
    assert dump(store) == before
    terminal = Terminal(store.parent, *args)
    assert terminal.wait_for(b"[y/N] ") == FORGET_PROMPT
    terminal.type("Y")
    status, out, err = terminal.finish()
    assert (status, err) == (0, FORGET_PROMPT)
    assert out.startswith("forgot mem-1; removed: memory")


def test_yes_on_a_terminal_does_not_ask(store: Path) -> None:
    terminal = Terminal(
        store.parent, "erase-subject", str(store), "--scope", "acme/agent/user-1", "--yes"
    )
    status, out, err = terminal.finish()
    assert status == 0
    assert err == f"trueheart: erasing acme/agent/user-1 in {store}\n"
    assert out.rstrip().endswith("verified: yes")


def test_sigint_at_the_prompt_exits_130_and_changes_nothing(store: Path) -> None:
    before = dump(store)
    terminal = Terminal(store.parent, "erase-subject", str(store), "--scope", "acme/agent/user-1")
    terminal.wait_for(b"to confirm: ")
    terminal.child.send_signal(signal.SIGINT)
    status, out, err = terminal.finish()
    assert (status, out) == (130, "")
    assert err == ERASE_PROMPT + "trueheart: interrupted\n"
    assert dump(store) == before
