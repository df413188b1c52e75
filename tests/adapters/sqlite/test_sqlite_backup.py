"""Backup of a SQLite store into a new database file: the report names the file and its
size, a journal or WAL beside the target is refused, and the copy's bytes keep what later
erasure removes from the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, event, memory
from sqlite_builders import store_bytes

from trueheart_core import SQLiteRepository, TrueHeart, ValidationError

SECRET = "zqxbackupsecret"


def _populate(service: TrueHeart) -> None:
    service.ingest_events(
        [event("evt-1", content=f"raw {SECRET}"), event("evt-1", scope=OTHER_SCOPE)]
    )
    service.materialize_once(memory("mem-1", content=f"note {SECRET}"))


@pytest.mark.parametrize("target", [":memory:", "file"])
def test_the_report_names_the_new_file_and_its_size(tmp_path: Path, target: str) -> None:
    source = target if target == ":memory:" else str(tmp_path / "store.db")
    with TrueHeart(SQLiteRepository(source), clock=lambda: NOW) as service:
        _populate(service)
        copy = tmp_path / "copies" / "copy.db"
        copy.parent.mkdir()
        report = service.backup(copy)
    assert report.path == str(copy.resolve())
    assert report.size_bytes == copy.stat().st_size > 0
    with SQLiteRepository(copy, read_only=True) as opened:
        assert TrueHeart(opened).stats(SCOPE).memories == 1


@pytest.mark.parametrize("suffix", ["-wal", "-journal"])
def test_a_journal_or_wal_next_to_the_target_is_refused(
    service: TrueHeart, tmp_path: Path, suffix: str
) -> None:
    target = tmp_path / "copy.db"
    side = Path(f"{target}{suffix}")
    side.write_bytes(b"old log")
    with pytest.raises(ValidationError) as caught:
        service.backup(target)
    assert str(caught.value) == (
        "path: has a -wal, -shm or -journal file beside it but no database (left by a "
        "removed store): move those files away first"
    )
    assert not target.exists() and side.read_bytes() == b"old log"


@pytest.mark.parametrize("suffix", ["-wal", "-journal", "-shm"])
def test_the_side_file_path_of_a_database_is_refused(
    service: TrueHeart, db_path: Path, tmp_path: Path, suffix: str
) -> None:
    """SQLite would read a copy written there as that database's journal or WAL the next
    time the database opens, and remove it."""
    for database in (db_path, tmp_path / "other.db"):
        database.touch()
        target = Path(f"{database}{suffix}")
        if target.exists():
            continue
        with pytest.raises(
            ValidationError, match=r"^path: must not be the side file of another database$"
        ):
            service.backup(target)
        assert not target.exists()


def test_the_copy_keeps_the_bytes_that_later_erasure_removes(
    service: TrueHeart, db_path: Path, tmp_path: Path
) -> None:
    _populate(service)
    target = tmp_path / "copy.db"
    service.backup(target)
    assert service.erase_subject(SCOPE, occurred_at=NOW).verified is True
    assert SECRET.encode() not in store_bytes(db_path)
    assert SECRET.encode() in store_bytes(target)


def test_a_target_path_longer_than_sqlite_opens_is_refused_before_anything(
    service: TrueHeart, tmp_path: Path
) -> None:
    """A copy SQLite could not open is refused as a bad path, as an open of such a path
    is: the source store is sound, and nothing is created."""
    _populate(service)

    def named(length: int) -> Path:
        """A path of ``length`` bytes, in directories whose names fit a file system."""
        path = tmp_path
        while length - len(str(path).encode()) - 1 > 200:
            path = path / ("d" * 200)
            path.mkdir(exist_ok=True)
        return path / ("c" * (length - len(str(path).encode()) - 1))

    fits = service.backup(named(504))
    assert Path(fits.path).exists()
    for length in (505, 530):
        target = named(length)
        with pytest.raises(ValidationError) as caught:
            service.backup(target)
        assert str(caught.value) == "path: must be at most 504 bytes long"
        assert not target.exists()
