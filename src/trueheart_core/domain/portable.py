"""The portable export format: its constants, canonical lines, digests and time codec.

A TrueHeart export is JSON Lines (see ``docs/export-format.md``): a header line, one line
per stored row, and a trailer line. Every line is the canonical JSON of one object
(:func:`canonical`); every row line carries ``digest``, the SHA-256 of the canonical JSON
of the object without it; the trailer carries the count of row lines and the chained
digest of the whole file (:func:`chain_start`, :func:`chain_next`). Pure: no I/O, no
port.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from trueheart_core.domain.model import Scope

__all__ = [
    "FORMAT",
    "KINDS",
    "SCHEMA",
    "VERSION",
    "ExportReceipt",
    "ImportReceipt",
    "TextWriter",
    "canonical",
    "chain_next",
    "chain_start",
    "iso",
    "line_digest",
    "microseconds",
]

FORMAT = "trueheart-export"
"""The ``format`` of the header line."""
VERSION = 1
"""The version of the format this library writes and reads."""
SCHEMA = 8
"""The schema version of the rows the file carries: the SQLite schema version that last
changed them (version 9 changed only where recent rows wait before they are sorted into
place); an import refuses a file of another."""
KINDS = ("event", "body", "memory", "claim", "extraction", "tombstone", "audit")
"""The row kinds, in the order their lines appear; the trailer's kind is ``end``."""
END = "end"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", re.ASCII)


class TextWriter(Protocol):
    """Where an export goes: anything with a ``write`` method taking text, such as a
    file opened for writing in text mode or ``io.StringIO``."""

    def write(self, text: str, /) -> object: ...


def canonical(value: object) -> str:
    """Canonical JSON: sorted keys, ``(",", ":")`` separators, ``ensure_ascii=False``,
    no NaN or infinity. Raises ``ValueError`` or ``TypeError`` for what JSON cannot hold."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def line_digest(obj: dict[str, Any]) -> str:
    """The digest of a row line: SHA-256 hex of the canonical JSON of the object without
    its ``digest`` member."""
    return _sha256(canonical({k: v for k, v in obj.items() if k != "digest"}))


def chain_start(header: dict[str, Any]) -> str:
    """``h0``: the SHA-256 hex of the canonical JSON of the header object without its
    ``exported_at`` member, so that two exports of the same rows have the same digest
    whenever they were made."""
    return _sha256(canonical({k: v for k, v in header.items() if k != "exported_at"}))


def chain_next(previous: str, digest: str) -> str:
    """``h_i = sha256(h_{i-1} + digest_i)``, both as hex text."""
    return _sha256(previous + digest)


def iso(value: int) -> str:
    """The ISO 8601 UTC text of stored microseconds since the epoch, with six fractional
    digits and ``Z``: ``2026-08-13T12:00:00.000000Z``. Raises ``OverflowError`` outside
    the years 1 to 9999."""
    moment = _EPOCH + timedelta(microseconds=value)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f").rjust(26, "0") + "Z"


def microseconds(text: object) -> int:
    """The stored microseconds of a time written by :func:`iso`; raises ``ValueError``
    for anything else."""
    if not isinstance(text, str) or _ISO.fullmatch(text) is None:
        raise ValueError("time")
    moment = datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)
    return (moment - _EPOCH) // _ONE_US


def scope_object(scope: Scope | None) -> dict[str, str] | None:
    """The JSON object of a scope (``None`` for the whole store)."""
    if scope is None:
        return None
    return {
        "tenant_id": scope.tenant_id,
        "owner_id": scope.owner_id,
        "subject_id": scope.subject_id,
    }


def kind_counts(counts: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """Row counts in the order of :data:`KINDS`, every kind present."""
    return tuple((kind, counts.get(kind, 0)) for kind in KINDS)


@dataclass(frozen=True, slots=True)
class ExportReceipt:
    """What :meth:`TrueHeart.export_store` wrote: the scope (``None`` for the whole
    store), the header's ``exported_at``, the number of row lines, the rows per kind (in
    the order of :data:`KINDS`) and the trailer's chained digest."""

    scope: Scope | None
    exported_at: datetime
    rows: int
    counts: tuple[tuple[str, int], ...]
    digest: str


@dataclass(frozen=True, slots=True)
class ImportReceipt:
    """What :meth:`TrueHeart.import_store` stored: the file's scope (``None`` for a
    whole-store export), the number of row lines, the rows per kind (in the order of
    :data:`KINDS`), the trailer's chained digest and the search entries built."""

    scope: Scope | None
    rows: int
    counts: tuple[tuple[str, int], ...]
    digest: str
    search_entries: int
