"""Export of a store (or one scope) as portable JSON Lines, and its import into an
empty store (see ``docs/export-format.md``).

Service-layer functions over one unit of work; the caller opens it (a reading one for
an export, a writing one for an import, which the caller commits). An export streams the
port's row iterators and writes each line as it is made: memory use does not grow with
the store. Every row is verified as it is read, so a damaged store is never exported.
An import checks each line (its digest, the chain, the order of kinds, the row itself)
as it stores it, refuses a row that a tombstone of the file forbids, builds the search
index the normal way, and finally verifies the whole store it built; any failure raises
``ImportRefused`` and the caller's unit rolls back.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trueheart_core.domain import portable as fmt
from trueheart_core.domain.model import Scope
from trueheart_core.domain.portable import ExportReceipt, ImportReceipt
from trueheart_core.domain.validation import utf8_size
from trueheart_core.errors import ImportRefused, ValidationError
from trueheart_core.ports import (
    ClaimRow,
    EdgeRow,
    MemoryRow,
    ScopeKey,
    UnitOfWork,
)
from trueheart_core.service import hosted, integrity, loading, records
from trueheart_core.service import portable_rows as rows
from trueheart_core.service import search as searching
from trueheart_core.service.records import RowInvalid, scope_key

Write = Callable[[str], None]
Row = dict[str, Any]


def _verified(diagnostic: str, check: Callable[..., object], *args: Any) -> None:
    try:
        check(*args)
    except (RowInvalid, ValueError, TypeError, OverflowError):
        loading.corrupt(diagnostic)


def _events(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.events.iter(key):
        _verified("invalid raw event record", records.receipt_from_row, row)
        yield rows.event_line(row)


def _bodies(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for body in uow.events.iter_bodies(key):
        receipt = uow.events.get(body.scope, (body.event_id,)).get(body.event_id)
        if receipt is None:
            loading.corrupt("invalid raw body record")
        _verified("invalid raw body record", records.check_body, body, receipt.content_hash)
        yield rows.body_line(body)


def _memory_row(uow: UnitOfWork, row: MemoryRow) -> list[EdgeRow]:
    edges = uow.memories.edges(row.scope, (row.memory_id,))
    _verified("invalid memory record", records.memory_from_row, row, edges)
    return edges


def _memories(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.memories.iter(key):
        yield rows.memory_line(row, _memory_row(uow, row))


def _claims(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.claims.iter(key):
        memory = uow.memories.get(row.scope, row.claim_id)
        if memory is None:
            loading.corrupt("invalid claim record")
        edges = _memory_row(uow, memory)
        _verified("invalid claim record", _claim_of, row, memory, edges)
        yield rows.claim_line(row)


def _claim_of(row: ClaimRow, memory: MemoryRow, edges: list[EdgeRow]) -> None:
    records.claim_from_row(row, records.memory_from_row(memory, edges))


def _extractions(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.claims.iter_extractions(key):
        _verified("invalid extraction record", records.extraction_from_row, row)
        yield rows.extraction_line(row)


def _tombstones(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.tombstones.iter(key):
        _verified("invalid tombstone", records.check_tombstone, row)
        yield rows.tombstone_line(row)


def _audits(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.audit.iter(key):
        _verified("invalid audit record", records.audit_from_row, row)
        yield rows.audit_line(row)


_EXPORTERS: tuple[Callable[[UnitOfWork, ScopeKey | None], Iterator[Row]], ...] = (
    _events,
    _bodies,
    _memories,
    _claims,
    _extractions,
    _tombstones,
    _audits,
)


def export(
    uow: UnitOfWork, scope: Scope | None, exported_at: datetime, write: Write
) -> ExportReceipt:
    """Write the header, every row of the scope (or the store) kind by kind, and the
    trailer, one line per ``write`` call, each line as soon as its row is read."""
    key = None if scope is None else scope_key(scope)
    header = {
        "format": fmt.FORMAT,
        "version": fmt.VERSION,
        "schema": fmt.SCHEMA,
        "scope": fmt.scope_object(scope),
        "exported_at": fmt.iso(records.to_us(exported_at)),
    }
    write(fmt.canonical(header) + "\n")
    chain = fmt.chain_start(header)
    counts: dict[str, int] = {}
    for kind, exporter in zip(fmt.KINDS, _EXPORTERS, strict=True):
        for obj in exporter(uow, key):
            digest = fmt.line_digest(obj)
            obj["digest"] = digest
            write(fmt.canonical(obj) + "\n")
            chain = fmt.chain_next(chain, digest)
            counts[kind] = counts.get(kind, 0) + 1
    total = sum(counts.values())
    write(fmt.canonical({"kind": fmt.END, "rows": total, "digest": chain}) + "\n")
    return ExportReceipt(scope, exported_at, total, fmt.kind_counts(counts), chain)


_NOT_LINES = "must be an iterable of lines, such as a file"

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line an import reads: 16 MiB of UTF-8, its newline included.

The longest line of a row is that of a memory, whose body and metadata are the largest
fields (a body's line is a little shorter). Its body is at most ``MAX_CONTENT_BYTES``
(262,144 bytes) of UTF-8; canonical JSON writes a control character as six bytes
(``\u0001``), so the body takes at most 6 x 262,144 = 1,572,864 bytes of the line. Its
metadata is at most ``MAX_METADATA_BYTES`` (16,384) of canonical JSON, the very text of
the line. Its ID, its kind and the three parts of its scope are at most 128 characters,
each at most 6 x 128 = 768 bytes escaped: 3,840 bytes. Keys, its fingerprint, two
digests, three times, its trust and status take under 1,500 bytes more. So the longest
line of a memory of one source is under 1.6 MB (1,594,532 bytes, measured), and each
further source adds one lineage edge of at most 935 bytes (an escaped 128-character
ID, two durations of up to 20 digits and a digest). An extraction record holds at most
100 claim IDs (under 80,000 bytes) and diagnostics of at most 790 bytes each. Neither
the number of a memory's sources nor that of a record's diagnostics has a limit, so
the bound is set at ten times the longest line of a memory of one source: it holds a
memory of about 16,000 sources whose IDs are 128 escaped characters (over 80,000 of IDs
of 20 plain characters), or a record of about 20,000 such diagnostics. A longer line is
refused before it is decoded or parsed, and a file object is read a line at a time in
pieces of at most this many bytes (characters, for a text file), so that reading one
line never holds more than about this much.
"""

