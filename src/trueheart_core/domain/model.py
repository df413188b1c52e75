"""Immutable domain contracts: enums and frozen, slotted DTOs.

Every DTO validates its fields in ``__post_init__`` in declaration order (the first invalid
field wins) and writes normalised values back; only :func:`assembled` builds one from
values that passed those checks already. Metadata is deep-frozen. DTOs survive
``pickle``, ``copy.deepcopy`` and ``dataclasses.replace``: they reduce to their constructor
arguments, with frozen metadata thawed into plain JSON containers. Their ``repr`` is
body-free: bodies print as their length and metadata as its number of keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from enum import IntEnum, StrEnum
from typing import Any, TypeVar

from trueheart_core.domain import validation as v
from trueheart_core.domain.frozen import assembler
from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.errors import ValidationError

__all__ = [
    "ArtifactClass",
    "AuditRecord",
    "EntityType",
    "GovernanceAction",
    "GovernanceCommand",
    "GovernanceResult",
    "IntegrityProblem",
    "IntegrityReport",
    "MemoryDraft",
    "MemoryRecord",
    "MemoryStatus",
    "RawEventDraft",
    "RawEventReceipt",
    "RecallItem",
    "RecallQuery",
    "RetentionPolicy",
    "Scope",
    "SourceRef",
    "TrustLevel",
]


_D = TypeVar("_D")
_ASSEMBLERS: dict[type, Callable[..., Any]] = {}


def assembled(cls: type[_D], *values: object) -> _D:
    """An instance of the frozen DTO ``cls`` holding ``values`` in field order, built
    without running its checks. Only for values that passed those very checks already,
    as a stored memory's fields taken from its validated draft: checking them again
    would freeze and encode the metadata a second time."""
    assemble = _ASSEMBLERS.get(cls)
    if assemble is None:
        assemble = _ASSEMBLERS[cls] = assembler(cls)
    built: _D = assemble(*values)
    return built


class TrustLevel(IntEnum):
    """How far a source is trusted; ordered, so a memory's trust can be capped."""

    UNTRUSTED = 0
    OBSERVED = 1
    CONFIRMED = 2


class EntityType(StrEnum):
    """The governed entity kinds: raw events and memories, which ``govern`` acts on, and
    the subject of a scope, which ``erase_subject`` erases and its audit row names."""

    RAW_EVENT = "raw_event"
    MEMORY = "memory"
    SUBJECT = "subject"


class GovernanceAction(StrEnum):
    """What a :class:`GovernanceCommand` asks for."""

    SEAL = "seal"
    RESTORE = "restore"
    FORGET = "forget"
    DELETE = "delete"


class ArtifactClass(StrEnum):
    """A class of stored artifacts that erasure removes (see ``GovernanceResult.removed``
    and ``ErasureReceipt``)."""

    RAW_EVENT = "raw_event"
    RAW_BODY = "raw_body"
    MEMORY = "memory"
    CLAIM = "claim"
    LINEAGE_EDGE = "lineage_edge"
    EXTRACTION_RECORD = "extraction_record"
    SEARCH_ENTRY = "search_entry"
    SEARCH_TERM = "search_term"
    VECTOR = "vector"


class MemoryStatus(StrEnum):
    """Lifecycle status of a stored memory; only ``ACTIVE`` memories are recalled."""

    ACTIVE = "active"
    SEALED = "sealed"


_set: Callable[[object, str, object], None] = object.__setattr__
"""Set a field of a frozen DTO (during ``__post_init__``)."""


