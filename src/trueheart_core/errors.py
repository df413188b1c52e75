"""The TrueHeart error tree.

Every error the library raises on purpose derives from :class:`TrueHeartError`.
Messages are fixed format strings: they never contain event or memory bodies,
rejected values, or the database driver's own error text. ``args`` holds the
single formatted message; the only structured attributes are the ID and commit flag
of :class:`SemanticProjectionError` and the line number of :class:`ImportRefused`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "EmbedderMismatch",
    "EntityDeleted",
    "EntityNotFound",
    "IdempotencyConflict",
    "ImportRefused",
    "InvalidTransition",
    "ProviderError",
    "RepositoryBusy",
    "RepositoryConflict",
    "RepositoryCorruption",
    "RepositoryFull",
    "RepositoryReadOnly",
    "RepositoryUnavailable",
    "ScopeMismatch",
    "SemanticProjectionError",
    "TrueHeartError",
    "TrustEscalation",
    "ValidationError",
]

_C = TypeVar("_C", bound=type)


class TrueHeartError(Exception):
    """Base class of every error raised by TrueHeart Core."""


class ValidationError(TrueHeartError):
    """An argument broke a documented rule: ``"<field>: <rule>"``."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")


class _EntityError(TrueHeartError):
    _prefix = ""

    def __init__(self, entity_id: str) -> None:
        super().__init__(f"{self._prefix}: {entity_id}")


class EntityNotFound(_EntityError):
    """No entity with this ID exists in the requested scope, nor anywhere else."""

    _prefix = "entity not found"


class ScopeMismatch(_EntityError):
    """The ID is absent from the exact scope but known in another scope."""

    _prefix = "scope mismatch"


class IdempotencyConflict(_EntityError):
    """A replay of an existing ID differs from what is stored."""

    _prefix = "idempotency conflict"


class EntityDeleted(_EntityError):
    """A tombstone forbids this ID (or dependency fingerprint) in this scope."""

    _prefix = "entity deleted"


class InvalidTransition(_EntityError):
    """The governance action is not allowed from the memory's current status."""

    _prefix = "invalid transition"


class TrustEscalation(_EntityError):
    """A memory claimed more trust than its least-trusted source."""

    _prefix = "trust escalation"


class RepositoryBusy(TrueHeartError):
    """The database was held by another connection for longer than the busy timeout (or,
    in WAL mode, other connections kept resetting the log while this one tried to read).

    Raised before any work is done, so retrying is safe, with one exception: the
    diagnostic ``erasure checkpoint incomplete`` means an erasing change (forget, delete,
    expiry, subject erasure, ``compact``, ``rebuild_search_index`` or ``rebuild_indexes``)
    *was* committed but its removed bytes could not yet be scrubbed from the WAL,
    because another connection held a read transaction beyond the busy timeout: one that
    began during the call, or before it while the WAL was empty (the check before the
    work only sees readers of the WAL's frames). Every later call on the same repository
    retries the scrub first, and so does ``close()``, which, while the reader still
    holds it up, closes nothing and raises this error again. On PostgreSQL, ``erasure
    rewrite incomplete`` is the same: the erasure was committed, but the rewrite of its
    tables waited for an older transaction (or the tables' locks) past the lock timeout;
    every later erasing call, and ``close()``, runs it first.
    """

    def __init__(self, diagnostic: str) -> None:
        super().__init__(f"repository busy: {diagnostic}")


class RepositoryConflict(RepositoryBusy):
    """A concurrent transaction of another connection conflicted with this one (a
    serialization failure or a deadlock on a database server), and the transaction was
    rolled back: nothing of it was stored.

    The service runs the whole call again, a bounded number of times with a short
    random pause, before this error leaves it; catching it and retrying later is safe.
    """


class RepositoryUnavailable(TrueHeartError):
    """The database server could not be reached, or the connection to it was lost; or
    the file an open SQLite repository works on is no longer at its path (removed, or
    replaced by another file): that repository refuses every call until it is closed
    and the path opened again.

    Nothing of the call was committed, except when the connection was lost while the
    commit itself was in flight: then the outcome is unknown, and replaying the same
    call (ingest and materialize replays are idempotent) settles it. Reconnection is
    automatic on the next call.
    """

    def __init__(self, diagnostic: str) -> None:
        super().__init__(f"repository unavailable: {diagnostic}")


