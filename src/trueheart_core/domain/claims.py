"""Claims: structured, temporal facts derived from source events, and their pure rules.

A claim says that ``subject`` ``predicate`` ``value`` (``user:ada`` ``prefers_theme``
``dark``), valid from ``valid_from`` until ``valid_to`` (valid time), with a confidence
and an authority. It is stored as a governed memory whose content is its canonical text
(so it obeys every memory rule: exact scope, lineage, trust ceiling, deadlines,
idempotent replay, tombstones, audit) plus its structured fields.

Two times meet in a question about claims: the valid time ``as_of`` ("what holds at
this time") and the transaction time ``known_at`` ("as far as we knew then"). A claim is
*known* at ``known_at`` when it is active, was created at or before ``known_at`` and its
recall deadline had not passed. A known claim's status is, in this order:

1. ``SUPERSEDED`` when a superseding claim names it in ``supersedes``: one whose memory
   is active and was created at or before ``known_at`` (its own recall deadline does not
   matter, so it keeps the claim closed after it has itself stopped being known).
   Supersession closes a claim from the superseding claim's ``created_at`` on, whatever
   the valid time, and never deletes it or its evidence;
2. ``ENDED`` when ``valid_to <= as_of``;
3. ``NOT_YET_VALID`` when ``as_of < valid_from``;
4. ``CURRENT`` otherwise.

Two current claims with the same subject and predicate and different values are a
conflict. Conflicts are reported, by claim IDs, and never resolved by the library.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from trueheart_core.domain import validation as v
from trueheart_core.domain.extraction.model import ClaimProvenance, ExtractionDiagnostic
from trueheart_core.domain.model import (
    MemoryRecord,
    MemoryStatus,
    RawEventReceipt,
    Scope,
    TrustLevel,
    _Reducible,
)
from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.errors import ValidationError

__all__ = [
    "MAX_CLAIM_PAGE",
    "MAX_VALUE_CHARS",
    "ClaimConflict",
    "ClaimDraft",
    "ClaimQuery",
    "ClaimRecord",
    "ClaimSet",
    "ClaimStatus",
    "ClaimView",
    "ExtractionRecord",
    "ExtractionResult",
    "IngestResult",
    "claim_text",
    "conflicts",
    "status_at",
    "status_of",
    "supersedes_at",
]

MAX_VALUE_CHARS = v.MAX_CLAIM_VALUE_CHARS
MAX_CLAIM_PAGE = 1000
"""The largest ``ClaimQuery.limit``."""
CLAIM_KIND = "claim"
"""The kind of the memory that carries a claim."""
DEFAULT_AUTHORITY = "application"

_Time = TypeVar("_Time", datetime, int)
"""A time as the rules compare it: a UTC datetime, or integer microseconds as stored."""


_set: Callable[[object, str, object], None] = object.__setattr__
"""Set a field of a frozen DTO (during ``__post_init__``)."""


def validity(valid_from: object, valid_to: object) -> tuple[datetime | None, datetime | None]:
    """Valid-time bounds in UTC; ``valid_to`` must be later than ``valid_from``."""
    start = None if valid_from is None else v.utc("valid_from", valid_from)
    end = None if valid_to is None else v.utc("valid_to", valid_to)
    if start is not None and end is not None and end <= start:
        raise ValidationError("valid_to", "must be later than valid_from")
    return start, end


def claim_text(subject: str, predicate: str, value: str) -> str:
    """The canonical text of a claim: its memory content, which search indexes."""
    return f"{subject} {predicate} {value}"


class ClaimStatus(StrEnum):
    """Where a known claim stands at a valid time (see the module docstring)."""

    CURRENT = "current"
    SUPERSEDED = "superseded"
    NOT_YET_VALID = "not_yet_valid"
    ENDED = "ended"


@dataclass(frozen=True, slots=True, repr=False)
class ClaimDraft(_Reducible):
    """A host-derived claim, stored exactly once under ``claim_id`` (a memory ID)."""

    claim_id: str
    scope: Scope
    subject: str
    predicate: str
    value: str
    source_event_ids: tuple[str, ...]
    trust: TrustLevel
    created_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float = 1.0
    authority: str = DEFAULT_AUTHORITY
    supersedes: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    __repr__ = body_free_repr("subject", "predicate", "value")

    def __post_init__(self) -> None:
        _set(self, "claim_id", v.text("claim_id", self.claim_id))
        if not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        _set(self, "subject", v.text("subject", self.subject))
        _set(self, "predicate", v.text("predicate", self.predicate))
        _set(self, "value", v.claim_value(self.value))
        ids = self.source_event_ids
        if not isinstance(ids, tuple) or not tuple.__len__(ids):
            raise ValidationError("source_event_ids", "must be a non-empty tuple")
        _set(self, "source_event_ids", v.text_tuple("source_event_ids", self.source_event_ids))
        if len(set(self.source_event_ids)) != len(self.source_event_ids):
            raise ValidationError("source_event_ids", "must not repeat an ID")
        v.member("trust", self.trust, TrustLevel, "must be a TrustLevel")
        _set(self, "created_at", v.utc("created_at", self.created_at))
        start, end = validity(self.valid_from, self.valid_to)
        _set(self, "valid_from", start)
        _set(self, "valid_to", end)
        _set(self, "confidence", v.confidence(self.confidence))
        _set(self, "authority", v.text("authority", self.authority))
        if self.supersedes is not None:
            _set(self, "supersedes", v.text("supersedes", self.supersedes))
            if self.supersedes == self.claim_id:
                raise ValidationError("supersedes", "must name another claim")
        _set(self, "metadata", v.metadata(self.metadata))

    @property
    def content(self) -> str:
        """The canonical text stored as the claim's memory content."""
        return claim_text(self.subject, self.predicate, self.value)


