"""Progress on stderr (``trueheart_core.cli.progress``), drawn only on a terminal: a
:class:`Task` on a real pseudo-terminal and off one, and long commands run as child
processes whose stderr is a pseudo-terminal (their stdout a pipe)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from cli_support import build

from trueheart_core.cli import progress

pty = pytest.importorskip("pty")

SRC = Path(__file__).resolve().parents[2] / "src"
FRAME = r"\x1b\[K"


def _drain(master: int, until: float = 60.0) -> bytes:
    """Everything written to the terminal whose controlling side is ``master`` until
    every writer closed it."""
    data = b""
    deadline = time.monotonic() + until
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        data += chunk
    return data


def _terminal() -> tuple[int, io.TextIOWrapper]:
    master, slave = pty.openpty()
    return master, io.TextIOWrapper(os.fdopen(slave, "wb"), encoding="utf-8")


@pytest.fixture(autouse=True)
def _a_real_term(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")


def test_a_spinner_on_a_terminal_ends_with_the_plain_line() -> None:
    master, stream = _terminal()
    assert progress.draws(stream)
    with progress.Task("working on demo.db", stream):
        pass
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    # The first frame is drawn at once: the message, a spinner and the elapsed time.
    assert re.match(r"\rtrueheart: working on demo\.db \| \d+\.\ds" + FRAME, text), text
    assert re.search(
        r"\rtrueheart: working on demo\.db \(done in \d+\.\ds\)" + FRAME + "\r\n$", text
    )


def test_a_bar_counts_what_the_task_reports() -> None:
    master, stream = _terminal()
    with progress.Task("embedding", stream, total=4) as task:
        task.update(1)
        task.update(3, 6)
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    assert "[" + "." * 20 + "] 0/4 0% " in text
    assert "[" + "#" * 5 + "." * 15 + "] 1/4 25% " in text
    assert "[" + "#" * 10 + "." * 10 + "] 3/6 50% " in text
    assert re.search(r"\rtrueheart: embedding \(done in \d+\.\ds\)" + FRAME + "\r\n$", text)


def test_a_task_reporting_every_item_is_drawn_about_ten_times_a_second() -> None:
    master, stream = _terminal()
    started = time.monotonic()
    with progress.Task("ingesting", stream, total=100_000) as task:
        for done in range(1, 100_001):
            task.update(done)
    elapsed = time.monotonic() - started
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    frames = text.count("\x1b[K")
    # a frame per whole per cent, and about ten a second
    assert frames <= 3 + 100 + 20 * elapsed, (frames, elapsed)
    assert re.search(r"\rtrueheart: ingesting \(done in \d+\.\ds\)" + FRAME + "\r\n$", text)


def test_a_narrow_terminal_shortens_the_message_not_the_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    master, stream = _terminal()
    with progress.Task("ingesting events.jsonl into a store with a long name", stream, 8):
        pass
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    first = text.split("\x1b[K")[0].lstrip("\r")
    assert len(first) == 69
    assert first.startswith("trueheart: ingesting events")
    assert re.search(r"\u2026 \[\.{20}\] 0/8 0% \d+\.\ds$", first), first


def test_the_width_is_that_of_the_terminal_drawn_on_and_a_narrow_one_keeps_the_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Standard output is not a terminal here: the width is read from the terminal the
    # progress is drawn on, 40 columns, where the bar goes before the counts and time.
    monkeypatch.delenv("COLUMNS", raising=False)
    master, stream = _terminal()
    fcntl.ioctl(stream.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    with progress.Task("ingesting events.jsonl into a store with a long name", stream, 8) as t:
        t.update(4)
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    frames = [frame.lstrip("\r") for frame in text.split("\x1b[K")[:-2]]
    assert frames
    for frame in frames:
        assert len(frame) <= 39, frame
        assert re.search(r"^trueheart: \S.*\u2026 [048]/8 (0|50|100)% \d+\.\ds$", frame), frame


def test_after_a_failure_the_plain_line_has_no_time() -> None:
    master, stream = _terminal()
    with pytest.raises(KeyError), progress.Task("rebuilding", stream):
        raise KeyError("x")
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    assert text.endswith("\rtrueheart: rebuilding\x1b[K\r\n")
    assert "done in" not in text


def test_settle_ends_a_line_left_drawn() -> None:
    master, stream = _terminal()
    task = progress.Task("verifying", stream).__enter__()  # as if its block never ended
    progress.settle()
    progress.settle()  # once only
    task.__exit__(None, None, None)  # and nothing more after it
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    assert text.endswith("\rtrueheart: verifying\x1b[K\r\n")
    assert text.count("\n") == 1


def test_off_a_terminal_one_line_and_nothing_else() -> None:
    stream = io.StringIO()
    assert not progress.draws(stream)
    with progress.Task("verifying demo.db", stream, total=3) as task:
        task.update(2)
    assert stream.getvalue() == "trueheart: verifying demo.db\n"


def test_a_dumb_terminal_gets_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    master, stream = _terminal()
    with progress.Task("verifying demo.db", stream):
        pass
    stream.close()
    text = _drain(master).decode()
    os.close(master)
    assert text == "trueheart: verifying demo.db\r\n"


# --- commands with stderr on a terminal --------------------------------------------------


def _run(cwd: Path, *args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    """Run ``trueheart ARGS`` with stderr on a pseudo-terminal; returns the exit status,
    stdout and what the terminal showed."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PYTHONPATH=str(SRC), TERM="xterm", COLUMNS="200")
    master, slave = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "trueheart_core.cli", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
    finally:
        os.close(slave)
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(stdin)
        child.stdin.close()
        shown = _drain(master).decode()
        out = child.stdout.read().decode()
        child.wait(timeout=60)
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, out, shown


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return build(tmp_path / "store.db")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("verify",), "verifying {db}"),
        (("rebuild",), "rebuilding the indexes of {db}"),
        (
            ("expire", "--at", "2026-09-01T00:00:00Z"),
            "expiring the raw bodies due by 2026-09-01T00:00:00Z in {db}",
        ),
        (
            ("erase-subject", "--scope", "acme/agent/user-2", "--yes"),
            "erasing acme/agent/user-2 in {db}",
        ),
        (("backup", "copy.db"), "backing up {db} to copy.db"),
        (("compact",), "rewriting {db} into fresh pages"),
        (("export", "--output", "store.jsonl"), "exporting {db} to store.jsonl"),
    ],
)
def test_long_commands_draw_a_spinner_on_a_terminal(
    store: Path, args: tuple[str, ...], message: str
) -> None:
    status, out, shown = _run(store.parent, args[0], str(store), *args[1:], "--json")
    assert status == 0, shown
    json.loads(out)  # stdout holds the document alone
    line = re.escape("trueheart: " + message.format(db=store))
    assert re.match(r"\r" + line + r" [|/\-\\] \d+\.\ds" + FRAME, shown), shown
    assert re.search(r"\r" + line + r" \(done in \d+\.\ds\)" + FRAME + "\r\n$", shown), shown


