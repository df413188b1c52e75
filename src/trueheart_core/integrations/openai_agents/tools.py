"""Function tools over one scope of a :class:`~trueheart_core.TrueHeart` store.

:func:`memory_tools` gives an agent ``search_memory``, ``remember``, ``forget_memory``,
``claims`` and ``remember_claim``, each bound by the host to one exact scope: no tool
has a scope argument, so the model cannot choose whose memory it reads or writes.

Every tool is a synchronous function, which the SDK runs in a worker thread. A refusal
of the library (a ``TrueHeartError``) becomes the tool's output, ``"error: "`` and the
library's fixed, body-free message, so the model can correct itself and the run goes
on; any other failure becomes one fixed message. ``ScopeMismatch`` reads as
``entity not found``: the model cannot learn that an ID exists in another scope.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from agents import (  # type: ignore[import-not-found, unused-ignore]
    FunctionTool,
    ModelBehaviorError,
    RunContextWrapper,
    Tool,
    function_tool,
)

from trueheart_core import (
    CapsuleItem,
    ClaimDraft,
    ClaimQuery,
    ClaimView,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RawEventReceipt,
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
from trueheart_core.integrations._kinds import check_plain_kind, session_item_event
from trueheart_core.integrations.openai_agents._common import (
    Clock,
    checked_host,
    now,
    to_json,
    utc_now,
)
from trueheart_core.integrations.openai_agents.session import (
    ITEM_ID_PREFIX,
    SESSION_KIND_PREFIX,
    SESSION_SOURCE_TYPE,
)

__all__ = [
    "CLAIM_ID_PREFIX",
    "DEFAULT_MEMORY_RETENTION",
    "MEMORY_ID_PREFIX",
    "MEMORY_KIND",
    "SOURCE_TYPE",
    "memory_tools",
    "tool_error_message",
]

TrustName = Literal["untrusted", "observed", "confirmed"]
"""The trust levels as the model names them."""

MEMORY_KIND = "agent_note"
"""The kind of the memories ``remember`` stores (unless the host names another)."""

MEMORY_ID_PREFIX = "agent-memory-"
CLAIM_ID_PREFIX = "agent-claim-"
"""``remember`` and ``remember_claim`` store an event and its memory (or claim) under
one ID: this prefix and 32 random hexadecimal digits."""

SOURCE_TYPE = "openai-agents"
"""The ``source_type`` of the events the tools record."""

DEFAULT_MEMORY_RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=30), clear_for=timedelta(days=90), recall_for=timedelta(days=365)
)
"""The retention of what ``remember`` stores unless the host gives another: the event's
copy of the text may be expired after 30 days; the memory is at full clarity for 90 days
and recallable for a year."""

CLAIM_KIND = "claim"
"""The kind of every claim's memory."""

MAX_SEARCH_RESULTS = 20
MAX_CLAIMS = 50
MAX_BUDGET_TOKENS = 1_048_576
FORGET_REASON = "forgotten at the agent's request"

_FAILED = "error: the memory tool failed"
_BAD_ARGUMENTS = "error: the arguments do not match the tool's parameters"


def tool_error_message(error: Exception) -> str:
    """What a failed memory tool tells the model: the library's body-free message for
    a ``TrueHeartError`` (``ScopeMismatch`` as ``entity not found``), a fixed message
    for anything else, never the text that was being stored or read."""
    if isinstance(error, ScopeMismatch):
        entity_id = str(error).removeprefix("scope mismatch: ")
        return f"error: {EntityNotFound(entity_id)}"
    if isinstance(error, TrueHeartError):
        return f"error: {error}"
    if isinstance(error, ModelBehaviorError):
        return _BAD_ARGUMENTS
    return _FAILED


def _tool_error(context: RunContextWrapper[Any], error: Exception) -> str:
    return tool_error_message(error)


@dataclass(frozen=True)
class _Binding:
    """The host's choices, fixed when the tools are made."""

    service: TrueHeart
    scope: Scope
    max_trust: TrustLevel
    retention: RetentionPolicy
    kind: str
    kinds: tuple[str, ...]
    budget_tokens: int
    source_id: str
    clock: Clock

    def trust(self, name: TrustName | None) -> TrustLevel:
        """The level the model asked for; the ceiling when it named none."""
        if name is None:
            return self.max_trust
        try:
            return TrustLevel[name.upper()]
        except KeyError:
            raise ValidationError("trust", "must be untrusted, observed or confirmed") from None

    def event(self, event_id: str, content: str, when: datetime, kind: str) -> RawEventDraft:
        """The source event of a write: the ceiling is its trust, so the library's own
        rule refuses a memory that claims more; its metadata names the kind of the
        memory written with it, which its receipt keeps once the memory is forgotten."""
        source = SourceRef(self.source_id, SOURCE_TYPE, when, self.max_trust)
        metadata = {"kind": kind}
        return RawEventDraft(event_id, self.scope, source, content, self.retention, metadata)


