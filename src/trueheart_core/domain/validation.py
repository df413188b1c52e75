"""Validation primitives shared by every DTO and service method.

Pure functions: each one returns the normalised value or raises
:class:`~trueheart_core.errors.ValidationError` with a fixed, body-free message.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from enum import Enum
from types import MappingProxyType
from typing import Any, TypeVar, cast

from trueheart_core.errors import ProviderError, TrueHeartError, ValidationError

MAX_TEXT_CHARS = 128
MAX_CONTENT_BYTES = 256 * 1024
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 64
MAX_INT_BITS = 4096
MAX_CLAIM_VALUE_CHARS = 1024

EMPTY_METADATA: Mapping[str, Any] = MappingProxyType({})

_E = TypeVar("_E", bound=Enum)
_T = TypeVar("_T")


def utf8_size(value: str) -> int | None:
    """The UTF-8 size of ``value``, or ``None`` when it cannot be encoded (lone
    surrogates). The check returns instead of raising inside the handler, so that the
    ``ValidationError`` a caller raises keeps no ``__context__`` holding the text."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def plain(value: str) -> str:
    """``value`` as a plain ``str``: a subclass's own methods (``__len__``, ``encode``,
    ``__eq__``) could tell the checks and the digests something other than what the
    store writes, so a subclass is copied to a ``str`` first."""
    return value if type(value) is str else str.__str__(value)


def text(field: str, value: object) -> str:
    """A non-blank ID-like string of at most 128 code points that encodes as UTF-8, as a
    plain ``str``."""
    if type(value) is not str:
        if not isinstance(value, str):
            raise ValidationError(field, "must be a non-blank string")
        value = plain(value)
    if not value.strip():
        raise ValidationError(field, "must be a non-blank string")
    if len(value) > MAX_TEXT_CHARS:
        raise ValidationError(field, f"must be at most {MAX_TEXT_CHARS} characters")
    if not value.isascii() and utf8_size(value) is None:
        raise ValidationError(field, "must be valid UTF-8")
    return value


def utc(field: str, value: object) -> datetime:
    """A timezone-aware datetime, converted to UTC."""
    if type(value) is datetime and value.tzinfo is UTC:
        return value  # already normalised: the common case on every read
    converted = aware_utc(field, value) if isinstance(value, datetime) else None
    if converted is None:
        raise ValidationError(field, "must be timezone-aware")
    return converted


def clock_now(clock: Callable[[], object]) -> datetime:
    """The time of the host's ``clock``, checked as :func:`utc` checks any time
    (``clock: must be timezone-aware``); a clock that raises is ``ProviderError("the
    clock failed")``, with its exception as the cause, as for every object the host
    plugs in."""
    try:
        now = clock()
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the clock failed") from error
    return utc("clock", now)


def aware_utc(field: str, value: datetime) -> datetime | None:
    """``value`` converted to UTC as a plain ``datetime``, or ``None`` when it is naive
    (no ``tzinfo``, or one whose offset is ``None``).

    Whatever the value's ``tzinfo`` raises while its offset is read (any ``Exception``:
    an offset out of range, a broken implementation) is refused as
    ``<field>: must be a representable datetime``; a ``BaseException`` that is not an
    ``Exception`` (``KeyboardInterrupt``) passes through."""
    try:
        # The base class's methods: a subclass's own could answer otherwise.
        if value.tzinfo is None or datetime.utcoffset(value) is None:
            return None
        if value.tzinfo is not UTC:
            value = datetime.astimezone(value, UTC)
        if type(value) is not datetime:  # a plain datetime, whatever a subclass does
            value = datetime.combine(datetime.date(value), datetime.time(value), UTC)
        return value
    except Exception:
        raise ValidationError(field, "must be a representable datetime") from None


def content(field: str, value: object) -> str:
    """A non-empty body of at most 256 KiB of UTF-8, as a plain ``str``."""
    if type(value) is not str:
        if not isinstance(value, str):
            raise ValidationError(field, "must be non-empty UTF-8 text")
        value = plain(value)
    if not value:
        raise ValidationError(field, "must be non-empty UTF-8 text")
    if len(value) * 4 <= MAX_CONTENT_BYTES and value.isascii():
        return value
    size = utf8_size(value)
    if size is None:
        raise ValidationError(field, "must be valid UTF-8")
    if size > MAX_CONTENT_BYTES:
        raise ValidationError(field, "must be at most 256 KiB UTF-8")
    return value


def claim_value(value: object) -> str:
    """A claim value: non-blank text of at most 1,024 characters of valid UTF-8, as a
    plain ``str``."""
    if type(value) is not str:
        if not isinstance(value, str):
            raise ValidationError("value", "must be a non-blank string")
        value = plain(value)
    if not value.strip():
        raise ValidationError("value", "must be a non-blank string")
    if len(value) > MAX_CLAIM_VALUE_CHARS:
        raise ValidationError("value", f"must be at most {MAX_CLAIM_VALUE_CHARS} characters")
    if not value.isascii() and utf8_size(value) is None:
        raise ValidationError("value", "must be valid UTF-8")
    return value


