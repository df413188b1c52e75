"""``seal``, ``restore``, ``delete-event`` and ``expire`` through
``trueheart_core.cli.main``: text and JSON answers, usage errors, a missing store, a
store this user cannot write, and the confirmation of ``delete-event``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from cli_support import OTHER, SCOPE, FakeTerminal, as_reader, build, call, unwritable
from store_dump import dump

from trueheart_core import SQLiteRepository, TrueHeart

AT = "2026-08-14T00:00:00Z"
WHERE = ("--scope", "acme/agent/user-1")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return build(tmp_path / "store.db")


def _status(store: Path, memory_id: str) -> str:
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        return service.get_memory(SCOPE, memory_id).status.value


def test_seal_then_restore(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert call(capsys, "seal", str(store), *WHERE, "mem-1", "--at", AT) == (
        0,
        "sealed mem-1\n",
        "",
    )
    assert _status(store, "mem-1") == "sealed"
    status, out, err = call(capsys, "restore", str(store), *WHERE, "mem-1", "--at", AT, "--json")
    assert (status, err) == (0, "")
    assert json.loads(out) == {
        "action": "restore",
        "scope": "acme/agent/user-1",
        "affected_ids": ["mem-1"],
        "removed": [],
    }
    assert _status(store, "mem-1") == "active"
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        actions = [(r.action, r.entity_id) for r in service.audit(SCOPE, limit=2)]
    assert actions == [("restore", "mem-1"), ("seal", "mem-1")]


def test_restoring_an_active_memory_is_refused(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dump(store)
    status, out, err = call(capsys, "restore", str(store), *WHERE, "mem-1", "--json")
    assert status == 1
    assert json.loads(out)["error"] == "InvalidTransition"
    assert err.startswith("trueheart: ") and "Drinks" not in err
    assert dump(store) == before


def test_seal_of_a_missing_memory_exits_3(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert call(capsys, "seal", str(store), *WHERE, "nope") == (
        3,
        "",
        "trueheart: entity not found: nope\n",
    )


def test_delete_event_deletes_its_memories(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = call(capsys, "delete-event", str(store), *WHERE, "evt-2", "--at", AT)
    assert (status, err) == (0, "")
    assert out.startswith("deleted evt-2; removed: raw_event, raw_body, memory, ")
    assert out.endswith("; memories deleted with it: mem-2, mem-3\n")
    status, out, _ = call(capsys, "delete-event", str(store), *WHERE, "evt-1", "--json")
    doc = json.loads(out)
    assert (status, doc["action"], doc["affected_ids"]) == (0, "delete", ["evt-1", "mem-1"])
    assert "raw_event" in doc["removed"]
    status, _, err = call(capsys, "show", str(store), *WHERE, "--event", "evt-2")
    assert (status, err) == (3, "trueheart: entity deleted: evt-2\n")


def test_expire_removes_only_what_is_due(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    early = call(capsys, "expire", str(store), "--at", "2026-08-15T00:00:00Z")
    assert early == (
        0,
        "expired 0 raw bodies due by 2026-08-15T00:00:00Z\n",
        f"trueheart: expiring the raw bodies due by 2026-08-15T00:00:00Z in {store}\n",
    )
    status, out, _ = call(capsys, "expire", str(store), "--at", "2026-08-20T12:00:00Z", "--json")
    assert (status, json.loads(out)) == (0, {"as_of": "2026-08-20T12:00:00Z", "expired": 3})
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert service.stats().events_with_body == 0
        assert service.get_receipt(SCOPE, "evt-1").content_available is False
        assert service.get_memory(SCOPE, "mem-1").status.value == "active"


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00"])
def test_expire_at_a_time_with_no_utc_equivalent_is_refused_as_elsewhere(
    store: Path, capsys: pytest.CaptureFixture[str], at: str
) -> None:
    """A time near the ends of the calendar whose UTC equivalent is out of range is the
    library's ValidationError, as for every other command, and changes nothing."""
    before = dump(store)
    status, out, err = call(capsys, "expire", str(store), "--at", at, "--json")
    message = "as_of: must be a representable datetime"
    assert (status, err) == (1, f"trueheart: {message}\n")
    assert json.loads(out) == {"error": "ValidationError", "exit_status": 1, "message": message}
    assert dump(store) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("seal", "DB", "--scope", "acme/agent", "mem-1"), "argument --scope: must be tenant"),
        (("restore", "DB", *WHERE), "the following arguments are required: MEMORY_ID"),
        (("delete-event", "DB", "evt-1"), "the following arguments are required: --scope"),
        (("expire", "DB", "--at", "2026-08-14"), "argument --at: must have a UTC offset"),
        (("expire", "DB", "--at", "soon"), "argument --at: must be an ISO 8601 time"),
    ],
)
def test_usage_errors_exit_2(
    store: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    before = dump(store)
    argv = [str(store) if a == "DB" else a for a in args]
    status, out, err = call(capsys, *argv, "--json")
    assert status == 2
    assert json.loads(out)["error"] == "usage"
    assert message in err
    assert dump(store) == before


@pytest.mark.parametrize(
    "args",
    [
        ("seal", *WHERE, "mem-1"),
        ("restore", *WHERE, "mem-1"),
        ("delete-event", *WHERE, "evt-1"),
        ("expire",),
    ],
)
def test_a_missing_store_exits_3_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    missing = tmp_path / "missing.db"
    status, out, err = call(capsys, args[0], str(missing), *args[1:], "--json")
    assert status == 3
    assert json.loads(out)["error"] == "DatabaseMissing"
    assert err == f"trueheart: {missing}: database not found\n"
    assert not missing.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("seal", *WHERE, "mem-1"),
        ("delete-event", *WHERE, "evt-1", "--yes"),
        ("expire", "--at", "2026-09-01T00:00:00Z"),
    ],
)
def test_a_store_this_user_cannot_write_is_refused_with_5(
    store: Path, args: tuple[str, ...]
) -> None:
    with unwritable(store) as copy:
        before = dump(copy)
        status, _, err = as_reader(args[0], str(copy), *args[1:])
        assert status == 5, err
        assert err.splitlines()[-1].startswith(f"trueheart: {copy}: repository read-only: ")
        assert dump(copy) == before