def test_import_draws_a_spinner_on_a_terminal(store: Path) -> None:
    exported = store.parent / "store.jsonl"
    status, _, _ = _run(store.parent, "export", str(store), "--output", str(exported))
    assert status == 0
    status, out, shown = _run(store.parent, "import", "copy.db", str(exported), "--json")
    assert status == 0, shown
    assert json.loads(out)["rows"] > 0
    line = re.escape(f"trueheart: importing {exported} into copy.db")
    assert re.match(r"\r" + line + r" [|/\-\\] \d+\.\ds" + FRAME, shown), shown
    assert re.search(r"\r" + line + r" \(done in \d+\.\ds\)" + FRAME + "\r\n$", shown), shown


def test_semantic_sync_draws_a_bar_per_batch(store: Path) -> None:
    args = ("semantic-sync", str(store), "--embedder", "trueheart_core:HashingEmbedder")
    status, out, shown = _run(store.parent, *args, "--scope", "acme/agent/user-1", "--batch", "1")
    assert status == 0, shown
    assert "SCOPE" in out
    for done in (1, 2, 3):
        assert f"] {done}/3 {100 * done // 3}% " in shown
    assert "(done in " in shown


def test_ingest_draws_a_bar_and_an_error_starts_its_own_line(store: Path) -> None:
    lines = [
        {
            "type": "event",
            "event_id": "evt-9",
            "scope": "acme/agent/user-1",
            "content": "I hike on Sundays.",
            "source_id": "chat",
            "source_type": "chat",
            "occurred_at": "2026-08-13T12:00:00Z",
            "trust": "observed",
        },
        {
            "type": "memory",
            "memory_id": "mem-9",
            "scope": "acme/agent/user-1",
            "content": "Hikes on Sundays.",
            "source_event_ids": ["evt-9"],
            "kind": "habit",
            "trust": "observed",
            "created_at": "2026-08-13T12:00:00Z",
        },
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines).encode()
    status, out, shown = _run(store.parent, "ingest", str(store), "-", stdin=text)
    assert (status, out) == (0, "ingested 1 event and 1 memory\n"), shown
    assert "] 1/2 50% " in shown and "] 2/2 100% " in shown
    bad = text + json.dumps({**lines[1], "memory_id": "mem-10", "source_event_ids": ["x"]}).encode()
    status, out, shown = _run(store.parent, "ingest", str(store), "-", stdin=bad + b"\n")
    assert (status, out) == (3, ""), shown
    assert shown.endswith(
        f"\rtrueheart: ingesting - into {store}\x1b[K\r\n"
        "trueheart: line 3: entity not found: x; stored before it: 1 event, 1 memory\r\n"
    )
    assert "Hikes" not in shown and "hike" not in shown


def test_ctrl_c_while_drawing_leaves_the_plain_line_then_the_error(
    store: Path, tmp_path: Path
) -> None:
    (tmp_path / "slow_embedder.py").write_text(
        "import time\n"
        "from trueheart_core import HashingEmbedder\n"
        "class Slow(HashingEmbedder):\n"
        "    def embed_documents(self, texts):\n"
        "        time.sleep(60)\n"
        "        return super().embed_documents(texts)\n",
        encoding="utf-8",
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PYTHONPATH=str(SRC), TERM="xterm", COLUMNS="200")
    args = ("semantic-sync", str(store), "--embedder", "slow_embedder:Slow", "--scope")
    master, slave = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "trueheart_core.cli", *args, "acme/agent/user-1"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
    finally:
        os.close(slave)
    try:
        shown = b""
        deadline = time.monotonic() + 60
        while b"(1 of 1) in" not in shown:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, shown
            shown += os.read(master, 4096)
        child.send_signal(signal.SIGINT)
        shown += _drain(master)
        assert child.stdout is not None
        out = child.stdout.read().decode()
        child.wait(timeout=60)
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
            child.wait()
    text = shown.decode()
    assert (child.returncode, out) == (130, ""), text
    assert text.endswith(
        f"\rtrueheart: embedding acme/agent/user-1 (1 of 1) in {store}\x1b[K\r\n"
        "trueheart: interrupted\r\n"
    ), text
    assert "Traceback" not in text
