"""The memory tools of the MCP server, over one :class:`~trueheart_core.TrueHeart` and one
scope bound when the server starts.

This module does not import the MCP SDK: it declares the tools (names, descriptions,
JSON schemas of their arguments and results, hints) and runs a call, from a JSON object
of arguments to a JSON object of results. ``server`` puts it on the wire.

Every argument is checked here, with fixed messages that never quote the value given;
every library error keeps its own body-free message, except that ``ScopeMismatch`` reads
as ``EntityNotFound``, so that a scope never learns which IDs another scope holds. No
call takes a scope: the tools read and write the bound scope only.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from trueheart_core import (
    ArtifactClass,
    CapsuleItem,
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimStatus,
    ClaimView,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    IdempotencyConflict,
    IngestResult,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
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

Document = dict[str, Any]
Schema = dict[str, Any]

DEFAULT_RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=30), clear_for=timedelta(days=90), recall_for=timedelta(days=365)
)
"""What ``remember`` and ``remember_claim`` store keep, unless the server is told
otherwise: the source event's body for 30 days, the memory clear for 90 days and
recallable for 365."""
DEFAULT_KIND = "note"
SOURCE_TYPE = "mcp"
"""The ``source_type`` of every event the tools store."""
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_RECALL_LIMIT = 20
DEFAULT_CLAIMS_LIMIT = 50
DEFAULT_BUDGET = 512
MAX_BUDGET = 1_048_576
MAX_LIMIT = 100

READING_TOOLS = ("search_memory", "recall_memories", "get_memory", "claims")
WRITING_TOOLS = ("remember", "remember_claim", "forget_memory")

_TRUST = {level: level.name.lower() for level in TrustLevel}
_BY_NAME = {name: level for level, name in _TRUST.items()}


def trust_name(level: TrustLevel) -> str:
    """The name of a trust level in the tools' arguments and results: ``observed``."""
    return _TRUST[level]


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


# --- JSON schemas -----------------------------------------------------------------------

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
    "trust": {"type": "string", "enum": list(_BY_NAME)},
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
    "trust": {"type": "string", "enum": list(_BY_NAME)},
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
    allowed = [name for level, name in _TRUST.items() if level <= ceiling]
    return {
        "type": "string",
        "enum": allowed,
        "default": trust_name(default),
        "description": "how far the source is trusted; at most the server's ceiling, "
        f"{trust_name(ceiling)} (default {trust_name(default)})",
    }


# --- arguments ----------------------------------------------------------------------------


