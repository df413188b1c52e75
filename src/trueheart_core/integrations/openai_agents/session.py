"""Conversation history of the Agents SDK as governed records of one scope.

:class:`TrueHeartSession` implements the SDK's ``Session`` protocol. Each history item
is stored, in one transaction, as a source event whose content is the item's JSON and
a memory of the session's own kind derived from it, under one ID that gives its
position (``agent-session-<position, 12 digits>-<16 random hexadecimal digits>``).
Reading lists the session's memories in ID order, which is the order of the items
(from the latest back, for the calls that need only the latest items).

An item whose JSON is longer than a body may be (256 KiB) is cut into parts of at most
that much: the event holds the first part, and each part is a memory derived from it,
the first under the item's ID (its metadata giving the number of parts), the others
under the item's ID followed by ``-`` and the part's number in three digits, so that
they sort right after it. Deleting the event deletes every part.

*Why memories, and not the events alone:* the public API reads no event body back
(receipts are body-free), so the memory is the copy that is read; the event is the
record of what was said, with the retention, and the memory's lineage points at it.

Removal is always a governed DELETE of the item's event, which deletes its memory too,
with a tombstone for each and an audit row, in one transaction: ``pop_item`` deletes
the last item, ``clear_session`` every item, ``delete_expired`` the items whose recall
deadline has passed. A removed item never comes back (its IDs are tombstoned) and a
later item gets a fresh ID.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

from agents import (  # type: ignore[import-not-found, unused-ignore]
    Session,
    SessionSettings,
    TResponseInputItem,
)

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RepositoryCorruption,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.domain import validation as v
from trueheart_core.integrations._kinds import SESSION_KIND_PREFIX
from trueheart_core.integrations.openai_agents._common import (
    Clock,
    checked_host,
    now,
    to_json,
    utc_now,
)

__all__ = [
    "DEFAULT_SESSION_RETENTION",
    "ITEM_ID_PREFIX",
    "SESSION_KIND_PREFIX",
    "SESSION_SOURCE_TYPE",
    "TrueHeartSession",
]

_T = TypeVar("_T")

ITEM_ID_PREFIX = "agent-session-"
SESSION_SOURCE_TYPE = "openai-agents-session"
"""The ``source_type`` of the items' events; their ``source_id`` is the session ID."""

DEFAULT_SESSION_RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=30), clear_for=timedelta(days=30), recall_for=timedelta(days=30)
)
"""History is kept 30 days unless the host gives another retention."""

REMOVAL_REASON = "session history removed"
_PAGE = 100
_POSITION_DIGITS = 12
_ITEM_ID = re.compile(
    rf"({re.escape(ITEM_ID_PREFIX)}(\d{{{_POSITION_DIGITS}}})-[0-9a-f]{{16}})(?:-(\d{{3}}))?"
)
_BAD_ITEMS = "must be a list of JSON objects that survive a JSON round trip"
MAX_ITEM_PARTS = 64
"""The most parts an item is cut into: an item may be up to 16 MiB as JSON."""
_PARTS = "parts"
"""The metadata key of an item's first part that gives the number of its parts."""


def _encoded(item: object) -> str:
    """The item's JSON, which must decode to an equal object."""
    if not isinstance(item, Mapping):
        raise ValidationError("items", _BAD_ITEMS)
    try:
        text = to_json(item)
        same = json.loads(text) == item
    except (TypeError, ValueError, RecursionError):
        raise ValidationError("items", _BAD_ITEMS) from None
    if not same:
        raise ValidationError("items", _BAD_ITEMS)
    size = v.utf8_size(text)
    if size is None:
        raise ValidationError("items", "must be valid UTF-8")
    if size > MAX_ITEM_PARTS * v.MAX_CONTENT_BYTES:
        raise ValidationError("items", "must be at most 16 MiB UTF-8 as JSON")
    return text


