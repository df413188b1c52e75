"""``trueheart claims``: one page of a scope's claims, as JSON and as text, following the
cursor a page prints, and its refusals."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_text

from trueheart_core import (
    ClaimDraft,
    ClaimQuery,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 1, tzinfo=UTC)
JULY = datetime(2026, 7, 1, tzinfo=UTC)
SCOPE = Scope("acme", "agent", "user-1")
SCOPE_TEXT = "acme/agent/user-1"
AT = ("--as-of", "2026-08-13T12:00:00Z")
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=400))
HEADER = "CLAIM ID  SUBJECT  PREDICATE  VALUE  STATUS  VALID FROM  VALID TO"
SAME_QUERY = "cursor: must be a cursor returned by the same query"


run = run_text


def ok_json(cwd: Path, *args: str) -> Any:
    done = run(cwd, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _claim(claim_id: str, subject: str, predicate: str, value: str, **more: Any) -> ClaimDraft:
    fields: dict[str, Any] = {"created_at": MAY, **more}
    created = fields.pop("created_at")
    return ClaimDraft(
        claim_id,
        SCOPE,
        subject,
        predicate,
        value,
        ("evt-1",),
        TrustLevel.OBSERVED,
        created,
        **fields,
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
        service.ingest_event(RawEventDraft("evt-1", SCOPE, source, "preferences", RETENTION))
        for draft in (
            _claim("c-1", "user:ada", "prefers_theme", "dark"),
            _claim("c-2", "user:ada", "prefers_theme", "light"),
            _claim("c-3", "user:ada", "prefers_font", "serif", valid_to=JULY),
            _claim("c-4", "user:bob", "prefers_theme", "blue", supersedes=None),
            _claim("c-5", "user:bob", "prefers_theme", "green", created_at=JULY, supersedes="c-4"),
        ):
            service.materialize_claim(draft)
    return path


def _library(store: Path, **fields: Any) -> tuple[list[str], list[list[str]]]:
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        answer = service.claims(ClaimQuery(SCOPE, NOW, **fields))
    return [v.claim.claim_id for v in answer.claims], [list(c.claim_ids) for c in answer.conflicts]


def test_json_pages_follow_the_cursor_to_the_whole_answer(store: Path) -> None:
    base = ("claims", str(store), "--scope", SCOPE_TEXT, *AT, "--limit", "2")
    pages = [ok_json(store.parent, *base)]
    while pages[-1]["next_cursor"] is not None:
        assert len(pages) < 10
        pages.append(ok_json(store.parent, *base, "--cursor", pages[-1]["next_cursor"]))
    assert [len(page["claims"]) for page in pages] == [2, 2, 1]
    ids = [c["claim_id"] for page in pages for c in page["claims"]]
    conflicts = [c for page in pages for c in page["conflicts"]]
    assert (ids, conflicts) == _library(store)
    assert ids == ["c-3", "c-1", "c-2", "c-4", "c-5"]
    first = pages[0]
    assert (first["scope"], first["as_of"], first["known_at"]) == (
        SCOPE_TEXT,
        "2026-08-13T12:00:00Z",
        "2026-08-13T12:00:00Z",
    )
    font = first["claims"][0]
    assert font == {
        "claim_id": "c-3",
        "subject": "user:ada",
        "predicate": "prefers_font",
        "value": "serif",
        "status": "ended",
        "valid_from": None,
        "valid_to": "2026-07-01T00:00:00Z",
        "confidence": 1.0,
        "authority": "application",
        "supersedes": None,
        "superseded_by": [],
        "trust": "observed",
        "created_at": "2026-05-01T00:00:00Z",
        "source_event_ids": ["evt-1"],
    }
    assert [c["status"] for c in pages[2]["claims"]] == ["current"]
    assert pages[1]["claims"][1]["superseded_by"] == ["c-5"]
    assert conflicts == [["c-1", "c-2"]]


def test_text_page_prints_a_table_conflicts_and_the_next_page_options(store: Path) -> None:
    done = run(store.parent, "claims", str(store), "--scope", SCOPE_TEXT, "--limit", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == HEADER.split()
    assert lines[1].split() == [
        "c-3",
        "user:ada",
        "prefers_font",
        "serif",
        "ended",
        "-",
        "2026-07-01T00:00:00Z",
    ]
    assert [line.split()[0] for line in lines[2:4]] == ["c-1", "c-2"]
    assert lines[4:] == ["conflict: c-1 c-2"]
    (hint,) = done.stderr.splitlines()
    prefix = "trueheart: more claims: run the same command with "
    assert hint.startswith(prefix)
    options = shlex.split(hint[len(prefix) :])
    assert options[0::2][:2] == ["--as-of", "--known-at"] and options[4] == "--cursor"
    assert "user:ada" not in hint
    rest = run(store.parent, "claims", str(store), "--scope", SCOPE_TEXT, "--limit", "3", *options)
    assert rest.returncode == 0, rest.stderr
    assert [line.split()[0] for line in rest.stdout.splitlines()[1:]] == ["c-4", "c-5"]
    assert rest.stderr == ""


def test_subject_predicate_and_times_select(store: Path) -> None:
    scope = ("claims", str(store), "--scope", SCOPE_TEXT)
    doc = ok_json(
        store.parent, *scope, *AT, "--subject", "user:ada", "--predicate", "prefers_theme"
    )
    assert [c["claim_id"] for c in doc["claims"]] == ["c-1", "c-2"]
    assert doc["conflicts"] == [["c-1", "c-2"]] and doc["next_cursor"] is None
    past = ok_json(
        store.parent,
        *scope,
        "--as-of",
        "2026-06-01T00:00:00Z",
        "--known-at",
        "2026-06-01T00:00:00Z",
        "--subject",
        "user:bob",
    )
    assert [(c["claim_id"], c["status"]) for c in past["claims"]] == [("c-4", "current")]
    assert past["known_at"] == "2026-06-01T00:00:00Z"
    only_theme = ok_json(store.parent, *scope, *AT, "--predicate", "prefers_theme")
    assert [c["claim_id"] for c in only_theme["claims"]] == ["c-1", "c-2", "c-4", "c-5"]


def test_nothing_to_show_prints_a_hint(store: Path) -> None:
    done = run(store.parent, "claims", str(store), "--scope", "acme/agent/nobody", *AT)
    assert done.returncode == 0
    assert done.stdout == HEADER + "\n"
    assert done.stderr == (
        "trueheart: hint: no claims in acme/agent/nobody as of 2026-08-13T12:00:00Z known at "
        "2026-08-13T12:00:00Z; try another --as-of or --known-at\n"
    )


def test_a_cursor_of_another_query_or_not_a_cursor_is_refused(store: Path) -> None:
    base = ("claims", str(store), "--scope", SCOPE_TEXT, "--limit", "1")
    cursor = ok_json(store.parent, *base, *AT)["next_cursor"]
    assert isinstance(cursor, str)
    for args in (
        (*AT, "--cursor", "not-a-cursor"),
        ("--as-of", "2026-08-13T12:00:01Z", "--cursor", cursor),  # another time
        (*AT, "--subject", "user:bob", "--cursor", cursor),
    ):
        done = run(store.parent, *base, *args)
        assert done.returncode == 1, done.stderr
        assert done.stderr == f"trueheart: {SAME_QUERY}\n" and done.stdout == ""
    done = run(store.parent, *base, *AT, "--cursor", "nope", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "error": "ValidationError",
        "message": SAME_QUERY,
        "exit_status": 1,
    }


@pytest.mark.parametrize(
    "args",
    [
        ("--limit", "0"),
        ("--limit", "1001"),
        ("--limit", "many"),
        ("--as-of", "2026-08-13T12:00"),
        ("--known-at", "yesterday"),
    ],
)
def test_usage_errors_are_status_2(store: Path, args: tuple[str, ...]) -> None:
    done = run(store.parent, "claims", str(store), "--scope", SCOPE_TEXT, *args)
    assert done.returncode == 2, done.stderr
    assert "usage: trueheart claims" in done.stderr and "Traceback" not in done.stderr


def test_a_missing_scope_option_or_database_is_refused(tmp_path: Path) -> None:
    done = run(tmp_path, "claims", "missing.db")
    assert done.returncode == 2 and "--scope" in done.stderr
    done = run(tmp_path, "claims", "missing.db", "--scope", SCOPE_TEXT)
    assert done.returncode == 3
    assert done.stderr == "trueheart: missing.db: database not found\n"
    assert list(tmp_path.iterdir()) == []


def test_the_limit_defaults_to_100_and_takes_1000(store: Path) -> None:
    doc = ok_json(store.parent, "claims", str(store), "--scope", SCOPE_TEXT, *AT)
    assert len(doc["claims"]) == 5 and doc["next_cursor"] is None
    most = ok_json(
        store.parent, "claims", str(store), "--scope", SCOPE_TEXT, *AT, "--limit", "1000"
    )
    assert most == doc