def _memory_json(item: CapsuleItem) -> dict[str, Any]:
    memory = item.memory
    found: dict[str, Any] = {
        "memory_id": memory.memory_id,
        "kind": memory.kind,
        "content": memory.content,
        "trust": memory.trust.name.lower(),
        "created_at": memory.created_at.isoformat(),
        "clarity": round(item.clarity, 3),
        "sources": list(memory.source_event_ids),
    }
    if item.claim is not None:
        found["claim"] = _claim_json(item.claim)
    return found


def _claim_json(view: ClaimView) -> dict[str, Any]:
    claim = view.claim
    return {
        "claim_id": claim.claim_id,
        "subject": claim.subject,
        "predicate": claim.predicate,
        "value": claim.value,
        "status": view.status.value,
        "valid_from": None if claim.valid_from is None else claim.valid_from.isoformat(),
        "valid_to": None if claim.valid_to is None else claim.valid_to.isoformat(),
        "confidence": claim.confidence,
        "trust": claim.memory.trust.name.lower(),
        "superseded_by": list(view.superseded_by),
    }


def _kinds(kind: str, search_kinds: Sequence[str] | None, claim_tools: bool) -> tuple[str, ...]:
    if search_kinds is None:
        return (kind, CLAIM_KIND) if claim_tools else (kind,)
    if isinstance(search_kinds, str) or not isinstance(search_kinds, Sequence):
        raise ValidationError("search_kinds", "must be a sequence of kinds or None")
    kinds = v.text_tuple("search_kinds", tuple(search_kinds))
    if not kinds:
        raise ValidationError("search_kinds", "must name at least one kind")
    return tuple(dict.fromkeys(kinds))


def memory_tools(
    service: TrueHeart,
    scope: Scope,
    *,
    max_trust: TrustLevel = TrustLevel.OBSERVED,
    retention: RetentionPolicy = DEFAULT_MEMORY_RETENTION,
    kind: str = MEMORY_KIND,
    search_kinds: Sequence[str] | None = None,
    claim_tools: bool = True,
    budget_tokens: int = 1024,
    source_id: str = "openai-agents",
    clock: Clock = utc_now,
) -> list[Tool]:
    """The memory tools of one exact ``scope``, for ``Agent(tools=...)``: a list of
    ``FunctionTool`` (typed as the SDK's ``Tool``, which ``Agent`` takes).

    * ``search_memory(query, limit)``: the memories of ``search_kinds`` most relevant to
      ``query``, as JSON (content, kind, trust, clarity, sources; a claim's fields and
      status), packed into ``budget_tokens``, at most ``limit`` (1 through 20).
    * ``remember(content, trust)``: stores ``content`` as a source event (source
      ``source_id``, type ``openai-agents``, trust ``max_trust``, retention
      ``retention``, metadata ``{"kind": kind}``) and a memory of kind ``kind`` derived
      from it, in one transaction; ``trust`` (``null``: ``max_trust``) above
      ``max_trust`` is refused by the library (``trust escalation``) and nothing is
      stored.
    * ``forget_memory(memory_id)``: a governed FORGET (tombstone, audit row, erasure
      from the file) of a memory of ``search_kinds``; when ``remember`` or
      ``remember_claim`` wrote it, its source event is deleted too (tombstone, audit
      row), so the text leaves the event as well, unless another memory held in the
      scope still comes from the event (one the host derived from it, which the delete
      would take with it): then the event stays. For a memory already forgotten, the
      event is deleted only when its receipt puts the memory's kind in
      ``search_kinds``.
    * ``claims(subject, predicate)`` (with ``claim_tools``): the scope's claims known
      now, at most 50, with their status and the conflicts among the current ones.
    * ``remember_claim(subject, predicate, value, trust, supersedes)`` (with
      ``claim_tools``): a claim from a new source event, with the rules of ``remember``.

    ``search_kinds`` defaults to ``kind`` and ``"claim"`` (only ``kind`` without the
    claim tools): session history and the host's other memories stay out of the
    model's reach unless the host names their kinds. ``clock`` gives the time of every
    read and write (aware datetimes).
    """
    checked_host(service, scope, clock)
    v.member("max_trust", max_trust, TrustLevel, "must be a TrustLevel")
    if not isinstance(retention, RetentionPolicy):
        raise ValidationError("retention", "must be a RetentionPolicy")
    check_plain_kind(v.text("kind", kind))
    if not isinstance(claim_tools, bool):
        raise ValidationError("claim_tools", "must be a bool")
    budget_tokens = v.whole("budget_tokens", budget_tokens, 1, MAX_BUDGET_TOKENS)
    v.text("source_id", source_id)
    binding = _Binding(
        service,
        scope,
        max_trust,
        retention,
        kind,
        _kinds(kind, search_kinds, claim_tools),
        budget_tokens,
        source_id,
        clock,
    )
    tools: list[Tool] = [_search_tool(binding), _remember_tool(binding), _forget_tool(binding)]
    if claim_tools:
        tools += [_claims_tool(binding), _remember_claim_tool(binding)]
    return tools