def _parts(text: str) -> list[str]:
    """The item's JSON cut into parts of at most 256 KiB of UTF-8 each (one part when
    it is no longer), each cut between two characters."""
    data = text.encode("utf-8")
    if len(data) <= v.MAX_CONTENT_BYTES:
        return [text]
    parts: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + v.MAX_CONTENT_BYTES, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # inside a character
            end -= 1
        parts.append(data[start:end].decode("utf-8"))
        start = end
    return parts


class _Item:
    """One stored item: the memories of its parts, in order (one for most items), and
    the ID of its event (the item's ID)."""

    __slots__ = ("event_id", "numbers", "position", "records")

    def __init__(
        self, event_id: str, position: int, records: list[MemoryRecord], numbers: list[str | None]
    ) -> None:
        self.event_id = event_id
        self.position = position
        self.records = records
        self.numbers = numbers  # each record's part number in its ID (None: the first)

    @property
    def head(self) -> MemoryRecord:
        """The first of the memories read (the first part, unless it is gone)."""
        return self.records[0]

    @property
    def whole(self) -> bool:
        """Whether every part the first one counts is there, in order (a host may have
        forgotten one: the item is then hidden, and removed whole by the session's
        deletes)."""
        metadata = self.head.metadata
        count = metadata.get(_PARTS, 1) if metadata else 1
        if type(count) is not int or count != len(self.records):
            return False
        return self.numbers == [None, *(f"{number:03d}" for number in range(1, count))]

    def text(self) -> str:
        return "".join(record.content for record in self.records)


def _item(
    event_id: str,
    position: int,
    records: list[MemoryRecord],
    numbers: list[str | None],
    reversed_order: bool,
) -> _Item:
    """The item of these memories, read in ID order or from the latest back."""
    if reversed_order:
        return _Item(event_id, position, records[::-1], numbers[::-1])
    return _Item(event_id, position, records, numbers)


_BAD_SETTINGS = "must be None, a SessionSettings or a dict of its fields"