class _Reducible:
    """Pickle/deepcopy support: rebuild from constructor arguments, re-validating them."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        args = tuple(
            v.thaw(value) if f.name == "metadata" else value
            for f in fields(self)  # type: ignore[arg-type]
            for value in (getattr(self, f.name),)
        )
        return (type(self), args)


def _scope(value: object) -> Scope:
    if not isinstance(value, Scope):
        raise ValidationError("scope", "must be a Scope")
    return value


@dataclass(frozen=True, slots=True)
class Scope(_Reducible):
    """The exact isolation key of every scoped operation: tenant, owner and subject."""

    tenant_id: str
    owner_id: str
    subject_id: str

    def __post_init__(self) -> None:
        _set(self, "tenant_id", v.text("tenant_id", self.tenant_id))
        _set(self, "owner_id", v.text("owner_id", self.owner_id))
        _set(self, "subject_id", v.text("subject_id", self.subject_id))


@dataclass(frozen=True, slots=True)
class RetentionPolicy(_Reducible):
    """How long a raw body is kept, and how long derived memories stay clear and recallable."""

    raw_ttl: timedelta
    clear_for: timedelta
    recall_for: timedelta

    def __post_init__(self) -> None:
        _set(self, "raw_ttl", v.positive_duration("raw_ttl", self.raw_ttl))
        _set(self, "clear_for", v.positive_duration("clear_for", self.clear_for))
        _set(self, "recall_for", v.positive_duration("recall_for", self.recall_for))
        if self.recall_for < self.clear_for:
            raise ValidationError("recall_for", "must be at least clear_for")


@dataclass(frozen=True, slots=True, repr=False)
class SourceRef(_Reducible):
    """Provenance of a raw event: where it came from, when, and how far it is trusted."""

    source_id: str
    source_type: str
    occurred_at: datetime
    trust: TrustLevel
    metadata: Mapping[str, Any] = field(default_factory=dict)

    __repr__ = body_free_repr()

    def __post_init__(self) -> None:
        _set(self, "source_id", v.text("source_id", self.source_id))
        _set(self, "source_type", v.text("source_type", self.source_type))
        _set(self, "occurred_at", v.utc("occurred_at", self.occurred_at))
        v.member("trust", self.trust, TrustLevel, "must be a TrustLevel")
        _set(self, "metadata", v.metadata(self.metadata))


@dataclass(frozen=True, slots=True, repr=False)
class RawEventDraft(_Reducible):
    """A source event to ingest: scope, provenance, body and retention."""

    event_id: str
    scope: Scope
    source: SourceRef
    content: str
    retention: RetentionPolicy
    metadata: Mapping[str, Any] = field(default_factory=dict)

    __repr__ = body_free_repr("content")

    def __post_init__(self) -> None:
        _set(self, "event_id", v.text("event_id", self.event_id))
        _scope(self.scope)
        if not isinstance(self.source, SourceRef):
            raise ValidationError("source", "must be a SourceRef")
        _set(self, "content", v.content("content", self.content))
        if not isinstance(self.retention, RetentionPolicy):
            raise ValidationError("retention", "must be a RetentionPolicy")
        _set(self, "metadata", v.metadata(self.metadata))


@dataclass(frozen=True, slots=True, repr=False)
class RawEventReceipt(_Reducible):
    """The body-free record of an ingested event."""

    event_id: str
    scope: Scope
    source: SourceRef
    content_hash: str
    ingested_at: datetime
    raw_expires_at: datetime
    clear_for: timedelta
    recall_for: timedelta
    content_available: bool
    metadata: Mapping[str, Any]

    __repr__ = body_free_repr()

    def __post_init__(self) -> None:
        _set(self, "event_id", v.text("event_id", self.event_id))
        _scope(self.scope)
        if not isinstance(self.source, SourceRef):
            raise ValidationError("source", "must be a SourceRef")
        _set(self, "content_hash", v.text("content_hash", self.content_hash))
        _set(self, "ingested_at", v.utc("ingested_at", self.ingested_at))
        _set(self, "raw_expires_at", v.utc("raw_expires_at", self.raw_expires_at))
        v.positive_duration("clear_for", self.clear_for)
        v.positive_duration("recall_for", self.recall_for)
        if self.recall_for < self.clear_for:
            raise ValidationError("recall_for", "must be at least clear_for")
        if not isinstance(self.content_available, bool):
            raise ValidationError("content_available", "must be a bool")
        _set(self, "metadata", v.metadata(self.metadata))


def _source_ids(value: object) -> tuple[str, ...]:
    # The base class's length: a subclass's own could say something else, or raise.
    if not isinstance(value, tuple) or not tuple.__len__(value):
        raise ValidationError("source_event_ids", "must be a non-empty tuple")
    ids = v.text_tuple("source_event_ids", value)
    if len(set(ids)) != len(ids):
        raise ValidationError("source_event_ids", "must not contain duplicates")
    return ids


@dataclass(frozen=True, slots=True, repr=False)
class MemoryDraft(_Reducible):
    """A host-derived memory with the IDs of the events it was derived from."""

    memory_id: str
    scope: Scope
    content: str
    source_event_ids: tuple[str, ...]
    kind: str
    trust: TrustLevel
    created_at: datetime
    metadata: Mapping[str, Any] = field(default_factory=dict)

    __repr__ = body_free_repr("content")

    def __post_init__(self) -> None:
        _set(self, "memory_id", v.text("memory_id", self.memory_id))
        _scope(self.scope)
        _set(self, "content", v.content("content", self.content))
        _set(self, "source_event_ids", _source_ids(self.source_event_ids))
        _set(self, "kind", v.text("kind", self.kind))
        v.member("trust", self.trust, TrustLevel, "must be a TrustLevel")
        _set(self, "created_at", v.utc("created_at", self.created_at))
        _set(self, "metadata", v.metadata(self.metadata))


@dataclass(frozen=True, slots=True, repr=False)
class MemoryRecord(_Reducible):
    """A stored memory with its lineage fingerprint, deadlines and status."""

    memory_id: str
    scope: Scope
    content: str
    source_event_ids: tuple[str, ...]
    dependency_fingerprint: str
    kind: str
    trust: TrustLevel
    created_at: datetime
    clear_until: datetime
    recall_until: datetime
    status: MemoryStatus
    metadata: Mapping[str, Any]

    __repr__ = body_free_repr("content")

    def __post_init__(self) -> None:
        _set(self, "memory_id", v.text("memory_id", self.memory_id))
        _scope(self.scope)
        _set(self, "content", v.content("content", self.content))
        _set(self, "source_event_ids", _source_ids(self.source_event_ids))
        _set(
            self,
            "dependency_fingerprint",
            v.text("dependency_fingerprint", self.dependency_fingerprint),
        )
        _set(self, "kind", v.text("kind", self.kind))
        v.member("trust", self.trust, TrustLevel, "must be a TrustLevel")
        _set(self, "created_at", v.utc("created_at", self.created_at))
        _set(self, "clear_until", v.utc("clear_until", self.clear_until))
        _set(self, "recall_until", v.utc("recall_until", self.recall_until))
        if self.recall_until < self.clear_until:
            raise ValidationError("recall_until", "must not precede clear_until")
        v.member("status", self.status, MemoryStatus, "must be a MemoryStatus")
        _set(self, "metadata", v.metadata(self.metadata))


@dataclass(frozen=True, slots=True)
class RecallQuery(_Reducible):
    """What to recall: exact scope, point in time, page size and optional kinds."""

    scope: Scope
    as_of: datetime
    limit: int = 20
    kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _scope(self.scope)
        _set(self, "as_of", v.utc("as_of", self.as_of))
        _set(self, "limit", v.limit(self.limit))
        _set(self, "kinds", v.text_tuple("kinds", self.kinds))


@dataclass(frozen=True, slots=True)
class RecallItem(_Reducible):
    """One recalled memory and its clarity at the query's ``as_of``."""

    memory: MemoryRecord
    clarity: float

    def __post_init__(self) -> None:
        if not isinstance(self.memory, MemoryRecord):
            raise ValidationError("memory", "must be a MemoryRecord")
        if not isinstance(self.clarity, float) or self.clarity != self.clarity:
            raise ValidationError("clarity", "must be a finite float")
        if self.clarity in (float("inf"), float("-inf")):
            raise ValidationError("clarity", "must be a finite float")


