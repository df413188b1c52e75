"""``trueheart ingest DB FILE``: events and memories from JSON Lines (``-`` reads stdin).

Each non-blank line is one JSON object, an event or a memory (see docs/cli.md for every
field)::

    {"type": "event", "event_id": "evt-1", "scope": "acme/agent/user-1",
     "content": "...", "source_id": "chat-7", "source_type": "chat",
     "occurred_at": "2026-01-15T09:00:00Z", "trust": "observed"}
    {"type": "memory", "memory_id": "mem-1", "scope": "acme/agent/user-1",
     "content": "...", "source_event_ids": ["evt-1"], "kind": "habit",
     "trust": "observed", "created_at": "2026-01-15T09:00:00Z"}

An event line becomes a :class:`RawEventDraft` (``retention`` optional, ``metadata``
and ``source_metadata`` optional objects), a memory line a :class:`MemoryDraft`
(``metadata`` optional). It happens in three steps:

1. every line is read and checked first; a bad line stops the command before anything
   is written, naming its line number and the field, never its content;
2. every event is ingested in ONE ``ingest_events`` call: all or nothing;
3. then every memory, in the order of the file, one ``materialize_once`` (one
   transaction) each; the first refusal stops at its line number, and what was written
   before it (the events, and the memories of earlier lines) stays committed.

Replays (lines stored before, unchanged) are accepted as the library accepts them, so a
file can be ingested again after a stop.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TextIO

from trueheart_core import stores
from trueheart_core.cli import progress, render
from trueheart_core.cli.common import OK, Input, opened
from trueheart_core.cli.failures import (
    CommandFailure,
    DatabaseMissing,
    message_of,
    status_of,
)
from trueheart_core.cli.scopes import ScopeSyntaxError, parse_scope
from trueheart_core.cli.serve_mcp import DEFAULT_RETENTION, duration
from trueheart_core.domain.model import (
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    SourceRef,
    TrustLevel,
)
from trueheart_core.errors import (
    EntityDeleted,
    EntityNotFound,
    IdempotencyConflict,
    InvalidTransition,
    ScopeMismatch,
    TrueHeartError,
    TrustEscalation,
    ValidationError,
)
from trueheart_core.service.portable import MAX_LINE_BYTES

__all__ = ["BadLine", "IngestRefused", "ingest", "read_lines"]

_REFUSALS = (
    ValidationError,
    EntityNotFound,
    ScopeMismatch,
    IdempotencyConflict,
    EntityDeleted,
    InvalidTransition,
    TrustEscalation,
)
_TRUST = {level.name.lower(): level for level in TrustLevel}
_EVENT = {
    "type",
    "event_id",
    "scope",
    "content",
    "source_id",
    "source_type",
    "occurred_at",
    "trust",
    "retention",
    "metadata",
    "source_metadata",
}
_MEMORY = {
    "type",
    "memory_id",
    "scope",
    "content",
    "source_event_ids",
    "kind",
    "trust",
    "created_at",
    "metadata",
}
_OPTIONAL = {"retention", "metadata", "source_metadata"}


class BadLine(CommandFailure):
    """A line of the input that is not a valid event or memory (exit status 1); the
    message names the line number and a fixed reason, never the line's content."""

    def __init__(self, number: int, why: str) -> None:
        super().__init__(f"line {number}: {why}; nothing was stored")


