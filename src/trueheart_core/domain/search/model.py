"""Frozen DTOs of search, capsules and paged listing (domain level).

Like the 0.1 DTOs they validate every field in declaration order in ``__post_init__``
(the first invalid field wins), normalise times to UTC and survive ``pickle``,
``copy.deepcopy`` and ``dataclasses.replace``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from trueheart_core.domain import validation as v
from trueheart_core.domain.claims import ClaimStatus, ClaimView
from trueheart_core.domain.model import MemoryRecord, MemoryStatus, Scope, TrustLevel, _Reducible
from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.errors import ValidationError

__all__ = [
    "MAX_BUDGET_TOKENS",
    "MAX_QUERY_CHARS",
    "CapsuleDecision",
    "CapsuleItem",
    "CapsuleTraceEntry",
    "MemoryCapsule",
    "MemoryPage",
    "RankSignal",
    "SearchQuery",
    "SemanticTrace",
    "SignalSource",
    "TimeOrder",
    "TimeTrace",
    "query_text",
]

MAX_QUERY_CHARS = 4096
MAX_BUDGET_TOKENS = 1_048_576


_set: Callable[[object, str, object], None] = object.__setattr__
"""Set a field of a frozen DTO (during ``__post_init__``)."""


def _count(field: str, value: object, low: int, high: int) -> int:
    return v.whole(field, value, low, high)


def query_text(field: str, value: object) -> str:
    """A search query's text: non-blank, at most :data:`MAX_QUERY_CHARS` characters,
    valid UTF-8; a refusal names ``field``."""
    if not isinstance(value, str):
        raise ValidationError(field, "must be a non-blank string")
    value = v.plain(value)
    if not value.strip():
        raise ValidationError(field, "must be a non-blank string")
    if len(value) > MAX_QUERY_CHARS:
        raise ValidationError(field, f"must be at most {MAX_QUERY_CHARS} characters")
    if not value.isascii() and v.utf8_size(value) is None:
        raise ValidationError(field, "must be valid UTF-8")
    return value


def _finite(field: str, value: object) -> float:
    if not isinstance(value, float):
        raise ValidationError(field, "must be a finite float")
    number = float.__float__(value)  # a plain float, whatever a subclass says
    if not math.isfinite(number):
        raise ValidationError(field, "must be a finite float")
    return number


@dataclass(frozen=True, slots=True, repr=False)
class SearchQuery(_Reducible):
    """A relevance search of one exact scope at ``as_of``, packed into a token budget.

    ``text`` is non-blank, at most 4,096 characters of valid UTF-8. ``budget_tokens`` is
    1 through 1,048,576, ``limit`` 1 through 100. ``kinds`` (empty: every kind) and
    ``min_trust`` (``None``: every trust level) filter the candidates. A claim is a
    candidate only when its status at ``as_of`` is in ``claim_statuses`` (by default
    current and not yet valid: superseded and ended claims are left out unless asked for).
    ``semantic`` (default ``True``) lets a service configured with an embedder fuse its
    semantic ranking in; ``False`` asks for the lexical ranking alone. ``time_aware``
    (default ``True``) lets the search read time expressions in ``text`` ("last week",
    "most recently", "昨天"; see ``docs/time-expressions.md``) as a period of
    ``created_at`` and an order; ``False`` searches the text as words only.
    """

    scope: Scope
    text: str
    as_of: datetime
    budget_tokens: int = 512
    limit: int = 20
    kinds: tuple[str, ...] = ()
    min_trust: TrustLevel | None = None
    claim_statuses: tuple[ClaimStatus, ...] = (ClaimStatus.CURRENT, ClaimStatus.NOT_YET_VALID)
    semantic: bool = True
    time_aware: bool = True

    __repr__ = body_free_repr("text")

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        _set(self, "text", query_text("text", self.text))
        _set(self, "as_of", v.utc("as_of", self.as_of))
        _set(
            self, "budget_tokens", _count("budget_tokens", self.budget_tokens, 1, MAX_BUDGET_TOKENS)
        )
        _set(self, "limit", v.limit(self.limit))
        _set(self, "kinds", v.text_tuple("kinds", self.kinds))
        if self.min_trust is not None:
            v.member("min_trust", self.min_trust, TrustLevel, "must be a TrustLevel or None")
        # Read once through the base class: a subclass's own methods are never asked.
        statuses = self.claim_statuses
        statuses = v.items(statuses) if isinstance(statuses, tuple) else None
        if statuses is None or not all(isinstance(s, ClaimStatus) for s in statuses):
            raise ValidationError("claim_statuses", "must be a tuple of ClaimStatus")
        _set(self, "claim_statuses", statuses)
        if not isinstance(self.semantic, bool):
            raise ValidationError("semantic", "must be a bool")
        if not isinstance(self.time_aware, bool):
            raise ValidationError("time_aware", "must be a bool")


class CapsuleDecision(StrEnum):
    """Why a considered candidate is in the capsule or not."""

    INCLUDED = "included"
    """It fit the remaining budget while fewer than ``limit`` items were included."""
    BUDGET = "budget"
    """Its token cost exceeded the budget that remained when its turn came."""
    LIMIT = "limit"
    """``limit`` items were already included."""


class SignalSource(StrEnum):
    """A ranking fused into a hybrid search."""

    LEXICAL = "lexical"
    """BM25 over the query's terms."""
    SEMANTIC = "semantic"
    """Cosine similarity of the embedder's vectors."""
    RERANK = "rerank"
    """The host's reranker."""


