"""The ``trueheart`` command run in-process through ``trueheart_core.cli.main(argv)``:
``--version``, the help text, errors as JSON objects, messages that name the path,
``demo`` dated now, hints after empty reads, ``scopes``, ``erase-subject`` on an unknown
scope, and the confirmation prompts (stdin made to look like a terminal)."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import sigint_restored  # noqa: F401 - a fixture
from store_dump import dump

import trueheart_core
from trueheart_core import (
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    cli,
)
from trueheart_core.cli import commands, main
from trueheart_core.cli.failures import message_of

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent", "user-1")
ODD = Scope("acme", "a/b", "50%")
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
SUBCOMMANDS = (
    "stats",
    "verify",
    "scopes",
    "audit",
    "recall",
    "search",
    "list",
    "show",
    "forget",
    "erase-subject",
    "rebuild",
    "backup",
    "demo",
    "seal",
    "restore",
    "delete-event",
    "expire",
    "semantic-status",
    "semantic-sync",
    "ingest",
)


def _event(event_id: str, scope: Scope, content: str) -> RawEventDraft:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    return RawEventDraft(event_id, scope, source, content, RETENTION)


def _memory(memory_id: str, scope: Scope, source: str, content: str) -> MemoryDraft:
    return MemoryDraft(memory_id, scope, content, (source,), "fact", TrustLevel.OBSERVED, NOW)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events(
            [_event("evt-1", SCOPE, "I drink green tea."), _event("evt-1", ODD, "odd body")]
        )
        service.materialize_once(_memory("mem-1", SCOPE, "evt-1", "Drinks green tea."))
        service.materialize_once(_memory("mem-1", ODD, "evt-1", "odd memory"))
    return path


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# --- version and help --------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert call(capsys, "--version") == (0, f"trueheart {trueheart_core.__version__}\n", "")


def test_the_help_shows_the_escapes_as_they_are_typed(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = call(capsys, "--help")
    assert status == 0
    assert "'/' as %2F and '%' as %25" in " ".join(out.split())
    assert "--version" in out
    for name in SUBCOMMANDS:
        status, text, _ = call(capsys, name, "--help")
        assert status == 0, name
        assert "%%" not in text, name
        if "--scope" in text:
            assert "%2F" in text, name
    assert "%%" not in out


# --- errors under --json -----------------------------------------------------------------


def test_a_library_error_as_json(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = call(
        capsys, "show", str(store), "--scope", "acme/agent/user-1", "nope", "--json"
    )
    assert status == 3
    assert err == "trueheart: entity not found: nope\n"
    assert json.loads(out) == {
        "error": "EntityNotFound",
        "message": "entity not found: nope",
        "exit_status": 3,
    }
    # without --json, nothing on stdout
    assert call(capsys, "show", str(store), "--scope", "acme/agent/user-1", "nope")[1] == ""


@pytest.mark.parametrize("flag", ["--json", "--js"])
def test_a_usage_error_as_json(store: Path, capsys: pytest.CaptureFixture[str], flag: str) -> None:
    status, out, err = call(capsys, "stats", str(store), "--scope", "acme/agent", flag)
    message = "argument --scope: must be tenant/owner/subject (write a '/' in a part as %2F)"
    assert status == 2
    assert json.loads(out) == {"error": "usage", "message": message, "exit_status": 2}
    assert err.startswith("usage: trueheart stats")
    assert err.endswith(f"trueheart stats: error: {message}\n")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://agent:s3cret@db.internal/memory",
        "postgres://agent:s3cret@db.internal:5432/memory?schema=agents",
        "postgresql://agent@db.internal/memory?password=s3cret",
        "postgresql://agent@db.internal/memory?schema=agents&sslpassword=s3cret",
    ],
)
def test_a_url_that_holds_a_password_is_refused_without_showing_it(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    """A password on a command line shows in process listings and shell history: the
    command refuses it before connecting, and never prints it."""
    message = "argument DB: must not hold a password: set PGPASSWORD or use a password file"
    for args in (
        ("stats", url),
        ("verify", url, "--json"),
        ("recall", url, "--scope", "a/b/c"),
        ("import", url, "-"),
        ("export", url, "--json"),
    ):
        status, out, err = call(capsys, *args)
        assert status == 2, args
        assert "s3cret" not in out + err, args
        assert err.endswith(f"error: {message}\n"), args
        if "--json" in args:
            assert json.loads(out) == {"error": "usage", "message": message, "exit_status": 2}


def test_usage_errors_without_json_print_only_the_usage(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (("nonsense",), ("stats", str(store), "--scope", "a/b"), ("stats",)):
        status, out, err = call(capsys, *args)
        assert (status, out) == (2, ""), args
        assert "usage: trueheart" in err and "Traceback" not in err
    # after "--", "--json" is an argument (here the path), not the option
    missing = (3, "", "trueheart: --json: database not found\n")
    assert call(capsys, "stats", "--", "--json") == missing


IN_MEMORY = ":memory:"
NEEDS_A_FILE = "must be the path of a file, not :memory: (./:memory: names a file of that name)"


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (("stats", IN_MEMORY), "DB"),
        (("verify", IN_MEMORY), "DB"),
        (("scopes", IN_MEMORY), "DB"),
        (("audit", IN_MEMORY, "--scope", "a/b/c"), "DB"),
        (("recall", IN_MEMORY, "--scope", "a/b/c"), "DB"),
        (("claims", IN_MEMORY, "--scope", "a/b/c"), "DB"),
        (("search", IN_MEMORY, "--scope", "a/b/c", "tea"), "DB"),
        (("show", IN_MEMORY, "--scope", "a/b/c", "mem-1"), "DB"),
        (("forget", IN_MEMORY, "--scope", "a/b/c", "mem-1", "--yes"), "DB"),
        (("seal", IN_MEMORY, "--scope", "a/b/c", "mem-1"), "DB"),
        (("restore", IN_MEMORY, "--scope", "a/b/c", "mem-1"), "DB"),
        (("delete-event", IN_MEMORY, "--scope", "a/b/c", "evt-1", "--yes"), "DB"),
        (("expire", IN_MEMORY), "DB"),
        (("erase-subject", IN_MEMORY, "--scope", "a/b/c", "--yes"), "DB"),
        (("rebuild", IN_MEMORY), "DB"),
        (("compact", IN_MEMORY), "DB"),
        (("semantic-status", IN_MEMORY), "DB"),
        (("semantic-sync", IN_MEMORY, "--embedder", "trueheart_core:HashingEmbedder"), "DB"),
        (("ingest", IN_MEMORY, "in.jsonl"), "DB"),
        (("backup", IN_MEMORY, "copy.db"), "DB"),
        (("backup", "store.db", IN_MEMORY), "TARGET"),
        (("export", IN_MEMORY, "-o", "out.jsonl"), "DB"),
        (("import", IN_MEMORY, "out.jsonl"), "DB"),
        (("demo", IN_MEMORY), "PATH"),
        (("mcp", "--store", IN_MEMORY, "--scope", "a/b/c", "--create"), "--store"),
    ],
)
def test_a_store_in_memory_is_a_usage_error(
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    argument: str,
) -> None:
    """``:memory:`` names no file but a store that ends with the command: what a command
    wrote there would be lost (or, for ``import``, written to a file no later command
    reads as such), and a read would find an empty store."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_bytes(_line("evt-9", "t/o/n"))
    _refused_before_any_work(capsys, tmp_path, args, f"argument {argument}: {NEEDS_A_FILE}")


