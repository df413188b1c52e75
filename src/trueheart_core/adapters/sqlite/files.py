"""The store's files as the operating system shows them, checked before SQLite opens
them: the path, its missing directories, the header, hard links, the side files (WAL,
shared memory, journal) and what changes when a file is written.

The checks use ``stat``, ``access`` and a read of the header through a descriptor opened
without blocking, so a file they refuse is never modified and a FIFO never blocks.
"""

from __future__ import annotations

import os
import stat
import time

from trueheart_core.adapters.sqlite import handles, schema
from trueheart_core.domain.validation import fspath_of
from trueheart_core.errors import RepositoryCorruption, ValidationError

_HEADER_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100

MAX_PATH_BYTES = 504
"""The longest absolute database path SQLite opens: its 512-byte limit less the length of
the ``-journal`` suffix it must be able to add."""
_TEMPORARY_SUFFIX_BYTES = 23
"""What ``connection.create_file`` adds to a new store's name: ``"." + 16 hex + ".init"`` and one
leading dot."""
NEW_STORE_PATH_BYTES = MAX_PATH_BYTES - _TEMPORARY_SUFFIX_BYTES
"""The longest absolute path at which a new store is created (it is built under a longer
temporary name first)."""


def normalise_path(path: object) -> str:
    """The database path as text, or ``":memory:"``."""
    path = fspath_of(path)
    if not isinstance(path, str) or not path:
        raise ValidationError("path", "must be a str or os.PathLike")
    if "\x00" in path:
        raise ValidationError("path", "must be a str or os.PathLike")
    if not _encodes(path):
        raise ValidationError("path", "must be valid UTF-8")
    return path


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_target(path: str) -> bool:
    """Whether a database file exists at the absolute ``path``; ``ValidationError`` for a
    path SQLite cannot open (too long, a dangling symbolic link, a directory, or a FIFO,
    device or socket at the path or at its WAL or shared-memory path).

    Only ``stat`` is used, so a FIFO is never opened and nothing blocks.
    """
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise ValidationError("path", f"must be at most {MAX_PATH_BYTES} bytes long")
    exists = _regular(path)
    if not exists and os.path.islink(path):
        raise ValidationError("path", "is a dangling symbolic link")
    for side in ("-wal", "-shm"):
        if exists and _unreadable(path + side):
            # Left by another user's process: SQLite would fail on it as on damage.
            raise ValidationError(
                "path", "its WAL or shared-memory file cannot be read by this process"
            )
    if not exists and len(os.fsencode(path)) > NEW_STORE_PATH_BYTES:
        raise ValidationError(
            "path", f"must be at most {NEW_STORE_PATH_BYTES} bytes long for a new store"
        )
    return exists


def _unreadable(path: str) -> bool:
    """Whether a regular file is at ``path`` that this process cannot read. Another
    process's close removes its side files at any moment: a file that is gone by the
    time it is asked about (or is readable when asked again) is no obstacle."""
    return all(_regular(path) and not os.access(path, os.R_OK) for _ in range(2))