@dataclass(frozen=True, slots=True, repr=False)
class ClaimRecord(_Reducible):
    """A stored claim: its structured fields and the governed memory that carries it
    (ID, scope, lineage, trust, deadlines, status, metadata)."""

    claim_id: str
    subject: str
    predicate: str
    value: str
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    authority: str
    supersedes: str | None
    memory: MemoryRecord

    __repr__ = body_free_repr("subject", "predicate", "value")

    def __post_init__(self) -> None:
        _set(self, "claim_id", v.text("claim_id", self.claim_id))
        _set(self, "subject", v.text("subject", self.subject))
        _set(self, "predicate", v.text("predicate", self.predicate))
        _set(self, "value", v.claim_value(self.value))
        start, end = validity(self.valid_from, self.valid_to)
        _set(self, "valid_from", start)
        _set(self, "valid_to", end)
        _set(self, "confidence", v.confidence(self.confidence))
        _set(self, "authority", v.text("authority", self.authority))
        if self.supersedes is not None:
            _set(self, "supersedes", v.text("supersedes", self.supersedes))
            if self.supersedes == self.claim_id:
                raise ValidationError("supersedes", "must name another claim")
        if not isinstance(self.memory, MemoryRecord) or self.memory.memory_id != self.claim_id:
            raise ValidationError("memory", "must be the claim's MemoryRecord")

    @property
    def scope(self) -> Scope:
        """The claim's exact scope."""
        return self.memory.scope

    @property
    def created_at(self) -> datetime:
        """When the claim was made: the transaction time of supersession."""
        return self.memory.created_at


@dataclass(frozen=True, slots=True)
class ClaimView(_Reducible):
    """A known claim with its status at the query's times, and the claims that supersede
    it (sorted IDs; see :func:`supersedes_at`: a superseder whose recall deadline has
    passed is listed, although it is no longer known)."""

    claim: ClaimRecord
    status: ClaimStatus
    superseded_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.claim, ClaimRecord):
            raise ValidationError("claim", "must be a ClaimRecord")
        v.member("status", self.status, ClaimStatus, "must be a ClaimStatus")
        _set(self, "superseded_by", v.text_tuple("superseded_by", self.superseded_by))


@dataclass(frozen=True, slots=True)
class ClaimConflict(_Reducible):
    """Current claims with the same subject and predicate and different values: their
    IDs, sorted. Body-free."""

    claim_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        _set(self, "claim_ids", v.text_tuple("claim_ids", self.claim_ids))
        if len(self.claim_ids) < 2:
            raise ValidationError("claim_ids", "must name at least two claims")