def _refused_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...], message: str
) -> str:
    """Run the command (with an export file ``out.jsonl`` of ``store.db`` beside it) and
    check that it is refused as a usage error with ``message``, changing no file; its
    stderr."""
    assert call(capsys, "export", "store.db", "-o", "out.jsonl")[0] == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    status, out, err = call(capsys, *args, "--json")
    assert status == 2, err
    assert err.endswith(f": error: {message}\n"), err
    assert json.loads(out) == {"error": "usage", "exit_status": 2, "message": message}
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    return err


@pytest.mark.parametrize(
    ("args", "argument", "path"),
    [
        (("import", "new.db/", "out.jsonl"), "DB", "new.db/"),
        (("import", "", "out.jsonl"), "DB", ""),
        (("import", "new.db/.", "out.jsonl"), "DB", "new.db/."),
        (("import", "sub/..", "out.jsonl"), "DB", "sub/.."),
        (("import", ".", "out.jsonl"), "DB", "."),
        (("backup", "store.db", "copy.db/"), "TARGET", "copy.db/"),
        (("backup", "store.db", ""), "TARGET", ""),
        (("demo", "demo.db/"), "PATH", "demo.db/"),
        (("demo", ""), "PATH", ""),
        (("mcp", "--store", "new.db/", "--scope", "a/b/c", "--create"), "--store", "new.db/"),
        (("mcp", "--store", "", "--scope", "a/b/c", "--create"), "--store", ""),
    ],
)
def test_a_new_file_path_that_names_no_file_is_a_usage_error(
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    argument: str,
    path: str,
) -> None:
    """The path of a file a command creates must end with a file name: an empty one, or
    one ending in ``/``, ``.`` or ``..``, is refused before any work (``import`` would
    otherwise build the whole store under a temporary name, then fail to link it)."""
    monkeypatch.chdir(tmp_path)
    rule = f"not {path} (a path ending in /, . or .. names a directory)" if path else "not empty"
    message = f"argument {argument}: must be the path of a file, {rule}"
    err = _refused_before_any_work(capsys, tmp_path, args, message)
    assert "trueheart: importing" not in err


