"""Online backup of an open store into a new file, through SQLite's backup API."""

from __future__ import annotations

import contextlib
import os
import sqlite3

from trueheart_core.adapters.sqlite.connection import translate
from trueheart_core.adapters.sqlite.files import (
    MAX_PATH_BYTES,
    ORPHANS,
    SIDE_FILE,
    side_file_of_another,
)
from trueheart_core.errors import ValidationError

_SIDE_FILES = ("", "-wal", "-journal", "-shm")
DIAGNOSTIC = "backup failed"


def _remove(target: str) -> None:
    for suffix in _SIDE_FILES:
        with contextlib.suppress(OSError):
            os.unlink(f"{target}{suffix}")


def copy_to(conn: sqlite3.Connection, target: str) -> tuple[int, int]:
    """Copy the database of ``conn``, as of one committed state, into a new file at
    ``target``; returns ``(pages, bytes)`` of the copy.

    The target is created exclusively (readable and writable by its owner only), so an
    existing file is never overwritten; a file next to it that SQLite would read as its
    journal or WAL is refused too, and so is a target that is the journal, WAL or
    shared-memory path of an existing file. A copy that fails part-way is removed.
    """
    if len(os.fsencode(target)) > MAX_PATH_BYTES:
        # SQLite cannot open the copy (the source store is sound).
        raise ValidationError("path", f"must be at most {MAX_PATH_BYTES} bytes long")
    if os.path.lexists(target):
        raise ValidationError("path", "must not exist")
    if any(os.path.lexists(f"{target}{suffix}") for suffix in _SIDE_FILES):
        raise ValidationError("path", ORPHANS)
    if side_file_of_another(target):
        raise ValidationError("path", SIDE_FILE)
    try:
        os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        raise ValidationError("path", "must not exist") from None
    except OSError:
        raise ValidationError("path", "must be a new file in a writable directory") from None
    finished = False
    try:
        with translate(DIAGNOSTIC):
            copy = sqlite3.connect(target, isolation_level=None)
            try:
                # One step: the source is read in a single read transaction, so the copy
                # is one committed state even while other processes write.
                conn.backup(copy, pages=-1)
                (pages,) = copy.execute("PRAGMA page_count").fetchone()
            finally:
                copy.close()
        size = os.path.getsize(target)
        finished = True
        return int(pages), size
    except OSError:
        raise ValidationError("path", "must be a new file in a writable directory") from None
    finally:
        if not finished:
            _remove(target)