@dataclass(frozen=True, slots=True, repr=False)
class ClaimQuery(_Reducible):
    """Which claims of one exact scope to read, at valid time ``as_of`` and transaction
    time ``known_at`` (``None``: the same instant as ``as_of``), optionally for one
    subject and predicate and some statuses (empty: every status).

    ``limit`` (1 through 1000) asks for one page of at most that many claims, and
    ``cursor`` (which needs a ``limit``) for the page after the one whose
    ``ClaimSet.next_cursor`` it is; a cursor only works for the query that made it
    (same scope, times, subject, predicate and statuses; the limit may change). The
    default ``limit=None`` answers with every claim at once, which reads the whole scope
    (or subject) into memory: pass a limit for a scope that may hold many claims."""

    scope: Scope
    as_of: datetime
    known_at: datetime | None = None
    subject: str | None = None
    predicate: str | None = None
    statuses: tuple[ClaimStatus, ...] = ()
    limit: int | None = None
    cursor: str | None = None

    __repr__ = body_free_repr("subject", "predicate")

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        _set(self, "as_of", v.utc("as_of", self.as_of))
        known = self.as_of if self.known_at is None else v.utc("known_at", self.known_at)
        _set(self, "known_at", known)
        if self.subject is not None:
            _set(self, "subject", v.text("subject", self.subject))
        if self.predicate is not None:
            _set(self, "predicate", v.text("predicate", self.predicate))
        # Read once through the base class: a subclass's own methods are never asked.
        statuses = v.items(self.statuses) if isinstance(self.statuses, tuple) else None
        if statuses is None or not all(isinstance(s, ClaimStatus) for s in statuses):
            raise ValidationError("statuses", "must be a tuple of ClaimStatus")
        _set(self, "statuses", statuses)
        if self.limit is not None:
            _set(self, "limit", v.whole("limit", self.limit, 1, MAX_CLAIM_PAGE))
        if self.cursor is not None:
            if not isinstance(self.cursor, str):
                raise ValidationError("cursor", "must be a cursor returned by the same query")
            _set(self, "cursor", v.plain(self.cursor))
            if not self.cursor:
                raise ValidationError("cursor", "must be a cursor returned by the same query")
            if self.limit is None:
                raise ValidationError("cursor", "needs a limit")


@dataclass(frozen=True, slots=True)
class ClaimSet(_Reducible):
    """The answer to a :class:`ClaimQuery`: views in (subject, predicate, created_at,
    claim_id) order, and the conflicts among the current claims (in claim-ID order).

    Without a limit it holds every claim and every conflict, and ``next_cursor`` is
    ``None``. A page holds the next claims in that order, and the conflicts of each
    (subject, predicate) whose claims end on it, computed over all its claims: the
    claims and conflicts of all pages together are those of the unpaged answer.
    ``next_cursor`` is ``None`` on the last page."""

    as_of: datetime
    known_at: datetime
    claims: tuple[ClaimView, ...]
    conflicts: tuple[ClaimConflict, ...]
    next_cursor: str | None = None

    def __post_init__(self) -> None:
        _set(self, "as_of", v.utc("as_of", self.as_of))
        _set(self, "known_at", v.utc("known_at", self.known_at))
        if not isinstance(self.claims, tuple) or not all(
            isinstance(c, ClaimView) for c in self.claims
        ):
            raise ValidationError("claims", "must be a tuple of ClaimView")
        if not isinstance(self.conflicts, tuple) or not all(
            isinstance(c, ClaimConflict) for c in self.conflicts
        ):
            raise ValidationError("conflicts", "must be a tuple of ClaimConflict")
        if self.next_cursor is not None and not isinstance(self.next_cursor, str):
            raise ValidationError("next_cursor", "must be a string or None")


# --- pure rules -----------------------------------------------------------------------


def is_known(claim: ClaimRecord, known_at: datetime) -> bool:
    """Whether the claim counts at transaction time ``known_at``."""
    memory = claim.memory
    return (
        memory.status is MemoryStatus.ACTIVE and memory.created_at <= known_at < memory.recall_until
    )


def status_at(claim: ClaimRecord, superseded: bool, as_of: datetime) -> ClaimStatus:
    """The status of a known claim at valid time ``as_of``; ``superseded`` says whether
    a superseding claim counts at the query's ``known_at`` (see :func:`supersedes_at`)."""
    return status_of(claim.valid_from, claim.valid_to, superseded, as_of)


def status_of(
    valid_from: _Time | None, valid_to: _Time | None, superseded: bool, as_of: _Time
) -> ClaimStatus:
    """The status rule itself, over a claim's valid-time bounds (``None``: unbounded)
    as datetimes or as stored integer microseconds: superseded first, then ended when
    ``valid_to <= as_of``, then not yet valid when ``as_of < valid_from``, else current.
    Search evaluates it in SQL (``adapters.sql.expressions.claim_status``)."""
    if superseded:
        return ClaimStatus.SUPERSEDED
    if valid_to is not None and valid_to <= as_of:
        return ClaimStatus.ENDED
    if valid_from is not None and as_of < valid_from:
        return ClaimStatus.NOT_YET_VALID
    return ClaimStatus.CURRENT