def _tool(function: Any) -> FunctionTool:
    tool: FunctionTool = function_tool(function, failure_error_function=_tool_error)
    return tool


def _search_tool(binding: _Binding) -> FunctionTool:
    def search_memory(query: str, limit: int) -> str:
        """Search long-term memory for what is relevant to a question or topic.

        Args:
            query: Words to look for, as a short question or keywords.
            limit: How many memories to return at most (1 through 20).
        """
        # Checked first, so that a refusal names the argument the model sent.
        text = query_text("query", query)
        capsule = binding.service.search(
            SearchQuery(
                binding.scope,
                text,
                now(binding.clock),
                budget_tokens=binding.budget_tokens,
                limit=max(1, min(limit, MAX_SEARCH_RESULTS)),
                kinds=binding.kinds,
            )
        )
        return to_json(
            {
                "matched": capsule.matched,
                "memories": [_memory_json(item) for item in capsule.items],
            }
        )

    return _tool(search_memory)


def _remember_tool(binding: _Binding) -> FunctionTool:
    def remember(content: str, trust: TrustName | None) -> str:
        """Store a fact or preference worth remembering in long-term memory.

        Args:
            content: The text to remember, one self-contained statement.
            trust: How far the statement is trusted; null for the highest level allowed.
        """
        level = binding.trust(trust)
        when = now(binding.clock)
        memory_id = MEMORY_ID_PREFIX + uuid.uuid4().hex
        memory = MemoryDraft(
            memory_id, binding.scope, content, (memory_id,), binding.kind, level, when
        )
        stored = binding.service.ingest_derived(
            binding.event(memory_id, content, when, binding.kind), memories=[memory]
        )
        record = stored.memories[0]
        return to_json(
            {
                "memory_id": record.memory_id,
                "trust": record.trust.name.lower(),
                "recall_until": record.recall_until.isoformat(),
            }
        )

    return _tool(remember)


def _own_receipt(binding: _Binding, event_id: str) -> RawEventReceipt | None:
    """The receipt of the event ``event_id`` (a memory's own ID, or a session item's
    for one of its parts), when ``remember``, ``remember_claim`` (source type
    ``openai-agents``) or a session (source type ``openai-agents-session``) wrote it, as
    the ID says; ``None`` when it is gone or another writer's."""
    if event_id.startswith(ITEM_ID_PREFIX):
        source_type = SESSION_SOURCE_TYPE
    elif event_id.startswith((MEMORY_ID_PREFIX, CLAIM_ID_PREFIX)):
        source_type = SOURCE_TYPE
    else:
        return None
    try:
        receipt = binding.service.get_receipt(binding.scope, event_id)
    except (EntityNotFound, EntityDeleted, ScopeMismatch):
        return None
    return receipt if receipt.source.source_type == source_type else None


def _kind_of(receipt: RawEventReceipt) -> str | None:
    """The kind of the memory written with the event of ``receipt`` (one of
    :func:`_own_receipt`), as the receipt tells it: a session item's from its session,
    a claim's always ``claim``, a memory of ``remember`` from the event's metadata;
    ``None`` when the receipt does not tell (an event stored before its metadata named
    the kind)."""
    if receipt.source.source_type == SESSION_SOURCE_TYPE:
        return SESSION_KIND_PREFIX + receipt.source.source_id
    if receipt.event_id.startswith(CLAIM_ID_PREFIX):
        return CLAIM_KIND
    kind = receipt.metadata.get("kind")
    return kind if isinstance(kind, str) else None


def _no_longer_a_source(binding: _Binding, event_id: str) -> bool:
    """Whether the event is still stored and no memory held in the scope comes from it
    any longer (so that deleting it deletes nothing else)."""
    try:
        return not binding.service.derived_memories(binding.scope, event_id)
    except (EntityNotFound, EntityDeleted, ScopeMismatch):
        return False