@dataclass(frozen=True, slots=True)
class GovernanceCommand(_Reducible):
    """Seal, restore, forget or delete one entity in an exact scope."""

    scope: Scope
    action: GovernanceAction
    entity_type: EntityType
    entity_id: str
    occurred_at: datetime
    reason: str

    def __post_init__(self) -> None:
        _scope(self.scope)
        v.member("action", self.action, GovernanceAction, "must be a GovernanceAction")
        v.member("entity_type", self.entity_type, EntityType, "must be an EntityType")
        if self.entity_type is EntityType.SUBJECT:
            raise ValidationError("entity_type", "must be raw_event or memory")
        _set(self, "entity_id", v.text("entity_id", self.entity_id))
        _set(self, "occurred_at", v.utc("occurred_at", self.occurred_at))
        _set(self, "reason", v.text("reason", self.reason))


@dataclass(frozen=True, slots=True)
class GovernanceResult(_Reducible):
    """The command as given, every ID it affected (sorted), and the classes of stored
    artifacts it removed, in :class:`ArtifactClass` order.

    Seal removes the memory's search entry (and the term rows no other searchable memory
    of the scope holds); restore removes nothing; forget and delete remove the memory,
    its lineage edges and, when present, its claim row and search entry; a raw-event
    delete also removes the receipt and, when present, the body and extraction record.
    """

    command: GovernanceCommand
    affected_ids: tuple[str, ...]
    removed: tuple[ArtifactClass, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.command, GovernanceCommand):
            raise ValidationError("command", "must be a GovernanceCommand")
        if not isinstance(self.affected_ids, tuple):
            raise ValidationError("affected_ids", "must be a tuple")
        _set(self, "affected_ids", v.text_tuple("affected_ids", self.affected_ids))
        if not isinstance(self.removed, tuple) or not all(
            isinstance(a, ArtifactClass) for a in self.removed
        ):
            raise ValidationError("removed", "must be a tuple of ArtifactClass")
        if len(set(self.removed)) != len(self.removed):
            raise ValidationError("removed", "must not contain duplicates")
        _set(self, "removed", tuple(a for a in ArtifactClass if a in self.removed))