def supersedes_at(status: MemoryStatus, created_at: _Time, known_at: _Time) -> bool:
    """Whether a superseding claim, whose memory has this status and ``created_at``,
    counts at transaction time ``known_at``: once it is known (active, created at or
    before ``known_at``); its own recall deadline does not reopen the claim it closed.
    Search evaluates it in SQL (``adapters.sql.expressions.supersedes_at``)."""
    return status is MemoryStatus.ACTIVE and created_at <= known_at


def conflicts(views: Iterable[ClaimView]) -> tuple[ClaimConflict, ...]:
    """The conflicts among the current claims of ``views``, in claim-ID order."""
    groups: defaultdict[tuple[str, str], list[ClaimRecord]] = defaultdict(list)
    for view in views:
        if view.status is ClaimStatus.CURRENT:
            groups[(view.claim.subject, view.claim.predicate)].append(view.claim)
    found = [
        ClaimConflict(tuple(sorted(c.claim_id for c in claims)))
        for claims in groups.values()
        if len({c.value for c in claims}) > 1
    ]
    return tuple(sorted(found, key=lambda c: c.claim_ids))


def view_order(view: ClaimView) -> tuple[str, str, datetime, str]:
    """The order of views in a :class:`ClaimSet`."""
    claim = view.claim
    return (claim.subject, claim.predicate, claim.created_at, claim.claim_id)


@dataclass(frozen=True, slots=True)
class ExtractionRecord(_Reducible):
    """What an extraction stored for one event, body-free: the extractor's identity,
    the IDs of the claims it produced with the span each was read from (same order), and
    its diagnostics."""

    event_id: str
    scope: Scope
    extractor: str
    claim_ids: tuple[str, ...]
    spans: tuple[ClaimProvenance, ...]
    diagnostics: tuple[ExtractionDiagnostic, ...]

    def __post_init__(self) -> None:
        _set(self, "event_id", v.text("event_id", self.event_id))
        if not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        _set(self, "extractor", v.text("extractor", self.extractor))
        _set(self, "claim_ids", v.text_tuple("claim_ids", self.claim_ids))
        if not isinstance(self.spans, tuple) or not all(
            isinstance(s, ClaimProvenance) for s in self.spans
        ):
            raise ValidationError("spans", "must be a tuple of ClaimProvenance")
        if len(self.spans) != len(self.claim_ids):
            raise ValidationError("spans", "must hold one span per claim")
        if not isinstance(self.diagnostics, tuple) or not all(
            isinstance(d, ExtractionDiagnostic) for d in self.diagnostics
        ):
            raise ValidationError("diagnostics", "must be a tuple of ExtractionDiagnostic")


@dataclass(frozen=True, slots=True)
class ExtractionResult(_Reducible):
    """What :meth:`TrueHeart.ingest_extracted` stored: the event's receipt, its claims,
    the extraction record, and the memories passed along with it (if any)."""

    receipt: RawEventReceipt
    claims: tuple[ClaimRecord, ...]
    extraction: ExtractionRecord
    memories: tuple[MemoryRecord, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.receipt, RawEventReceipt):
            raise ValidationError("receipt", "must be a RawEventReceipt")
        if not isinstance(self.claims, tuple) or not all(
            isinstance(c, ClaimRecord) for c in self.claims
        ):
            raise ValidationError("claims", "must be a tuple of ClaimRecord")
        if not isinstance(self.extraction, ExtractionRecord):
            raise ValidationError("extraction", "must be an ExtractionRecord")
        _records("memories", self.memories, MemoryRecord)


@dataclass(frozen=True, slots=True)
class IngestResult(_Reducible):
    """What :meth:`TrueHeart.ingest_derived` stored in one transaction: the event's
    receipt, then its memories and claims in the order given."""

    receipt: RawEventReceipt
    memories: tuple[MemoryRecord, ...]
    claims: tuple[ClaimRecord, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.receipt, RawEventReceipt):
            raise ValidationError("receipt", "must be a RawEventReceipt")
        _records("memories", self.memories, MemoryRecord)
        _records("claims", self.claims, ClaimRecord)


def _records(field: str, value: object, kind: type) -> None:
    if not isinstance(value, tuple) or not all(isinstance(x, kind) for x in value):
        raise ValidationError(field, f"must be a tuple of {kind.__name__}")