def _forget_tool(binding: _Binding) -> FunctionTool:
    def forget_memory(memory_id: str) -> str:
        """Forget a memory for good: it is erased and can never come back.

        Args:
            memory_id: The ID of the memory, as search_memory or remember returned it.
        """
        memory_id = v.text("memory_id", memory_id)
        service, scope = binding.service, binding.scope
        when = now(binding.clock)
        # These tools and the session write a memory's event under the memory's own ID;
        # a session item's later parts come from the event of the item's ID.
        event_id = session_item_event(memory_id) or memory_id
        delete = GovernanceCommand(
            scope, GovernanceAction.DELETE, EntityType.RAW_EVENT, event_id, when, FORGET_REASON
        )
        try:
            record = service.get_memory(scope, memory_id)
        except EntityDeleted:
            # Forgotten before, by a call whose DELETE of the event did not follow (a
            # busy store between the two transactions): this call finishes it, within
            # the reach a live memory has, its kind (as the receipt tells it) among the
            # tools' kinds.
            receipt = _own_receipt(binding, event_id)
            if receipt is None or _kind_of(receipt) not in binding.kinds:
                raise
            if not _no_longer_a_source(binding, event_id):
                raise
            try:
                service.govern(delete)
            except (EntityNotFound, EntityDeleted):
                raise EntityDeleted(memory_id) from None
            return to_json({"forgotten": memory_id})
        if record.kind not in binding.kinds:
            raise ValidationError("memory_id", "names a memory these tools do not manage")
        # The event is this memory's only source.
        receipt = None
        if record.source_event_ids == (event_id,):
            receipt = _own_receipt(binding, event_id)
        own = receipt is not None and _kind_of(receipt) in (record.kind, None)
        service.govern(
            GovernanceCommand(
                scope, GovernanceAction.FORGET, EntityType.MEMORY, memory_id, when, FORGET_REASON
            )
        )
        # The event goes only when no other memory comes from it: a memory the host
        # derived from it is the host's, and deleting the event would delete it too.
        if own and _no_longer_a_source(binding, event_id):
            with contextlib.suppress(EntityNotFound, EntityDeleted):  # already gone
                service.govern(delete)
        return to_json({"forgotten": memory_id})

    return _tool(forget_memory)


def _claims_tool(binding: _Binding) -> FunctionTool:
    def claims(subject: str | None, predicate: str | None) -> str:
        """List the structured claims (subject, predicate, value) known now, with their
        status and any conflicts among the current ones. At most 50 claims: truncated is
        true when there are more (ask about one subject or predicate to see them), and
        conflicts cover the subjects and predicates whose claims are all listed.

        Args:
            subject: Only claims about this subject, or null for every subject.
            predicate: Only claims with this predicate, or null for every predicate.
        """
        # One page of MAX_CLAIMS: the cost follows the page, not the scope.
        answer = binding.service.claims(
            ClaimQuery(
                binding.scope,
                now(binding.clock),
                subject=subject,
                predicate=predicate,
                limit=MAX_CLAIMS,
            )
        )
        return to_json(
            {
                "claims": [_claim_json(view) for view in answer.claims],
                "truncated": answer.next_cursor is not None,
                "conflicts": [list(c.claim_ids) for c in answer.conflicts],
            }
        )

    return _tool(claims)


def _remember_claim_tool(binding: _Binding) -> FunctionTool:
    def remember_claim(
        subject: str,
        predicate: str,
        value: str,
        trust: TrustName | None,
        supersedes: str | None,
    ) -> str:
        """Store a structured claim: subject, predicate and value, such as
        user:ada prefers_theme dark.

        Args:
            subject: What the claim is about, such as user:ada.
            predicate: The property, such as prefers_theme.
            value: Its value, such as dark.
            trust: How far the claim is trusted; null for the highest level allowed.
            supersedes: The ID of a claim this one replaces, or null.
        """
        level = binding.trust(trust)
        when = now(binding.clock)
        claim_id = CLAIM_ID_PREFIX + uuid.uuid4().hex
        draft = ClaimDraft(
            claim_id,
            binding.scope,
            subject,
            predicate,
            value,
            (claim_id,),
            level,
            when,
            supersedes=supersedes,
        )
        stored = binding.service.ingest_derived(
            binding.event(claim_id, draft.content, when, CLAIM_KIND), claims=[draft]
        )
        record = stored.claims[0]
        return to_json({"claim_id": record.claim_id, "trust": record.memory.trust.name.lower()})

    return _tool(remember_claim)