def real(value: object) -> int | float | None:
    """An ``int`` or ``float`` (not ``bool``) as a plain ``int`` or ``float``, or ``None``
    for anything else: a subclass's own comparisons and conversions could say something
    other than the number it holds, so they are never asked."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return None


def confidence(value: object) -> float:
    """A confidence: an int or float from 0 through 1, as a float (``bool`` rejected)."""
    number = real(value)
    # The range test alone also rejects NaN and the infinities, and unlike math.isfinite
    # it never converts a huge int to float (which would overflow).
    if number is None or not 0 <= number <= 1:
        raise ValidationError("confidence", "must be a number from 0 through 1")
    return float(number) + 0.0  # + 0.0 turns -0.0 into 0.0


def member(field: str, value: object, enum: type[_E], rule: str) -> _E:
    """An instance of exactly this enum (a raw value that equals a member is rejected)."""
    if not isinstance(value, enum):
        raise ValidationError(field, rule)
    return value


def positive_duration(field: str, value: object) -> timedelta:
    """A strictly positive ``timedelta``, as a plain ``timedelta`` (a subclass's own
    comparisons are never asked)."""
    if not isinstance(value, timedelta):
        raise ValidationError(field, "must be positive")
    if type(value) is not timedelta:
        value = timedelta.__add__(value, _NO_TIME)
    if not timedelta.__gt__(value, _NO_TIME):
        raise ValidationError(field, "must be positive")
    return value


_NO_TIME = timedelta(0)


def whole(field: str, value: object, low: int, high: int) -> int:
    """An ``int`` from ``low`` through ``high`` (``bool`` is rejected), as a plain
    ``int``: a subclass's own comparisons and arithmetic are never asked."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be from {low} through {high}")
    number = int.__int__(value)
    if not low <= number <= high:
        raise ValidationError(field, f"must be from {low} through {high}")
    return number


def limit(value: object) -> int:
    """A page size from 1 through 100 (``bool`` is rejected), as a plain ``int``."""
    return whole("limit", value, 1, 100)


def items(value: list[_T] | tuple[_T, ...]) -> tuple[_T, ...]:
    """The items of a list or tuple, read once through the base class (a subclass's own
    ``__iter__`` could yield other items on each pass), as a plain tuple."""
    if type(value) is tuple:
        return value
    if isinstance(value, tuple):
        return tuple(tuple.__iter__(value))
    return tuple(list.__iter__(value))


def text_tuple(field: str, value: object) -> tuple[str, ...]:
    """A tuple whose entries are text components reported under ``field``, as a plain
    tuple of plain ``str``."""
    if type(value) is tuple and all(type(entry) is str for entry in value):
        for entry in value:
            text(field, entry)
        return value
    if not isinstance(value, tuple):
        raise ValidationError(field, "must be a tuple")
    return tuple([text(field, entry) for entry in tuple.__iter__(value)])


def claim_ids_by_source(value: object) -> dict[str, str]:
    """A mapping of supersession keys (as an extractor writes them) to claim IDs, read
    once through its ``items()`` into a plain ``dict`` of plain text (``None``: empty).
    A host mapping whose own methods raise is refused, never passed on."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("claim_ids_by_source", "must map source names to claim IDs")
    try:
        pairs = list(value.items())
    except Exception:
        pairs = None
    if pairs is None:
        raise ValidationError("claim_ids_by_source", "must be a readable mapping")
    mapping = {}
    for pair in pairs:
        if not isinstance(pair, tuple) or tuple.__len__(pair) != 2:
            raise ValidationError("claim_ids_by_source", "must be a readable mapping")
        source, claim_id = tuple.__iter__(pair)
        mapping[text("claim_ids_by_source", source)] = text("claim_ids_by_source", claim_id)
    return mapping


def _json_default(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError("not JSON")


# One shared encoder: json.dumps with options builds a new encoder on every call.
_CANONICAL = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
    default=_json_default,
)


def _direct_encoder() -> Callable[[object, int], Sequence[str]] | None:
    """The C encoder behind ``_CANONICAL``, made once, or None where the ``json``
    module has none (or it writes another text).

    ``JSONEncoder.encode`` makes a new C encoder (and a closure) on every call, which
    costs as much as the encoding of a short digest input, and every write encodes
    several. The encoder is made without a table of the containers it is inside: the
    values encoded here are built by this library or frozen by :func:`metadata`, so
    none holds itself, and its depth is bounded by the recursion limit either way."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        encoder = make(
            None, _json_default, json.encoder.encode_basestring, None, ":", ",", True, False, False
        )
        probe = [{"b": (1, -2.5, None), "a": "é\n"}, MappingProxyType({"c": True})]
        if "".join(encoder(probe, 0)) != _CANONICAL.encode(probe):
            return None
    except (TypeError, ValueError):
        return None
    return cast("Callable[[object, int], Sequence[str]]", encoder)


