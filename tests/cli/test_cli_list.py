"""``trueheart list``: one page of a scope's memories in ID order or its reverse, as text
and as JSON, following the cursor a page prints, the filters, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import NOW, OTHER, SCOPE, build, call, event

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SCOPE_TEXT = "/".join((SCOPE.tenant_id, SCOPE.owner_id, SCOPE.subject_id))
HEADER = "MEMORY ID STATUS KIND CREATED AT CONTENT"
MORE = "trueheart: more memories: run the same command with --cursor "


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """build()'s store, with mem-2 sealed and a memory of another kind, mem-4."""
    path = build(tmp_path / "store.db")
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-3", SCOPE, "I keep a diary."))
        service.materialize_once(
            MemoryDraft(
                "mem-4", SCOPE, "Keeps a diary.", ("evt-3",), "habit", TrustLevel.OBSERVED, NOW
            )
        )
        service.govern(
            GovernanceCommand(SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "mem-2", NOW, "cli")
        )
    return path


def _ids(out: str) -> list[str]:
    lines = out.splitlines()
    assert " ".join(lines[0].split()) == HEADER
    return [line.split()[0] for line in lines[1:]]


def _cursor(err: str) -> str | None:
    if not err:
        return None
    assert err.startswith(MORE) and err.endswith("\n"), err
    return err[len(MORE) : -1]


def _walk(capsys: pytest.CaptureFixture[str], store: Path, *options: str) -> list[list[str]]:
    """Every page of one listing, following the printed cursors."""
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        extra = () if cursor is None else ("--cursor", cursor)
        status, out, err = call(capsys, "list", str(store), "--scope", SCOPE_TEXT, *options, *extra)
        assert status == 0, err
        pages.append(_ids(out))
        cursor = _cursor(err)
        if cursor is None:
            return pages
        assert len(pages) < 10


def test_pages_follow_the_printed_cursor_both_ways(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    assert _walk(capsys, store) == [["mem-1", "mem-2", "mem-3", "mem-4"]]
    assert _walk(capsys, store, "--limit", "3") == [["mem-1", "mem-2", "mem-3"], ["mem-4"]]
    assert _walk(capsys, store, "--limit", "3", "--descending") == [
        ["mem-4", "mem-3", "mem-2"],
        ["mem-1"],
    ]
    assert _walk(capsys, store, "--limit", "1", "--descending") == [
        ["mem-4"],
        ["mem-3"],
        ["mem-2"],
        ["mem-1"],
    ]


def test_status_and_kind_filters(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    assert _walk(capsys, store, "--status", "active") == [["mem-1", "mem-3", "mem-4"]]
    assert _walk(capsys, store, "--status", "sealed") == [["mem-2"]]
    assert _walk(capsys, store, "--kind", "habit") == [["mem-4"]]
    assert _walk(capsys, store, "--kind", "habit", "--kind", "fact", "--descending") == [
        ["mem-4", "mem-3", "mem-2", "mem-1"]
    ]
    assert _walk(capsys, store, "--status", "active", "--kind", "fact", "--limit", "1") == [
        ["mem-1"],
        ["mem-3"],
    ]


def test_json_gives_the_memories_and_the_next_cursor(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    status, out, err = call(
        capsys, "list", str(store), "--scope", SCOPE_TEXT, "--limit", "2", "--descending", "--json"
    )
    assert status == 0 and err == ""
    doc: dict[str, Any] = json.loads(out)
    assert doc["scope"] == SCOPE_TEXT
    assert [m["memory_id"] for m in doc["memories"]] == ["mem-4", "mem-3"]
    assert (
        doc["memories"][0]["kind"] == "habit" and doc["memories"][0]["content"] == "Keeps a diary."
    )
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        page = service.list_memories(SCOPE, limit=2, descending=True)
        status, out, _ = call(
            capsys,
            "list",
            str(store),
            "--scope",
            SCOPE_TEXT,
            "--descending",
            "--json",
            "--cursor",
            doc["next_cursor"],
        )
        rest = service.list_memories(SCOPE, cursor=page.next_cursor, descending=True)
    assert doc["next_cursor"] == page.next_cursor
    assert status == 0
    last = json.loads(out)
    assert [m["memory_id"] for m in last["memories"]] == [m.memory_id for m in rest.items]
    assert last["next_cursor"] is None


def test_refusals_and_an_empty_scope(
    capsys: pytest.CaptureFixture[str], store: Path, tmp_path: Path
) -> None:
    _, _, err = call(capsys, "list", str(store), "--scope", SCOPE_TEXT, "--limit", "1")
    cursor = _cursor(err)
    assert cursor is not None
    for other in (("--descending",), ("--status", "active"), ("--kind", "fact")):
        status, out, err = call(
            capsys, "list", str(store), "--scope", SCOPE_TEXT, "--cursor", cursor, *other
        )
        assert (status, out) == (1, "")
        assert err == "trueheart: cursor: must be a cursor returned by the same listing\n"
    status, out, err = call(capsys, "list", str(store), "--scope", "nobody/at/all")
    assert status == 0 and _ids(out) == []
    assert err == (
        "trueheart: hint: no memories listed in nobody/at/all; "
        f"list the scopes with 'trueheart scopes {store}'\n"
    )
    for bad in (("--limit", "0"), ("--limit", "101"), ("--status", "forgotten"), ("--kind", " ")):
        status, out, err = call(capsys, "list", str(store), "--scope", SCOPE_TEXT, *bad)
        assert (status, out) == (2, "") and "usage: trueheart list" in err, bad
    missing = tmp_path / "missing.db"
    status, _, err = call(capsys, "list", str(missing), "--scope", SCOPE_TEXT)
    assert status == 3 and not missing.exists()


def test_other_scopes_are_not_listed(capsys: pytest.CaptureFixture[str], store: Path) -> None:
    other = "/".join((OTHER.tenant_id, OTHER.owner_id, OTHER.subject_id))
    status, out, _ = call(capsys, "list", str(store), "--scope", other, "--descending")
    assert status == 0 and _ids(out) == ["mem-1"]
    assert "Takes black tea." in out and "green tea" not in out
