"""The codecs every stored row shares: times as integer microseconds, durations as
decimal text, scopes as keys, metadata as canonical JSON, and the row digest (the
SHA-256 of the canonical JSON of a table tag, the scope and every stored field)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from trueheart_core.domain.model import (
    MemoryStatus,
    Scope,
    TrustLevel,
)
from trueheart_core.domain.policy import sha256_hex
from trueheart_core.domain.validation import EMPTY_METADATA, canonical_json
from trueheart_core.domain.validation import metadata as freeze_metadata
from trueheart_core.errors import ValidationError
from trueheart_core.ports import (
    EventRow,
    MemoryRow,
    ScopeKey,
)

_Row = TypeVar("_Row", EventRow, MemoryRow)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_US = timedelta(microseconds=1)
EVENT_ACTIVE = "active"
EVENT_EXPIRED = "expired"


class RowInvalid(Exception):
    """A stored row failed its digest or its validation. ``code`` names the problem."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


# --- primitive codecs -------------------------------------------------------------------


def to_us(value: datetime) -> int:
    """Integer microseconds since the Unix epoch of an aware datetime."""
    return (value - EPOCH) // ONE_US


def from_us(value: object) -> datetime:
    """The UTC datetime of stored microseconds."""
    if type(value) is not int:
        raise RowInvalid("invalid_row")
    try:
        return EPOCH + timedelta(microseconds=value)
    except OverflowError:
        raise RowInvalid("invalid_row") from None


def duration_text(value: timedelta) -> str:
    """Stored form of a duration: decimal text of integer microseconds (may exceed int64)."""
    return str(value // ONE_US)


def parse_duration(value: object) -> timedelta:
    """The duration of stored decimal microseconds."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        raise RowInvalid("invalid_row")
    try:
        return timedelta(microseconds=int(value))
    except (OverflowError, ValueError):
        raise RowInvalid("invalid_row") from None


def scope_key(scope: Scope) -> ScopeKey:
    """The stored form of a scope."""
    return (scope.tenant_id, scope.owner_id, scope.subject_id)


def scope_of(key: ScopeKey, known: Scope | None = None) -> Scope:
    """The validated Scope of a stored key (``known`` is reused when it matches)."""
    if known is not None and scope_key(known) == key:
        return known
    try:
        return Scope(*key)
    except (ValidationError, TypeError):
        raise RowInvalid("invalid_row") from None


def _json(text: object) -> Any:
    if text == "{}":
        return EMPTY_METADATA
    if not isinstance(text, str):
        raise RowInvalid("invalid_row")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise RowInvalid("invalid_row") from None
    if canonical_json(value) != text:
        raise RowInvalid("invalid_row")
    return freeze_metadata(value)


def _digest(tag: str, scope: ScopeKey, *fields: object) -> str:
    try:
        return sha256_hex(canonical_json([tag, list(scope), *fields]))
    except (TypeError, ValueError, UnicodeEncodeError):
        return ""


def _signed(row: _Row, digest: str) -> _Row:
    """A row just built here, with its digest set (it has not escaped yet, so setting a
    field of the frozen row is cheaper than copying it)."""
    object.__setattr__(row, "digest", digest)
    return row


def _check(row_digest: object, expected: str) -> None:
    if not expected or row_digest != expected:
        raise RowInvalid("digest_mismatch")


_TRUST_LEVELS = {int(level): level for level in TrustLevel}
_STATUSES = {status.value: status for status in MemoryStatus}


def _trust(value: object) -> TrustLevel:
    level = _TRUST_LEVELS.get(value) if type(value) is int else None
    if level is None:
        raise RowInvalid("invalid_row")
    return level
