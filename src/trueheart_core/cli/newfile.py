"""New SQLite files that a command builds whole before anyone can see them: an ``import``
into a new file and a ``demo``.

Each is built under a temporary name in the target's directory and linked into place
once complete. The link fails rather than replace a file that another process created
at the target meanwhile (a check before creating the file would leave a window in
which that file would be opened and written, then removed by the cleanup). The
temporary name is always removed, and so are the directories the command made unless
it succeeded.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from typing import TypeVar

from trueheart_core import stores
from trueheart_core.cli.common import refuse_new_store, remove_store
from trueheart_core.cli.failures import TargetExists, TargetRefused

__all__ = ["built_in_place", "temporary_path"]

_T = TypeVar("_T")
_COMPACT_BYTES = 17
"""The bytes of a compact temporary name: a dot and 16 hexadecimal digits."""


def temporary_path(target: str, purpose: str) -> str:
    """A new temporary path beside ``target``: ``.NAME.PURPOSE-`` and 16 random
    hexadecimal digits, or, where a store could not be created at a path that long, a
    dot and the 16 digits alone. ``TargetRefused`` when ``target`` is longer than a new
    store's path may be, or when even the shorter name is too long."""
    directory, name = os.path.split(os.path.abspath(target))
    token = secrets.token_hex(8)
    limit = stores.NEW_STORE_PATH_BYTES
    if len(os.fsencode(os.path.join(directory, name))) > limit:
        raise TargetRefused(target, f"must be at most {limit} bytes long for a new store")
    for candidate in (f".{name}.{purpose}-{token}", f".{token}"):
        path = os.path.join(directory, candidate)
        if len(os.fsencode(path)) <= limit:
            return path
    shortest = limit - _COMPACT_BYTES + len(os.fsencode(name))
    raise TargetRefused(
        target, f"must be at most {shortest} bytes long for a store that {purpose} creates"
    )


def _unlink_if_same(target: str, temporary: str) -> None:
    """Remove ``target`` when it is a link to the file at ``temporary``."""
    with contextlib.suppress(OSError):
        ours, there = os.stat(temporary), os.lstat(target)
        if (ours.st_dev, ours.st_ino) == (there.st_dev, there.st_ino):
            os.remove(target)


def _missing_directories(path: str) -> list[str]:
    """The directories above ``path`` that do not exist yet, the deepest first."""
    missing = []
    directory = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    return missing


def built_in_place(
    target: str, build: Callable[[str], _T], *, busy_timeout: float, purpose: str
) -> _T:
    """``build(temporary)``, which creates and fills a SQLite store at the temporary
    path it is given, then that store linked to ``target`` with its WAL in its file;
    returns what ``build`` returned. ``TargetExists`` when a file appeared at
    ``target`` meanwhile (it is left as it is)."""
    refuse_new_store(target)
    missing = _missing_directories(target)
    temporary = temporary_path(target, purpose)
    done = False
    try:
        try:
            result = build(temporary)
        except TargetRefused as refused:  # about the directory both names share
            raise TargetRefused(target, refused.rule) from None
        # Only the file is linked into place, and the temporary name's side files are
        # removed: what the command committed must be in the file itself.
        stores.settle_file(temporary, busy_timeout=busy_timeout)
        # Side files left there meanwhile, or the database they belong to.
        refuse_new_store(target)
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise TargetExists(target, f"another process created it during the {purpose}") from None
        done = True
        return result
    finally:
        if not done:
            # Stopped (Ctrl-C, SIGTERM) just after the link: the file there is this
            # command's own, and a command that did not finish leaves nothing.
            _unlink_if_same(target, temporary)
        remove_store(temporary)
        if not done:
            for made in missing:
                with contextlib.suppress(OSError):  # not empty: another process uses it
                    os.rmdir(made)