_TOO_LONG = "line too long (over 16 MiB)"


@dataclass(slots=True)
class Lines:
    """The lines of a file, numbered from 1, each checked to be one canonical JSON
    object of at most ``MAX_LINE_BYTES`` ending with a newline. ``from_file``: read
    from a file object, whose ``ValueError`` means that it is closed or not open for
    reading."""

    source: Iterator[object]
    from_file: bool
    number: int = 0

    def next(self) -> tuple[str, Row] | None:
        self.number += 1
        try:
            raw = next(self.source)
        except StopIteration:
            return None
        except UnicodeError:
            raise ImportRefused("not UTF-8 text", self.number) from None
        except ValueError as error:
            if self.from_file:  # closed meanwhile, or not open for reading
                raise ValidationError("lines", "must be readable") from None
            raise hosted.HostRaised(error) from None
        except Exception as error:  # the host's own iterable failed: not the store's doing
            raise hosted.HostRaised(error) from None
        # The length first: a line too long is neither decoded nor parsed.
        if isinstance(raw, bytes | bytearray):
            if len(raw) > MAX_LINE_BYTES:
                raise ImportRefused(_TOO_LONG, self.number)
            try:
                raw = bytes(raw).decode("utf-8")
            except UnicodeError:
                raise ImportRefused("not UTF-8 text", self.number) from None
        elif not isinstance(raw, str):
            raise ValidationError("lines", "must yield str or bytes lines")
        elif len(raw) > MAX_LINE_BYTES:  # every character is at least one byte
            raise ImportRefused(_TOO_LONG, self.number)
        elif not raw.isascii():
            size = utf8_size(raw)  # None: a str line may hold lone surrogates
            if size is None:
                raise ImportRefused("not UTF-8 text", self.number)
            if size > MAX_LINE_BYTES:
                raise ImportRefused(_TOO_LONG, self.number)
        if not raw.endswith("\n"):
            raise ImportRefused("incomplete line (the file is truncated)", self.number)
        text = raw[:-1]
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict) or fmt.canonical(obj) != text:
                raise ValueError("not canonical")
        except (ValueError, TypeError, RecursionError):
            raise ImportRefused("not a line of canonical JSON", self.number) from None
        return text, obj


def lines_of(lines: object) -> Lines:
    """The lines to import from ``lines``, a file object or any iterable of lines.

    Called before the import's unit of work opens, so that what goes wrong here is the
    caller's to see: inside the unit, the adapter's error translation would report a
    ``ValueError`` or ``TypeError`` as ``RepositoryCorruption``. ``ValidationError``
    when ``lines`` is not an iterable of lines (a ``str`` or ``bytes``, an object
    without ``__iter__`` or whose ``__iter__`` returns no iterator, a closed file); any
    other exception of the host's own ``__iter__`` propagates as it was raised.

    A file object (any ``io.IOBase``: a file opened in binary or text mode, standard
    input, ``io.BytesIO``) is read with ``readline(MAX_LINE_BYTES + 1)``, so a line too
    long is refused once its first ``MAX_LINE_BYTES + 1`` bytes (or characters) are
    read, never read whole; iterating a file would read each line whole first. Any
    other iterable yields its lines whole, and a line too long is refused by its
    length before it is decoded or parsed.
    """
    if isinstance(lines, str | bytes | bytearray):
        raise ValidationError("lines", _NOT_LINES)
    if isinstance(lines, io.IOBase):
        if lines.closed:
            raise ValidationError("lines", "must be readable")
        return Lines(_bounded_lines(lines), from_file=True)
    # The protocol of ``iter()`` spelled out, so that a TypeError of the host's own
    # ``__iter__`` is told apart from an object that is not iterable.
    # It is looked up on the type's own classes (as ``iter()`` does), never on its
    # metaclass: an Enum member's class is iterable, the member is not.
    method = next(
        (vars(cls)["__iter__"] for cls in type(lines).__mro__ if "__iter__" in vars(cls)), None
    )
    bind = getattr(type(method), "__get__", None)
    if method is None or not callable(bind):
        raise ValidationError("lines", _NOT_LINES)
    iterator = bind(method, lines, type(lines))()
    if not callable(getattr(type(iterator), "__next__", None)):
        raise ValidationError("lines", _NOT_LINES)
    return Lines(iterator, from_file=False)