_DIRECT = _direct_encoder()


def canonical_json(value: object) -> str:
    """The canonical JSON text used for storage, size limits, digests and comparison.

    ``json.dumps`` with sorted keys, ``(",", ":")`` separators, ``ensure_ascii=False``
    and ``allow_nan=False``; tuples are arrays and mappings are objects.
    """
    if value is EMPTY_METADATA:
        return "{}"
    if _DIRECT is None:
        return _CANONICAL.encode(value)
    return "".join(_DIRECT(value, 0))


def _freeze(value: object, depth: int) -> object:
    if value is None or type(value) is str or type(value) is bool:
        return value
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, int):
        value = int.__int__(value)  # a plain int, whatever a subclass says of itself
        if value.bit_length() > MAX_INT_BITS:
            raise ValidationError("metadata", "must contain bounded integers")
        return value
    if isinstance(value, float):
        value = float.__float__(value)
        if not math.isfinite(value):
            raise ValidationError("metadata", "must contain finite JSON values")
        return value
    if isinstance(value, list | tuple):
        if depth >= MAX_METADATA_DEPTH:
            raise ValidationError("metadata", f"must be at most {MAX_METADATA_DEPTH} levels deep")
        return tuple(_freeze(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        if depth >= MAX_METADATA_DEPTH:
            raise ValidationError("metadata", f"must be at most {MAX_METADATA_DEPTH} levels deep")
        return _freeze_mapping(value, depth + 1)
    raise ValidationError("metadata", "must contain only JSON values")


def _freeze_mapping(value: Mapping[Any, Any], depth: int) -> Mapping[str, Any]:
    frozen: dict[str, object] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValidationError("metadata", "must have string keys")
        text = plain(key)
        # Two keys of a host mapping can be one text (a str subclass that compares by
        # identity): storing both under it would drop one value without a word.
        if text in frozen:
            raise ValidationError("metadata", "must not repeat a key")
        frozen[text] = _freeze(item, depth)
    return MappingProxyType(frozen)


def metadata(value: object) -> Mapping[str, Any]:
    """Deep-frozen JSON object metadata (lists become tuples, mappings read-only).

    Lists and tuples are both accepted as JSON arrays so that frozen metadata can be fed
    back into a new DTO. The canonical serialisation must fit in 16 KiB of UTF-8.
    """
    if not isinstance(value, Mapping):
        raise ValidationError("metadata", "must be a JSON object")
    if type(value) in (dict, MappingProxyType) and not value:
        return EMPTY_METADATA
    frozen, size = _frozen_metadata(value)
    if size is None:
        raise ValidationError("metadata", "must be valid UTF-8")
    if size > MAX_METADATA_BYTES:
        raise ValidationError("metadata", "must serialize to at most 16 KiB")
    return frozen


def _frozen_metadata(value: Mapping[Any, Any]) -> tuple[Mapping[str, Any], int | None]:
    """Frozen metadata and the UTF-8 size of its canonical JSON (``None`` when it cannot
    be encoded). Failures are raised after their handler ends, so the error keeps no
    context that holds the metadata."""
    rule = None
    try:
        frozen = _freeze_mapping(value, 1)
        encoded = canonical_json(frozen)
    except (OverflowError, RecursionError, ValueError):
        rule = "must contain bounded JSON values"
    except TrueHeartError:
        raise
    except Exception:  # a host mapping whose own methods raise: refused, never passed on
        rule = "must be a readable JSON object"
    if rule is not None:
        raise ValidationError("metadata", rule)
    return frozen, utf8_size(encoded)


def thaw(value: object) -> object:
    """A plain ``dict``/``list`` copy of frozen metadata, for pickling and JSON output."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


def fspath_of(value: object) -> object:
    """``os.fspath(value)`` for a path-like object, else ``value`` itself; ``None`` when
    the object's ``__fspath__`` raises, whatever it raises, or returns neither ``str``
    nor ``bytes``. The caller refuses ``None`` with its own ``ValidationError``, raised
    outside any handler, so that no host exception (nor what it quotes) is chained to
    it."""
    if not isinstance(value, os.PathLike):
        return _plain_path(value)
    try:
        return _plain_path(os.fspath(value))
    except Exception:  # the host's own code: refused as a bad path, never passed on
        return None


def _plain_path(value: object) -> object:
    """A ``str`` or ``bytes`` subclass as the plain value it holds (its own methods are
    never asked); anything else as it is."""
    if isinstance(value, str) and type(value) is not str:
        return str.__str__(value)
    if isinstance(value, bytes) and type(value) is not bytes:
        return bytes(memoryview(value))
    return value