def _regular(path: str) -> bool:
    """Whether a regular file is at ``path`` (``False`` when nothing is)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise ValidationError("path", "must be in a directory") from None
    except OSError:
        raise ValidationError("path", "cannot be inspected by this process") from None
    if stat.S_ISDIR(mode):
        raise ValidationError("path", "must not be a directory")
    if not stat.S_ISREG(mode):
        raise ValidationError("path", "must be a regular file, not a FIFO, device or socket")
    return True


def make_directories(path: str) -> None:
    """Create the missing parent directories of the absolute ``path`` (as TrueHeart Core
    0.1.2 did), each readable and writable by its owner only."""
    missing = []
    directory = os.path.dirname(path)
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    if not os.path.isdir(directory):
        raise ValidationError("path", "must be in a directory")
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            continue  # made by another process meanwhile
        except OSError:
            raise ValidationError("path", "its directory cannot be created") from None


def writable(path: str) -> bool:
    """Whether this process may write the file at ``path`` and create files beside it
    (the WAL and shared-memory files): a read-only file, directory or medium is not."""
    return os.access(path, os.W_OK) and directory_writable(path)


def directory_writable(path: str) -> bool:
    """Whether this process may create files (a WAL, a shared-memory file) beside
    ``path``. A read-only file in a writable directory can still be read like any store
    in use; only where no side file can be created is a file read as it stands."""
    return os.access(os.path.dirname(path), os.W_OK | os.X_OK)


def unwritable_file(path: str) -> bool:
    """Whether the file at ``path`` grants write permission to nobody (its mode has no
    write bit)."""
    try:
        return os.stat(path).st_mode & 0o222 == 0
    except OSError:
        return False


def inspect_file(path: str) -> handles.Handle:
    """Refuse, by reading the header only, any file that is not a database of ours;
    return this repository's hold on the file's descriptor (see :mod:`handles`), which
    the caller gives back after closing its connection.

    Runs before SQLite touches the file, so a file that these checks (and the
    catalog's, ``connection.inspect_catalog``) refuse, foreign, newer or with a damaged
    header or catalog, is never modified (not even switched to WAL) and no side files
    are created next to it. Damage inside the pages is found later, once the file is
    open: a file in rollback-journal mode (written by other tools) may by then have been
    switched to WAL.
    The file is opened without blocking and must still be a regular file once open.
    """
    try:
        handle = handles.hold(path)
    except handles.NotRegular:
        raise ValidationError(
            "path", "must be a regular file, not a FIFO, device or socket"
        ) from None
    except OSError:
        raise ValidationError("path", "cannot be read by this process") from None
    try:
        _check_header(handle, path)
        if _other_names(handle):
            raise ValidationError("path", LINKED)
    except BaseException:
        handle.release()
        raise
    return handle


LINKED = (
    "names a file that has other names (hard links): SQLite keeps a log beside each "
    "name, so writers through two names would overwrite each other; remove the others"
)
_LINK_PAUSES = (0.001, 0.002, 0.005, 0.01, 0.02)
"""Seconds between looks at the link count of a file that has more than one name: a
store being created is linked into place beside its temporary name, which is removed
at once (see ``connection.create_file``)."""


def _other_names(handle: handles.Handle) -> bool:
    """Whether the file keeps more than one name (looked at again over a few
    milliseconds, so that a store another process is creating is not refused)."""
    try:
        for pause in _LINK_PAUSES:
            if handle.links() <= 1:
                return False
            time.sleep(pause)
        return handle.links() > 1
    except OSError:
        raise ValidationError("path", "cannot be read by this process") from None


def _check_header(handle: handles.Handle, path: str) -> None:
    try:
        header = handle.read(_HEADER_SIZE)
        # A checkpoint (here after a crash, or live in another process) writes page 1
        # before the pages that extend the file, and empties the WAL only when done: a
        # main file shorter than its header is damage only when the WAL is empty, and
        # the size is read last so that a finished checkpoint is seen whole.
        wal_in_use = _has_wal(path)
        size = handle.size()
    except OSError:
        raise RepositoryCorruption("unreadable database file") from None
    if len(header) < _HEADER_SIZE or not header.startswith(_HEADER_MAGIC):
        raise RepositoryCorruption("invalid schema catalog")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    page_count = int.from_bytes(header[28:32], "big")
    header_count_valid = header[24:28] == header[92:96]
    if header_count_valid and page_count and size < page_count * page_size and not wal_in_use:
        raise RepositoryCorruption("truncated database file")
    if int.from_bytes(header[68:72], "big") != schema.APPLICATION_ID:
        raise RepositoryCorruption("invalid schema catalog")
    # The file format's write and read versions: 1 (rollback journal) or 2 (WAL). SQLite
    # opens a file with a greater write version for reading only, which would pass for
    # a read-only store instead of a damaged one.
    if header[18] not in (1, 2) or header[19] not in (1, 2):
        raise RepositoryCorruption("invalid database header")
    version = int.from_bytes(header[60:64], "big", signed=True)
    if version > schema.SCHEMA_VERSION:
        raise RepositoryCorruption("unsupported schema version")
    if version < 1:
        raise RepositoryCorruption("invalid schema version")


def _has_wal(path: str) -> bool:
    try:
        return os.path.getsize(f"{path}-wal") > 0
    except OSError:
        return False


def has_side_files(path: str) -> bool:
    """Whether a WAL or shared-memory file lies beside the database at ``path``."""
    return os.path.exists(f"{path}-wal") or os.path.exists(f"{path}-shm")


Stamp = tuple[int, int, int, bool]
"""What changes when a file is written (see :func:`file_stamp`)."""


def file_stamp(path: str) -> Stamp:
    """What changes when a file is written: its inode, size and modification time, and
    whether side files lie beside it."""
    found = os.stat(path)
    return (found.st_ino, found.st_size, found.st_mtime_ns, has_side_files(path))


SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
ORPHANS = (
    "has a -wal, -shm or -journal file beside it but no database (left by a removed "
    "store): move those files away first"
)


SIDE_FILE = "must not be the side file of another database"


def side_file_of_another(path: str) -> bool:
    """Whether ``path`` is the WAL, journal or shared-memory path of an existing file
    (``w.db-wal`` beside ``w.db``): SQLite would read a new file there as that
    database's own log the next time it is opened, and remove it."""
    return any(
        path.endswith(suffix) and os.path.lexists(path.removesuffix(suffix))
        for suffix in SIDE_SUFFIXES
    )


def orphans(path: str) -> bool:
    """Whether side files lie at ``path`` with no database there: not when another
    process has just created the database (its side files are its own)."""
    if os.path.lexists(path):
        return False
    if not any(os.path.lexists(path + suffix) for suffix in SIDE_SUFFIXES):
        return False
    return not os.path.lexists(path)