@dataclass(frozen=True, slots=True)
class RankSignal(_Reducible):
    """One ranking's say about a candidate of a hybrid search: the candidate's ``rank``
    in that ranking (1 is best), its raw ``score`` there (BM25, cosine or the reranker's
    score) and the ``contribution`` it adds to the fused score (see
    ``trueheart_core.domain.semantic.fusion``)."""

    source: SignalSource
    rank: int
    score: float
    contribution: float

    def __post_init__(self) -> None:
        v.member("source", self.source, SignalSource, "must be a SignalSource")
        _count("rank", self.rank, 1, 2**31)
        _finite("score", self.score)
        _finite("contribution", self.contribution)


@dataclass(frozen=True, slots=True)
class CapsuleItem(_Reducible):
    """One whole memory in a capsule, with its rank, score, clarity and token cost; for a
    claim, also its fields, validity and status at the query's ``as_of``."""

    memory: MemoryRecord
    rank: int
    score: float
    clarity: float
    tokens: int
    claim: ClaimView | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.memory, MemoryRecord):
            raise ValidationError("memory", "must be a MemoryRecord")
        if self.claim is not None and (
            not isinstance(self.claim, ClaimView)
            or self.claim.claim.claim_id != self.memory.memory_id
        ):
            raise ValidationError("claim", "must be the memory's ClaimView or None")
        _count("rank", self.rank, 1, 2**31)
        _finite("score", self.score)
        _finite("clarity", self.clarity)
        _count("tokens", self.tokens, 0, 2**63 - 1)

    @property
    def source_event_ids(self) -> tuple[str, ...]:
        """The IDs of the source events the memory was derived from (sorted)."""
        return self.memory.source_event_ids


@dataclass(frozen=True, slots=True)
class CapsuleTraceEntry(_Reducible):
    """A body-free account of one considered candidate: its ``rank`` (1 is best), score,
    clarity, token cost, the budget left when its turn came, and the decision. In a
    hybrid search ``score`` is the fused score and ``signals`` says what each ranking
    contributed to it (empty in a lexical search, where ``score`` is the BM25 score)."""

    memory_id: str
    rank: int
    score: float
    clarity: float
    tokens: int
    remaining_tokens: int
    decision: CapsuleDecision
    signals: tuple[RankSignal, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "memory_id", v.text("memory_id", self.memory_id))
        _count("rank", self.rank, 1, 2**31)
        _finite("score", self.score)
        _finite("clarity", self.clarity)
        _count("tokens", self.tokens, 0, 2**63 - 1)
        _count("remaining_tokens", self.remaining_tokens, 0, MAX_BUDGET_TOKENS)
        v.member("decision", self.decision, CapsuleDecision, "must be a CapsuleDecision")
        if not isinstance(self.signals, tuple) or not all(
            isinstance(signal, RankSignal) for signal in self.signals
        ):
            raise ValidationError("signals", "must be a tuple of RankSignal")


