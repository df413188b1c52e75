"""How the evicortex face maps onto the engine: namespaces, IDs, times and errors.

* A namespace ``ns`` is the engine scope ``Scope("evicortex", "namespace", ns)``. The
  map is injective (the namespace is the scope's subject, unchanged), so every
  namespace has its own scope and nothing crosses between them.
* A record (evidence) is one raw event and one memory that share an ID:
  ``"mem-" + sha256(["<namespace>", "<idempotency key>"])[:32]`` (canonical JSON, hex)
  when the caller gives an idempotency key, else ``"mem-" + uuid4().hex``.
* A claim given to ``remember`` is ``"claim-" + sha256(["<namespace>", "<record id>",
  <index>])[:32]``; claims read by an extractor take the engine's own deterministic IDs.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import TypeVar

from evicortex.errors import (
    IdempotencyConflictError,
    PurgedError,
    StorageClosedError,
    ValidationError,
)
from trueheart_core import Scope
from trueheart_core.domain.validation import aware_utc, utf8_size
from trueheart_core.errors import EntityDeleted, IdempotencyConflict
from trueheart_core.errors import ValidationError as EngineValidationError

__all__ = [
    "NAMESPACE_OWNER",
    "NAMESPACE_TENANT",
    "claim_id",
    "engine_errors",
    "moment",
    "namespace_of",
    "optional_moment",
    "record_id",
    "scope_of",
]

NAMESPACE_TENANT = "evicortex"
NAMESPACE_OWNER = "namespace"
MAX_NAMESPACE_CHARS = 128

_T = TypeVar("_T")


def plain_text(value: object) -> object:
    """A ``str`` subclass as the plain ``str`` it holds (its own methods, which could
    raise or answer otherwise, are never asked); anything else as it is."""
    return str.__str__(value) if isinstance(value, str) and type(value) is not str else value


def scope_of(namespace: object) -> Scope:
    """The engine scope of a namespace (checked: a non-blank string of at most 128
    characters that encodes as UTF-8). Its ``subject_id`` is the namespace as a plain
    ``str``, which the face uses from then on."""
    namespace = plain_text(namespace)
    if not isinstance(namespace, str) or not namespace.strip():
        raise ValidationError("namespace", "must be a non-blank string")
    if len(namespace) > MAX_NAMESPACE_CHARS:
        raise ValidationError("namespace", f"must be at most {MAX_NAMESPACE_CHARS} characters")
    if utf8_size(namespace) is None:
        raise ValidationError("namespace", "must be valid UTF-8")
    return Scope(NAMESPACE_TENANT, NAMESPACE_OWNER, namespace)


def namespace_of(scope: Scope) -> str | None:
    """The namespace of an engine scope, or ``None`` for a scope of the engine's own."""
    if (scope.tenant_id, scope.owner_id) == (NAMESPACE_TENANT, NAMESPACE_OWNER):
        return scope.subject_id
    return None


def _digest(parts: list[object]) -> str:
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def record_id(namespace: str, idempotency_key: str | None) -> str:
    """The ID of a record: derived from the key (so a replay finds it), else random."""
    if idempotency_key is None:
        return "mem-" + uuid.uuid4().hex
    return "mem-" + _digest([namespace, idempotency_key])


def claim_id(namespace: str, record: str, index: int) -> str:
    """The ID of the ``index``-th claim given with a record."""
    return "claim-" + _digest([namespace, record, index])


def moment(field: str, value: object) -> datetime:
    """A timezone-aware datetime, or an ISO 8601 string with an offset or ``Z``, in UTC."""
    value = plain_text(value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        parsed: datetime | None = None
        with suppress(ValueError):
            parsed = datetime.fromisoformat(text)
        # Raised after the handler: the parser's error quotes the rejected text, and
        # not even ``__context__`` may keep it.
        if parsed is None:
            raise ValidationError(field, "must be an ISO 8601 time with an offset")
        value = parsed
    if not isinstance(value, datetime):
        raise ValidationError(field, "must be a datetime or an ISO 8601 string")
    representable = True
    try:
        converted = aware_utc(field, value)
    except EngineValidationError:
        # Its tzinfo raised (an offset out of range, a broken implementation), or its
        # UTC instant falls outside years 1 to 9999.
        representable = False
    if not representable:
        raise ValidationError(field, "must be a representable datetime")
    if converted is None:
        raise ValidationError(field, "must be timezone-aware")
    return converted


def optional_moment(field: str, value: object) -> datetime | None:
    """:func:`moment`, or ``None``."""
    return None if value is None else moment(field, value)


@contextmanager
def engine_errors(
    memory_id: str | None = None, renamed: Mapping[str, str] | None = None
) -> Iterator[None]:
    """Translate the engine's errors into this face's where the two differ: validation
    errors become ``evicortex.errors.ValidationError`` (also a ``ValueError``), under
    the name of this face's argument where ``renamed`` maps the engine's field to it; a
    closed service ``StorageClosedError``; a replay conflict
    ``IdempotencyConflictError``; a tombstone ``PurgedError``."""
    try:
        yield
    except ValidationError:
        raise
    except EngineValidationError as error:
        field, _, rule = str(error).partition(": ")
        if (field, rule) == ("repository", "is closed"):  # closed through ``engine``
            raise StorageClosedError() from None
        raise ValidationError((renamed or {}).get(field, field), rule) from None
    except IdempotencyConflict as error:
        if isinstance(error, IdempotencyConflictError):
            raise
        entity = str(error).partition(": ")[2]
        raise IdempotencyConflictError(memory_id or entity) from None
    except EntityDeleted as error:
        raise PurgedError(memory_id or str(error).partition(": ")[2]) from None


def call(function: Callable[[], _T], memory_id: str | None = None) -> _T:
    """``function()`` with the engine's errors translated."""
    with engine_errors(memory_id):
        return function()
