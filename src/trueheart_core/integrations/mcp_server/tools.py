"""The memory tools of the MCP server, over one :class:`~trueheart_core.TrueHeart` and one
scope bound when the server starts.

This module runs a call, from a JSON object of arguments to a JSON object of results,
without the MCP SDK, as do the modules it uses: :mod:`.schemas` declares the tools
(names, descriptions, JSON schemas of their arguments and results, hints),
:mod:`.arguments` checks a call's arguments, :mod:`.documents` builds its results and
:mod:`.events` names and deletes the source events the writes store. ``server`` puts the
tools on the wire.

Every argument is checked, with fixed messages that never quote the value given; every
library error keeps its own body-free message, except that ``ScopeMismatch`` reads as
``EntityNotFound``, so that a scope never learns which IDs another scope holds. No call
takes a scope: the tools read and write the bound scope only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from trueheart_core import (
    ArtifactClass,
    ClaimDraft,
    ClaimQuery,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    IdempotencyConflict,
    IngestResult,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    ScopeMismatch,
    SearchQuery,
    SourceRef,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
    ValidationError,
)
from trueheart_core.domain import validation as v
from trueheart_core.domain.search.model import query_text
from trueheart_core.integrations._clock import clock_time
from trueheart_core.integrations._kinds import check_plain_kind
from trueheart_core.integrations.mcp_server import documents, events, schemas
from trueheart_core.integrations.mcp_server.arguments import Arguments, checked_key
from trueheart_core.integrations.mcp_server.documents import Document
from trueheart_core.integrations.mcp_server.events import SOURCE_TYPE
from trueheart_core.integrations.mcp_server.schemas import (
    DEFAULT_BUDGET,
    DEFAULT_CLAIMS_LIMIT,
    DEFAULT_KIND,
    DEFAULT_RECALL_LIMIT,
    DEFAULT_SEARCH_LIMIT,
    MAX_BUDGET,
    MAX_LIMIT,
    READING_TOOLS,
    WRITING_TOOLS,
    ToolSpec,
)
from trueheart_core.integrations.mcp_server.trust import trust_name

__all__ = [
    "DEFAULT_KIND",
    "DEFAULT_RETENTION",
    "READING_TOOLS",
    "SOURCE_TYPE",
    "WRITING_TOOLS",
    "MemoryTools",
    "ToolFailure",
    "ToolSpec",
    "UnknownTool",
    "trust_name",
]

DEFAULT_RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=30), clear_for=timedelta(days=90), recall_for=timedelta(days=365)
)
"""What ``remember`` and ``remember_claim`` store keep, unless the server is told
otherwise: the source event's body for 30 days, the memory clear for 90 days and
recallable for 365."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ToolFailure(Exception):
    """A call that failed: ``error`` is the class name of the library error (or
    ``InternalError``), ``message`` its fixed, body-free message."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class UnknownTool(Exception):
    """The server does not offer a tool of this name (a read-only server offers no
    writing tool)."""


class MemoryTools:
    """The tools over ``service``, every call in ``scope``.

    ``read_only`` offers the reading tools only. ``max_trust`` is the trust ceiling of
    what the writing tools store (a call may ask for less; the default is ``observed``,
    or the ceiling when it is lower). ``retention`` is the retention of every event they
    store, ``source_id`` its source. ``clock`` gives the time of every write and the
    ``as_of`` of every read (default: the current time). Calls are serialised: one runs
    at a time.
    """

    def __init__(
        self,
        service: TrueHeart,
        scope: Scope,
        *,
        read_only: bool = False,
        max_trust: TrustLevel = TrustLevel.OBSERVED,
        retention: RetentionPolicy = DEFAULT_RETENTION,
        source_id: str = "mcp",
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        if not isinstance(max_trust, TrustLevel):
            raise ValidationError("max_trust", "must be a TrustLevel")
        if not isinstance(retention, RetentionPolicy):
            raise ValidationError("retention", "must be a RetentionPolicy")
        SourceRef(source_id, SOURCE_TYPE, _utc_now(), max_trust)  # checks source_id
        self._service = service
        self._scope = scope
        self._read_only = bool(read_only)
        self._ceiling = max_trust
        self._default_trust = min(TrustLevel.OBSERVED, max_trust)
        self._retention = retention
        self._source_id = source_id
        self._clock = clock
        self._lock = threading.Lock()
        self._handlers: dict[str, Callable[[Arguments], Document]] = {
            "remember": self._remember,
            "search_memory": self._search,
            "recall_memories": self._recall,
            "get_memory": self._get,
            "forget_memory": self._forget,
            "remember_claim": self._remember_claim,
            "claims": self._claims,
        }
        declared = schemas.declare(self._ceiling, self._default_trust)
        self._specs = {spec.name: spec for spec in declared if self._offers(spec.name)}

    @property
    def scope(self) -> Scope:
        """The bound scope."""
        return self._scope

    @property
    def read_only(self) -> bool:
        """Whether only the reading tools are offered."""
        return self._read_only

    @property
    def max_trust(self) -> TrustLevel:
        """The trust ceiling of the writing tools."""
        return self._ceiling

    @property
    def retention(self) -> RetentionPolicy:
        """The retention of what the writing tools store."""
        return self._retention

    def _offers(self, name: str) -> bool:
        return name in READING_TOOLS or (name in WRITING_TOOLS and not self._read_only)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools offered, in a fixed order (no writing tool on a read-only server)."""
        return tuple(self._specs.values())

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Document:
        """Run one tool; its result as a JSON object. Raises :class:`UnknownTool` for a
        tool not offered, and :class:`ToolFailure` for a refused argument or a library
        error (its message body-free), or an unexpected error (its class name only)."""
        if name not in self._specs:
            raise UnknownTool(name)
        try:
            with self._lock:
                return self._handlers[name](Arguments(arguments, self._allowed(name)))
        except ScopeMismatch as error:
            # Another scope holds the ID: for this scope it does not exist.
            entity_id = str(error).partition(": ")[2]
            raise ToolFailure("EntityNotFound", str(EntityNotFound(entity_id))) from None
        except TrueHeartError as error:
            raise ToolFailure(type(error).__name__, str(error)) from None
        except Exception as error:  # a bug: its message could hold anything
            kind = type(error).__name__
            raise ToolFailure("InternalError", f"internal error ({kind})") from None

    def _allowed(self, name: str) -> tuple[str, ...]:
        return tuple(self._specs[name].input_schema["properties"])

    def _now(self) -> datetime:
        return clock_time(self._clock)

    # --- writes ---------------------------------------------------------------------------

    def _source(self, at: datetime, trust: TrustLevel) -> SourceRef:
        return SourceRef(self._source_id, SOURCE_TYPE, at, trust)

    def _once(
        self,
        key: str | None,
        event_id: str,
        memory_id: str,
        write: Callable[[datetime], IngestResult],
    ) -> tuple[IngestResult, bool]:
        """Run ``write`` at the current time, or, when the key's event is stored, at the
        time it was stored, so that the library compares the replay with what is stored
        (and its tombstones refuse a forgotten memory). Returns the result and whether it
        was a replay. The key of a forgotten memory, whose event ``forget_memory``
        deleted, is refused as ``EntityDeleted`` of the memory."""
        if key is None:
            return write(self._now()), False
        for attempt in range(2):
            try:
                receipt = self._service.get_receipt(self._scope, event_id)
            except (EntityNotFound, ScopeMismatch):
                at, replayed = self._now(), False
            except EntityDeleted:
                raise EntityDeleted(memory_id) from None
            else:
                # The event of a forgotten memory can stay (another memory comes from
                # it): the key is refused before the replay could compare a guess with
                # the stored text.
                try:
                    self._service.get_memory(self._scope, memory_id)
                except EntityDeleted:
                    raise EntityDeleted(memory_id) from None
                except (EntityNotFound, ScopeMismatch):
                    pass
                at, replayed = receipt.source.occurred_at, True
            try:
                return write(at), replayed
            except IdempotencyConflict:
                if replayed or attempt:
                    raise
                # Another writer stored the key meanwhile: compare with what it stored.
        raise AssertionError("unreachable")  # pragma: no cover

    def _remember(self, args: Arguments) -> Document:
        content = args.text("content")
        kind = check_plain_kind(args.text("kind", default=DEFAULT_KIND))
        metadata = args.metadata()
        trust = args.trust(self._ceiling, self._default_trust)
        key = checked_key(args.optional_text("idempotency_key"))
        event_id, memory_id = events.ids("mem", key)

        def write(at: datetime) -> IngestResult:
            event = RawEventDraft(
                event_id, self._scope, self._source(at, trust), content, self._retention
            )
            memory = MemoryDraft(
                memory_id, self._scope, content, (event_id,), kind, trust, at, metadata
            )
            return self._service.ingest_derived(event, memories=(memory,))

        result, replayed = self._once(key, event_id, memory_id, write)
        return {
            "memory": documents.memory(result.memories[0]),
            "event_id": event_id,
            "replayed": replayed,
        }

    def _remember_claim(self, args: Arguments) -> Document:
        subject = args.text("subject")
        predicate = args.text("predicate")
        value = args.text("value")
        valid_from = args.instant("valid_from")
        valid_to = args.instant("valid_to")
        supersedes = args.optional_text("supersedes")
        trust = args.trust(self._ceiling, self._default_trust)
        key = checked_key(args.optional_text("idempotency_key"))
        event_id, claim_id = events.ids("clm", key)

        def write(at: datetime) -> IngestResult:
            claim = ClaimDraft(
                claim_id,
                self._scope,
                subject,
                predicate,
                value,
                (event_id,),
                trust,
                at,
                valid_from=valid_from,
                valid_to=valid_to,
                supersedes=supersedes,
            )
            event = RawEventDraft(
                event_id, self._scope, self._source(at, trust), claim.content, self._retention
            )
            return self._service.ingest_derived(event, claims=(claim,))

        result, replayed = self._once(key, event_id, claim_id, write)
        return {
            "claim": documents.claim(result.claims[0]),
            "event_id": event_id,
            "replayed": replayed,
        }

    def _forget(self, args: Arguments) -> Document:
        """FORGET the memory; when ``remember`` or ``remember_claim`` wrote it, or it is
        an item of an OpenAI Agents session, DELETE its event too, so that its text
        leaves the event's body as well (a session's ``clear_session``, which finds its
        items by their memories, could no longer reach the event), unless another
        memory held in the scope still comes from the event (the host's, which the
        DELETE would take with it): then the event stays, and a replay of the key is
        refused before it could compare a guess with the stored text (see ``_once``).

        The two are separate transactions: when the FORGET committed and the DELETE did
        not (a busy store between them), calling the tool again finishes the DELETE
        rather than reporting the memory as already forgotten."""
        memory_id = v.text("memory_id", args.text("memory_id"))
        reason = args.text("reason")
        at = self._now()
        forget = GovernanceCommand(
            self._scope, GovernanceAction.FORGET, EntityType.MEMORY, memory_id, at, reason
        )
        affected: set[str] = set()
        removed: set[ArtifactClass] = set()
        try:
            record = self._service.get_memory(self._scope, memory_id)
        except EntityDeleted:
            # Forgotten before: what is left to do is the DELETE of its own event, if
            # this server (or a session) stored it and it is still stored (otherwise the
            # memory is simply gone).
            event_id = events.own_event(
                self._service, self._scope, self._source_id, memory_id, None
            )
            if event_id is None or not events.delete_event(
                self._service, self._scope, event_id, at, reason, affected, removed
            ):
                raise
        else:
            event_id = events.own_event(
                self._service, self._scope, self._source_id, memory_id, record
            )
            result = self._service.govern(forget)
            affected.update(result.affected_ids)
            removed.update(result.removed)
            if event_id is not None:
                events.delete_event(
                    self._service, self._scope, event_id, at, reason, affected, removed
                )
        return {
            "memory_id": memory_id,
            "affected_ids": sorted(affected),
            "removed": [artifact.value for artifact in ArtifactClass if artifact in removed],
        }

    # --- reads ----------------------------------------------------------------------------

    def _search(self, args: Arguments) -> Document:
        text = query_text("query", args.text("query"))
        limit = args.whole("limit", 1, MAX_LIMIT, DEFAULT_SEARCH_LIMIT)
        budget = args.whole("budget_tokens", 1, MAX_BUDGET, DEFAULT_BUDGET)
        kinds = args.kinds()
        as_of = self._now()
        capsule = self._service.search(
            SearchQuery(self._scope, text, as_of, budget_tokens=budget, limit=limit, kinds=kinds)
        )
        return {
            "as_of": documents.when(as_of),
            "matched": capsule.matched,
            "budget_tokens": capsule.budget_tokens,
            "used_tokens": capsule.used_tokens,
            "items": [documents.search_item(item) for item in capsule.items],
        }

    def _recall(self, args: Arguments) -> Document:
        limit = args.whole("limit", 1, MAX_LIMIT, DEFAULT_RECALL_LIMIT)
        kinds = args.kinds()
        as_of = self._now()
        items = self._service.recall(RecallQuery(self._scope, as_of, limit, kinds))
        return {
            "as_of": documents.when(as_of),
            "items": [{"clarity": item.clarity, **documents.memory(item.memory)} for item in items],
        }

    def _get(self, args: Arguments) -> Document:
        return documents.memory(self._service.get_memory(self._scope, args.text("memory_id")))

    def _claims(self, args: Arguments) -> Document:
        subject = args.optional_text("subject")
        predicate = args.optional_text("predicate")
        now = self._now()
        as_of = args.instant("as_of") or now
        limit = args.whole("limit", 1, MAX_LIMIT, DEFAULT_CLAIMS_LIMIT)
        # One page: its cost follows the limit, and its conflicts are those of the groups
        # it holds whole (each conflict is on the page of its group's last claim).
        answer = self._service.claims(
            ClaimQuery(
                self._scope, as_of, known_at=now, subject=subject, predicate=predicate, limit=limit
            )
        )
        return {
            "as_of": documents.when(answer.as_of),
            "known_at": documents.when(answer.known_at),
            "claims": [documents.claim_view(view) for view in answer.claims],
            "conflicts": [list(conflict.claim_ids) for conflict in answer.conflicts],
            "truncated": answer.next_cursor is not None,
        }
