"""The memory kinds an integration's writes may not take.

A memory of kind ``claim`` made without a claim row is a plain memory that every reader
of claims (``claims()``, the evicortex face, the tools' claim views) takes for one; a
memory of kind ``agent_session:<id>`` sits among an OpenAI Agents session's items, which
that session's reads then walk past. The integrations write claims and session items
through their own tools, so the kinds a model (or a host's ``kind`` setting) names for a
plain memory leave both out.
"""

from __future__ import annotations

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
