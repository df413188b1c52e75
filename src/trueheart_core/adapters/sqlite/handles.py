"""The descriptors through which the library reads the bytes of a store's database file.

POSIX advisory locks belong to a process and a file, not to a descriptor: closing *any*
descriptor of a file releases every lock the process holds on it, SQLite's included.
A connection whose locks vanish that way no longer stops another process from taking
the file's exclusive lock when it closes its last connection, checkpointing and deleting
the WAL that this process is still writing: commits are lost and the file is damaged.
SQLite never closes a descriptor of a file while the process holds a lock on it; this
module keeps the library to the same rule for the bytes it reads itself (the header
checked at open, the residue search). It holds one descriptor per file for as long as
any repository of this process has the file open, and closes it only after the last
one has closed its connection.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Collection
from dataclasses import dataclass, field

from trueheart_core.errors import RepositoryCorruption

_Key = tuple[int, int]
"""A file's identity: ``(st_dev, st_ino)``."""


@dataclass
class _Entry:
    fds: list[int] = field(default_factory=list)
    holds: int = 0


_lock = threading.Lock()
_entries: dict[_Key, _Entry] = {}


class NotRegular(Exception):
    """The path names something other than a regular file (a FIFO, device or socket)."""


class Handle:
    """One repository's hold on the descriptor of its database file."""

    __slots__ = ("_fd", "_key", "_released")

    def __init__(self, key: _Key, fd: int) -> None:
        self._key = key
        self._fd = fd
        self._released = False

    def read(self, size: int, offset: int = 0) -> bytes:
        """Up to ``size`` bytes from ``offset`` (fewer at the end of the file).
        Raises ``OSError``."""
        parts: list[bytes] = []
        while size > 0:
            part = os.pread(self._fd, min(size, 1 << 20), offset)
            if not part:
                break
            parts.append(part)
            size -= len(part)
            offset += len(part)
        return b"".join(parts)

    @property
    def key(self) -> _Key:
        """The identity ``(st_dev, st_ino)`` of the file this hold is on."""
        return self._key

    def size(self) -> int:
        """The file's size in bytes. Raises ``OSError``."""
        return os.fstat(self._fd).st_size

    def links(self) -> int:
        """How many names (hard links) the file has. Raises ``OSError``."""
        return os.fstat(self._fd).st_nlink

    def release(self) -> None:
        """Give the hold back (idempotent); the descriptor is closed with the last hold
        of this process on the file. Call it after the repository's connection closed."""
        with _lock:
            if self._released:
                return
            self._released = True
            entry = _entries.get(self._key)
            if entry is None:
                return
            entry.holds -= 1
            if entry.holds > 0:
                return
            del _entries[self._key]
            fds = entry.fds
        for fd in fds:
            os.close(fd)


def hold(path: str) -> Handle:
    """A hold on the descriptor of the regular file at ``path``: the one this process
    already has open for it, or a new one (opened without blocking). Raises ``OSError``
    when the file cannot be opened, :class:`NotRegular` when it is not a regular file."""
    with _lock:
        try:
            known = os.stat(path)
        except OSError:
            known = None
        if known is not None and stat.S_ISREG(known.st_mode):
            entry = _entries.get((known.st_dev, known.st_ino))
            if entry is not None:
                entry.holds += 1
                return Handle((known.st_dev, known.st_ino), entry.fds[0])
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            opened = os.fstat(fd)
        except OSError:
            os.close(fd)
            raise
        if not stat.S_ISREG(opened.st_mode):
            # Not a database file, so no lock of SQLite's lives on it.
            os.close(fd)
            raise NotRegular
        key = (opened.st_dev, opened.st_ino)
        # The path may have been replaced by a file this process holds already: the new
        # descriptor must not be closed either, so it joins that file's descriptors.
        entry = _entries.setdefault(key, _Entry())
        entry.fds.append(fd)
        entry.holds += 1
        return Handle(key, entry.fds[0])


def residue(path: str, handle: Handle | None, needles: Collection[bytes]) -> frozenset[bytes]:
    """The needles found in the database file at ``path`` (read through ``handle``, the
    repository's hold on it, when there is one), its WAL or its rollback journal."""
    found: set[bytes] = set()
    for suffix in ("", "-wal", "-journal"):
        try:
            if not suffix and handle is not None:
                # Through the held descriptor: closing one of its own would release this
                # process's locks on the file (see the module's docstring).
                data = handle.read(handle.size())
            else:
                # SQLite locks the database and shared-memory files only.
                with open(f"{path}{suffix}", "rb") as file:
                    data = file.read()
        except FileNotFoundError:
            continue
        except OSError:
            raise RepositoryCorruption("unreadable database file") from None
        found.update(needle for needle in needles if needle in data)
    return frozenset(found)


def sizes(path: str, diagnostic: str) -> tuple[int, int]:
    """The bytes of the database file at ``path`` and of its WAL (0 when there is none);
    ``RepositoryCorruption(diagnostic)`` when the database file cannot be read. Sizes
    come from the directory entries: no descriptor is opened (see the module's
    docstring)."""
    try:
        database = os.path.getsize(path)
    except OSError:
        raise RepositoryCorruption(diagnostic) from None
    try:
        wal = os.path.getsize(f"{path}-wal")
    except OSError:
        wal = 0
    return database, wal