class _Arguments:
    """The arguments of one call, checked one by one with fixed messages. A JSON
    ``null`` counts as an absent argument."""

    def __init__(self, given: Mapping[str, Any] | None, allowed: tuple[str, ...]) -> None:
        values = {} if given is None else dict(given)
        unexpected = [name for name in values if name not in allowed]
        if unexpected:
            accepted = ", ".join(allowed) or "none"
            raise ValidationError("arguments", f"only these are accepted: {accepted}")
        self._values = {name: value for name, value in values.items() if value is not None}

    def present(self, name: str) -> bool:
        return name in self._values

    def text(self, name: str, *, default: str | None = None) -> str:
        value = self._values.get(name, default)
        if value is None:
            raise ValidationError(name, "is required")
        if not isinstance(value, str):
            raise ValidationError(name, "must be a string")
        return value

    def optional_text(self, name: str) -> str | None:
        return self.text(name) if name in self._values else None

    def whole(self, name: str, low: int, high: int, default: int) -> int:
        value = self._values.get(name, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValidationError(name, f"must be a whole number from {low} through {high}")
        return value

    def kinds(self) -> tuple[str, ...]:
        value = self._values.get("kinds", [])
        if not isinstance(value, list) or not all(isinstance(kind, str) for kind in value):
            raise ValidationError("kinds", "must be a list of strings")
        return tuple(value)

    def metadata(self) -> Mapping[str, Any]:
        value = self._values.get("metadata", {})
        if not isinstance(value, dict):
            raise ValidationError("metadata", "must be a JSON object")
        return value

    def trust(self, ceiling: TrustLevel, default: TrustLevel) -> TrustLevel:
        value = self._values.get("trust")
        if value is None:
            return default
        level = _BY_NAME.get(value) if isinstance(value, str) else None
        if level is None:
            raise ValidationError("trust", "must be untrusted, observed or confirmed")
        if level > ceiling:
            raise ValidationError(
                "trust", f"must be at most {trust_name(ceiling)}, the server's trust ceiling"
            )
        return level

    def instant(self, name: str) -> datetime | None:
        if name not in self._values:
            return None
        return parse_instant(name, self._values[name])


def parse_instant(name: str, value: object) -> datetime:
    """An ISO 8601 date (midnight UTC) or time with a UTC offset, in UTC."""
    if not isinstance(value, str):
        raise ValidationError(name, "must be an ISO 8601 date or time")
    try:
        # A date alone, in any form ISO 8601 gives one ("2026-01-05", "20260105",
        # "2026-W02-1"): its first instant in UTC.
        day = date.fromisoformat(value)
    except ValueError:
        pass
    else:
        return datetime.combine(day, time(), UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(name, "must be an ISO 8601 date or time") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValidationError(name, "must have a UTC offset, such as Z or +02:00")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # a local time whose UTC instant is outside years 1 to 9999
        raise ValidationError(name, "must be a time from year 1 through 9999 in UTC") from None


# --- results --------------------------------------------------------------------------------


def _when(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _maybe(value: datetime | None) -> str | None:
    return None if value is None else _when(value)


def _plain(value: object) -> object:
    """Stored metadata (read-only mappings, tuples) as plain JSON containers."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _memory(record: MemoryRecord) -> Document:
    return {
        "memory_id": record.memory_id,
        "kind": record.kind,
        "trust": trust_name(record.trust),
        "status": record.status.value,
        "created_at": _when(record.created_at),
        "clear_until": _when(record.clear_until),
        "recall_until": _when(record.recall_until),
        "source_event_ids": list(record.source_event_ids),
        "metadata": _plain(record.metadata),
        "content": record.content,
    }


def _claim(record: ClaimRecord) -> Document:
    return {
        "claim_id": record.claim_id,
        "subject": record.subject,
        "predicate": record.predicate,
        "value": record.value,
        "valid_from": _maybe(record.valid_from),
        "valid_to": _maybe(record.valid_to),
        "supersedes": record.supersedes,
        "trust": trust_name(record.memory.trust),
        "created_at": _when(record.created_at),
        "source_event_ids": list(record.memory.source_event_ids),
    }


def _claim_view(view: ClaimView) -> Document:
    return {
        **_claim(view.claim),
        "status": view.status.value,
        "superseded_by": list(view.superseded_by),
    }


def _search_item(item: CapsuleItem) -> Document:
    return {
        "rank": item.rank,
        "score": item.score,
        "clarity": item.clarity,
        "tokens": item.tokens,
        **_memory(item.memory),
        "claim": None if item.claim is None else _claim_view(item.claim),
    }


_WRITTEN_HERE = re.compile(r"(mem|clm)-([0-9a-f]{32})")
_OTHER_NAMESPACE = {"mem": "clm", "clm": "mem"}
# An item of an OpenAI Agents session (``TrueHeartSession``): its event and its memory
# share this ID, and the event's source is the session (these names are those of
# ``trueheart_core.integrations.openai_agents.session``, which imports the Agents SDK).
_SESSION_ITEM = re.compile(r"agent-session-[0-9]{12}-[0-9a-f]{16}")
_SESSION_SOURCE_TYPE = "openai-agents-session"
_SESSION_KIND_PREFIX = "agent_session:"


def _ids(namespace: str, key: str | None) -> tuple[str, str]:
    """The event ID and memory ID of one write: random, or derived from the idempotency
    key (the same key, the same IDs, in whatever scope)."""
    if key is None:
        token = uuid.uuid4().hex
    else:
        seed = f"trueheart-mcp\x00{namespace}\x00{key}".encode()
        token = hashlib.sha256(seed).hexdigest()[:32]
    return f"evt-{token}", f"{namespace}-{token}"


# --- the tools -----------------------------------------------------------------------------


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
        self._handlers: dict[str, Callable[[_Arguments], Document]] = {
            "remember": self._remember,
            "search_memory": self._search,
            "recall_memories": self._recall,
            "get_memory": self._get,
            "forget_memory": self._forget,
            "remember_claim": self._remember_claim,
            "claims": self._claims,
        }
        self._specs = {spec.name: spec for spec in self._declare() if self._offers(spec.name)}

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
                return self._handlers[name](_Arguments(arguments, self._allowed(name)))
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

    # --- declarations ---------------------------------------------------------------

    def _declare(self) -> tuple[ToolSpec, ...]:
        trust = _trust_argument(self._ceiling, self._default_trust)
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
                            f"(default {DEFAULT_KIND})",
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

    def _remember(self, args: _Arguments) -> Document:
        content = args.text("content")
        kind = args.text("kind", default=DEFAULT_KIND)
        metadata = args.metadata()
        trust = args.trust(self._ceiling, self._default_trust)
        key = _checked_key(args.optional_text("idempotency_key"))
        event_id, memory_id = _ids("mem", key)

        def write(at: datetime) -> IngestResult:
            event = RawEventDraft(
                event_id, self._scope, self._source(at, trust), content, self._retention
            )
            memory = MemoryDraft(
                memory_id, self._scope, content, (event_id,), kind, trust, at, metadata
            )
            return self._service.ingest_derived(event, memories=(memory,))

        result, replayed = self._once(key, event_id, memory_id, write)
        return {"memory": _memory(result.memories[0]), "event_id": event_id, "replayed": replayed}

    def _remember_claim(self, args: _Arguments) -> Document:
        subject = args.text("subject")
        predicate = args.text("predicate")
        value = args.text("value")
        valid_from = args.instant("valid_from")
        valid_to = args.instant("valid_to")
        supersedes = args.optional_text("supersedes")
        trust = args.trust(self._ceiling, self._default_trust)
        key = _checked_key(args.optional_text("idempotency_key"))
        event_id, claim_id = _ids("clm", key)

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
        return {"claim": _claim(result.claims[0]), "event_id": event_id, "replayed": replayed}

    def _forget(self, args: _Arguments) -> Document:
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
            event_id = self._own_event(memory_id, None)
            if event_id is None or not self._delete_event(event_id, at, reason, affected, removed):
                raise
        else:
            event_id = self._own_event(memory_id, record)
            result = self._service.govern(forget)
            affected.update(result.affected_ids)
            removed.update(result.removed)
            if event_id is not None:
                self._delete_event(event_id, at, reason, affected, removed)
        return {
            "memory_id": memory_id,
            "affected_ids": sorted(affected),
            "removed": [artifact.value for artifact in ArtifactClass if artifact in removed],
        }

    def _own_event(self, memory_id: str, record: MemoryRecord | None) -> str | None:
        """The ID of the event ``remember`` or ``remember_claim`` stored with this memory
        or claim (see :func:`_ids`), when it is still stored; ``None`` for any other
        memory, whose events are the host's.

        The ID's shape is not enough, since a host may name its own records the same
        way: the event's receipt must carry this server's source (type ``mcp``, its
        ``source_id``), no memory held under the other namespace (``mem-`` or ``clm-``)
        may come from it, and a memory still held (``record``) must have it as its only
        source. A session item's event is found as :meth:`_item_event` says."""
        if _SESSION_ITEM.fullmatch(memory_id):
            return self._item_event(memory_id, record)
        match = _WRITTEN_HERE.fullmatch(memory_id)
        if match is None:
            return None
        namespace, token = match.groups()
        event_id = f"evt-{token}"
        if record is not None and record.source_event_ids != (event_id,):
            return None
        try:
            source = self._service.get_receipt(self._scope, event_id).source
        except (EntityNotFound, EntityDeleted, ScopeMismatch):
            return None
        if (source.source_type, source.source_id) != (SOURCE_TYPE, self._source_id):
            return None
        try:
            other = self._service.get_memory(self._scope, f"{_OTHER_NAMESPACE[namespace]}-{token}")
        except (EntityNotFound, EntityDeleted, ScopeMismatch):
            return event_id
        return None if event_id in other.source_event_ids else event_id

    def _item_event(self, item_id: str, record: MemoryRecord | None) -> str | None:
        """The event of a session item, stored under the item's own ID, when it is still
        stored and its receipt shows a session's source (type
        ``openai-agents-session``); a memory still held (``record``) must have it as its
        only source, and be of the kind of that session."""
        if record is not None and record.source_event_ids != (item_id,):
            return None
        try:
            source = self._service.get_receipt(self._scope, item_id).source
        except (EntityNotFound, EntityDeleted, ScopeMismatch):
            return None
        if source.source_type != _SESSION_SOURCE_TYPE:
            return None
        if record is not None and record.kind != _SESSION_KIND_PREFIX + source.source_id:
            return None
        return item_id

    def _delete_event(
        self,
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
            if self._service.derived_memories(self._scope, event_id):
                return False
        except (EntityNotFound, EntityDeleted, ScopeMismatch):
            return False
        command = GovernanceCommand(
            self._scope, GovernanceAction.DELETE, EntityType.RAW_EVENT, event_id, at, reason
        )
        try:
            deleted = self._service.govern(command)
        except (EntityNotFound, EntityDeleted):
            return False
        affected.update(deleted.affected_ids)
        removed.update(deleted.removed)
        return True

    # --- reads ----------------------------------------------------------------------------

    def _search(self, args: _Arguments) -> Document:
        text = query_text("query", args.text("query"))
        limit = args.whole("limit", 1, MAX_LIMIT, DEFAULT_SEARCH_LIMIT)
        budget = args.whole("budget_tokens", 1, MAX_BUDGET, DEFAULT_BUDGET)
        kinds = args.kinds()
        as_of = self._now()
        capsule = self._service.search(
            SearchQuery(self._scope, text, as_of, budget_tokens=budget, limit=limit, kinds=kinds)
        )
        return {
            "as_of": _when(as_of),
            "matched": capsule.matched,
            "budget_tokens": capsule.budget_tokens,
            "used_tokens": capsule.used_tokens,
            "items": [_search_item(item) for item in capsule.items],
        }

    def _recall(self, args: _Arguments) -> Document:
        limit = args.whole("limit", 1, MAX_LIMIT, DEFAULT_RECALL_LIMIT)
        kinds = args.kinds()
        as_of = self._now()
        items = self._service.recall(RecallQuery(self._scope, as_of, limit, kinds))
        return {
            "as_of": _when(as_of),
            "items": [{"clarity": item.clarity, **_memory(item.memory)} for item in items],
        }

    def _get(self, args: _Arguments) -> Document:
        return _memory(self._service.get_memory(self._scope, args.text("memory_id")))

    def _claims(self, args: _Arguments) -> Document:
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
            "as_of": _when(answer.as_of),
            "known_at": _when(answer.known_at),
            "claims": [_claim_view(view) for view in answer.claims],
            "conflicts": [list(conflict.claim_ids) for conflict in answer.conflicts],
            "truncated": answer.next_cursor is not None,
        }


def _checked_key(key: str | None) -> str | None:
    """An idempotency key: non-blank, at most 128 characters (the rules of an ID)."""
    if key is None:
        return None
    if not key.strip():
        raise ValidationError("idempotency_key", "must be a non-blank string")
    if len(key) > 128:
        raise ValidationError("idempotency_key", "must be at most 128 characters")
    try:
        key.encode()
    except UnicodeEncodeError:
        raise ValidationError("idempotency_key", "must be valid UTF-8") from None
    return key