def test_a_file_named_memory_is_an_ordinary_store(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert call(capsys, "export", "store.db", "-o", "out.jsonl")[0] == 0
    named = f"./{IN_MEMORY}"
    assert call(capsys, "stats", named)[0] == 3  # not there yet: not found, not created
    assert call(capsys, "import", named, "out.jsonl")[0] == 0
    assert (tmp_path / IN_MEMORY).is_file()
    (tmp_path / "in.jsonl").write_bytes(_line("evt-9", "t/o/n"))
    status, out, _ = call(capsys, "ingest", named, "in.jsonl", "--json")
    assert (status, json.loads(out)) == (0, {"events": 1, "memories": 0})
    status, out, _ = call(capsys, "stats", named, "--json")
    assert status == 0 and json.loads(out)["events"] == 3
    with TrueHeart(SQLiteRepository(tmp_path / IN_MEMORY, read_only=True)) as service:
        assert Scope("t", "o", "n") in service.scopes()


def _line(event_id: str, scope: str, content: str = "a body") -> bytes:
    """One event line of an ``ingest`` file."""
    line = {
        "type": "event",
        "event_id": event_id,
        "scope": scope,
        "content": content,
        "source_id": "s",
        "source_type": "chat",
        "occurred_at": "2026-01-15T10:00:00Z",
        "trust": "observed",
    }
    return json.dumps(line).encode() + b"\n"


def test_the_json_error_of_a_missing_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.db")
    status, out, err = call(capsys, "verify", missing, "--json")
    assert (status, err) == (3, f"trueheart: {missing}: database not found\n")
    assert json.loads(out) == {
        "error": "DatabaseMissing",
        "message": f"{missing}: database not found",
        "exit_status": 3,
    }
    assert list(tmp_path.iterdir()) == []


ODD_ID = "x\n\x1b[2J\x1b[31mFAKE"
ODD_ID_SHOWN = "x\\n\\x1b[2J\\x1b[31mFAKE"


def test_an_error_line_escapes_what_it_quotes(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ID from the command line, an input file or the store, quoted by an error,
    cannot break the one line ``trueheart: <message>`` or drive the terminal; the JSON
    object holds it exact."""
    status, out, err = call(
        capsys, "show", str(store), "--scope", "acme/agent/user-1", ODD_ID, "--json"
    )
    assert (status, err) == (3, f"trueheart: entity not found: {ODD_ID_SHOWN}\n")
    assert json.loads(out)["message"] == f"entity not found: {ODD_ID}"
    lines = tmp_path / "in.jsonl"
    lines.write_bytes(_line(ODD_ID, "t/o/n") + _line(ODD_ID, "t/o/n", "another body"))
    status, _, err = call(capsys, "ingest", str(store), str(lines))
    assert status == 1
    assert err.splitlines()[1:] == [
        "trueheart: the events were refused, nothing was stored: idempotency conflict: "
        + ODD_ID_SHOWN
    ]


def test_usage_errors_and_progress_lines_escape_what_they_quote(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = call(capsys, "stats", str(store), ODD_ID)
    assert status == 2
    assert err.endswith(f"trueheart: error: unrecognized arguments: {ODD_ID_SHOWN}\n"), err
    assert "\x1b" not in err
    odd = tmp_path / "odd\n\x1b[31m.db"
    odd.write_bytes(store.read_bytes())
    shown = str(odd).replace("\n", "\\n").replace("\x1b", "\\x1b")
    status, _, err = call(capsys, "verify", str(odd))
    assert (status, err) == (0, f"trueheart: verifying {shown}\n")
    status, _, err = call(capsys, "recall", str(odd), "--scope", "a/b/c")
    assert status == 0 and err.count("\n") == 1 and "\x1b" not in err, err


# --- messages that name the path ---------------------------------------------------------


def test_corruption_names_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    status, out, err = call(capsys, "stats", str(path), "--json")
    message = f"{path}: repository corruption: invalid schema catalog"
    assert (status, err) == (4, f"trueheart: {message}\n")
    assert json.loads(out)["error"] == "RepositoryCorruption"
    assert json.loads(out)["message"] == message


def test_a_busy_store_names_the_path(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    holder = sqlite3.connect(store, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        status, _, err = call(capsys, "rebuild", str(store), "--busy-timeout", "0", "--json")
    finally:
        holder.close()
    assert status == 5
    assert err.splitlines()[-1].startswith(f"trueheart: {store}: repository busy: ")


def test_a_path_that_cannot_hold_a_store_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    export = source / "empty.jsonl"
    with (
        TrueHeart(SQLiteRepository(source / "empty.db")) as service,
        export.open("w", encoding="utf-8") as handle,
    ):
        service.export_store(handle)
    (tmp_path / "folder").mkdir()
    (tmp_path / "plain").write_bytes(b"")
    for argv, message in (
        (("stats", str(tmp_path / "folder")), "must not be a directory"),
        (("import", str(tmp_path / "folder"), str(export)), "must not be a directory"),
        (("import", str(tmp_path / "plain" / "new.db"), str(export)), "must be in a directory"),
    ):
        status, out, err = call(capsys, *argv, "--json")
        assert (status, err.splitlines()[-1]) == (1, f"trueheart: {argv[1]}: {message}"), argv
        assert json.loads(out)["error"] == "TargetRefused"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "plain", "source"]


def test_the_database_driver_s_own_warnings_stay_off_stderr() -> None:
    """The command reports a failure in one line; the PostgreSQL driver's warnings
    (each failed connection attempt of its pool, with the server's text) would reach
    stderr through logging's last resort."""
    script = (
        "import logging; from trueheart_core.cli import main; main(['--version']); "
        "logging.getLogger('psycopg.pool').warning('error connecting: FATAL: role')"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(Path(trueheart_core.__file__).parents[1])
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout == f"trueheart {trueheart_core.__version__}\n"
    assert done.stderr == ""


def test_a_demo_target_that_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "taken.db"
    target.write_bytes(b"not a store")
    status, out, err = call(capsys, "demo", str(target))
    assert (status, out) == (1, "")
    assert err == f"trueheart: {target}: must not exist (demo creates a new store)\n"
    assert target.read_bytes() == b"not a store"


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_demo_refuses_and_keeps_the_side_files_of_a_removed_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    """Left by a database removed while in use, they may hold its last writes: demo
    refuses the path before it writes anything, as import does, and leaves them."""
    side = tmp_path / f"demo.db{suffix}"
    side.write_bytes(b"old log")
    path = tmp_path / "demo.db"
    status, _, err = call(capsys, "demo", str(path), "--at", "2026-01-15T09:00:00Z")
    assert (status, err) == (
        1,
        f"trueheart: {path}: has a -wal, -shm or -journal file beside it but no database "
        "(left by a removed store): move those files away first\n",
    )
    assert list(tmp_path.iterdir()) == [side] and side.read_bytes() == b"old log"


def test_a_backup_target_names_its_path(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = store.parent / "no-such-directory" / "copy.db"
    status, _, err = call(capsys, "backup", str(store), str(target))
    assert status == 1
    assert err.splitlines()[-1] == f"trueheart: {target}: must be in an existing directory"
    assert not target.parent.exists()


# --- demo, hints and scopes --------------------------------------------------------------


def test_the_demo_store_recalls_its_memory_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "demo.db")
    before = datetime.now(UTC).replace(microsecond=0)
    assert call(capsys, "demo", path)[0] == 0
    after = datetime.now(UTC)
    status, out, err = call(capsys, "recall", path, "--scope", "demo/agent/bob", "--json")
    assert (status, err) == (0, "")
    items = json.loads(out)["items"]
    assert [item["memory_id"] for item in items] == ["mem-1"]
    created = datetime.fromisoformat(items[0]["created_at"])
    assert before <= created <= after
    text = call(capsys, "recall", path, "--scope", "demo/agent/bob")
    assert text[1].splitlines()[1].split()[:3] == ["1.00", "mem-1", "preference"]
    assert text[2] == ""


def test_the_demo_clock_can_be_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "demo.db")
    assert call(capsys, "demo", path, "--at", "2026-01-15T09:00:00Z")[0] == 0
    doc = json.loads(call(capsys, "show", path, "--scope", "demo/agent/bob", "mem-1", "--json")[1])
    assert doc["created_at"] == "2026-01-15T09:00:00Z"


def test_empty_reads_print_a_hint_in_text_only(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    early = ("--scope", "acme/agent/user-1", "--as-of", "2026-08-12T00:00:00Z")
    hint = (
        "trueheart: hint: {} in acme/agent/user-1 as of 2026-08-12T00:00:00Z; try another "
        f"--as-of, or list the scopes with 'trueheart scopes {store}'\n"
    )
    status, out, err = call(capsys, "recall", str(store), *early)
    assert (status, out.split()) == (
        0,
        ["CLARITY", "MEMORY", "ID", "KIND", "CREATED", "AT", "CONTENT"],
    )
    assert err == hint.format("nothing to recall")
    status, out, err = call(capsys, "search", str(store), *early, "green tea")
    assert (status, err) == (0, hint.format("no memory matches"))
    assert out.splitlines()[-1] == "0 matched, 0 returned, 0 of 512 tokens"
    assert call(capsys, "recall", str(store), *early, "--json")[2] == ""
    # something visible: no hint
    visible = ("--scope", "acme/agent/user-1", "--as-of", "2026-08-13T12:00:00Z")
    assert call(capsys, "recall", str(store), *visible)[2] == ""
    assert call(capsys, "search", str(store), *visible, "tea")[2] == ""


def test_a_hint_names_a_command_that_can_be_pasted_back(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = store.with_name("it's a store.db")
    odd.write_bytes(store.read_bytes())
    early = ("--scope", "acme/agent/user-1", "--as-of", "2026-08-12T00:00:00Z")
    status, _, err = call(capsys, "recall", str(odd), *early)
    assert status == 0
    pasted = err.rstrip("\n").split("list the scopes with ", 1)[1]
    assert shlex.split(pasted) == ["trueheart", "scopes", str(odd)]
    status, _, err = call(capsys, "erase-subject", str(odd), "--scope", "acme/agent/user-2")
    assert status == 3
    named = err.split("the store has no record of it; ", 1)[1].removesuffix(" lists the scopes)\n")
    assert shlex.split(named) == ["trueheart", "scopes", str(odd)]


def test_a_search_that_matches_but_returns_nothing_hints_at_the_budget(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A search returns whole memories: with a budget smaller than each match, nothing
    is returned though something matched, and the hint says how large a budget
    returns one."""
    visible = ("--scope", "acme/agent/user-1", "--as-of", "2026-08-13T12:00:00Z")
    status, out, _ = call(capsys, "search", str(store), *visible, "tea", "--json")
    smallest = min(item["tokens"] for item in json.loads(out)["items"])
    status, out, err = call(capsys, "search", str(store), *visible, "tea", "--budget", "1")
    assert status == 0
    assert out.splitlines()[-1] == "1 matched, 0 returned, 0 of 1 tokens"
    assert err == (
        "trueheart: hint: 1 memory matches in acme/agent/user-1 as of 2026-08-13T12:00:00Z, "
        f"but none fits in 1 token (the smallest takes {smallest}); try --budget {smallest} "
        "or more\n"
    )
    budget = str(smallest)
    status, out, err = call(capsys, "search", str(store), *visible, "tea", "--budget", budget)
    assert (status, err) == (0, "")
    assert out.splitlines()[-1] == f"1 matched, 1 returned, {smallest} of {smallest} tokens"
    assert call(capsys, "search", str(store), *visible, "tea", "--budget", "1", "--json")[2] == ""


def test_scopes(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert call(capsys, "scopes", str(store)) == (0, "acme/a%2Fb/50%25\nacme/agent/user-1\n", "")
    assert call(capsys, "scopes", str(store), "--owner", "a/b")[1] == "acme/a%2Fb/50%25\n"
    assert call(capsys, "scopes", str(store), "--tenant", "other")[1] == ""
    doc = json.loads(call(capsys, "scopes", str(store), "--json", "--tenant", "acme")[1])
    assert doc == {"scopes": ["acme/a%2Fb/50%25", "acme/agent/user-1"]}


# --- erase-subject on an unknown scope ---------------------------------------------------


@pytest.mark.parametrize("extra", [(), ("--dry-run",), ("--yes",)])
def test_erase_subject_refuses_an_unknown_scope(
    store: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...]
) -> None:
    before = dump(store)
    status, out, err = call(
        capsys, "erase-subject", str(store), "--scope", "acme/agent/user-2", *extra
    )
    assert (status, out) == (3, "")
    assert err == (
        "trueheart: unknown scope: acme/agent/user-2 (the store has no record of it; "
        f"'trueheart scopes {store}' lists the scopes)\n"
    )
    assert dump(store) == before
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert [r.action for r in service.audit(SCOPE)] == ["materialize", "ingest"]


def test_an_erased_scope_can_be_erased_again(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("erase-subject", str(store), "--scope", "acme/agent/user-1", "--json")
    assert call(capsys, *args)[0] == 0
    assert call(capsys, "scopes", str(store))[1] == "acme/a%2Fb/50%25\n"
    status, out, _ = call(capsys, *args)
    assert status == 0 and json.loads(out)["verified"] is True
    unknown = call(capsys, "erase-subject", str(store), "--scope", "acme/agent/x", "--json")
    assert unknown[0] == 3 and json.loads(unknown[1])["error"] == "UnknownScope"


# --- confirmation (stdin made to look like a terminal) -----------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


Answer = Callable[[str], FakeTerminal]


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Answer:
    """Make stdin a terminal holding the given answer."""

    def answering(text: str) -> FakeTerminal:
        fake = FakeTerminal(text)
        monkeypatch.setattr("sys.stdin", fake)
        return fake

    return answering


@pytest.mark.parametrize(
    ("answer", "confirmed"),
    [("y\n", True), ("yes\n", True), ("\n", False), ("", False), ("n\n", False)],
)
def test_forget_asks_on_a_terminal(
    store: Path, capsys: pytest.CaptureFixture[str], terminal: Answer, answer: str, confirmed: bool
) -> None:
    terminal(answer)
    before = dump(store)
    status, out, err = call(capsys, "forget", str(store), "--scope", "acme/agent/user-1", "mem-1")
    prompt = "trueheart: forget mem-1 in acme/agent/user-1? [y/N] "
    if confirmed:
        assert (status, err) == (0, prompt)
        assert out.startswith("forgot mem-1;")
    else:
        assert (status, out, err) == (1, "", prompt + "trueheart: not confirmed\n")
        assert dump(store) == before


def test_forget_on_a_terminal_refuses_a_missing_memory_before_asking(
    store: Path, capsys: pytest.CaptureFixture[str], terminal: Answer
) -> None:
    terminal("y\n")
    status, _, err = call(capsys, "forget", str(store), "--scope", "acme/agent/user-1", "nope")
    assert (status, err) == (3, "trueheart: entity not found: nope\n")


@pytest.mark.parametrize(("answer", "confirmed"), [("user-1\n", True), ("y\n", False), ("", False)])
def test_erase_subject_asks_for_the_subject_id_on_a_terminal(
    store: Path, capsys: pytest.CaptureFixture[str], terminal: Answer, answer: str, confirmed: bool
) -> None:
    terminal(answer)
    before = dump(store)
    status, out, err = call(capsys, "erase-subject", str(store), "--scope", "acme/agent/user-1")
    prompt = (
        "trueheart: erase everything held in acme/agent/user-1? "
        "type the subject ID (user-1) to confirm: "
    )
    assert err.startswith(prompt)
    if confirmed:
        assert status == 0 and out.rstrip().endswith("verified: yes")
    else:
        assert (status, out, err) == (1, "", prompt + "trueheart: not confirmed\n")
        assert dump(store) == before


def test_yes_and_dry_run_do_not_ask(
    store: Path, capsys: pytest.CaptureFixture[str], terminal: Answer
) -> None:
    terminal("")  # an answer would be read as "no"
    args = ("erase-subject", str(store), "--scope", "acme/agent/user-1")
    status, _, err = call(capsys, *args, "--dry-run")
    assert (status, err) == (
        0,
        "trueheart: planning the erasure of acme/agent/user-1 in " + f"{store}\n",
    )
    status, _, err = call(capsys, *args, "-y")
    assert (status, err) == (0, f"trueheart: erasing acme/agent/user-1 in {store}\n")


def test_off_a_terminal_nothing_asks(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("no\n"))
    status, out, err = call(capsys, "forget", str(store), "--scope", "acme/agent/user-1", "mem-1")
    assert (status, err) == (0, "")
    assert out.startswith("forgot mem-1;")


# --- interrupts, broken pipes and bugs, simulated -----------------------------------------


def _raising(error: BaseException) -> Any:
    def run(*_: object) -> int:
        raise error

    return run


@pytest.mark.usefixtures("sigint_restored")
def test_an_interrupt_is_status_130(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "stats", _raising(KeyboardInterrupt()))
    assert call(capsys, "stats", str(store)) == (130, "", "trueheart: interrupted\n")
    status, out, err = call(capsys, "stats", str(store), "--json")
    assert (status, err) == (130, "trueheart: interrupted\n")
    assert json.loads(out) == {"error": "interrupted", "message": "interrupted", "exit_status": 130}
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a second Ctrl-C is ignored


class _SchemaBroken(Exception):
    """What a third-party import interrupted part-way may raise instead."""


def _interrupted_into_another_error(stop: KeyboardInterrupt) -> Any:
    def run(*_: object) -> int:
        try:
            raise stop
        except KeyboardInterrupt:
            raise _SchemaBroken("half-built") from None

    return run


@pytest.mark.usefixtures("sigint_restored")
@pytest.mark.parametrize(
    ("stop", "name", "status"),
    [(KeyboardInterrupt(), "interrupted", 130), (cli._Terminated(), "terminated", 143)],
)
def test_an_interruption_another_error_was_raised_while_handling_keeps_its_status(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stop: KeyboardInterrupt,
    name: str,
    status: int,
) -> None:
    """Code that catches the interruption and raises an error of its own (as a
    third-party import stopped part-way may): still Ctrl-C or SIGTERM, not an internal
    error."""
    monkeypatch.setattr(commands, "stats", _interrupted_into_another_error(stop))
    assert call(capsys, "stats", str(store)) == (status, "", f"trueheart: {name}\n")


@pytest.fixture
def sigterm_noted() -> Iterator[list[int]]:
    """SIGTERM noted in the list this yields (instead of ending the tests) while the
    test runs; the handler before it is put back after."""
    noted: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda number, frame: noted.append(number))
    try:
        yield noted
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminating(*_: object) -> int:
    """A command that gets SIGTERM part-way, and waits for it to land."""
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(200):
        time.sleep(0.01)
    return 0


@pytest.mark.usefixtures("sigint_restored")
def test_a_sigterm_is_status_143_and_the_handler_is_put_back(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sigterm_noted: list[int],
) -> None:
    """SIGTERM (``timeout``, ``systemctl stop``) interrupts a command as Ctrl-C does,
    with its own status; the handler that was in place is in place again after."""
    noted = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(commands, "stats", _terminating)
    assert call(capsys, "stats", str(store)) == (143, "", "trueheart: terminated\n")
    assert signal.getsignal(signal.SIGTERM) is noted
    status, out, err = call(capsys, "stats", str(store), "--json")
    assert (status, err) == (143, "trueheart: terminated\n")
    assert json.loads(out) == {"error": "terminated", "message": "terminated", "exit_status": 143}
    assert signal.getsignal(signal.SIGTERM) is noted
    assert sigterm_noted == []  # every SIGTERM was the command's
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # nor does a Ctrl-C then


def test_a_command_in_another_thread_leaves_sigterm_alone(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the main thread may set a signal handler: elsewhere, ``main`` runs without."""
    before = signal.getsignal(signal.SIGTERM)
    statuses: list[int] = []
    thread = threading.Thread(target=lambda: statuses.append(main(["stats", str(store)])))
    thread.start()
    thread.join()
    assert statuses == [0]
    assert capsys.readouterr().err == ""
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_broken_pipe_is_status_141_and_quiet(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "audit", _raising(BrokenPipeError()))
    args = ("audit", str(store), "--scope", "acme/agent/user-1", "--json")
    assert call(capsys, *args) == (141, "", "")


def test_an_unexpected_exception_shows_only_its_class(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "stats", _raising(KeyError("Drinks green tea.")))
    status, out, err = call(capsys, "stats", str(store), "--json")
    assert status == 1
    assert err == "trueheart: internal error (KeyError); please report it\n"
    assert json.loads(out)["error"] == "KeyError"
    assert "green tea" not in out + err


def test_a_subject_id_with_spaces_is_confirmed_as_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], terminal: Answer
) -> None:
    spaced = Scope("acme", "agent", " bob ")
    path = tmp_path / "spaced.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event("evt-1", spaced, "I drink green tea.")])
    for answer, status in (("bob\n", 1), (" bob \n", 0)):
        terminal(answer)
        assert call(capsys, "erase-subject", str(path), "--scope", "acme/agent/ bob ")[0] == status


# --- output ------------------------------------------------------------------------------


def test_times_given_with_an_offset_are_printed_in_utc(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (
        ("recall", str(store), "--scope", "acme/agent/user-1"),
        ("search", str(store), "--scope", "acme/agent/user-1", "tea"),
    ):
        status, out, _ = call(capsys, *command, "--as-of", "2026-08-13T14:00:00+02:00", "--json")
        assert status == 0 and json.loads(out)["as_of"] == "2026-08-13T12:00:00Z"
    status, out, err = call(capsys, "expire", str(store), "--at", "2026-08-13T14:00:00+02:00")
    assert status == 0 and out.endswith("due by 2026-08-13T12:00:00Z\n"), (out, err)


def test_stored_control_characters_are_escaped_in_text_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = Scope("acme\nevil", "agent\x1b[2J", "user")
    path = tmp_path / "odd.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event("evt\x1b[31m", forged, "body")])
    status, out, _ = call(capsys, "scopes", str(path))
    assert (status, out) == (0, "acme%0Aevil/agent%1B[2J/user\n")
    status, out, _ = call(
        capsys, "delete-event", str(path), "--scope", out.strip(), "evt\x1b[31m", "--yes"
    )
    assert status == 0 and "\x1b" not in out and out.startswith("deleted evt\\x1b[31m;"), out


def test_a_table_cell_escapes_a_newline_or_a_tab_and_each_row_stays_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """IDs that differ only by a newline, a tab or a run of spaces are shown apart (not
    each as one space), and a clipped body never ends inside an escape."""
    path = tmp_path / "odd.db"
    ids = ("evt\n1", "evt\t1", "evt 1", "evt  1")
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event(event_id, SCOPE, "body") for event_id in ids])
        for number, content in enumerate(("Line one.\nLine two.", "x" * 57 + "\x1b[31m")):
            service.materialize_once(_memory(f"mem-{number}", SCOPE, "evt 1", content))
    where = ("--scope", "acme/agent/user-1")
    status, out, _ = call(capsys, "audit", str(path), *where, "--limit", "100")
    header, *rows = out.splitlines()
    assert status == 0 and len(rows) == 6
    start, end = header.index("ENTITY ID"), header.index("REASON")
    shown = {row[start:end].rstrip() for row in rows if "raw_event" in row}
    assert shown == {"evt\\n1", "evt\\t1", "evt 1", "evt  1"}
    status, out, _ = call(capsys, "recall", str(path), *where, "--as-of", "2026-08-14T00:00:00Z")
    rows = out.splitlines()[1:]
    assert status == 0 and len(rows) == 2
    assert any(row.endswith("  Line one.\\nLine two.") for row in rows), rows
    assert any(row.endswith("  " + "x" * 57 + "…") for row in rows), rows


def test_a_scope_shown_names_that_scope_and_no_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A subject with a newline and one with a backslash and an ``n`` are shown apart, and
    # the line shown for one, passed back, erases that one only.
    meant, bystander = Scope("t", "o", "user\nname"), Scope("t", "o", "user\\nname")
    path = tmp_path / "odd.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event("e1", meant, "body"), _event("e1", bystander, "body")])
    status, out, _ = call(capsys, "scopes", str(path))
    assert (status, out) == (0, "t/o/user%0Aname\nt/o/user\\nname\n")
    shown = out.splitlines()[0]
    status, out, _ = call(capsys, "erase-subject", str(path), "--scope", shown, "--yes")
    assert status == 0 and out.startswith(f"scope        {shown}\n"), out
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        assert service.scopes() == (bystander,)


def test_demo_makes_a_sqlite_file_only_and_leaves_nothing_when_it_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://agent@127.0.0.1:1/memory"
    status, _, err = call(capsys, "demo", url)
    assert (status, err) == (1, f"trueheart: {url}: demo creates a new SQLite file\n")
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "demo.db"
    status, _, err = call(capsys, "demo", str(path), "--at", "9999-12-31T00:00:00Z")
    assert status == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_store_error_names_the_store_and_never_a_password() -> None:
    busy = trueheart_core.RepositoryBusy("stats failed")
    assert message_of(busy, "/data/memory.db") == "/data/memory.db: repository busy: stats failed"
    url = "postgresql://ada:s3cret@127.0.0.1:5432/app?sslpassword=k3y&schema=mem"
    shown = message_of(busy, url)
    assert shown == (
        "postgresql://ada:***@127.0.0.1:5432/app?sslpassword=***&schema=mem: "
        "repository busy: stats failed"
    )
    # An error about an entity, not the store, names no store.
    assert message_of(trueheart_core.EntityNotFound("mem-1"), url) == "entity not found: mem-1"