# --- the confirmation of delete-event ----------------------------------------------------

PROMPT = (
    "trueheart: delete event evt-2 in acme/agent/user-1, and every memory derived from it? [y/N] "
)


@pytest.mark.parametrize(
    ("answer", "confirmed"),
    [("y\n", True), ("YES\n", True), ("\n", False), ("", False), ("no\n", False)],
)
def test_delete_event_asks_on_a_terminal(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    confirmed: bool,
) -> None:
    monkeypatch.setattr("sys.stdin", FakeTerminal(answer))
    before = dump(store)
    status, out, err = call(capsys, "delete-event", str(store), *WHERE, "evt-2")
    if confirmed:
        assert (status, err) == (0, PROMPT)
        assert out.startswith("deleted evt-2;")
    else:
        assert (status, out, err) == (1, "", PROMPT + "trueheart: not confirmed\n")
        assert dump(store) == before


def test_delete_event_refuses_a_missing_event_before_asking(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", FakeTerminal("y\n"))
    status, out, err = call(capsys, "delete-event", str(store), *WHERE, "nope", "--json")
    assert (status, err) == (3, "trueheart: entity not found: nope\n")
    assert json.loads(out)["error"] == "EntityNotFound"


def test_yes_on_a_terminal_does_not_ask(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", FakeTerminal(""))  # an answer would be read as "no"
    status, out, err = call(capsys, "delete-event", str(store), *WHERE, "evt-2", "-y")
    assert (status, err) == (0, "")
    assert out.startswith("deleted evt-2;")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("forget", *WHERE, "mem-1"), "forgot mem-1;"),
        (("delete-event", *WHERE, "evt-2"), "deleted evt-2;"),
    ],
)
def test_off_a_terminal_without_yes_they_proceed_as_forget_does(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    line: str,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("no\n"))  # not a terminal: not read
    status, out, err = call(capsys, args[0], str(store), *args[1:])
    assert (status, err) == (0, "")
    assert out.startswith(line)


def test_seal_and_restore_never_ask(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", FakeTerminal("no\n"))
    assert call(capsys, "seal", str(store), *WHERE, "mem-1")[:2] == (0, "sealed mem-1\n")
    assert call(capsys, "restore", str(store), *WHERE, "mem-1")[:2] == (0, "restored mem-1\n")


def test_erase_subject_without_a_rewrite_then_compact(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = call(
        capsys, "erase-subject", str(store), *WHERE, "--no-rewrite", "--at", AT, "--json"
    )
    assert status == 0, err
    receipt = json.loads(out)
    assert receipt["verified"] is True and receipt["memory_ids"] == ["mem-1", "mem-2", "mem-3"]
    data = store.read_bytes()
    assert b"Lisbon" not in data and b"green tea" not in data
    assert b"black tea" in data  # the other scope's event stays
    status, out, err = call(capsys, "compact", str(store), "--json")
    assert status == 0, err
    sizes = json.loads(out)
    assert set(sizes) == {"database_bytes_before", "database_bytes"}
    assert 0 < sizes["database_bytes"] <= sizes["database_bytes_before"]
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert service.verify_integrity().ok
        assert [m.memory_id for m in service.list_memories(OTHER).items] == ["mem-1"]


def test_compact_of_a_missing_store_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = call(capsys, "compact", str(tmp_path / "nothing.db"))
    assert status == 3 and err.startswith("trueheart: ")
    assert not (tmp_path / "nothing.db").exists()
