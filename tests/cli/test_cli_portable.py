"""``trueheart export`` and ``trueheart import``, run as ``python -m trueheart_core.cli``
in a child process: files and stdout, scopes, reports, refusals and exit statuses."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import COMMAND, child_env, run_bytes

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.cli import main as cli_main
from trueheart_core.cli import portable as portable_cli
from trueheart_core.service.portable import MAX_LINE_BYTES

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent", "user-1")
ODD = Scope("acme", "a/b", "50%")
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
SIDE_FILE = "must not be the side file of another database"


def run(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    # The export is UTF-8 whatever the locale says.
    return run_bytes(cwd, *args, extra_env={"PYTHONIOENCODING": "ascii"}, stdin=stdin)


def ok_json(cwd: Path, *args: str) -> Any:
    done = run(cwd, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def last_error(done: subprocess.CompletedProcess[bytes]) -> str:
    assert b"Traceback" not in done.stderr
    return done.stderr.decode().splitlines()[-1]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events(
            [
                RawEventDraft("evt-1", SCOPE, source, "I drink green tea. ✓", RETENTION),
                RawEventDraft("evt-2", SCOPE, source, "My sister lives in Lisbon.", RETENTION),
                RawEventDraft("evt-1", ODD, source, "odd scope body", RETENTION),
            ]
        )
        for memory_id, scope, event_id, content in (
            ("mem-1", SCOPE, "evt-1", "Drinks green tea."),
            ("mem-2", SCOPE, "evt-2", "Sister in Lisbon."),
            ("mem-3", SCOPE, "evt-2", "Visits Lisbon often."),
            ("mem-1", ODD, "evt-1", "odd scope memory"),
        ):
            service.materialize_once(
                MemoryDraft(
                    memory_id, scope, content, (event_id,), "fact", TrustLevel.OBSERVED, NOW
                )
            )
        service.govern(
            GovernanceCommand(
                SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "mem-3", NOW, "request"
            )
        )
    return path


def _recall(path: Path, scope: Scope) -> object:
    with TrueHeart(SQLiteRepository(path, read_only=True)) as service:
        return service.recall(RecallQuery(scope, NOW))


def test_export_to_a_file_and_import_it_into_a_new_store(store: Path, tmp_path: Path) -> None:
    exported = ok_json(tmp_path, "export", str(store), "--output", "out.jsonl")
    assert exported["rows"] == sum(exported["rows_by_kind"].values())
    assert exported["rows_by_kind"]["memory"] == 3 and exported["scope"] is None
    lines = (tmp_path / "out.jsonl").read_bytes().decode("utf-8").splitlines()
    assert json.loads(lines[0])["format"] == "trueheart-export"
    assert "✓" in lines[1] + lines[2] + lines[3] + lines[4] + lines[5] + lines[6]
    imported = ok_json(tmp_path, "import", "new.db", "out.jsonl")
    assert (imported["rows"], imported["digest"]) == (exported["rows"], exported["digest"])
    assert imported["search_entries"] == 3
    for scope in (SCOPE, ODD):
        assert _recall(tmp_path / "new.db", scope) == _recall(store, scope)
    verified = run(tmp_path, "verify", "new.db")
    assert verified.returncode == 0, verified.stderr


def test_export_to_stdout_reports_on_stderr_and_pipes_into_import(
    store: Path, tmp_path: Path
) -> None:
    done = run(tmp_path, "export", str(store), "--scope", "acme/a%2Fb/50%25")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode("utf-8").splitlines()
    assert json.loads(lines[0])["scope"] == {
        "tenant_id": "acme",
        "owner_id": "a/b",
        "subject_id": "50%",
    }
    assert last_error(done).startswith(f"trueheart: exported {len(lines) - 2} rows, digest ")
    imported = run(tmp_path, "import", "odd.db", "-", "--json", stdin=done.stdout)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["scope"] == "acme/a%2Fb/50%25"
    assert _recall(tmp_path / "odd.db", ODD) == _recall(store, ODD)
    assert _recall(tmp_path / "odd.db", SCOPE) == ()


def test_text_reports(store: Path, tmp_path: Path) -> None:
    done = run(tmp_path, "export", str(store), "-o", "out.jsonl")
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    assert text.startswith("scope ") and "(whole store)" in text
    assert "rows of kind event" in text and "digest" in text and "exported_at" in text
    done = run(tmp_path, "import", "new.db", "out.jsonl")
    assert done.returncode == 0, done.stderr
    assert "search_entries" in done.stdout.decode()


def test_export_refuses_an_existing_output_and_json_to_stdout(store: Path, tmp_path: Path) -> None:
    (tmp_path / "taken.jsonl").write_text("mine", encoding="utf-8")
    done = run(tmp_path, "export", str(store), "-o", "taken.jsonl")
    assert done.returncode == 1
    assert last_error(done) == "trueheart: taken.jsonl: must not exist (export writes a new file)"
    assert (tmp_path / "taken.jsonl").read_text(encoding="utf-8") == "mine"
    done = run(tmp_path, "export", str(store), "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"] == "ExportNeedsOutput"
    missing = run(tmp_path, "export", "missing.db", "-o", "x.jsonl")
    assert missing.returncode == 3 and not (tmp_path / "x.jsonl").exists()
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize("output", ["", "sub/", ".", "sub/.."])
def test_export_refuses_an_output_that_names_no_file(
    store: Path, tmp_path: Path, output: str
) -> None:
    # Found before the store is opened, as a usage error: nothing is read or written.
    (tmp_path / "sub").mkdir()
    before = sorted(os.listdir(tmp_path)), store.read_bytes()
    done = run(tmp_path, "export", str(store), "-o", output, "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"] == "OutputNamesNoFile"
    assert last_error(done).startswith("trueheart: --output must be the path of a file, not ")
    assert (sorted(os.listdir(tmp_path)), store.read_bytes()) == before
    assert os.listdir(tmp_path / "sub") == []


def test_import_refuses_a_store_that_is_not_empty(store: Path, tmp_path: Path) -> None:
    assert run(tmp_path, "export", str(store), "-o", "out.jsonl").returncode == 0
    before = store.read_bytes()
    done = run(tmp_path, "import", str(store), "out.jsonl")
    assert done.returncode == 1
    assert last_error(done) == "trueheart: import refused: the target store is not empty"
    assert store.exists() and _recall(store, SCOPE) != ()
    assert len(store.read_bytes()) == len(before)


def test_a_refused_import_leaves_no_new_store(store: Path, tmp_path: Path) -> None:
    assert run(tmp_path, "export", str(store), "-o", "out.jsonl").returncode == 0
    whole = (tmp_path / "out.jsonl").read_bytes()
    (tmp_path / "cut.jsonl").write_bytes(whole[: len(whole) // 2])
    done = run(tmp_path, "import", "new.db", "cut.jsonl", "--json")
    assert done.returncode == 1
    error = json.loads(done.stdout)
    assert error["error"] == "ImportRefused"
    assert error["message"].startswith("import refused: line ")
    assert "tea" not in error["message"] and "Lisbon" not in error["message"]
    assert [p.name for p in tmp_path.iterdir() if "new.db" in p.name] == []
    # nor the directories it made for the store
    done = run(tmp_path, "import", "made/for/it/new.db", "cut.jsonl")
    assert done.returncode == 1 and not (tmp_path / "made").exists()
    missing = run(tmp_path, "import", "new.db", "nothing.jsonl")
    assert missing.returncode == 3
    assert last_error(missing) == "trueheart: nothing.jsonl: export file not found"
    assert not (tmp_path / "new.db").exists()


@pytest.mark.parametrize("target", ["new.db/", ""])
def test_import_refuses_a_path_that_names_no_file_before_reading(
    store: Path, tmp_path: Path, target: str
) -> None:
    """A ``DB`` ending in ``/`` (or empty) is refused before the import, naming it as
    typed, rather than after it, naming a temporary file already removed."""
    assert run(tmp_path, "export", str(store), "-o", "out.jsonl").returncode == 0
    done = run(tmp_path, "import", target, "out.jsonl")
    assert done.returncode == 2
    assert last_error(done).startswith(
        f"trueheart import: error: argument DB: must be the path of a file, not {target}"
    )
    assert b"importing" not in done.stderr
    assert [p.name for p in tmp_path.iterdir() if "new.db" in p.name] == []


def test_import_into_an_existing_empty_store(store: Path, tmp_path: Path) -> None:
    assert run(tmp_path, "export", str(store), "-o", "out.jsonl").returncode == 0
    SQLiteRepository(tmp_path / "empty.db").close()
    imported = ok_json(tmp_path, "import", "empty.db", "out.jsonl")
    assert imported["rows_by_kind"]["memory"] == 3


def _importing_stdin(cwd: Path) -> subprocess.Popen[bytes]:
    """``trueheart import new.db -`` started in ``cwd``, its three streams piped."""
    return subprocess.Popen(
        [*COMMAND, "import", "new.db", "-"],
        cwd=cwd,
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_an_import_never_replaces_or_removes_a_store_created_meanwhile(
    store: Path, tmp_path: Path
) -> None:
    """Another process creates a store at the path while the import reads its file: the
    import is refused and that store is left as it was; nothing else stays behind."""
    export = run(tmp_path, "export", str(store))
    assert export.returncode == 0, export.stderr
    importing = _importing_stdin(tmp_path)
    assert importing.stdin is not None and importing.stderr is not None
    half = len(export.stdout) // 2
    importing.stdin.write(export.stdout[:half])
    importing.stdin.flush()
    # Once it says so, the import has found no file at the path and has begun.
    assert importing.stderr.readline() == b"trueheart: importing stdin into new.db\n"
    source = SourceRef("other", "chat", NOW, TrustLevel.OBSERVED)
    with TrueHeart(SQLiteRepository(tmp_path / "new.db"), clock=lambda: NOW) as service:
        service.ingest_event(RawEventDraft("evt-other", SCOPE, source, "theirs", RETENTION))
    out, err = importing.communicate(export.stdout[half:], timeout=120)
    assert out == b""
    assert importing.returncode == 1, err
    assert err.decode().splitlines()[-1] == (
        "trueheart: new.db: must not exist (another process created it during the import)"
    )
    with TrueHeart(SQLiteRepository(tmp_path / "new.db", read_only=True)) as service:
        assert service.get_receipt(SCOPE, "evt-other").event_id == "evt-other"
        assert service.stats().memories == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".new.db")] == []


def test_an_import_killed_outright_leaves_its_temporary_store(store: Path, tmp_path: Path) -> None:
    """SIGKILL cannot be caught: the temporary store the guide tells the operator to
    remove stays beside the target, and nothing is at the target itself."""
    export = run(tmp_path, "export", str(store))
    assert export.returncode == 0, export.stderr
    importing = _importing_stdin(tmp_path)
    assert importing.stdin is not None
    importing.stdin.write(export.stdout[: len(export.stdout) // 2])
    importing.stdin.flush()
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".new.db.import-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    importing.kill()
    importing.communicate(timeout=60)
    assert list(tmp_path.glob(".new.db.import-*"))
    assert not (tmp_path / "new.db").exists()


def test_import_refuses_a_line_too_long_without_reading_it_whole(tmp_path: Path) -> None:
    """Standard input is read in bounded pieces: a line over the bound is refused once
    the bound is passed, while the rest of the line has not even been written (standard
    input stays open), and nothing is stored."""
    header = (
        b'{"exported_at":"2026-08-13T12:00:00.000000Z","format":"trueheart-export",'
        b'"schema":8,"scope":null,"version":1}\n'
    )
    importing = _importing_stdin(tmp_path)
    assert importing.stdin is not None and importing.stderr is not None
    try:
        try:
            importing.stdin.write(header + b'{"kind":"event","x":"' + b"a" * MAX_LINE_BYTES)
            importing.stdin.flush()
        except BrokenPipeError:  # it stopped reading once the bound was passed
            pass
        # Had it waited for the end of the line, it would wait here for ever.
        assert importing.wait(timeout=120) == 1
        err = importing.stderr.read().decode()
    finally:
        importing.kill()
        importing.wait()
        for stream in (importing.stdin, importing.stdout, importing.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    assert err.splitlines()[-1] == (
        "trueheart: import refused: line 2: line too long (over 16 MiB)"
    )
    assert [p.name for p in tmp_path.iterdir() if "new.db" in p.name] == []


@pytest.mark.parametrize("suffix", ["-wal", "-journal", "-shm"])
def test_a_new_file_at_the_side_file_path_of_another_is_refused(
    store: Path, tmp_path: Path, suffix: str
) -> None:
    """``export -o``, ``import`` and ``demo`` refuse to create a file at the WAL, journal
    or shared-memory path of an existing file, which SQLite would take for that
    database's log and remove, as ``backup`` refuses it: before anything is written."""
    assert run(tmp_path, "export", str(store), "-o", "out.jsonl").returncode == 0
    SQLiteRepository(tmp_path / "w.db").close()
    before = sorted(p.name for p in tmp_path.iterdir())
    side = f"w.db{suffix}"
    for args in (
        ("export", str(store), "-o", side),
        ("import", side, "out.jsonl"),
        ("demo", side, "--at", "2026-01-15T09:00:00Z"),
        ("backup", str(store), side),
    ):
        done = run(tmp_path, *args)
        assert done.returncode == 1, (args, done.stderr)
        assert last_error(done) == f"trueheart: {side}: {SIDE_FILE}"
        assert sorted(p.name for p in tmp_path.iterdir()) == before, args
    done = run(tmp_path, "export", str(store), "-o", side, "--json")
    assert json.loads(done.stdout) == {
        "error": "TargetRefused",
        "exit_status": 1,
        "message": f"{side}: {SIDE_FILE}",
    }


