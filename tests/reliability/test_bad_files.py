"""Opening files that are not healthy stores fails closed and leaves them untouched.

For every bad input the documented error is raised, the file's bytes (SHA-256), its
modification time and the journal-mode header bytes 18/19 are unchanged, and no
``-wal``, ``-shm`` or ``-journal`` file is left behind. Read-only stores serve reads,
refuse every write with ``RepositoryReadOnly`` and are not modified.
"""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RepositoryCorruption,
    RepositoryReadOnly,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
    ValidationError,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
SIDECARS = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class Snapshot:
    sha256: str
    mtime_ns: int
    size: int
    journal_bytes: bytes
    listing: frozenset[str]


def snapshot(path: Path) -> Snapshot:
    data = path.read_bytes()
    return Snapshot(
        hashlib.sha256(data).hexdigest(),
        path.stat().st_mtime_ns,
        len(data),
        data[18:20],
        frozenset(os.listdir(path.parent)),
    )


def assert_untouched(path: Path, before: Snapshot) -> None:
    after = snapshot(path)
    assert after.sha256 == before.sha256, "file bytes changed"
    assert after.mtime_ns == before.mtime_ns, "file mtime changed"
    assert after.size == before.size
    assert after.journal_bytes == before.journal_bytes, "journal mode header bytes changed"
    for suffix in SIDECARS:
        assert not Path(str(path) + suffix).exists(), f"{suffix} file left behind"
    assert after.listing == before.listing, sorted(after.listing ^ before.listing)


def event(event_id: str, body: str, scope: Scope = SCOPE) -> RawEventDraft:
    return RawEventDraft(
        event_id,
        scope,
        SourceRef("src", "test", NOW, TrustLevel.CONFIRMED, {"n": event_id}),
        body,
        RetentionPolicy(timedelta(days=1), timedelta(days=10), timedelta(days=20)),
    )


def remove_sidecars(path: Path) -> None:
    for suffix in SIDECARS:
        Path(str(path) + suffix).unlink(missing_ok=True)


def make_store(path: Path, events: int = 20) -> None:
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        drafts = [event(f"evt-{i:04d}", f"body {i} " + "lorem ipsum " * 40) for i in range(events)]
        for start in range(0, len(drafts), 50):
            service.ingest_events(drafts[start : start + 50])
        service.materialize_once(
            MemoryDraft("mem-1", SCOPE, "memory", ("evt-0000",), "fact", TrustLevel.OBSERVED, NOW)
        )
    remove_sidecars(path)


# ---------------------------------------------------------------------------
# bad files


def _directory(tmp: Path) -> Path:
    target = tmp / "a-directory"
    target.mkdir()
    return target


def _empty(tmp: Path) -> Path:
    target = tmp / "empty.db"
    target.write_bytes(b"")
    return target


def _random_bytes(tmp: Path) -> Path:
    target = tmp / "random.db"
    data = random.Random(20260813).randbytes(3 * 4096 + 17)
    assert not data.startswith(b"SQLite format 3\x00")
    target.write_bytes(data)
    return target


def _text_file(tmp: Path) -> Path:
    target = tmp / "notes.txt"
    target.write_text("this is not a database\n" * 200, encoding="utf-8")
    return target