def _bounded_lines(file: io.IOBase) -> Iterator[object]:
    """The lines of a file object, each read by ``readline`` with a limit: a line longer
    than ``MAX_LINE_BYTES`` comes as a first piece one unit longer than that, which
    :class:`Lines` refuses before anything more of the line is read."""
    readline = file.readline
    while piece := readline(MAX_LINE_BYTES + 1):
        yield piece


def _header(lines: Lines) -> tuple[Row, Scope | None]:
    found = lines.next()
    if found is None:
        raise ImportRefused("empty file", 1)
    _, obj = found
    if set(obj) != {"format", "version", "schema", "scope", "exported_at"} or (
        obj["format"] != fmt.FORMAT
    ):
        raise ImportRefused("not a TrueHeart export header", 1)
    if type(obj["version"]) is not int or obj["version"] != fmt.VERSION:
        raise ImportRefused("unsupported format version", 1)
    if type(obj["schema"]) is not int or obj["schema"] != fmt.SCHEMA:
        raise ImportRefused("unsupported schema version", 1)
    try:
        fmt.microseconds(obj["exported_at"])
        scope = None if obj["scope"] is None else records.scope_of(rows.scope_key_of(obj["scope"]))
    except (ValueError, ValidationError, RowInvalid):
        raise ImportRefused("invalid header", 1) from None
    return obj, scope


def _require_empty(uow: UnitOfWork) -> None:
    counts = uow.operations.count_rows(None)
    if any(value != 0 for value in counts.values()):
        raise ImportRefused("the target store is not empty")


def _store_line(uow: UnitOfWork, obj: Row, scope: Scope | None) -> None:
    try:
        key = rows.scope_key_of(obj["scope"])
        if scope is not None and key != scope_key(scope):
            raise rows.Problem("row outside the exported scope")
        rows.STORES[obj["kind"]](uow, key, obj)
    except (
        RowInvalid,
        ValidationError,
        ValueError,
        TypeError,
        KeyError,
        OverflowError,
        RecursionError,
    ):
        raise rows.Problem(rows.INVALID_ROW) from None


def import_lines(uow: UnitOfWork, lines: Lines) -> ImportReceipt:
    """Store every row of an export (``lines``, from :func:`lines_of`) into the empty
    store of ``uow``, then build the search index and verify the store; raise
    ``ImportRefused`` at the first fault."""
    _require_empty(uow)
    header, scope = _header(lines)
    chain = fmt.chain_start(header)
    counts: dict[str, int] = {}
    position = 0
    while True:
        found = lines.next()
        if found is None:
            raise ImportRefused("no trailer (the file is truncated)", lines.number)
        _, obj = found
        kind = obj.get("kind")
        if kind == fmt.END:
            _trailer(obj, chain, sum(counts.values()), lines.number)
            break
        if not isinstance(kind, str) or kind not in fmt.KINDS:
            raise ImportRefused("unknown kind", lines.number)
        if fmt.KINDS.index(kind) < position:
            raise ImportRefused("rows out of order", lines.number)
        position = fmt.KINDS.index(kind)
        digest = obj.get("digest")
        if not isinstance(digest, str) or digest != fmt.line_digest(obj):
            raise ImportRefused("line digest mismatch", lines.number)
        chain = fmt.chain_next(chain, digest)
        del obj["digest"]
        try:
            _store_line(uow, obj, scope)
        except rows.Problem as problem:
            raise ImportRefused(problem.problem, lines.number) from None
        counts[kind] = counts.get(kind, 0) + 1
    if lines.next() is not None:
        raise ImportRefused("lines after the trailer", lines.number)
    indexed = searching.rebuild(uow)
    report = integrity.verify(uow, None)
    if report.problems:
        raise ImportRefused(f"the imported store does not verify ({report.problems[0].code})")
    total = sum(counts.values())
    return ImportReceipt(scope, total, fmt.kind_counts(counts), chain, indexed)


def _trailer(obj: Row, chain: str, rows: int, number: int) -> None:
    if set(obj) != {"kind", "rows", "digest"}:
        raise ImportRefused("invalid trailer", number)
    if type(obj["rows"]) is not int or obj["rows"] != rows:
        raise ImportRefused("row count mismatch (the file is truncated or edited)", number)
    if obj["digest"] != chain:
        raise ImportRefused("file digest mismatch (rows reordered, removed or edited)", number)
