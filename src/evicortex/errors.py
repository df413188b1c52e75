"""The errors of the evicortex face.

Every error is a :class:`trueheart_core.TrueHeartError` (``EviCortexError`` is that class),
so one ``except`` clause catches both faces. Messages are fixed and body-free.
"""

from __future__ import annotations

from trueheart_core.errors import (
    EmbedderMismatch,
    IdempotencyConflict,
    ProviderError,
    RepositoryBusy,
    RepositoryConflict,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    RepositoryUnavailable,
    SemanticProjectionError,
    TrueHeartError,
)
from trueheart_core.errors import ValidationError as _EngineValidationError

__all__ = [
    "EmbedderMismatch",
    "EviCortexError",
    "IdempotencyConflictError",
    "ProviderError",
    "PurgedError",
    "RepositoryBusy",
    "RepositoryConflict",
    "RepositoryCorruption",
    "RepositoryFull",
    "RepositoryReadOnly",
    "RepositoryUnavailable",
    "SemanticProjectionError",
    "StorageClosedError",
    "ValidationError",
]

EviCortexError = TrueHeartError
"""The base of every error either face raises on purpose."""


class ValidationError(_EngineValidationError, ValueError):
    """An argument broke a documented rule: ``"<field>: <rule>"``. Also a
    ``ValueError``, and the engine's ``ValidationError``."""


class IdempotencyConflictError(IdempotencyConflict):
    """A ``remember`` with an idempotency key already used in the namespace differs from
    the stored request."""


class StorageClosedError(TrueHeartError):
    """The store was closed; open it again to use it."""

    def __init__(self) -> None:
        super().__init__("storage closed")


class PurgedError(TrueHeartError):
    """The record (or the record an idempotency key names) was purged: it cannot be
    written again, so nothing purged comes back."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"memory purged: {memory_id}")
        self.memory_id = memory_id
