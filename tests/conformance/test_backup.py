"""Online backup into a new file: consistent, readable by SQLiteRepository, verified
clean, never overwriting anything, and outside the reach of later erasure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, event, memory, store_bytes

from trueheart_core import (
    BackupReport,
    RecallQuery,
    SQLiteRepository,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Operation, UnitOfWork

SECRET = "zqxbackupsecret"


def _populate(service: TrueHeart) -> None:
    service.ingest_events(
        [event("evt-1", content=f"raw {SECRET}"), event("evt-1", scope=OTHER_SCOPE)]
    )
    service.materialize_once(memory("mem-1", content=f"note {SECRET}"))
    service.materialize_once(memory("mem-1", scope=OTHER_SCOPE, content="kept"))


def test_backup_opens_and_verifies_clean(service: TrueHeart, tmp_path: Path) -> None:
    _populate(service)
    target = tmp_path / "copies" / "copy.db"
    target.parent.mkdir()
    report = service.backup(target)
    assert report.path == str(target.resolve())
    assert report.size_bytes == target.stat().st_size > 0
    assert report.pages > 0 and report.size_bytes % report.pages == 0
    stats = service.stats()
    with TrueHeart(SQLiteRepository(target)) as copy:
        assert copy.verify_integrity().ok
        copied = copy.stats()
        assert (copied.events, copied.memories, copied.audit_records, copied.search_terms) == (
            stats.events,
            stats.memories,
            stats.audit_records,
            stats.search_terms,
        )
        assert copy.recall(RecallQuery(SCOPE, NOW)) == service.recall(RecallQuery(SCOPE, NOW))


def test_backup_accepts_a_string_path(service: TrueHeart, tmp_path: Path) -> None:
    _populate(service)
    report = service.backup(str(tmp_path / "copy.db"))
    assert isinstance(report, BackupReport) and Path(report.path).is_file()


def test_an_existing_target_is_refused_and_left_alone(service: TrueHeart, tmp_path: Path) -> None:
    _populate(service)
    target = tmp_path / "taken.db"
    target.write_bytes(b"precious")
    with pytest.raises(ValidationError, match=r"^path: must not exist$"):
        service.backup(target)
    assert target.read_bytes() == b"precious"


@pytest.mark.parametrize("suffix", ["-wal", "-journal"])
def test_a_journal_or_wal_next_to_the_target_is_refused(
    service: TrueHeart, tmp_path: Path, suffix: str
) -> None:
    target = tmp_path / "copy.db"
    side = Path(f"{target}{suffix}")
    side.write_bytes(b"old log")
    with pytest.raises(ValidationError, match=r"^path: must not exist$"):
        service.backup(target)
    assert not target.exists() and side.read_bytes() == b"old log"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (None, "path: must be a str or os.PathLike"),
        ("", "path: must be a str or os.PathLike"),
        (":memory:", "path: must be a str or os.PathLike"),
        ("a\x00b", "path: must be a str or os.PathLike"),
        (b"copy.db", "path: must be a str or os.PathLike"),
    ],
)
def test_bad_paths_are_refused(service: TrueHeart, path: object, message: str) -> None:
    with pytest.raises(ValidationError, match=f"^{message}$"):
        service.backup(path)  # type: ignore[arg-type]


class _BadPath:
    """A path-like object whose ``__fspath__`` returns neither str nor bytes."""

    def __fspath__(self) -> object:
        return 7


def test_a_path_like_object_that_is_no_path_is_refused(service: TrueHeart) -> None:
    with pytest.raises(ValidationError, match=r"^path: must be a str or os.PathLike$"):
        service.backup(_BadPath())  # type: ignore[arg-type]


def test_a_missing_directory_is_refused(service: TrueHeart, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"^path: must be in an existing directory$"):
        service.backup(tmp_path / "missing" / "copy.db")


def test_the_copy_keeps_what_later_erasure_removes(service: TrueHeart, tmp_path: Path) -> None:
    _populate(service)
    target = tmp_path / "copy.db"
    service.backup(target)
    assert service.erase_subject(SCOPE, occurred_at=NOW).verified is True
    # Copies are outside the erasure guarantee: they hold what the store held then.
    assert SECRET.encode() in store_bytes(target)
    with TrueHeart(SQLiteRepository(target, read_only=True)) as copy:
        assert copy.get_memory(SCOPE, "mem-1").content == f"note {SECRET}"


def test_a_read_only_store_can_be_backed_up(db_path: Path, tmp_path: Path) -> None:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as service:
        _populate(service)
    with TrueHeart(SQLiteRepository(db_path, read_only=True)) as reader:
        report = reader.backup(tmp_path / "copy.db")
    with TrueHeart(SQLiteRepository(report.path)) as copy:
        assert copy.verify_integrity().ok
        assert copy.stats(SCOPE).memories == 1


class _NoBackup:
    """A repository without the backup capability."""

    def __init__(self, inner: SQLiteRepository) -> None:
        self._inner = inner

    def unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool = False
    ) -> AbstractContextManager[UnitOfWork]:
        return self._inner.unit_of_work(operation, write=write, erasing=erasing)

    def close(self) -> None:
        self._inner.close()


@pytest.fixture
def plain(repository: SQLiteRepository) -> Iterator[TrueHeart]:
    yield TrueHeart(_NoBackup(repository), clock=lambda: NOW)


def test_a_repository_without_backup_is_refused(plain: TrueHeart, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"^repository: does not support backup$"):
        plain.backup(tmp_path / "copy.db")
    assert not (tmp_path / "copy.db").exists()
    # Statistics without the file-size capability report no sizes.
    assert plain.stats().database_bytes is None
