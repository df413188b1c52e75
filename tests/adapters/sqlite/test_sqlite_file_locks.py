"""The library never releases SQLite's locks on a store by closing a descriptor of its own.

POSIX advisory locks belong to the process: closing any descriptor of the database file
releases every lock the process holds on it. A connection that lost its locks that way
lets another process, closing its last connection, checkpoint and delete the WAL the
first one still writes. These tests ask another process whether the shared lock of an
open store is still held after the library read the file itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trueheart_core import RepositoryCorruption, SQLiteRepository
from trueheart_core.adapters.sqlite import connection

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX advisory locks")

# SQLite's shared lock is a read lock on the 510 bytes after PENDING_BYTE + 1; a process
# whose write lock over them is refused sees another process holding a shared lock.
_PROBE = """
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002, os.SEEK_SET)
except OSError as error:
    print("held" if error.errno in (errno.EACCES, errno.EAGAIN) else "error")
else:
    print("free")
"""


def _shared_lock_held(path: Path) -> bool:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer = result.stdout.strip()
    assert answer in ("held", "free"), answer
    return answer == "held"


def test_the_probe_sees_an_open_store_and_a_closed_one(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    repository = SQLiteRepository(path)
    assert _shared_lock_held(path)
    repository.close()
    assert not _shared_lock_held(path)


def test_opening_a_second_repository_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    first = SQLiteRepository(path)
    second = SQLiteRepository(path)
    assert _shared_lock_held(path)
    second.close()
    assert _shared_lock_held(path), "closing the second released the first one's lock"
    third = SQLiteRepository(path)
    third.close()
    assert _shared_lock_held(path)
    first.close()
    assert not _shared_lock_held(path)


def test_a_refused_open_keeps_the_locks_of_an_open_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    first = SQLiteRepository(path)

    def refuse(target: str, *, busy_timeout: float) -> int:
        raise RepositoryCorruption("invalid schema catalog")

    # A refusal after the header was read through the held descriptor.
    monkeypatch.setattr(connection, "inspect_catalog", refuse)
    with pytest.raises(RepositoryCorruption):
        SQLiteRepository(path)
    assert _shared_lock_held(path)
    first.close()


def test_searching_the_file_for_residue_keeps_the_locks(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    first = SQLiteRepository(path)
    second = SQLiteRepository(path)
    assert second.residue([b"SQLite format 3"]) == frozenset({b"SQLite format 3"})
    second.close()
    assert first.residue([b"no such bytes"]) == frozenset()
    assert _shared_lock_held(path)
    first.close()