@dataclass(frozen=True, slots=True, repr=False)
class AuditRecord(_Reducible):
    """A body-free lifecycle record. ``occurred_at`` is the time the caller claimed for
    the change, except for an ingest, whose record holds the service clock's ingest
    time."""

    audit_id: str
    scope: Scope
    action: str
    entity_type: EntityType
    entity_id: str
    occurred_at: datetime
    reason: str
    metadata: Mapping[str, Any]

    __repr__ = body_free_repr()

    def __post_init__(self) -> None:
        _set(self, "audit_id", v.text("audit_id", self.audit_id))
        _scope(self.scope)
        _set(self, "action", v.text("action", self.action))
        v.member("entity_type", self.entity_type, EntityType, "must be an EntityType")
        _set(self, "entity_id", v.text("entity_id", self.entity_id))
        _set(self, "occurred_at", v.utc("occurred_at", self.occurred_at))
        _set(self, "reason", v.text("reason", self.reason))
        _set(self, "metadata", v.metadata(self.metadata))


@dataclass(frozen=True, slots=True)
class IntegrityProblem(_Reducible):
    """One body-free finding of :meth:`TrueHeart.verify_integrity`.

    ``entity_type`` names the stored row kind (``raw_event``, ``raw_body``, ``memory``,
    ``lineage``, ``tombstone``, ``audit``, ``claim`` or ``extraction``), the derived index
    (``search_index``, ``claim_index``), or ``storage`` for the storage engine's own
    check, with an empty ID and no scope; ``entity_id`` is its ID
    (the audit ID for audit rows), ``scope`` the row's scope when it could be read, and
    ``code`` a fixed problem code such as ``digest_mismatch``.
    """

    entity_type: str
    entity_id: str
    scope: Scope | None
    code: str

    def __post_init__(self) -> None:
        _set(self, "entity_type", v.text("entity_type", self.entity_type))
        if not isinstance(self.entity_id, str):
            raise ValidationError("entity_id", "must be a string")
        if self.scope is not None:
            _scope(self.scope)
        _set(self, "code", v.text("code", self.code))


@dataclass(frozen=True, slots=True)
class IntegrityReport(_Reducible):
    """The outcome of a whole-store (or whole-scope) integrity check."""

    problems: tuple[IntegrityProblem, ...]
    rows_checked: int

    def __post_init__(self) -> None:
        if not isinstance(self.problems, tuple) or not all(
            isinstance(p, IntegrityProblem) for p in self.problems
        ):
            raise ValidationError("problems", "must be a tuple of IntegrityProblem")
        if isinstance(self.rows_checked, bool) or not isinstance(self.rows_checked, int):
            raise ValidationError("rows_checked", "must be an int")

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems
