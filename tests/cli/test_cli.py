"""The ``trueheart`` command line, run as ``python -m trueheart_core.cli`` in a child
process against stores built through the library: JSON documents, text tables, exit
statuses and error lines."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import (  # noqa: F401 - sigint_restored is a fixture
    call,
    child_env,
    run_bytes,
    run_text,
    sigint_restored,
)
from store_dump import dump

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.cli import demo, newfile
from trueheart_core.cli.scopes import format_scope

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
AT = "2026-08-14T00:00:00Z"
SCOPE = Scope("acme", "agent", "user-1")
ODD = Scope("acme", "a/b", "50%")
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
STATS_KEYS = {
    "scope",
    "events",
    "events_with_body",
    "events_without_body",
    "memories",
    "active_memories",
    "sealed_memories",
    "memories_by_kind",
    "claims",
    "extraction_records",
    "tombstones",
    "audit_records",
    "search_entries",
    "search_terms",
    "search_postings",
    "vectors",
    "storage_bytes",
    "database_bytes",
    "wal_bytes",
}


run = run_text


def ok_json(cwd: Path, *args: str) -> Any:
    done = run(cwd, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def failed(done: subprocess.CompletedProcess[str], status: int, message: str) -> None:
    assert done.returncode == status, (done.stdout, done.stderr)
    assert done.stderr.splitlines()[-1] == f"trueheart: {message}"
    assert "Traceback" not in done.stderr and done.stdout == ""


def _event(event_id: str, scope: Scope, content: str) -> RawEventDraft:
    return RawEventDraft(
        event_id, scope, SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED), content, RETENTION
    )


def _memory(memory_id: str, scope: Scope, source: str, content: str) -> MemoryDraft:
    return MemoryDraft(memory_id, scope, content, (source,), "fact", TrustLevel.OBSERVED, NOW)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events(
            [
                _event("evt-1", SCOPE, "I drink green tea."),
                _event("evt-2", SCOPE, "My sister lives in Lisbon."),
                _event("evt-1", ODD, "odd scope body"),
            ]
        )
        service.materialize_once(_memory("mem-1", SCOPE, "evt-1", "Drinks green tea."))
        service.materialize_once(_memory("mem-2", SCOPE, "evt-2", "Sister in Lisbon."))
        service.materialize_once(_memory("mem-3", SCOPE, "evt-2", "Visits Lisbon often."))
        service.materialize_once(_memory("mem-1", ODD, "evt-1", "odd scope memory"))
        service.govern(
            GovernanceCommand(
                SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "mem-3", NOW, "request"
            )
        )
    return path


# --- demo ------------------------------------------------------------------------------


def test_demo_walks_through_the_lifecycle(tmp_path: Path) -> None:
    done = run(tmp_path, "demo", "demo.db")
    assert done.returncode == 0, done.stderr
    names = [line.split(":", 1)[0] for line in done.stdout.splitlines()]
    assert names == [
        "1. create",
        "2. ingest",
        "3. materialize",
        "4. search",
        "5. seal",
        "6. forget",
        "7. erase-subject",
        "8. verify",
    ]
    assert "verified: yes" in done.stdout and "8. verify: ok" in done.stdout
    assert (tmp_path / "demo.db").is_file()
    again = run(tmp_path, "demo", "demo.db")
    failed(again, 1, "demo.db: must not exist (demo creates a new store)")


def test_demo_writes_its_path_with_its_unprintable_characters_escaped(tmp_path: Path) -> None:
    done = run(tmp_path, "demo", "esc\x1b[31mred\nx.db")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first == f"1. create: new store at {tmp_path}/esc\\x1b[31mred\\nx.db"
    assert "\x1b" not in done.stdout
    assert (tmp_path / "esc\x1b[31mred\nx.db").is_file()


def test_demo_json(tmp_path: Path) -> None:
    doc = ok_json(tmp_path, "demo", "demo.db")
    assert doc["path"] == str(tmp_path / "demo.db")
    steps = {step["step"]: step for step in doc["steps"]}
    assert steps["search"]["ids"] == ["mem-1"]
    assert steps["erase-subject"]["verified"] is True
    assert steps["erase-subject"]["erased"]["memory"] == 2
    assert steps["verify"]["ok"] is True


def _opened_after(made: Any) -> Any:
    """``stores.open_repository`` that first runs ``made()``: another process's file
    created at the demo's path while the demo builds its store."""
    opener = demo.stores.open_repository

    def open_repository(*args: Any, **kwargs: Any) -> Any:
        made()
        return opener(*args, **kwargs)

    return open_repository


def test_demo_never_writes_into_or_removes_a_store_created_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "demo.db"

    def theirs() -> None:
        source = SourceRef("other", "chat", NOW, TrustLevel.OBSERVED)
        with TrueHeart(SQLiteRepository(target), clock=lambda: NOW) as service:
            service.ingest_event(RawEventDraft("evt-other", SCOPE, source, "theirs", RETENTION))

    monkeypatch.setattr(demo.stores, "open_repository", _opened_after(theirs))
    status, _, err = call(capsys, "demo", str(target))
    assert status == 1
    assert err.splitlines()[-1] == (
        f"trueheart: {target}: must not exist (another process created it during the demo)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.db"]
    with TrueHeart(SQLiteRepository(target, read_only=True)) as service:
        assert service.scopes() == (SCOPE,)
        assert service.get_receipt(SCOPE, "evt-other").event_id == "evt-other"


def test_demo_never_removes_a_file_created_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "demo.db"
    monkeypatch.setattr(
        demo.stores, "open_repository", _opened_after(lambda: target.write_bytes(b"theirs"))
    )
    status, _, _ = call(capsys, "demo", str(target))
    assert status == 1
    assert target.read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.db"]


def _long_path(root: Path, total: int, name: str) -> Path:
    """A path of ``total`` bytes under ``root`` ending in the file name ``name``."""
    directory = root
    while len(os.fsencode(directory / name)) < total - 120:
        directory = directory / ("d" * 100)
    pad = total - len(os.fsencode(directory / name)) - 1
    directory = directory / ("p" * pad)
    path = directory / name
    assert len(os.fsencode(path)) == total
    return path


@pytest.mark.parametrize("total", [460, 481])
def test_demo_and_import_create_a_store_at_any_path_a_new_store_may_have(
    tmp_path: Path, total: int, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "a-store-with-a-long-name.db"
    demo_path = _long_path(tmp_path / "demo", total, name)
    import_path = _long_path(tmp_path / "import", total, name)
    assert call(capsys, "demo", str(demo_path))[0] == 0
    export = tmp_path / "export.jsonl"
    assert call(capsys, "export", str(demo_path), "--output", str(export))[0] == 0
    status, _, err = call(capsys, "import", str(import_path), str(export))
    assert status == 0, err
    assert sorted(p.name for p in import_path.parent.iterdir()) == [name]
    with TrueHeart(SQLiteRepository(import_path, read_only=True)) as service:
        assert service.verify_integrity().ok


@pytest.mark.parametrize("total", [482, 520])
@pytest.mark.parametrize("command", ["demo", "import"])
def test_a_path_longer_than_a_new_store_may_have_is_refused(
    tmp_path: Path, total: int, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _long_path(tmp_path / "made", total, "n" * 150 + ".db")
    export = tmp_path / "export.jsonl"
    export.write_text("")
    args = [str(path)] if command == "demo" else [str(path), str(export)]
    status, _, err = call(capsys, command, *args)
    assert status == 1
    assert err.splitlines()[-1] == (
        f"trueheart: {path}: must be at most 481 bytes long for a new store"
    )
    assert not (tmp_path / "made").exists()


@pytest.mark.usefixtures("sigint_restored")
def test_a_demo_stopped_just_after_its_link_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    link = os.link
    path = tmp_path / "new" / "demo.db"

    def link_then_stopped(source: str, target: str) -> None:
        link(source, target)
        if target == str(path):  # not the library's own link of a new store
            raise KeyboardInterrupt

    monkeypatch.setattr(newfile.os, "link", link_then_stopped)
    status, _, err = call(capsys, "demo", str(path))
    assert status == 130
    assert err.splitlines()[-1] == "trueheart: interrupted"
    assert list(tmp_path.iterdir()) == []


def test_a_short_name_at_the_longest_path_is_refused_with_its_own_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _long_path(tmp_path, 481, "a.db")
    status, _, err = call(capsys, "demo", str(path))
    assert status == 1
    assert err.splitlines()[-1] == (
        f"trueheart: {path}: must be at most 468 bytes long for a store that demo creates"
    )
    assert not path.parent.exists()


# --- read-only commands ------------------------------------------------------------------


def test_stats_json_and_text(store: Path) -> None:
    doc = ok_json(store.parent, "stats", str(store))
    assert set(doc) == STATS_KEYS
    assert (doc["scope"], doc["events"], doc["memories"], doc["tombstones"]) == (None, 3, 3, 1)
    assert doc["memories_by_kind"] == {"fact": 3}
    assert doc["database_bytes"] == store.stat().st_size
    scoped = ok_json(store.parent, "stats", str(store), "--scope", "acme/agent/user-1")
    assert (scoped["scope"], scoped["memories"], scoped["active_memories"]) == (
        "acme/agent/user-1",
        2,
        2,
    )
    text = run(store.parent, "stats", str(store))
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    rows = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in lines)
    assert rows["scope"] == "(whole store)"
    assert (rows["events_with_body"], rows["memories of kind fact"], rows["claims"]) == (
        "3",
        "3",
        "0",
    )
    # every value starts in the same column
    assert len({len(line) - len(line.split("  ")[-1].lstrip()) for line in lines}) == 1


def test_verify_clean(store: Path) -> None:
    done = run(store.parent, "verify", str(store))
    assert done.returncode == 0
    assert done.stdout.startswith("ok: ") and done.stdout.endswith(" rows checked, no problems\n")
    assert done.stderr == f"trueheart: verifying {store}\n"
    doc = ok_json(store.parent, "verify", str(store), "--scope", "acme/agent/user-1")
    assert doc["ok"] is True and doc["problems"] == [] and doc["rows_checked"] > 0


def test_verify_reports_a_tampered_row_with_status_4(store: Path) -> None:
    conn = sqlite3.connect(store)
    with conn:
        conn.execute("UPDATE memories SET content = 'forged' WHERE memory_id = 'mem-2'")
    conn.close()
    done = run(store.parent, "verify", str(store))
    assert done.returncode == 4
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["ENTITY", "TYPE", "ENTITY", "ID", "SCOPE", "CODE"]
    assert lines[1].split() == ["memory", "mem-2", "acme/agent/user-1", "digest_mismatch"]
    assert lines[-1].startswith("1 problem in ")
    doc = json.loads(run(store.parent, "verify", str(store), "--json").stdout)
    assert doc["ok"] is False
    assert doc["problems"][0] == {
        "code": "digest_mismatch",
        "entity_id": "mem-2",
        "entity_type": "memory",
        "scope": "acme/agent/user-1",
    }
    # a read of the tampered row fails closed: corruption, status 4
    shown = run(store.parent, "show", str(store), "--scope", "acme/agent/user-1", "mem-2")
    failed(shown, 4, f"{store}: repository corruption: invalid memory record")


def test_a_damaged_file_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    message = f"{path}: repository corruption: invalid schema catalog"
    failed(run(tmp_path, "stats", str(path)), 4, message)
    failed(run(tmp_path, "verify", str(path)), 4, message)


def test_audit(store: Path) -> None:
    doc = ok_json(store.parent, "audit", str(store), "--scope", "acme/agent/user-1", "--limit", "2")
    assert doc["scope"] == "acme/agent/user-1"
    assert [(r["action"], r["entity_id"]) for r in doc["records"]] == [
        ("forget", "mem-3"),
        ("materialize", "mem-3"),
    ]
    assert set(doc["records"][0]) == {
        "audit_id",
        "occurred_at",
        "action",
        "entity_type",
        "entity_id",
        "reason",
    }
    text = run(store.parent, "audit", str(store), "--scope", "acme/agent/user-1")
    header, first = text.stdout.splitlines()[:2]
    assert header.split() == [
        "OCCURRED",
        "AT",
        "ACTION",
        "ENTITY",
        "TYPE",
        "ENTITY",
        "ID",
        "REASON",
    ]
    assert first.split()[:4] == ["2026-08-13T12:00:00Z", "forget", "memory", "mem-3"]
    # the columns line up under their headers
    assert header.index("ACTION") == first.index("forget")


def test_recall_and_search(store: Path) -> None:
    args = ("--scope", "acme/agent/user-1", "--as-of", "2026-08-13T12:00:00+00:00")
    doc = ok_json(store.parent, "recall", str(store), *args)
    assert [item["memory_id"] for item in doc["items"]] == ["mem-1", "mem-2"]
    assert doc["items"][0]["clarity"] == 1.0 and doc["items"][0]["content"] == "Drinks green tea."
    found = ok_json(store.parent, "search", str(store), *args, "green tea")
    assert [(i["rank"], i["memory_id"]) for i in found["items"]] == [(1, "mem-1")]
    assert found["matched"] == 1 and found["used_tokens"] <= found["budget_tokens"] == 512
    text = run(store.parent, "search", str(store), *args, "Lisbon")
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["RANK", "SCORE", "MEMORY", "ID", "TOKENS", "CONTENT"]
    assert lines[1].split()[2:] == ["mem-2", "6", "Sister", "in", "Lisbon."]
    assert lines[-1] == "1 matched, 1 returned, 6 of 512 tokens"


def test_show_a_memory_and_an_event(store: Path) -> None:
    memory = ok_json(store.parent, "show", str(store), "--scope", "acme/agent/user-1", "mem-1")
    assert memory["memory_id"] == "mem-1" and memory["source_event_ids"] == ["evt-1"]
    assert memory["status"] == "active" and memory["trust"] == "observed"
    receipt = ok_json(
        store.parent, "show", str(store), "--scope", "acme/agent/user-1", "--event", "evt-1"
    )
    assert receipt["event_id"] == "evt-1" and receipt["content_available"] is True
    assert "content" not in receipt and receipt["clear_for_seconds"] == 30 * 86400
    text = run(store.parent, "show", str(store), "--scope", "acme/agent/user-1", "mem-1")
    assert text.stdout.splitlines()[-2:] == ["content", "Drinks green tea."]


def test_escaped_scopes(store: Path) -> None:
    doc = ok_json(store.parent, "show", str(store), "--scope", "acme/a%2Fb/50%25", "mem-1")
    assert doc["scope"] == "acme/a%2Fb/50%25" and doc["content"] == "odd scope memory"
    lower = ok_json(store.parent, "stats", str(store), "--scope", "acme/a%2fb/50%25")
    assert lower["memories"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "DB", "--scope", "acme/agent/user-1", "mem-3"), "entity deleted: mem-3"),
        (("show", "DB", "--scope", "acme/agent/user-1", "nope"), "entity not found: nope"),
        (("show", "DB", "--scope", "acme/agent/other", "mem-2"), "scope mismatch: mem-2"),
        (("show", "DB", "--scope", "acme/agent/user-1", "--event", "x"), "entity not found: x"),
        (("forget", "DB", "--scope", "acme/agent/user-1", "mem-3"), "entity deleted: mem-3"),
    ],
)
def test_not_found_is_status_3(store: Path, args: tuple[str, ...], message: str) -> None:
    done = run(store.parent, *(str(store) if a == "DB" else a for a in args))
    failed(done, 3, message)


def test_a_missing_database_is_status_3_and_is_not_created(tmp_path: Path) -> None:
    for command in (["stats"], ["verify"], ["rebuild"], ["erase-subject", "--scope", "a/b/c"]):
        done = run(tmp_path, command[0], "missing.db", *command[1:])
        failed(done, 3, "missing.db: database not found")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("nonsense", "DB"),
        ("stats",),
        ("stats", "DB", "--scope", "acme/agent"),
        ("stats", "DB", "--scope", "acme/agent/user/extra"),
        ("stats", "DB", "--scope", "acme/agent/50%"),
        ("stats", "DB", "--scope", "acme/agent/%4"),
        ("stats", "DB", "--scope", "acme/agent/%C3"),
        ("stats", "DB", "--scope", "acme//user-1"),
        ("audit", "DB"),
        ("audit", "DB", "--scope", "acme/agent/user-1", "--limit", "0"),
        ("recall", "DB", "--scope", "acme/agent/user-1", "--as-of", "2026-08-13T12:00"),
        ("recall", "DB", "--scope", "acme/agent/user-1", "--as-of", "yesterday"),
        ("search", "DB", "--scope", "acme/agent/user-1"),
        ("stats", "DB", "--busy-timeout", "-1"),
    ],
)
def test_usage_errors_are_status_2(store: Path, args: tuple[str, ...]) -> None:
    done = run(store.parent, *(str(store) if a == "DB" else a for a in args))
    assert done.returncode == 2, done.stderr
    assert "usage: trueheart" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget", "99999999999999999999999"), "--budget: must be from 1 through 1048576"),
        (("--budget", "1048577"), "--budget: must be from 1 through 1048576"),
        (("--budget", "0"), "--budget: must be from 1 through 1048576"),
        # whole numbers in ASCII digits only: not another script's digits, nor "1_0"
        (("--budget", "\u0663"), "--budget: must be a whole number"),
        (("--limit", "\u0663"), "--limit: must be a whole number"),
        (("--limit", "1_0"), "--limit: must be a whole number"),
        (("--kind", "fact", "--kind", " "), "--kind: must be a non-blank string"),
        (("--kind", "k" * 129), "--kind: must be at most 128 characters"),
    ],
)
def test_a_search_argument_out_of_range_is_a_usage_error(
    store: Path, args: tuple[str, ...], message: str
) -> None:
    done = run(store.parent, "search", str(store), "--scope", "acme/agent/user-1", "tea", *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(f"trueheart search: error: argument {message}\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("scopes", "DB", "--owner", ""), "--owner: must be a non-blank string"),
        (("scopes", "DB", "--tenant", " "), "--tenant: must be a non-blank string"),
        (("scopes", "DB", "--owner", "o" * 129), "--owner: must be at most 128 characters"),
        (("recall", "DB", "--scope", "acme/agent/user-1", "--kind", ""), "--kind: must be a"),
        (("seal", "DB", " ", "--scope", "acme/agent/user-1"), "MEMORY_ID: must be a non-blank"),
        (("forget", "DB", "", "--scope", "acme/agent/user-1"), "MEMORY_ID: must be a non-blank"),
        (("restore", "DB", "m" * 129, "--scope", "acme/agent/user-1"), "MEMORY_ID: must be at"),
        (("delete-event", "DB", "", "--scope", "acme/agent/user-1"), "EVENT_ID: must be a"),
        (("show", "DB", "", "--scope", "acme/agent/user-1", "--event"), "ID: must be a"),
    ],
)
def test_a_blank_or_overlong_id_is_a_usage_error(
    store: Path, args: tuple[str, ...], message: str
) -> None:
    """As a scope's parts are: the same rule as every ID, whether an ID filters a read
    or names the entity a command acts on."""
    done = run(store.parent, *(str(store) if a == "DB" else a for a in args))
    assert done.returncode == 2, done.stderr
    assert f"error: argument {message}" in done.stderr


