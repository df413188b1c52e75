"""File handling of the SQLite adapter: permissions, creation and argument checks."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conformance_builders import NOW, event, msg

from trueheart_core import (
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    ValidationError,
)


def test_a_new_store_and_its_side_files_are_private_to_their_owner(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with SQLiteRepository(path):
        names = sorted(p.name for p in tmp_path.iterdir())
        assert names == ["store.db", "store.db-shm", "store.db-wal"]
        for name in names:
            assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600, name


def test_creation_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    with SQLiteRepository(tmp_path / "store.db"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]


def test_memory_store_cannot_be_read_only() -> None:
    with pytest.raises(ValidationError, match=r"^read_only: requires a database file$"):
        SQLiteRepository(":memory:", read_only=True)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (123, "path: must be a str or os.PathLike"),
        ("", "path: must be a str or os.PathLike"),
        ("bad\x00name.db", "path: must be a str or os.PathLike"),
        ("\udcff.db", "path: must be valid UTF-8"),
    ],
)
def test_bad_path_arguments(path: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SQLiteRepository(path)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_missing_parent_directories_are_created_private_to_their_owner(tmp_path: Path) -> None:
    # As TrueHeart Core 0.1.2 did: a host that opens data/memory.db works on a new machine.
    path = tmp_path / "absent" / "deeper" / "store.db"
    SQLiteRepository(path).close()
    assert path.is_file()
    for directory in (tmp_path / "absent", tmp_path / "absent" / "deeper"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_a_parent_that_is_a_file_is_a_validation_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"not a directory")
    with pytest.raises(ValidationError, match=r"^path: must be in a directory$"):
        SQLiteRepository(tmp_path / "file" / "store.db")
    with pytest.raises(ValidationError, match=r"^path: must be in a directory$"):
        SQLiteRepository(tmp_path / "file" / "more" / "store.db")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("busy_timeout", True, "busy_timeout: must be a number of seconds"),
        ("busy_timeout", "5", "busy_timeout: must be a number of seconds"),
        ("busy_timeout", -1, "busy_timeout: must be from 0 through 3600 seconds"),
        ("read_only", 1, "read_only: must be a bool"),
    ],
)
def test_bad_options(tmp_path: Path, name: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SQLiteRepository(tmp_path / "store.db", **{name: value})  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert not (tmp_path / "store.db").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a /proc filesystem")
def test_a_directory_where_nothing_can_be_created_gives_a_library_error() -> None:
    with pytest.raises(TrueHeartError) as caught:
        SQLiteRepository("/proc/trueheart-cannot-create.db")
    assert type(caught.value) is ValidationError
    assert str(caught.value) == "path: a store cannot be created there"
    assert caught.value.__cause__ is None


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_new_store_at_the_side_file_path_of_an_existing_file_is_refused(
    tmp_path: Path, suffix: str
) -> None:
    with TrueHeart(SQLiteRepository(tmp_path / "w.db"), clock=lambda: NOW) as service:
        service.ingest_event(event("evt-1"))
    before = sorted(p.name for p in tmp_path.iterdir())
    # SQLite would take a new store there for w.db's log, and remove it at w.db's next
    # open: everything written to it would be lost.
    with pytest.raises(
        ValidationError, match=msg("path: must not be the side file of another database")
    ):
        SQLiteRepository(tmp_path / f"w.db{suffix}")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    with TrueHeart(SQLiteRepository(tmp_path / "w.db"), clock=lambda: NOW) as service:
        assert service.stats().events == 1
    # Beside no file, the same name is an ordinary new store.
    with SQLiteRepository(tmp_path / f"other.db{suffix}"):
        pass