class RepositoryCorruption(TrueHeartError):
    """Stored data or the database file failed an integrity check; fail closed."""

    def __init__(self, diagnostic: str) -> None:
        super().__init__(f"repository corruption: {diagnostic}")


class RepositoryReadOnly(TrueHeartError):
    """A write was attempted on a repository that can only be read: opened with
    ``read_only=True``, or a file, directory or medium the process may not write."""

    def __init__(self, diagnostic: str) -> None:
        super().__init__(f"repository read-only: {diagnostic}")


class RepositoryFull(TrueHeartError):
    """The disk (or the database's size limit) has no room for the write.

    The transaction was rolled back: nothing already acknowledged is lost, and the call
    can be retried once space is freed. The diagnostic that begins ``erasure committed``
    is the one exception: the erasing change *was* committed (the rows are gone from
    every query) but the rewrite that removes their bytes from the database file and its
    WAL could not run. Free disk space, then make any call on the same repository (or
    ``close()`` it): the scrub is retried first, and until it has run another erasing
    call raises ``an earlier erasure's scrub needs free disk space`` (and ``close()``
    closes nothing and raises this error again).
    """

    def __init__(self, diagnostic: str) -> None:
        super().__init__(f"repository full: {diagnostic}")


class EmbedderMismatch(TrueHeartError):
    """The embedder does not match the vector space registered in the store, or changed
    its identity, dimensions or normalisation after the service opened."""

    def __init__(self, diagnostic: str) -> None:
        super().__init__(f"embedder mismatch: {diagnostic}")


class ImportRefused(TrueHeartError):
    """An import was refused and nothing was stored: the target store is not empty, or
    the file is not a sound export of this format version (truncated, reordered, edited,
    of another version, or holding a row its own tombstones forbid). ``line`` is the
    1-based number of the line at fault (``None`` when no one line is), and the message
    names the problem and that number only, never the line's content."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        where = "" if line is None else f"line {line}: "
        super().__init__(f"import refused: {where}{problem}")
        self.line = line


class ProviderError(TrueHeartError):
    """A host-supplied model (embedder, reranker, extractor or token estimator) or the
    host's clock failed, or an optional provider cannot be used (for example, its extra
    is not installed). When the host's object raised, its exception is the
    ``__cause__``."""

    def __init__(self, diagnostic: str) -> None:
        super().__init__(f"provider error: {diagnostic}")


class SemanticProjectionError(TrueHeartError):
    """A write was committed but its semantic projection failed.

    ``memory_id`` is the first memory whose vector could not be computed or stored, and
    ``evidence_committed`` is ``True``: what the write stored stays stored. Repair with
    ``sync_semantic`` (with a working, compatible embedder) instead of writing again. When
    the embedder raised, its exception is the ``__cause__``.
    """

    def __init__(self, memory_id: str, diagnostic: str, *, evidence_committed: bool = True) -> None:
        super().__init__(f"semantic projection failed: {diagnostic}: {memory_id}")
        self.memory_id = memory_id
        self.evidence_committed = evidence_committed


def _body_free(error: TrueHeartError) -> None:
    """Drop the exception chain of an error leaving a public call: an earlier exception
    (a driver error, a decoding error, a malformed row) can quote a body. Only the
    host's own model exception, the documented ``__cause__`` of ``ProviderError`` and
    ``SemanticProjectionError``, is kept."""
    error.__context__ = None
    error.__suppress_context__ = True
    if not isinstance(error, ProviderError | SemanticProjectionError):
        error.__cause__ = None


def _guard(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except TrueHeartError as error:
            _body_free(error)
            raise

    return call


def body_free_errors(cls: _C) -> _C:
    """Class decorator of the public faces: every ``TrueHeartError`` that leaves one of
    the class's public methods (and its constructor) carries no exception chain but the
    documented provider cause. Signatures are unchanged (``inspect.signature`` follows
    the wrapped method)."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(attr, classmethod):
            setattr(cls, name, classmethod(_guard(attr.__func__)))
        elif isinstance(attr, staticmethod):
            setattr(cls, name, staticmethod(_guard(attr.__func__)))
        elif inspect.isfunction(attr):
            setattr(cls, name, _guard(attr))
    return cls