@dataclass(frozen=True, slots=True)
class SemanticTrace(_Reducible):
    """The body-free account of the semantic side of a hybrid search.

    ``embedder`` names the vector space. The scan considered ``scanned`` stored vectors
    of eligible memories: all of them when ``scan_cap`` is ``None``, else the newest
    ``scan_cap``; ``capped`` is true when more were eligible than ``scan_cap`` allows, so
    that older memories were not considered (the diagnostic ``"semantic_scan_capped"``
    says so too). ``matched`` counts the semantic candidates: the best ``2 * limit``
    considered memories by cosine similarity among those whose similarity is at least
    ``minimum_score`` (fewer when fewer reach it). ``reranker`` and
    ``reranker_weight`` name the reranker when one took part, and ``reranked`` how many
    candidates it was shown. ``fusion`` names the fusion rule.
    """

    embedder: str
    scan_cap: int | None
    scanned: int
    capped: bool
    matched: int
    minimum_score: float
    fusion: str
    reranker: str | None = None
    reranker_weight: float | None = None
    reranked: int = 0
    diagnostics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "embedder", v.text("embedder", self.embedder))
        if self.scan_cap is not None:
            _count("scan_cap", self.scan_cap, 1, 2**31)
        _count("scanned", self.scanned, 0, 2**63 - 1 if self.scan_cap is None else self.scan_cap)
        if not isinstance(self.capped, bool):
            raise ValidationError("capped", "must be a bool")
        _count("matched", self.matched, 0, self.scanned)
        _finite("minimum_score", self.minimum_score)
        _set(self, "fusion", v.text("fusion", self.fusion))
        if self.reranker is not None:
            _set(self, "reranker", v.text("reranker", self.reranker))
            _finite("reranker_weight", self.reranker_weight)
        _count("reranked", self.reranked, 0, 2**31)
        if not isinstance(self.diagnostics, tuple) or not all(
            isinstance(d, str) for d in self.diagnostics
        ):
            raise ValidationError("diagnostics", "must be a tuple of str")


class TimeOrder(StrEnum):
    """The order a query's time expression asks for."""

    NEWEST = "newest"
    """The newest relevant memories first ("most recently", "latest", "最近")."""
    OLDEST = "oldest"
    """The oldest relevant memories first ("first time", "earliest", "第一次")."""


@dataclass(frozen=True, slots=True)
class TimeTrace(_Reducible):
    """How a search read time in its query.

    ``expression`` is the query's time expression exactly as written (its pieces joined
    by a space). ``start`` (inclusive) and ``end`` (exclusive) bound the period it names,
    ``None`` where it is open; ``order`` is the order it asks for, or ``None``.
    ``filtered`` is true when the candidates were limited to the period: memories
    created in it, claims valid at some time in it, memories that name it. It is false
    when there is no period, or when no candidate was in it and the search fell back to
    every time (the diagnostic ``"time_period_empty"`` says so). A question about the
    period alone ("what did I do yesterday?") is answered with the memories about it in
    time order, scored 0.0, and never falls back: the diagnostic ``"time_only"`` says
    so, with ``"time_period_empty"`` when the answer is empty.
    """

    expression: str
    start: datetime | None
    end: datetime | None
    order: TimeOrder | None
    filtered: bool
    diagnostics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.expression, str) or not self.expression.strip():
            raise ValidationError("expression", "must be a non-blank string")
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None:
                _set(self, name, v.utc(name, value))
        if self.order is not None:
            v.member("order", self.order, TimeOrder, "must be a TimeOrder or None")
        if not isinstance(self.filtered, bool):
            raise ValidationError("filtered", "must be a bool")
        if not isinstance(self.diagnostics, tuple) or not all(
            isinstance(d, str) for d in self.diagnostics
        ):
            raise ValidationError("diagnostics", "must be a tuple of str")