def _settings(value: object) -> SessionSettings | None:
    """``session_settings`` as the SDK's sessions take it: a ``SessionSettings``, or a
    dict of its fields made into one; its ``limit`` is ``None`` or an int."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise ValidationError("session_settings", _BAD_SETTINGS)
        try:
            value = SessionSettings(**value)
        except (TypeError, ValueError):  # the SDK's own check of the fields
            raise ValidationError("session_settings", _BAD_SETTINGS) from None
    if not isinstance(value, SessionSettings):
        raise ValidationError("session_settings", _BAD_SETTINGS)
    limit = value.limit
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise ValidationError("session_settings", "limit must be None or an int")
    return value


def _decoded(item: _Item) -> Any:
    try:
        return json.loads(item.text())
    except (ValueError, RecursionError):
        raise RepositoryCorruption("invalid session item") from None


class TrueHeartSession:
    """Conversation history of one session, kept in one exact ``scope`` of ``service``.

    ``session_id`` names the session within the scope (at most 114 characters); two
    sessions of the same scope hold separate histories, and the same ``session_id`` in
    another scope is another session. Every item is stored with ``retention`` and trust
    ``UNTRUSTED`` (history quotes the model, the user and tools alike); ``clock`` gives
    the time of every write and read.

    * ``get_items(limit=None)``: the active items whose recall deadline (time added +
      ``retention.recall_for``) is after now, in the order added; with ``limit`` (by
      default ``session_settings.limit``), the latest ``limit`` of them, still in that
      order. An item the host has sealed is left out until it is restored, and keeps
      its position meanwhile.
    * ``add_items(items)``: appends the items, in order, one transaction per item. Every
      item is checked first (a JSON object that decodes to an equal object, valid
      UTF-8, at most 16 MiB as JSON), so a refused item stores nothing; a store error
      part-way leaves the items before it stored. An item over 256 KiB as JSON is
      stored in parts of at most 256 KiB, one memory each, all derived from its event
      in its one transaction.
    * ``pop_item()``: deletes the latest item ``get_items`` returns and returns it
      (``None`` when there is none).
    * ``clear_session()``: deletes every item of the session, expired and sealed ones
      included.
    * ``delete_expired()``: deletes the items past their recall deadline and returns
      how many.

    The methods are coroutines that run the store's blocking calls in a worker thread
    (``asyncio.to_thread``), one call of this object at a time. ``get_items()`` without
    a limit, ``clear_session`` and ``delete_expired`` read every item of the session
    (100 items per read transaction), so their cost grows with the history;
    ``add_items``, ``pop_item`` and ``get_items(limit)`` read from the latest item back
    and stop as soon as they have what they need, so theirs grows with what they
    return and with what they pass on the way: hidden (sealed or expired) items, and
    the scope's memories of other kinds whose IDs sort after the latest item.
    """

    def __init__(
        self,
        session_id: str,
        service: TrueHeart,
        scope: Scope,
        *,
        retention: RetentionPolicy = DEFAULT_SESSION_RETENTION,
        clock: Clock = utc_now,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        v.text("session_id", session_id)
        if len(SESSION_KIND_PREFIX) + len(session_id) > v.MAX_TEXT_CHARS:
            limit = v.MAX_TEXT_CHARS - len(SESSION_KIND_PREFIX)
            raise ValidationError("session_id", f"must be at most {limit} characters")
        checked_host(service, scope, clock)
        if not isinstance(retention, RetentionPolicy):
            raise ValidationError("retention", "must be a RetentionPolicy")
        self.session_id = session_id
        self.session_settings = _settings(session_settings)
        self._service = service
        self._scope = scope
        self._retention = retention
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def kind(self) -> str:
        """The memory kind of this session's items."""
        return SESSION_KIND_PREFIX + self.session_id

    @property
    def scope(self) -> Scope:
        """The scope that holds the history."""
        return self._scope

    def __repr__(self) -> str:
        return f"TrueHeartSession(session_id={self.session_id!r})"

    # --- the Session protocol ------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's unexpired items in the order added; the latest ``limit``."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise ValidationError("limit", "must be None or an int")
        return await self._run(self._get_items, limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the session, in order."""
        if not isinstance(items, list | tuple):
            raise ValidationError("items", _BAD_ITEMS)
        texts = [_encoded(item) for item in items]
        if texts:
            await self._change(self._add_items, texts)

    async def pop_item(self) -> TResponseInputItem | None:
        """Delete the latest unexpired item and return it; ``None`` when there is none."""
        popped: TResponseInputItem | None = await self._change(self._pop_item)
        return popped

    async def clear_session(self) -> None:
        """Delete every item of the session."""
        await self._change(self._clear)

    # --- retention -----------------------------------------------------------------------

    async def delete_expired(self) -> int:
        """Delete the items whose recall deadline has passed; returns how many."""
        deleted: int = await self._change(self._delete_expired)
        return deleted

    # --- in the worker thread ------------------------------------------------------------

    async def _run(self, function: Callable[..., _T], *args: object) -> _T:
        return await asyncio.to_thread(self._serialised, function, *args)

    async def _change(self, function: Callable[..., _T], *args: object) -> _T:
        """:meth:`_run` for a call that changes the history. A thread cannot be stopped,
        so a cancelled change still runs to its end; the cancelled caller waits for that
        end before its ``CancelledError`` (as the SDK's own sessions do), so that the next
        call finds the change done instead of racing it."""
        task = asyncio.ensure_future(self._run(function, *args))
        cancelled: asyncio.CancelledError | None = None
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError as error:
                cancelled = cancelled or error
        if cancelled is not None:
            if not task.cancelled():
                task.exception()  # retrieved: the cancellation is what the caller gets
            raise cancelled
        return task.result()

    def _serialised(self, function: Callable[..., _T], *args: object) -> _T:
        with self._lock:
            return function(*args)

    def _records(self, *, latest_first: bool, wanted: int) -> Iterator[MemoryRecord]:
        """The session's memories in ID order, or from the latest back, read a page at a
        time as they are consumed. The first page holds ``wanted`` memories (what the
        caller expects to need), each later one twice as many, up to 100."""
        cursor: str | None = None
        size = max(1, min(wanted, _PAGE))
        while True:
            page = self._service.list_memories(
                self._scope,
                status=None,
                kinds=(self.kind,),
                limit=size,
                cursor=cursor,
                descending=latest_first,
            )
            yield from page.items
            cursor = page.next_cursor
            if cursor is None:
                return
            size = min(2 * size, _PAGE)

    def _items(self, *, latest_first: bool = False, wanted: int = _PAGE) -> Iterator[_Item]:
        """The session's items (the sealed ones too, which hold their positions and which
        clearing deletes), in position order or from the latest back (``latest_first``),
        each with the memories of its parts in order."""
        base: str | None = None
        position = 0
        records: list[MemoryRecord] = []
        numbers: list[str | None] = []
        for record in self._records(latest_first=latest_first, wanted=wanted):
            match = _ITEM_ID.fullmatch(record.memory_id)
            if match is None:
                continue
            if match[1] != base:
                if base is not None:
                    yield _item(base, position, records, numbers, latest_first)
                base, position, records, numbers = match[1], int(match[2]), [], []
            records.append(record)
            numbers.append(match[3])
            if latest_first and match[3] is None:
                # From the latest back, the first part comes last: the item is complete
                # without a read of the next memory.
                yield _item(match[1], position, records, numbers, latest_first)
                base, records, numbers = None, [], []
        if base is not None:
            yield _item(base, position, records, numbers, latest_first)

    def _visible(self, items: Iterable[_Item]) -> Iterator[_Item]:
        """The items read and popped: whole, active (a sealed item is hidden until the
        host restores it) and before their recall deadline."""
        when = now(self._clock)
        for item in items:
            if item.whole and all(
                record.status is MemoryStatus.ACTIVE and record.recall_until > when
                for record in item.records
            ):
                yield item

    def _get_items(self, limit: int | None) -> list[Any]:
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is None:
            items = list(self._visible(self._items()))
        elif limit <= 0:
            items = []
        else:
            latest = self._visible(self._items(latest_first=True, wanted=limit))
            items = list(islice(latest, limit))[::-1]
        return [_decoded(item) for item in items]

    def _add_items(self, texts: Sequence[str]) -> None:
        latest = next(self._items(latest_first=True, wanted=1), None)
        position = latest.position + 1 if latest is not None else 1
        for text in texts:
            item_id = f"{ITEM_ID_PREFIX}{position:0{_POSITION_DIGITS}d}-{secrets.token_hex(8)}"
            when = now(self._clock)
            source = SourceRef(self.session_id, SESSION_SOURCE_TYPE, when, TrustLevel.UNTRUSTED)
            parts = _parts(text)
            event = RawEventDraft(item_id, self._scope, source, parts[0], self._retention)
            memories = [
                MemoryDraft(
                    item_id if number == 0 else f"{item_id}-{number:03d}",
                    self._scope,
                    part,
                    (item_id,),
                    self.kind,
                    TrustLevel.UNTRUSTED,
                    when,
                    metadata={_PARTS: len(parts)} if number == 0 and len(parts) > 1 else {},
                )
                for number, part in enumerate(parts)
            ]
            self._service.ingest_derived(event, memories=memories)
            position += 1

    def _delete(self, item: _Item) -> None:
        """The governed DELETE of an item's event, which deletes the memories of its
        parts too."""
        self._service.govern(
            GovernanceCommand(
                self._scope,
                GovernanceAction.DELETE,
                EntityType.RAW_EVENT,
                item.event_id,
                now(self._clock),
                REMOVAL_REASON,
            )
        )

    def _pop_item(self) -> Any:
        last = next(self._visible(self._items(latest_first=True, wanted=1)), None)
        if last is None:
            return None
        item = _decoded(last)
        self._delete(last)
        return item

    def _clear(self) -> None:
        for item in list(self._items()):
            self._delete(item)

    def _delete_expired(self) -> int:
        when = now(self._clock)
        expired = [item for item in self._items() if item.head.recall_until <= when]
        for item in expired:
            self._delete(item)
        return len(expired)


if TYPE_CHECKING:

    def _is_a_session(session: TrueHeartSession) -> Session:
        """Where the SDK is installed, mypy checks the class against its protocol."""
        return session