def test_a_held_write_lock_is_status_5(store: Path) -> None:
    holder = sqlite3.connect(store, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        done = run(
            store.parent,
            "forget",
            str(store),
            "--scope",
            "acme/agent/user-1",
            "mem-1",
            "--busy-timeout",
            "0",
        )
    finally:
        holder.close()
    failed(done, 5, f"{store}: repository busy: governance transaction failed")


# --- writing commands --------------------------------------------------------------------


def test_forget(store: Path) -> None:
    doc = ok_json(
        store.parent, "forget", str(store), "--scope", "acme/agent/user-1", "mem-1", "--at", AT
    )
    assert doc == {
        "action": "forget",
        "scope": "acme/agent/user-1",
        "affected_ids": ["mem-1"],
        "removed": ["memory", "lineage_edge", "search_entry", "search_term"],
    }
    text = run(store.parent, "forget", str(store), "--scope", "acme/agent/user-1", "mem-2")
    assert text.stdout == "forgot mem-2; removed: memory, lineage_edge, search_entry, search_term\n"


def test_erase_subject_dry_run_changes_nothing(store: Path) -> None:
    before = dump(store)
    args = ("erase-subject", str(store), "--scope", "acme/agent/user-1", "--at", AT)
    doc = ok_json(store.parent, *args, "--dry-run")
    assert dump(store) == before
    assert doc["dry_run"] is True and doc["verified"] is None and doc["remaining"] is None
    assert doc["event_ids"] == ["evt-1", "evt-2"] and doc["memory_ids"] == ["mem-1", "mem-2"]
    assert doc["erased"]["memory"] == 2 and doc["occurred_at"] == "2026-08-14T00:00:00Z"
    text = run(store.parent, *args, "--dry-run")
    assert text.returncode == 0 and "WOULD ERASE" in text.stdout and "verified" not in text.stdout
    assert text.stderr == "trueheart: planning the erasure of acme/agent/user-1 in " + f"{store}\n"
    assert dump(store) == before
    done = ok_json(store.parent, *args)
    assert done["dry_run"] is False and done["verified"] is True
    assert done["erased"] == doc["erased"]
    assert set(done["remaining"].values()) == {0}
    assert (
        ok_json(store.parent, "stats", str(store), "--scope", "acme/a%2Fb/50%25")["memories"] == 1
    )


def test_erase_subject_text(store: Path) -> None:
    done = run(store.parent, "erase-subject", str(store), "--scope", "acme/agent/user-1")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["scope", "acme/agent/user-1"]
    assert ["ARTIFACT", "ERASED", "REMAINING"] in [line.split() for line in lines]
    assert ["memory", "2", "0"] in [line.split() for line in lines]
    assert lines[-1] == "verified: yes"


def test_rebuild(store: Path) -> None:
    doc = ok_json(store.parent, "rebuild", str(store))
    assert doc["changed"] is False and doc["search_entries_before"] == doc["search_entries_after"]
    assert doc["storage_indexes_rebuilt"] > 0


def test_backup(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.db"
    doc = ok_json(store.parent, "backup", str(store), str(target))
    assert doc == {"path": str(target), "pages": doc["pages"], "bytes": target.stat().st_size}
    assert ok_json(tmp_path, "verify", str(target))["ok"] is True
    again = run(tmp_path, "backup", str(store), str(target))
    failed(again, 1, f"{target}: must not exist (backup writes a new file)")


def test_help_and_the_package_import(tmp_path: Path) -> None:
    done = run(tmp_path, "--help")
    assert done.returncode == 0 and "erase-subject" in done.stdout and "%2F" in done.stdout
    env = child_env()
    probe = "import sys, trueheart_core; print(sorted(m for m in sys.modules if '.cli' in m))"
    imported = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert imported.stdout == "[]\n"


def test_json_output_is_utf8_when_an_argument_is_not(tmp_path: Path) -> None:
    # A path byte that is not UTF-8 reaches Python as a lone surrogate; the document
    # writes it as a JSON escape, not as the raw byte.
    for target in (b"demo\xff.db", b"postgresql://app@db\xff.internal/agents"):
        done = run_bytes(tmp_path, "stats", target, "--json")
        assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr
        doc = json.loads(done.stdout.decode("utf-8"))
        assert doc["exit_status"] in (1, 3) and doc["error"] != "internal", doc
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_output_to_a_stream_whose_encoding_cannot_hold_the_text(
    tmp_path: Path, encoding: str
) -> None:
    """A JSON document is UTF-8 whatever the encoding of stdout; text is written in that
    encoding, a character it cannot hold as its backslash escape, and never fails half
    way through."""
    path = tmp_path / "text.db"
    other = Scope("acme", "agënt", "ü")
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event("evt-é", SCOPE, "Ünïcode ✓"), _event("e", other, "x")])
        service.materialize_once(
            MemoryDraft("mem-1", SCOPE, "Mëmory ✓", ("evt-é",), "kïnd", TrustLevel.OBSERVED, NOW)
        )

    def run_in(*args: str) -> bytes:
        done = run_bytes(tmp_path, *args, extra_env={"PYTHONIOENCODING": encoding})
        assert (done.returncode, done.stderr) == (0, b""), (args, done.stderr)
        return done.stdout

    where = ("--scope", "acme/agent/user-1")
    recall = ("recall", str(path), *where, "--as-of", AT)
    listed = json.loads(run_in("scopes", str(path), "--json").decode("utf-8"))
    assert listed == {"scopes": ["acme/agent/user-1", "acme/agënt/ü"]}
    shown = json.loads(run_in("show", str(path), *where, "mem-1", "--json").decode("utf-8"))
    assert (shown["content"], shown["kind"]) == ("Mëmory ✓", "kïnd")
    items = json.loads(run_in(*recall, "--json").decode("utf-8"))["items"]
    assert [item["content"] for item in items] == ["Mëmory ✓"]
    records = json.loads(run_in("audit", str(path), *where, "--json").decode("utf-8"))
    assert "evt-é" in [record["entity_id"] for record in records["records"]]

    def escaped(text: str) -> str:
        return text.encode(encoding, "backslashreplace").decode(encoding)

    text = run_in("show", str(path), *where, "mem-1").decode(encoding)
    assert text.endswith(f"\ncontent\n{escaped('Mëmory ✓')}\n"), text
    assert f"kind                    {escaped('kïnd')}\n" in text
    assert escaped("Mëmory ✓") in run_in(*recall).decode(encoding)
    assert escaped("evt-é") in run_in("audit", str(path), *where).decode(encoding)
    # A scope's text is never a backslash escape, which a scope may hold literally: a
    # character the encoding cannot hold is written as its bytes, which --scope reads.
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_event(_event("e", Scope("acme", "ag\\xebnt", "\\xfc"), "x"))
    shown = run_in("scopes", str(path)).decode(encoding).splitlines()
    held = encoding == "latin-1"
    assert shown == [
        "acme/ag\\xebnt/\\xfc",
        "acme/agent/user-1",
        "acme/agënt/ü" if held else "acme/ag%C3%ABnt/%C3%BC",
    ]
    for text, scope in zip(shown, (Scope("acme", "ag\\xebnt", "\\xfc"), SCOPE, other), strict=True):
        found = json.loads(run_in("stats", str(path), "--scope", text, "--json").decode("utf-8"))
        assert found["scope"] == format_scope(scope)