@dataclass(frozen=True, slots=True)
class MemoryCapsule(_Reducible):
    """The answer to a search: whole memories, best first, within a hard token budget.

    ``used_tokens`` is the sum of the items' costs under the ``estimator`` named here
    and never exceeds ``budget_tokens``; there are at most ``limit`` items. ``matched``
    counts the eligible memories that share at least one term with the query (in a
    hybrid search: or whose vector matched, see :class:`SemanticTrace`); ``trace``
    explains each of the best ``considered`` of them (see :attr:`omitted_by_score` for
    the rest). ``semantic`` is ``None`` for a lexical search. ``time`` says how the
    query's time expression was read, or is ``None`` when it has none (or the query
    was not ``time_aware``).
    """

    scope: Scope
    as_of: datetime
    items: tuple[CapsuleItem, ...]
    budget_tokens: int
    used_tokens: int
    limit: int
    estimator: str
    matched: int
    trace: tuple[CapsuleTraceEntry, ...]
    semantic: SemanticTrace | None = None
    time: TimeTrace | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        _set(self, "as_of", v.utc("as_of", self.as_of))
        if not isinstance(self.items, tuple) or not all(
            isinstance(item, CapsuleItem) for item in self.items
        ):
            raise ValidationError("items", "must be a tuple of CapsuleItem")
        _count("budget_tokens", self.budget_tokens, 1, MAX_BUDGET_TOKENS)
        _count("used_tokens", self.used_tokens, 0, self.budget_tokens)
        if sum(item.tokens for item in self.items) != self.used_tokens:
            raise ValidationError("used_tokens", "must equal the items' token costs")
        v.limit(self.limit)
        if len(self.items) > self.limit:
            raise ValidationError("items", "must not exceed limit")
        _set(self, "estimator", v.text("estimator", self.estimator))
        if isinstance(self.matched, bool) or not isinstance(self.matched, int):
            raise ValidationError("matched", "must be a non-negative int")
        if not isinstance(self.trace, tuple) or not all(
            isinstance(entry, CapsuleTraceEntry) for entry in self.trace
        ):
            raise ValidationError("trace", "must be a tuple of CapsuleTraceEntry")
        if not len(self.trace) <= self.matched:
            raise ValidationError("matched", "must count at least the traced candidates")
        if self.semantic is not None and not isinstance(self.semantic, SemanticTrace):
            raise ValidationError("semantic", "must be a SemanticTrace or None")
        if self.time is not None and not isinstance(self.time, TimeTrace):
            raise ValidationError("time", "must be a TimeTrace or None")

    @property
    def omitted_by_score(self) -> int:
        """Matches ranked below the considered window, left out for their score."""
        return self.matched - len(self.trace)

    @property
    def considered(self) -> int:
        """How many of the best matches were considered (each has a trace entry)."""
        return len(self.trace)


@dataclass(frozen=True, slots=True)
class MemoryPage(_Reducible):
    """One page of a scope's memories in ``memory_id`` order; ``next_cursor`` is
    ``None`` on the last page."""

    items: tuple[MemoryRecord, ...]
    next_cursor: str | None

    def __post_init__(self) -> None:
        if not isinstance(self.items, tuple) or not all(
            isinstance(item, MemoryRecord) for item in self.items
        ):
            raise ValidationError("items", "must be a tuple of MemoryRecord")
        if self.next_cursor is not None and not isinstance(self.next_cursor, str):
            raise ValidationError("next_cursor", "must be a string or None")


def status_filter(value: object) -> tuple[MemoryStatus, ...]:
    """The statuses a listing selects: one status, or ``None`` for both."""
    if value is None:
        return (MemoryStatus.ACTIVE, MemoryStatus.SEALED)
    return (v.member("status", value, MemoryStatus, "must be a MemoryStatus or None"),)