def test_an_export_file_is_readable_by_its_owner_only(store: Path, tmp_path: Path) -> None:
    """It holds every body, as a backup does, and is created with the same mode."""
    old = os.umask(0o022)
    try:
        assert run(tmp_path, "export", str(store), "-o", "out.jsonl").returncode == 0
    finally:
        os.umask(old)
    assert (tmp_path / "out.jsonl").stat().st_mode & 0o777 == 0o600


def test_an_import_into_a_new_file_holds_what_its_log_held(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new file alone is linked into place and its temporary name's log is removed:
    when the store's own close did not copy the log into the file (SQLite says nothing
    when that fails; here another connection keeps the store open, so the close is not
    the last), the import copies it before linking, and the new store holds it all."""
    export = tmp_path / "out.jsonl"
    assert run(tmp_path, "export", str(store), "--output", str(export)).returncode == 0
    held: list[sqlite3.Connection] = []
    real = portable_cli.opened

    @contextlib.contextmanager
    def kept_open(args: Any, **options: Any) -> Iterator[Any]:
        with real(args, **options) as service:
            yield service
            other = sqlite3.connect(args.db)
            other.execute("SELECT count(*) FROM sqlite_master").fetchall()  # it has the log open
            held.append(other)  # idle: no transaction of its own

    monkeypatch.setattr(portable_cli, "opened", kept_open)
    try:
        assert cli_main(["import", str(tmp_path / "new.db"), str(export)]) == 0
    finally:
        for conn in held:
            conn.close()
    assert len(held) == 1
    for scope in (SCOPE, ODD):
        assert _recall(tmp_path / "new.db", scope) == _recall(store, scope)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".new.db")] == []
