"""Online backup into a new store: consistent, readable where the configuration opens
backups, verified clean, never overwriting anything, and outside the reach of later
erasure. ``TrueHeart.backup`` takes a path; the adapter configuration says where a backup
of its stores goes (``backup_target``) and how to open one (``open_backup``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, event, memory

from trueheart_core import (
    BackupReport,
    RecallQuery,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Capability, Operation, Repository, UnitOfWork

SECRET = "zqxbackupsecret"


def _populate(service: TrueHeart) -> None:
    service.ingest_events(
        [event("evt-1", content=f"raw {SECRET}"), event("evt-1", scope=OTHER_SCOPE)]
    )
    service.materialize_once(memory("mem-1", content=f"note {SECRET}"))
    service.materialize_once(memory("mem-1", scope=OTHER_SCOPE, content="kept"))


@pytest.mark.requires(Capability.BACKUP)
def test_backup_opens_and_verifies_clean(
    service: TrueHeart, backup_target: str, open_backup: Callable[..., Repository]
) -> None:
    _populate(service)
    report = service.backup(backup_target)
    assert isinstance(report, BackupReport)
    assert report.path == backup_target
    assert report.size_bytes > 0
    assert report.pages > 0 and report.size_bytes % report.pages == 0
    stats = service.stats()
    copy = TrueHeart(open_backup(report.path))
    assert copy.verify_integrity().ok
    copied = copy.stats()
    assert (copied.events, copied.memories, copied.audit_records, copied.search_terms) == (
        stats.events,
        stats.memories,
        stats.audit_records,
        stats.search_terms,
    )
    assert copy.recall(RecallQuery(SCOPE, NOW)) == service.recall(RecallQuery(SCOPE, NOW))
    assert copy.audit(SCOPE) == service.audit(SCOPE)


@pytest.mark.requires(Capability.BACKUP)
def test_backup_accepts_a_path_like_target(
    service: TrueHeart, backup_target: str, open_backup: Callable[..., Repository]
) -> None:
    _populate(service)
    report = service.backup(Path(backup_target))
    assert report.path == backup_target
    assert TrueHeart(open_backup(report.path)).stats(SCOPE).memories == 1


def test_an_existing_target_is_refused_and_left_alone(
    service: TrueHeart, backup_target: str
) -> None:
    _populate(service)
    Path(backup_target).write_bytes(b"precious")
    with pytest.raises(ValidationError, match=r"^path: must not exist$"):
        service.backup(backup_target)
    assert Path(backup_target).read_bytes() == b"precious"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (None, "path: must be a str or os.PathLike"),
        ("", "path: must be a str or os.PathLike"),
        (":memory:", "path: must be a str or os.PathLike"),
        ("a\x00b", "path: must be a str or os.PathLike"),
        (b"copy", "path: must be a str or os.PathLike"),
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


def test_a_missing_directory_is_refused(service: TrueHeart, backup_target: str) -> None:
    target = os.path.join(backup_target, "missing", "copy")
    with pytest.raises(ValidationError, match=r"^path: must be in an existing directory$"):
        service.backup(target)
    assert not os.path.lexists(backup_target)


@pytest.mark.requires(Capability.BACKUP)
def test_the_copy_keeps_what_later_erasure_removes(
    service: TrueHeart, backup_target: str, open_backup: Callable[..., Repository]
) -> None:
    _populate(service)
    service.backup(backup_target)
    assert service.erase_subject(SCOPE, occurred_at=NOW).verified is True
    # Copies are outside the erasure guarantee: they hold what the store held then.
    copy = TrueHeart(open_backup(backup_target))
    assert copy.get_memory(SCOPE, "mem-1").content == f"note {SECRET}"
    assert copy.get_receipt(SCOPE, "evt-1").content_available


@pytest.mark.requires(Capability.BACKUP, Capability.READ_ONLY_OPEN)
def test_a_read_only_store_can_be_backed_up(
    repository: Repository,
    service: TrueHeart,
    reopen: Callable[..., Repository],
    backup_target: str,
    open_backup: Callable[..., Repository],
) -> None:
    _populate(service)
    repository.close()
    reader = TrueHeart(reopen(read_only=True))
    report = reader.backup(backup_target)
    copy = TrueHeart(open_backup(report.path))
    assert copy.verify_integrity().ok
    assert copy.stats(SCOPE).memories == 1


class _NoBackup:
    """A repository without the backup capability."""

    def __init__(self, inner: Repository) -> None:
        self._inner = inner

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self._inner.capabilities - {Capability.BACKUP, Capability.STORAGE_SIZES}

    def unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool = False
    ) -> AbstractContextManager[UnitOfWork]:
        return self._inner.unit_of_work(operation, write=write, erasing=erasing)

    def close(self) -> None:
        self._inner.close()


@pytest.fixture
def plain(repository: Repository) -> Iterator[TrueHeart]:
    yield TrueHeart(_NoBackup(repository), clock=lambda: NOW)


def test_a_repository_without_backup_is_refused(plain: TrueHeart, backup_target: str) -> None:
    with pytest.raises(ValidationError, match=r"^repository: does not support backup$"):
        plain.backup(backup_target)
    assert not os.path.lexists(backup_target)
    # Statistics without the storage-size capability report no sizes.
    stats = plain.stats()
    assert (stats.storage_bytes, stats.storage_detail, stats.database_bytes) == (None, (), None)