class IngestRefused(CommandFailure):
    """The library refused what the input asks for, or the store stopped it (busy,
    read-only, full, damaged); ``status`` is that of the library's error (3 for a
    missing or deleted entity, 4 for damage, 5 for a busy or read-only store, 1
    otherwise)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Lines:
    """The checked input: the events, and the memories with their line numbers."""

    events: tuple[RawEventDraft, ...]
    memories: tuple[tuple[int, MemoryDraft], ...]


class _Refused(Exception):
    """A fixed reason why a line is bad."""


def _field(line: Mapping[str, Any], name: str, kind: type) -> Any:
    if name not in line:
        raise _Refused(f"missing field {name}")
    value = line[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise _Refused(f"field {name} must be a {'string' if kind is str else kind.__name__}")
    return value


def _object(line: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = line.get(name, {})
    if not isinstance(value, dict):
        raise _Refused(f"field {name} must be an object")
    return value


def _time(line: Mapping[str, Any], name: str) -> datetime:
    text = _field(line, name, str)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise _Refused(f"field {name} must be an ISO 8601 time") from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise _Refused(f"field {name} must have a UTC offset, such as Z or +02:00")
    return value


def _trust(line: Mapping[str, Any]) -> TrustLevel:
    value = _field(line, "trust", str)
    if value not in _TRUST:
        raise _Refused("field trust must be untrusted, observed or confirmed")
    return _TRUST[value]


def _scope(line: Mapping[str, Any]) -> Any:
    try:
        return parse_scope(_field(line, "scope", str))
    except ScopeSyntaxError as error:
        raise _Refused(f"field scope {error}") from None


def _retention(line: Mapping[str, Any]) -> RetentionPolicy:
    given = _object(line, "retention")
    if set(given) - {"raw_ttl", "clear_for", "recall_for"}:
        raise _Refused("field retention may hold only raw_ttl, clear_for and recall_for")
    parts: dict[str, timedelta] = {}
    for name in ("raw_ttl", "clear_for", "recall_for"):
        if name not in given:
            parts[name] = getattr(DEFAULT_RETENTION, name)
            continue
        if not isinstance(given[name], str):
            raise _Refused(f"field retention.{name} must be a string, such as 30d")
        try:
            parts[name] = duration(given[name])
        except argparse.ArgumentTypeError:
            raise _Refused(f"field retention.{name} must be such as 30d, 12h, 90m or 45s") from None
    return RetentionPolicy(**parts)


def _check_keys(line: Mapping[str, Any], allowed: set[str]) -> None:
    if set(line) - allowed:
        raise _Refused("unknown field")
    missing = sorted(allowed - _OPTIONAL - set(line))
    if missing:
        raise _Refused(f"missing field {missing[0]}")


def _event(line: Mapping[str, Any]) -> RawEventDraft:
    _check_keys(line, _EVENT)
    source = SourceRef(
        _field(line, "source_id", str),
        _field(line, "source_type", str),
        _time(line, "occurred_at"),
        _trust(line),
        _object(line, "source_metadata"),
    )
    return RawEventDraft(
        _field(line, "event_id", str),
        _scope(line),
        source,
        _field(line, "content", str),
        _retention(line),
        _object(line, "metadata"),
    )


def _memory(line: Mapping[str, Any]) -> MemoryDraft:
    _check_keys(line, _MEMORY)
    sources = _field(line, "source_event_ids", list)
    if not all(isinstance(source, str) for source in sources):
        raise _Refused("field source_event_ids must be a list of strings")
    return MemoryDraft(
        _field(line, "memory_id", str),
        _scope(line),
        _field(line, "content", str),
        tuple(sources),
        _field(line, "kind", str),
        _trust(line),
        _time(line, "created_at"),
        _object(line, "metadata"),
    )


_BOM = b"\xef\xbb\xbf"


class _Repeated(Exception):
    """A JSON object of the input names one field twice (which value was meant?)."""


def _fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise _Repeated
    return fields


def _parse(raw: bytes) -> RawEventDraft | MemoryDraft:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused("not UTF-8") from None
    try:
        line = json.loads(text, object_pairs_hook=_fields)
    except _Repeated:
        raise _Refused("a field appears twice") from None
    except (ValueError, RecursionError):
        raise _Refused("not valid JSON") from None
    if not isinstance(line, dict):
        raise _Refused("must be a JSON object")
    kind = line.get("type")
    try:
        if kind == "event":
            return _event(line)
        if kind == "memory":
            return _memory(line)
    except ValidationError as error:  # the library's fixed, body-free rule
        raise _Refused(str(error)) from None
    raise _Refused("field type must be event or memory")


def read_lines(source: Iterable[bytes]) -> Lines:
    """Every line of ``source`` checked (see the module docstring); raises
    :class:`BadLine` at the first bad one."""
    events: list[RawEventDraft] = []
    memories: list[tuple[int, MemoryDraft]] = []
    # A file is read a bounded piece at a time: a line too long (or an input with no
    # newline at all) is refused once a piece has more than the limit, its line ending
    # and a byte-order mark aside.
    piece = MAX_LINE_BYTES + len(_BOM) + 3
    lines = iter(lambda: source.readline(piece), b"") if isinstance(source, io.IOBase) else source
    for number, read in enumerate(lines, start=1):
        # A UTF-8 byte-order mark at the start, as some editors write, is no content.
        raw = read.removeprefix(_BOM) if number == 1 else read
        if len(raw.removesuffix(b"\n").removesuffix(b"\r")) > MAX_LINE_BYTES:
            raise BadLine(number, "line too long (over 16 MiB)")
        if not raw.strip():
            continue
        try:
            draft = _parse(raw)
        except _Refused as refused:
            raise BadLine(number, str(refused)) from None
        if isinstance(draft, RawEventDraft):
            events.append(draft)
        else:
            memories.append((number, draft))
    return Lines(tuple(events), tuple(memories))


def ingest(args: argparse.Namespace, out: TextIO) -> int:
    if not stores.store_exists(args.db):  # before reading any input
        raise DatabaseMissing(args.db)
    with contextlib.ExitStack() as closing:
        if args.file == "-":
            source = Input(sys.stdin.buffer, "stdin")
        else:
            source = Input(closing.enter_context(open(args.file, "rb")), args.file)
        # The progress line comes before the input is read: reading and checking a large
        # file takes a while.
        with progress.task(f"ingesting {args.file} into {args.db}") as shown:
            lines = read_lines(source)
            stored = _store(args, lines, shown)
    doc = {"events": len(lines.events), "memories": stored}
    if args.json:
        render.document(out, doc)
    else:
        out.write(f"ingested {_stored_text(doc['events'], doc['memories'])}\n")
    return OK


def _store(args: argparse.Namespace, lines: Lines, shown: progress.Task) -> int:
    """Store the checked lines: the events in one transaction, then each memory in its
    own; returns how many memories were stored."""
    total = len(lines.events) + len(lines.memories)
    if total:
        shown.update(0, total)
    stored = 0
    events_stored = False
    with opened(args, write=True) as service:
        try:
            try:
                service.ingest_events(list(lines.events))
            except _REFUSALS as error:
                raise IngestRefused(
                    f"the events were refused, nothing was stored: {error}", status_of(error)
                ) from None
            events_stored = True
            shown.update(len(lines.events))
            for number, draft in lines.memories:
                try:
                    service.materialize_once(draft)
                except TrueHeartError as error:
                    # A refusal, or a store that is busy, read-only, full or damaged:
                    # what the earlier lines stored stays, and is said.
                    raise IngestRefused(
                        f"line {number}: {message_of(error, args.db)}; stored before it: "
                        f"{_stored_text(len(lines.events), stored, ', ')}",
                        status_of(error),
                    ) from None
                stored += 1
                shown.update(len(lines.events) + stored)
        except KeyboardInterrupt as stop:
            # Ctrl-C or SIGTERM: say what is stored (the call it stopped may have
            # committed or not), keeping the interruption's own kind.
            if events_stored:
                done = f"stored before it: {_stored_text(len(lines.events), stored, ', ')}"
            else:
                done = "the events are stored all or none"
            raise type(stop)(f"{done}; the same file can be ingested again") from None
    return stored


def _stored_text(events: int, memories: int, joint: str = " and ") -> str:
    return (
        render.number_of(events, "event", "events")
        + joint
        + render.number_of(memories, "memory", "memories")
    )
