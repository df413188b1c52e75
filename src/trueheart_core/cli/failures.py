"""Failures the command line detects itself, before or around the library's calls.

Each has a fixed, body-free message and an exit status; under ``--json`` its class name
is the ``error`` of the error object. Paths and IDs in the messages are the user's own
arguments.
"""

from __future__ import annotations

from trueheart_core import stores
from trueheart_core.cli import render
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.model import Scope
from trueheart_core.errors import (
    EntityDeleted,
    EntityNotFound,
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    ScopeMismatch,
    TrueHeartError,
)

__all__ = [
    "CommandFailure",
    "DatabaseMissing",
    "NotConfirmed",
    "TargetExists",
    "TargetRefused",
    "UnknownScope",
    "message_of",
    "status_of",
]

_ABOUT_THE_STORE = (RepositoryCorruption, RepositoryBusy, RepositoryReadOnly)
"""The library errors that say something of the store itself, which their message names."""


def message_of(error: TrueHeartError, store: str | None) -> str:
    """The message of a library error, after the store it concerns when it is one of
    :data:`_ABOUT_THE_STORE` and ``store`` (a path or URL as the user gave it) is known;
    a URL is shown without its password."""
    if isinstance(error, _ABOUT_THE_STORE) and store is not None:
        return f"{stores.redacted(store)}: {error}"
    return str(error)


def status_of(error: TrueHeartError) -> int:
    """The exit status of a library error: 3 not found, 4 corruption, 5 busy or
    read-only, 1 otherwise."""
    if isinstance(error, EntityNotFound | ScopeMismatch | EntityDeleted):
        return 3
    if isinstance(error, RepositoryCorruption):
        return 4
    if isinstance(error, RepositoryBusy | RepositoryReadOnly):
        return 5
    return 1


class CommandFailure(Exception):
    """Base class: ``str(failure)`` is the message, ``status`` the exit status."""

    status = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)


class DatabaseMissing(CommandFailure):
    """No database file at the given path (exit status 3)."""

    status = 3

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: database not found")
        self.path = path


class TargetExists(CommandFailure):
    """The new file a command would create already exists (exit status 1)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: must not exist ({why})")
        self.path = path


class TargetRefused(CommandFailure):
    """The library refused a path the command was given: the store's (a directory, no
    directory above it, a file this process cannot read), or a new file's for another
    reason than that it exists, such as a missing directory (exit status 1); ``rule`` is
    its fixed text."""

    def __init__(self, path: str, rule: str) -> None:
        super().__init__(f"{path}: {rule}")
        self.path = path
        self.rule = rule


class UnknownScope(CommandFailure):
    """A scope of which the store holds nothing and has no audit record (exit status 3)."""

    status = 3

    def __init__(self, scope: Scope, db: str) -> None:
        super().__init__(
            f"unknown scope: {format_scope(scope)} (the store has no record of it; "
            f"{render.command('trueheart', 'scopes', db)} lists the scopes)"
        )


class NotConfirmed(CommandFailure):
    """The confirmation prompt was declined (exit status 1)."""

    def __init__(self) -> None:
        super().__init__("not confirmed")
