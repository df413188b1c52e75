"""The memory kinds an integration's writes may not take, and the IDs of an OpenAI Agents
session's items (which the MCP server's tools govern too).

A memory of kind ``claim`` made without a claim row is a plain memory that every reader
of claims (``claims()``, the evicortex face, the tools' claim views) takes for one; a
memory of kind ``agent_session:<id>`` sits among an OpenAI Agents session's items, which
that session's reads then walk past. The integrations write claims and session items
through their own tools, so the kinds a model (or a host's ``kind`` setting) names for a
plain memory leave both out.
"""

from __future__ import annotations

import re

from trueheart_core.domain.claims import CLAIM_KIND
from trueheart_core.errors import ValidationError

SESSION_KIND_PREFIX = "agent_session:"
"""A session's items are memories of kind ``agent_session:<session_id>``."""


def check_plain_kind(kind: str) -> str:
    """``kind``, unless it is reserved: ``ValidationError`` for ``claim`` (``kind: is
    reserved for claims``) and for a kind that begins ``agent_session:`` (``kind: is
    reserved for agent session items``)."""
    if kind == CLAIM_KIND:
        raise ValidationError("kind", "is reserved for claims")
    if kind.startswith(SESSION_KIND_PREFIX):
        raise ValidationError("kind", "is reserved for agent session items")
    return kind


_SESSION_ITEM = re.compile(r"(agent-session-[0-9]{12}-[0-9a-f]{16})(?:-[0-9]{3})?")
"""The memory IDs of a session's item: its event's ID (``agent-session-``, the item's
position in 12 digits, ``-``, 16 random hex digits) for the item or its first part, and
that ID followed by ``-`` and three digits for each of its other parts (see
``trueheart_core.integrations.openai_agents.session``, which imports the Agents SDK)."""


def session_item_event(memory_id: str) -> str | None:
    """The ID of the event a session item's memory comes from, when ``memory_id`` has the
    shape of one (the item, or one of its parts); ``None`` otherwise. The shape alone
    proves nothing: a host may name its own memories so, and the callers check the
    event's receipt."""
    match = _SESSION_ITEM.fullmatch(memory_id)
    return None if match is None else match.group(1)