def _truncated(tmp: Path) -> Path:
    target = tmp / "truncated.db"
    make_store(target, events=300)
    data = target.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(data[28:32], "big")
    assert pages * page_size == len(data), "the header page count should match the file"
    assert pages > 20, "the store should span many pages"
    half = (pages // 2) * page_size
    with target.open("r+b") as handle:
        handle.truncate(half)
    return target


def _foreign(tmp: Path, wal: bool = False) -> Path:
    target = tmp / ("foreign-wal.db" if wal else "foreign.db")
    conn = sqlite3.connect(target)
    try:
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO customers(name) VALUES (?)", [("a",), ("b",)])
        conn.commit()
    finally:
        conn.close()
    remove_sidecars(target)
    if wal:
        assert target.read_bytes()[18:20] == b"\x02\x02"
    return target


def _foreign_wal(tmp: Path) -> Path:
    return _foreign(tmp, wal=True)


def _newer_version(tmp: Path) -> Path:
    target = tmp / "newer.db"
    make_store(target)
    data = bytearray(target.read_bytes())
    version = int.from_bytes(data[60:64], "big")
    data[60:64] = (version + 1).to_bytes(4, "big")
    target.write_bytes(bytes(data))
    return target


def _missing_table(tmp: Path) -> Path:
    target = tmp / "partial.db"
    make_store(target)
    conn = sqlite3.connect(target)
    try:
        conn.execute("DROP TABLE audit_log")
        conn.commit()
    finally:
        conn.close()
    remove_sidecars(target)
    return target


def _changed(statement: str) -> Callable[[Path], Path]:
    """A store whose schema ``statement`` changed behind the library's back."""

    def make(tmp: Path) -> Path:
        target = tmp / "changed.db"
        make_store(target)
        conn = sqlite3.connect(target, isolation_level=None)
        try:
            conn.execute(statement)
        finally:
            conn.close()
        remove_sidecars(target)
        return target

    return make


INVALID_CATALOG = "repository corruption: invalid schema catalog"
CHANGED_SCHEMAS = {
    "index-dropped": ("DROP INDEX memories_by_status", "repository corruption: incomplete schema"),
    "index-added": ("CREATE INDEX extra_index ON memories (kind)", INVALID_CATALOG),
    "column-added": ("ALTER TABLE memories ADD COLUMN note TEXT", INVALID_CATALOG),
    "column-renamed": ("ALTER TABLE memories RENAME COLUMN kind TO sort", INVALID_CATALOG),
    "view-added": ("CREATE VIEW everything AS SELECT * FROM memories", INVALID_CATALOG),
    "trigger-added": (
        "CREATE TRIGGER copy_out AFTER INSERT ON audit_log BEGIN SELECT 1; END",
        INVALID_CATALOG,
    ),
    "version-zero": ("PRAGMA user_version = 0", "repository corruption: invalid schema version"),
}

BAD_FILES: dict[str, tuple[Callable[[Path], Path], type[TrueHeartError], str]] = {
    **{
        name: (_changed(statement), RepositoryCorruption, message)
        for name, (statement, message) in CHANGED_SCHEMAS.items()
    },
    "directory": (_directory, ValidationError, "path: must not be a directory"),
    "empty": (_empty, RepositoryCorruption, "repository corruption: invalid schema catalog"),
    "random-bytes": (
        _random_bytes,
        RepositoryCorruption,
        "repository corruption: invalid schema catalog",
    ),
    "text-file": (
        _text_file,
        RepositoryCorruption,
        "repository corruption: invalid schema catalog",
    ),
    "truncated": (
        _truncated,
        RepositoryCorruption,
        "repository corruption: truncated database file",
    ),
    "foreign": (_foreign, RepositoryCorruption, "repository corruption: invalid schema catalog"),
    "foreign-wal": (
        _foreign_wal,
        RepositoryCorruption,
        "repository corruption: invalid schema catalog",
    ),
    "newer-version": (
        _newer_version,
        RepositoryCorruption,
        "repository corruption: unsupported schema version",
    ),
    "missing-table": (
        _missing_table,
        RepositoryCorruption,
        "repository corruption: incomplete schema",
    ),
}


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_fails_closed_and_is_untouched(tmp_path: Path, case: str, read_only: bool) -> None:
    make, error, message = BAD_FILES[case]
    target = make(tmp_path)
    if target.is_dir():
        before_listing = frozenset(os.listdir(target))
        parent_before = frozenset(os.listdir(tmp_path))
        mtime = target.stat().st_mtime_ns
        with pytest.raises(error) as caught:
            SQLiteRepository(target, read_only=read_only)
        assert frozenset(os.listdir(target)) == before_listing
        assert frozenset(os.listdir(tmp_path)) == parent_before
        assert target.stat().st_mtime_ns == mtime
    else:
        before = snapshot(target)
        with pytest.raises(error) as caught:
            SQLiteRepository(target, read_only=read_only)
        assert_untouched(target, before)
        # A second attempt behaves identically: nothing was half-initialised.
        with pytest.raises(error):
            SQLiteRepository(str(target), read_only=read_only)
        assert_untouched(target, before)
    assert type(caught.value) is error
    assert str(caught.value) == message
    assert caught.value.__cause__ is None


class _NoPath:
    """A path-like object whose ``__fspath__`` returns neither str nor bytes."""

    def __fspath__(self) -> object:
        return 7


@pytest.mark.parametrize("value", [123, b"store.db", None, 1.5, ["store.db"], _NoPath()])
def test_path_of_wrong_type(tmp_path: Path, value: object) -> None:
    before = frozenset(os.listdir(tmp_path))
    with pytest.raises(ValidationError) as caught:
        SQLiteRepository(value)  # type: ignore[arg-type]
    assert str(caught.value) == "path: must be a str or os.PathLike"
    assert frozenset(os.listdir(tmp_path)) == before


def test_read_only_missing_file_is_not_created(tmp_path: Path) -> None:
    target = tmp_path / "missing.db"
    with pytest.raises(ValidationError) as caught:
        SQLiteRepository(target, read_only=True)
    assert str(caught.value) == "path: must name an existing database file"
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------
# read-only stores


def populate(path: Path) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """Create a store with events, memories, a seal and an expiry; return recall and audit."""
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([event(f"evt-{i}", f"body {i}") for i in range(6)])
        for i in range(4):
            service.materialize_once(
                MemoryDraft(
                    f"mem-{i}",
                    SCOPE,
                    f"memory {i}",
                    (f"evt-{i}",),
                    "fact",
                    TrustLevel.OBSERVED,
                    NOW + timedelta(minutes=i),
                )
            )
        service.govern(
            GovernanceCommand(
                SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "mem-3", NOW, "seal it"
            )
        )
        assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 6
        recall = service.recall(RecallQuery(SCOPE, NOW + timedelta(hours=1)))
        audit = service.audit(SCOPE)
    remove_sidecars(path)
    return recall, audit


def check_read_only_service(service: TrueHeart, recall: object, audit: object) -> None:
    assert service.recall(RecallQuery(SCOPE, NOW + timedelta(hours=1))) == recall
    assert service.audit(SCOPE) == audit
    report = service.verify_integrity()
    assert report.ok, report.problems
    assert report.rows_checked > 0
    assert service.verify_integrity(SCOPE).ok

    writes: list[tuple[str | None, Callable[[], object]]] = [
        (
            "repository read-only: event ingest failed",
            lambda: service.ingest_event(event("new-event", "new body")),
        ),
        (None, lambda: service.ingest_events([event("new-batch", "new body")])),
        (
            "repository read-only: memory materialization failed",
            lambda: service.materialize_once(
                MemoryDraft("mem-new", SCOPE, "m", ("evt-5",), "fact", TrustLevel.OBSERVED, NOW)
            ),
        ),
        (
            "repository read-only: governance transaction failed",
            lambda: service.govern(
                GovernanceCommand(
                    SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "mem-0", NOW, "seal"
                )
            ),
        ),
        (
            "repository read-only: governance transaction failed",
            lambda: service.govern(
                GovernanceCommand(
                    SCOPE, GovernanceAction.DELETE, EntityType.RAW_EVENT, "evt-1", NOW, "delete"
                )
            ),
        ),
        (
            "repository read-only: raw content expiry failed",
            lambda: service.expire_raw_content(as_of=NOW + timedelta(days=3650)),
        ),
    ]
    for message, write in writes:
        with pytest.raises(RepositoryReadOnly) as caught:
            write()
        assert type(caught.value) is RepositoryReadOnly
        assert caught.value.__cause__ is None
        if message is not None:
            assert str(caught.value) == message
        else:
            assert str(caught.value).startswith("repository read-only: ")
    # Reads still answer the same after the refused writes.
    assert service.recall(RecallQuery(SCOPE, NOW + timedelta(hours=1))) == recall
    assert service.audit(SCOPE) == audit


def test_read_only_store_serves_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    recall, audit = populate(path)
    assert len(recall) == 3
    assert len(audit) == 6 + 4 + 1 + 6
    before = snapshot(path)
    with TrueHeart(SQLiteRepository(path, read_only=True), clock=lambda: NOW) as service:
        check_read_only_service(service, recall, audit)
    after = snapshot(path)
    assert after.sha256 == before.sha256
    assert after.mtime_ns == before.mtime_ns
    assert after.journal_bytes == before.journal_bytes
    # Nothing was written: a writer sees exactly the old state.
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        assert service.audit(SCOPE) == audit
        assert service.recall(RecallQuery(SCOPE, NOW + timedelta(hours=1))) == recall


# A file, directory or medium this user cannot write: see test_odd_storage.py, which
# drops to an unprivileged user in a child process instead of skipping when run as root.
