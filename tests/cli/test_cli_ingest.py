"""``trueheart ingest``: JSON Lines of events and memories, from a file and from stdin;
counts, JSON, a bad line (its number, never its content, and nothing stored), a refusal
after the events (what came before stays), usage errors, a missing store and a store this
user cannot write."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import (
    as_reader,
    build,
    call,
    sigint_restored,  # noqa: F401 - a fixture
    unwritable,
)
from store_dump import dump

from trueheart_core import Scope, SQLiteRepository, TrueHeart, cli

SRC = Path(__file__).resolve().parents[2] / "src"
SECRET = "Secret body 42: sister in Lisbon"
NEW = Scope("acme", "agent", "new")


def _event(event_id: str, content: str = "I drink green tea.", **extra: Any) -> dict[str, Any]:
    return {
        "type": "event",
        "event_id": event_id,
        "scope": "acme/agent/new",
        "content": content,
        "source_id": "chat-1",
        "source_type": "chat",
        "occurred_at": "2026-08-13T12:00:00Z",
        "trust": "observed",
        **extra,
    }


def _memory(memory_id: str, source: str = "evt-1", **extra: Any) -> dict[str, Any]:
    return {
        "type": "memory",
        "memory_id": memory_id,
        "scope": "acme/agent/new",
        "content": "Drinks green tea.",
        "source_event_ids": [source],
        "kind": "habit",
        "trust": "observed",
        "created_at": "2026-08-13T12:00:00Z",
        **extra,
    }


def _write(path: Path, lines: list[Any]) -> Path:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return build(tmp_path / "store.db")


def _new(store: Path) -> tuple[int, int]:
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        found = service.stats(NEW)
    return found.events, found.memories


def test_events_and_memories_from_a_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        _event("evt-1", retention={"raw_ttl": "1d"}, metadata={"channel": "web"}),
        "",
        _event("evt-2", "My sister lives in Lisbon.", source_metadata={"lang": "en"}),
        _memory("mem-1"),
        _memory("mem-2", "evt-2", content="Sister in Lisbon.", metadata={"by": "host"}),
    ]
    source = _write(tmp_path / "in.jsonl", lines)
    status, out, err = call(capsys, "ingest", str(store), str(source))
    assert (status, out) == (0, "ingested 2 events and 2 memories\n")
    assert err == f"trueheart: ingesting {source} into {store}\n"
    assert _new(store) == (2, 2)
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        receipt = service.get_receipt(NEW, "evt-1")
        assert receipt.raw_expires_at - receipt.source.occurred_at == timedelta(days=1)
        assert (receipt.clear_for, receipt.recall_for) == (timedelta(days=90), timedelta(days=365))
        assert dict(receipt.metadata) == {"channel": "web"}
        assert service.get_memory(NEW, "mem-2").content == "Sister in Lisbon."
    # The same file again: replays, accepted as such.
    status, out, _ = call(capsys, "ingest", str(store), str(source), "--json")
    assert (status, json.loads(out)) == (0, {"events": 2, "memories": 2})
    assert _new(store) == (2, 2)


def test_from_stdin(store: Path, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(SRC)
    text = json.dumps(_event("evt-1")) + "\n" + json.dumps(_memory("mem-1")) + "\n"
    done = subprocess.run(
        [sys.executable, "-m", "trueheart_core.cli", "ingest", str(store), "-", "--json"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"events": 1, "memories": 1}
    assert _new(store) == (1, 1)


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (SECRET, "not valid JSON"),
        (json.dumps([SECRET]), "must be a JSON object"),
        (json.dumps({"type": "note", "content": SECRET}), "field type must be event or memory"),
        (json.dumps(_event("evt-9", SECRET, extra=SECRET)), "unknown field"),
        (json.dumps({**_event("evt-9", SECRET), "trust": SECRET}), "field trust must be"),
        (json.dumps({**_event("evt-9", SECRET), "occurred_at": "2026-08-13"}), "UTC offset"),
        (json.dumps({**_event("evt-9", SECRET), "event_id": 7}), "field event_id must be a string"),
        (json.dumps({**_event("evt-9", SECRET), "scope": "a/b"}), "field scope must be tenant"),
        (json.dumps({**_event("evt-9", SECRET), "retention": {"raw_ttl": "1y"}}), "retention"),
        (json.dumps({**_event("evt-9", SECRET), "event_id": " "}), "event_id"),
        (json.dumps({**_event("evt-9", SECRET), "retention": {SECRET: "1d"}}), "retention may"),
        (json.dumps({**_event("evt-9", SECRET), "metadata": [SECRET]}), "metadata must be"),
        (json.dumps({k: v for k, v in _memory("m").items() if k != "kind"}), "missing field kind"),
        (json.dumps(_memory("m", source_event_ids=[1])), "field source_event_ids must be"),
        # one field twice (which value was meant?), at the top or in metadata
        (json.dumps(_event("evt-9", SECRET))[:-1] + ', "content": "x"}', "a field appears twice"),
        ('{"metadata": {"k": 1, "k": 2}, ' + json.dumps(_event("evt-9", SECRET))[1:], "twice"),
    ],
)
def test_a_bad_line_names_its_number_only_and_stores_nothing(
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bad: str,
    why: str,
) -> None:
    source = _write(tmp_path / "in.jsonl", [_event("evt-1"), "", _memory("mem-1"), bad])
    before = dump(store)
    status, out, err = call(capsys, "ingest", str(store), str(source), "--json")
    assert status == 1
    message = json.loads(out)["message"]
    assert message.startswith("line 4: ") and message.endswith("; nothing was stored")
    assert why in message
    assert SECRET not in err + out and "Secret" not in err + out
    assert dump(store) == before


def test_a_line_too_long_is_refused_after_a_bounded_read(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limit = 16 * 1024 * 1024
    second = json.dumps(_event("evt-2")).encode()
    source = tmp_path / "in.jsonl"
    with source.open("wb") as out:
        out.write(json.dumps(_event("evt-1")).encode() + b"\n")
        out.write(b" " * (limit + 1 - len(second)) + second + b"\n")
    status, _, err = call(capsys, "ingest", str(store), str(source))
    # The progress line comes first: the input is read and checked after it.
    assert (status, err) == (
        1,
        f"trueheart: ingesting {source} into {store}\n"
        "trueheart: line 2: line too long (over 16 MiB); nothing was stored\n",
    )
    assert _new(store) == (0, 0)
    # A line of exactly the limit is read whole, whatever its line ending (and the
    # byte-order mark of the first line is not counted).
    first = json.dumps(_event("evt-1")).encode()
    with source.open("wb") as out:
        out.write(b"\xef\xbb\xbf" + b" " * (limit - len(first)) + first + b"\r\n")
        out.write(b" " * (limit - len(second)) + second)
    status, out_text, _ = call(capsys, "ingest", str(store), str(source))
    assert (status, out_text) == (0, "ingested 2 events and 0 memories\n")
    assert _new(store) == (2, 0)


def test_an_input_without_newlines_is_refused_not_read_whole(store: Path) -> None:
    """An endless input with no newline (here ``/dev/zero``) is refused once the first
    line has grown past the limit, rather than read until memory runs out."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(SRC)
    done = subprocess.run(
        [sys.executable, "-m", "trueheart_core.cli", "ingest", str(store), "/dev/zero", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["message"] == (
        "line 1: line too long (over 16 MiB); nothing was stored"
    )
    assert _new(store) == (0, 0)


def test_bytes_that_are_not_utf8(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(json.dumps(_event("evt-1")).encode() + b"\n\xff\xfe\n")
    status, _, err = call(capsys, "ingest", str(store), str(source))
    assert (status, err.splitlines()[-1]) == (1, "trueheart: line 2: not UTF-8; nothing was stored")
    assert _new(store) == (0, 0)


def test_a_byte_order_mark_at_the_start_is_skipped_and_nowhere_else(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    first, second = (json.dumps(_event(e)).encode() for e in ("evt-1", "evt-2"))
    source.write_bytes(b"\xef\xbb\xbf" + first + b"\r\n" + second + b"\r\n")
    status, out, _ = call(capsys, "ingest", str(store), str(source))
    assert (status, out) == (0, "ingested 2 events and 0 memories\n")
    source.write_bytes(first + b"\n\xef\xbb\xbf" + second + b"\n")
    status, _, err = call(capsys, "ingest", str(store), str(source))
    assert (status, err.splitlines()[-1]) == (
        1,
        "trueheart: line 2: not valid JSON; nothing was stored",
    )


def test_a_refused_event_stores_no_event(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(
        tmp_path / "in.jsonl",
        [_event("evt-1"), _event("evt-2"), _event("evt-1", "another body"), _memory("mem-1")],
    )
    status, out, err = call(capsys, "ingest", str(store), str(source))
    assert (status, out) == (1, "")
    assert err.splitlines()[-1] == (
        "trueheart: the events were refused, nothing was stored: idempotency conflict: evt-1"
    )
    assert _new(store) == (0, 0)


def test_a_refused_memory_stops_there_and_what_came_before_stays(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_event("evt-1"), _memory("mem-1"), _memory("mem-2", "evt-404"), _memory("mem-3")]
    source = _write(tmp_path / "in.jsonl", lines)
    status, out, err = call(capsys, "ingest", str(store), str(source), "--json")
    assert status == 3
    doc = json.loads(out)
    assert doc["error"] == "IngestRefused"
    assert doc["message"] == (
        "line 3: entity not found: evt-404; stored before it: 1 event, 1 memory"
    )
    assert err.splitlines()[-1] == "trueheart: " + doc["message"]
    assert _new(store) == (1, 1)


def _locked_from(
    monkeypatch: pytest.MonkeyPatch, store: Path, call_number: int
) -> sqlite3.Connection:
    """From call ``call_number`` of ``TrueHeart.materialize_once`` on (0: from the
    start), another connection (returned, for the caller to close) holds the store's
    write lock, so that the call finds the store busy."""
    holder = sqlite3.connect(store, isolation_level=None)
    real = TrueHeart.materialize_once
    calls = 0

    def patched(self: TrueHeart, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == call_number:
            holder.execute("BEGIN IMMEDIATE")
        return real(self, *args)

    if call_number == 0:
        holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(TrueHeart, "materialize_once", patched)
    return holder


@pytest.mark.parametrize("locked_at", [2, 0])
def test_a_busy_store_stops_there_and_says_what_is_stored(
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    locked_at: int,
) -> None:
    lines = [_event("evt-1"), _memory("mem-1"), _memory("mem-2"), _memory("mem-3")]
    source = _write(tmp_path / "in.jsonl", lines)
    with monkeypatch.context() as patching:
        holder = _locked_from(patching, store, locked_at)
        try:
            status, out, err = call(
                capsys, "ingest", str(store), str(source), "--json", "--busy-timeout", "0.2"
            )
        finally:
            holder.close()
    assert status == 5
    doc = json.loads(out)
    assert err.splitlines()[-1] == "trueheart: " + doc["message"]
    if locked_at:
        # The memory of line 3 found the store busy: the lines before it stay stored.
        assert doc["error"] == "IngestRefused"
        assert doc["message"] == (
            f"line 3: {store}: repository busy: memory materialization failed; "
            "stored before it: 1 event, 1 memory"
        )
        assert _new(store) == (1, 1)
    else:
        # The events found it busy: their one transaction stored nothing.
        assert doc["error"] == "RepositoryBusy"
        assert doc["message"].startswith(f"{store}: repository busy: ")
        assert _new(store) == (0, 0)


def _stopped_at(monkeypatch: pytest.MonkeyPatch, name: str, call_number: int, stop: Any) -> None:
    """``TrueHeart.<name>`` raises ``stop`` (an interruption) on call ``call_number``; the
    calls before it run."""
    real = getattr(TrueHeart, name)
    calls = 0

    def patched(self: TrueHeart, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == call_number:
            raise stop
        return real(self, *args)

    monkeypatch.setattr(TrueHeart, name, patched)


@pytest.mark.usefixtures("sigint_restored")
@pytest.mark.parametrize(
    ("stop", "name", "status"),
    [(KeyboardInterrupt(), "interrupted", 130), (cli._Terminated(), "terminated", 143)],
)
def test_an_interruption_says_what_is_stored(
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stop: BaseException,
    name: str,
    status: int,
) -> None:
    lines = [_event("evt-1"), _memory("mem-1"), _memory("mem-2"), _memory("mem-3")]
    source = _write(tmp_path / "in.jsonl", lines)
    with monkeypatch.context() as patching:
        _stopped_at(patching, "materialize_once", 2, stop)
        code, out, err = call(capsys, "ingest", str(store), str(source), "--json")
    message = f"{name}; stored before it: 1 event, 1 memory; the same file can be ingested again"
    assert code == status
    assert json.loads(out) == {"error": name, "message": message, "exit_status": status}
    assert err.splitlines()[-1] == f"trueheart: {message}"
    assert _new(store) == (1, 1)
    # As the message says: the same file again stores the rest.
    assert call(capsys, "ingest", str(store), str(source))[:2] == (
        0,
        "ingested 1 event and 3 memories\n",
    )
    assert _new(store) == (1, 3)


@pytest.mark.usefixtures("sigint_restored")
def test_an_interruption_while_the_events_are_stored(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _write(tmp_path / "in.jsonl", [_event("evt-1"), _event("evt-2"), _memory("mem-1")])
    with monkeypatch.context() as patching:
        _stopped_at(patching, "ingest_events", 1, KeyboardInterrupt())
        code, out, err = call(capsys, "ingest", str(store), str(source))
    assert (code, out) == (130, "")
    assert err.splitlines()[-1] == (
        "trueheart: interrupted; the events are stored all or none; "
        "the same file can be ingested again"
    )
    assert _new(store) == (0, 0)


def test_usage_missing_store_and_missing_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = call(capsys, "ingest", str(store))
    assert status == 2 and "the following arguments are required: FILE" in err
    missing = tmp_path / "missing.db"
    source = _write(tmp_path / "in.jsonl", [_event("evt-1")])
    status, _, err = call(capsys, "ingest", str(missing), str(source))
    assert (status, err) == (3, f"trueheart: {missing}: database not found\n")
    assert not missing.exists()
    status, _, err = call(capsys, "ingest", str(store), str(tmp_path / "absent.jsonl"))
    assert (status, err) == (
        1,
        f"trueheart: {tmp_path / 'absent.jsonl'}: No such file or directory\n",
    )


def test_a_store_this_user_cannot_write(store: Path, tmp_path: Path) -> None:
    source = _write(tmp_path / "in.jsonl", [_event("evt-1"), _memory("mem-1")])
    source.chmod(0o644)
    with unwritable(store) as copy:
        readable = copy.with_name("in.jsonl")
        copy.parent.chmod(0o755)
        readable.write_bytes(source.read_bytes())
        readable.chmod(0o444)
        copy.parent.chmod(0o555)
        before = dump(copy)
        status, _, err = as_reader("ingest", str(copy), str(readable))
        assert status == 5, err
        assert err.splitlines()[-1].startswith(f"trueheart: {copy}: repository read-only: ")
        assert dump(copy) == before
