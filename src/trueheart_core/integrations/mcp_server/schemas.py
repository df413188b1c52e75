"""The tools as a client lists them: names, descriptions, hints, and the JSON schemas of
their arguments and results.

The schemas are the contract a client sees before its first call, so they state the
defaults and bounds the argument checks enforce (from the constants here, which the
tools read too) and list the trust names a call may give, up to the server's ceiling.
Every result schema requires all of its fields: a result always carries each one,
``null`` when it has no value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trueheart_core import ClaimStatus, MemoryStatus, TrustLevel
from trueheart_core.integrations.mcp_server.trust import TRUST_LEVELS, TRUST_NAMES, trust_name

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_CLAIMS_LIMIT",
    "DEFAULT_KIND",
    "DEFAULT_RECALL_LIMIT",
    "DEFAULT_SEARCH_LIMIT",
    "MAX_BUDGET",
    "MAX_LIMIT",
    "READING_TOOLS",
    "WRITING_TOOLS",
    "Schema",
    "ToolSpec",
    "declare",
]

Schema = dict[str, Any]

DEFAULT_KIND = "note"
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_RECALL_LIMIT = 20
DEFAULT_CLAIMS_LIMIT = 50
DEFAULT_BUDGET = 512
MAX_BUDGET = 1_048_576
MAX_LIMIT = 100

READING_TOOLS = ("search_memory", "recall_memories", "get_memory", "claims")
WRITING_TOOLS = ("remember", "remember_claim", "forget_memory")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as listed: its name, title, description, the JSON schemas of its
    arguments and of its result, and the hints clients may show."""

    name: str
    title: str
    description: str
    input_schema: Schema
    output_schema: Schema
    read_only: bool
    destructive: bool
    idempotent: bool


_TIME = {"type": "string", "description": "ISO 8601 time in UTC"}
_OPTIONAL_TIME = {"type": ["string", "null"], "description": "ISO 8601 time in UTC, or null"}
_IDS = {"type": "array", "items": {"type": "string"}}


def _object(properties: Mapping[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    schema: Schema = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _result(properties: Mapping[str, Schema]) -> Schema:
    return {"type": "object", "properties": dict(properties), "required": list(properties)}


_MEMORY_FIELDS: dict[str, Schema] = {
    "memory_id": {"type": "string"},
    "kind": {"type": "string"},
    "trust": {"type": "string", "enum": list(TRUST_LEVELS)},
    "status": {"type": "string", "enum": [status.value for status in MemoryStatus]},
    "created_at": _TIME,
    "clear_until": _TIME,
    "recall_until": _TIME,
    "source_event_ids": _IDS,
    "metadata": {"type": "object"},
    "content": {"type": "string"},
}
_MEMORY = _result(_MEMORY_FIELDS)
_CLAIM_FIELDS: dict[str, Schema] = {
    "claim_id": {"type": "string", "description": "also the ID of the memory that carries it"},
    "subject": {"type": "string"},
    "predicate": {"type": "string"},
    "value": {"type": "string"},
    "valid_from": _OPTIONAL_TIME,
    "valid_to": _OPTIONAL_TIME,
    "supersedes": {"type": ["string", "null"]},
    "trust": {"type": "string", "enum": list(TRUST_LEVELS)},
    "created_at": _TIME,
    "source_event_ids": _IDS,
}
_CLAIM = _result(_CLAIM_FIELDS)
_STATUS = {"type": "string", "enum": [status.value for status in ClaimStatus]}
_CLAIM_VIEW = _result({**_CLAIM_FIELDS, "status": _STATUS, "superseded_by": _IDS})
_SEARCH_ITEM = _result(
    {
        "rank": {"type": "integer", "minimum": 1},
        "score": {"type": "number"},
        "clarity": {"type": "number"},
        "tokens": {"type": "integer", "minimum": 0},
        **_MEMORY_FIELDS,
        "claim": {
            "anyOf": [_CLAIM_VIEW, {"type": "null"}],
            "description": "the claim's fields and status when the memory is a claim",
        },
    }
)
_RECALL_ITEM = _result({"clarity": {"type": "number"}, **_MEMORY_FIELDS})


def _limit(default: int) -> Schema:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_LIMIT,
        "default": default,
        "description": f"at most this many results (1 to {MAX_LIMIT}, default {default})",
    }


_KINDS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "only memories of these kinds (default: every kind)",
}
_MEMORY_ID = {"type": "string", "description": "the memory's ID, as other tools return it"}
_KEY = {
    "type": "string",
    "maxLength": 128,
    "description": "makes the call safe to retry: a call with a key already used returns "
    "what the first stored (the same content and options are required), and never "
    "brings back a memory that was forgotten",
}


def _trust_argument(ceiling: TrustLevel, default: TrustLevel) -> Schema:
    allowed = [name for level, name in TRUST_NAMES.items() if level <= ceiling]
    return {
        "type": "string",
        "enum": allowed,
        "default": trust_name(default),
        "description": "how far the source is trusted; at most the server's ceiling, "
        f"{trust_name(ceiling)} (default {trust_name(default)})",
    }


