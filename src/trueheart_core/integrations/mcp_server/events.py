"""The source events of the writing tools: the IDs of what one write stores, and which
event ``forget_memory`` may delete with a forgotten memory.

``remember`` and ``remember_claim`` store each memory with an event of its own, so that
forgetting the memory can take its text out of the event's body too. An event is
deleted only when it is provably such an event (or an OpenAI Agents session's item)
and no other memory still comes from it: the host's events, and what the host derived
from them, are the host's to govern.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import datetime

from trueheart_core import (
    ArtifactClass,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryRecord,
    Scope,
    ScopeMismatch,
    SourceRef,
    TrueHeart,
)
from trueheart_core.integrations._kinds import SESSION_KIND_PREFIX, session_item_event

__all__ = ["SOURCE_TYPE", "delete_event", "ids", "own_event"]

SOURCE_TYPE = "mcp"
"""The ``source_type`` of every event the tools store."""

_WRITTEN_HERE = re.compile(r"(mem|clm)-([0-9a-f]{32})")
_OTHER_NAMESPACE = {"mem": "clm", "clm": "mem"}
# The source type of an OpenAI Agents session's events (the name that
# ``trueheart_core.integrations.openai_agents.session``, which imports the Agents SDK,
# gives them).
_SESSION_SOURCE_TYPE = "openai-agents-session"


def ids(namespace: str, key: str | None) -> tuple[str, str]:
    """The event ID and memory ID of one write: random, or derived from the idempotency
    key (the same key, the same IDs, in whatever scope)."""
    if key is None:
        token = uuid.uuid4().hex
    else:
        seed = f"trueheart-mcp\x00{namespace}\x00{key}".encode()
        token = hashlib.sha256(seed).hexdigest()[:32]
    return f"evt-{token}", f"{namespace}-{token}"


def own_event(
    service: TrueHeart,
    scope: Scope,
    source_id: str,
    memory_id: str,
    record: MemoryRecord | None,
) -> str | None:
    """The ID of the event ``remember`` or ``remember_claim`` stored with this memory
    or claim (see :func:`ids`), when it is still stored; ``None`` for any other memory,
    whose events are the host's.

    The ID's shape is not enough, since a host may name its own records the same
    way: the event's receipt must carry the server's source (type ``mcp``, its
    ``source_id``), no memory held under the other namespace (``mem-`` or ``clm-``)
    may come from it, and a memory still held (``record``) must have it as its only
    source. A session item's event (for the item or any of its parts) is found as
    :func:`_item_event` says."""
    item_event = session_item_event(memory_id)
    if item_event is not None:
        return _item_event(service, scope, item_event, record)
    match = _WRITTEN_HERE.fullmatch(memory_id)
    if match is None:
        return None
    namespace, token = match.groups()
    event_id = f"evt-{token}"
    if record is not None and record.source_event_ids != (event_id,):
        return None
    source = _stored_source(service, scope, event_id)
    if source is None or (source.source_type, source.source_id) != (SOURCE_TYPE, source_id):
        return None
    try:
        other = service.get_memory(scope, f"{_OTHER_NAMESPACE[namespace]}-{token}")
    except (EntityNotFound, EntityDeleted, ScopeMismatch):
        return event_id
    return None if event_id in other.source_event_ids else event_id


def _item_event(
    service: TrueHeart, scope: Scope, event_id: str, record: MemoryRecord | None
) -> str | None:
    """The event of a session item (stored under the item's own ID, which its first
    part's memory shares and its other parts' IDs begin with), when it is still stored
    and its receipt shows a session's source (type ``openai-agents-session``); a memory
    still held (``record``) must have it as its only source, and be of the kind of that
    session."""
    if record is not None and record.source_event_ids != (event_id,):
        return None
    source = _stored_source(service, scope, event_id)
    if source is None or source.source_type != _SESSION_SOURCE_TYPE:
        return None
    if record is not None and record.kind != SESSION_KIND_PREFIX + source.source_id:
        return None
    return event_id


def _stored_source(service: TrueHeart, scope: Scope, event_id: str) -> SourceRef | None:
    """The source of the event's receipt, or None when no receipt of it is held."""
    try:
        return service.get_receipt(scope, event_id).source
    except (EntityNotFound, EntityDeleted, ScopeMismatch):
        return None


def delete_event(
    service: TrueHeart,
    scope: Scope,
    event_id: str,
    at: datetime,
    reason: str,
    affected: set[str],
    removed: set[ArtifactClass],
) -> bool:
    """DELETE the event ``remember`` (or a session) wrote with a forgotten memory,
    adding what it removed to ``affected`` and ``removed``; False when it is already
    gone, or kept because another memory still comes from it (one the host derived
    from it, which the DELETE would delete too)."""
    try:
        if service.derived_memories(scope, event_id):
            return False
    except (EntityNotFound, EntityDeleted, ScopeMismatch):
        return False
    command = GovernanceCommand(
        scope, GovernanceAction.DELETE, EntityType.RAW_EVENT, event_id, at, reason
    )
    try:
        deleted = service.govern(command)
    except (EntityNotFound, EntityDeleted):
        return False
    affected.update(deleted.affected_ids)
    removed.update(deleted.removed)
    return True