def declare(ceiling: TrustLevel, default_trust: TrustLevel) -> tuple[ToolSpec, ...]:
    """Every tool, reading and writing, in the order they are listed; the ``trust``
    argument of the writing tools offers the names up to ``ceiling``, and defaults to
    ``default_trust``."""
    trust = _trust_argument(ceiling, default_trust)
    stored = (
        "Stored with a source event in this server's memory scope, as audited "
        "writes; the scope is fixed by the server and cannot be chosen."
    )
    return (
        ToolSpec(
            "remember",
            "Remember",
            "Store one memory: a short self-contained statement worth recalling "
            f"later (a fact, a preference, a decision). {stored} Returns the stored "
            "memory, with its ID.",
            _object(
                {
                    "content": {
                        "type": "string",
                        "minLength": 1,
                        "description": "the text to remember, as it should be "
                        "recalled (at most 256 KiB of UTF-8)",
                    },
                    "kind": {
                        "type": "string",
                        "default": DEFAULT_KIND,
                        "maxLength": 128,
                        "description": "a label such as preference, fact, plan "
                        f"(default {DEFAULT_KIND}; not claim, which remember_claim "
                        "writes, nor one beginning agent_session:)",
                    },
                    "metadata": {
                        "type": "object",
                        "description": "a JSON object stored with the memory (at most 16 KiB)",
                    },
                    "trust": trust,
                    "idempotency_key": _KEY,
                },
                ("content",),
            ),
            _result(
                {
                    "memory": _MEMORY,
                    "event_id": {"type": "string"},
                    "replayed": {
                        "type": "boolean",
                        "description": "true when the idempotency key was used before "
                        "and this is what that call stored",
                    },
                }
            ),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        ToolSpec(
            "search_memory",
            "Search memory",
            "Find the stored memories most relevant to a query (lexical matching of "
            "words), best first, packed whole into a token budget. Returns each "
            "memory with its ID, kind, creation time, score and content.",
            _object(
                {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "what to look for, in words the memories would "
                        "contain (at most 4,096 characters)",
                    },
                    "limit": _limit(DEFAULT_SEARCH_LIMIT),
                    "budget_tokens": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_BUDGET,
                        "default": DEFAULT_BUDGET,
                        "description": "the most tokens the returned memories may "
                        f"cost together (default {DEFAULT_BUDGET})",
                    },
                    "kinds": _KINDS,
                },
                ("query",),
            ),
            _result(
                {
                    "as_of": _TIME,
                    "matched": {"type": "integer", "minimum": 0},
                    "budget_tokens": {"type": "integer"},
                    "used_tokens": {"type": "integer"},
                    "items": {"type": "array", "items": _SEARCH_ITEM},
                }
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            "recall_memories",
            "Recall memories",
            "List the memories currently recalled, clearest and newest first, without a query.",
            _object({"limit": _limit(DEFAULT_RECALL_LIMIT), "kinds": _KINDS}),
            _result({"as_of": _TIME, "items": {"type": "array", "items": _RECALL_ITEM}}),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            "get_memory",
            "Get a memory",
            "Read one memory by its ID, active or sealed.",
            _object({"memory_id": _MEMORY_ID}, ("memory_id",)),
            _MEMORY,
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            "forget_memory",
            "Forget a memory",
            "Forget one memory for good: it is erased (with the source record "
            "remember stored it from, unless another memory still comes from that "
            "record), a tombstone keeps its ID from being stored "
            "again, and an audit record says it was forgotten (without its content "
            "or the reason).",
            _object(
                {
                    "memory_id": _MEMORY_ID,
                    "reason": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 128,
                        "description": "why it is forgotten; checked, never stored",
                    },
                },
                ("memory_id", "reason"),
            ),
            _result(
                {
                    "memory_id": {"type": "string"},
                    "affected_ids": _IDS,
                    "removed": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "the classes of stored artifacts removed",
                    },
                }
            ),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            "remember_claim",
            "Remember a claim",
            "Store one structured fact, subject predicate value (user:ada prefers_theme "
            "dark), optionally valid from or until a time. Claims are also memories, "
            f"found by search. {stored}",
            _object(
                {
                    "subject": {"type": "string", "minLength": 1, "maxLength": 128},
                    "predicate": {"type": "string", "minLength": 1, "maxLength": 128},
                    "value": {"type": "string", "minLength": 1, "maxLength": 1024},
                    "valid_from": {
                        "type": "string",
                        "description": "ISO 8601 date or time with offset (default: always)",
                    },
                    "valid_to": {
                        "type": "string",
                        "description": "ISO 8601 date or time with offset, later than "
                        "valid_from (default: open-ended)",
                    },
                    "supersedes": {
                        "type": "string",
                        "description": "the ID of a claim this one replaces",
                    },
                    "trust": trust,
                    "idempotency_key": _KEY,
                },
                ("subject", "predicate", "value"),
            ),
            _result(
                {
                    "claim": _CLAIM,
                    "event_id": {"type": "string"},
                    "replayed": {"type": "boolean"},
                }
            ),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        ToolSpec(
            "claims",
            "Claims",
            "The claims known now, optionally about one subject and predicate, each "
            "with its status at a time (current, superseded, not_yet_valid or ended), "
            "and the conflicts among the current ones (claim IDs that disagree). At "
            "most limit claims, in subject and predicate order; truncated is true when "
            "there are more (ask about one subject or predicate to see them), and "
            "conflicts cover the subjects and predicates whose claims are all listed.",
            _object(
                {
                    "subject": {"type": "string", "maxLength": 128},
                    "predicate": {"type": "string", "maxLength": 128},
                    "limit": _limit(DEFAULT_CLAIMS_LIMIT),
                    "as_of": {
                        "type": "string",
                        "description": "the time the statuses are for, ISO 8601 date "
                        "or time with offset (default: now)",
                    },
                }
            ),
            _result(
                {
                    "as_of": _TIME,
                    "known_at": _TIME,
                    "claims": {"type": "array", "items": _CLAIM_VIEW},
                    "conflicts": {"type": "array", "items": _IDS},
                    "truncated": {"type": "boolean"},
                }
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
    )
