"""The semantic side of a hybrid search: the best ``window`` vectors of the scope by
cosine similarity, exactly as comparing every eligible vector exactly would find them.

A service-layer function over one reading unit of work. The query's vector is computed
by the service before the transaction opens.

Every eligible vector of the scope is considered (or its newest ``scan_cap``), but
only a few are compared exactly. The scan streams the vectors' sketches (see
:mod:`trueheart_core.domain.semantic.sketch`) a chunk at a time; each sketch gives an
estimate of the similarity and a bound its exact value provably keeps to. A vector
whose upper bound is below what ``window`` other vectors are known to reach at least,
or below the minimum score, cannot be a candidate and is dropped; the others are read
in full and compared exactly (the rule of
:func:`~trueheart_core.domain.semantic.vectors.similarities`), best bound first, until
no remaining bound can reach the window. What is kept in memory is one chunk, the
vectors still undecided (decided in batches whenever they grow past a bound) and the
window. With numpy installed and no cap, :mod:`.accelerated` estimates the similarities
instead, from a copy of the scope's vectors kept in memory, and the same exact
comparisons decide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from trueheart_core.domain import policy
from trueheart_core.domain.search.model import SearchQuery
from trueheart_core.domain.semantic import fusion
from trueheart_core.domain.semantic.sketch import QuerySketch, estimates, query_sketch
from trueheart_core.domain.semantic.vectors import query_form, similarities
from trueheart_core.ports import ScopeKey, UnitOfWork, VectorHit, VectorStore
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search import accelerated
from trueheart_core.service.search.lexical import Facts
from trueheart_core.service.semantic import Space, current_space_id, vectors_of

__all__ = ["CAPPED", "NOT_REGISTERED", "Filters", "Scan", "scan"]

CAPPED = "semantic_scan_capped"

NOT_REGISTERED = "semantic_space_not_registered"

_INDEX_CORRUPT = "invalid semantic index"

CHUNK = 4096
"""Sketches read and estimated at a time."""

_BATCH = 256  # vectors read in full and compared exactly at a time
_UNDECIDED = 4096  # undecided vectors held before they are decided
_SKETCH_SHARE = 32  # estimate a chunk when it has 1 vector per 32 query columns


@dataclass(frozen=True, slots=True)
class Filters:
    """What makes a vector eligible, as the vector role filters it (microseconds)."""

    as_of: int
    kinds: tuple[str, ...]
    min_trust: int | None
    claim_statuses: tuple[str, ...]
    created_from: int | None = None
    created_until: int | None = None


@dataclass(frozen=True, slots=True)
class Scan:
    """What the scan found: the best ``window`` candidates best first (cosine
    similarity at least the minimum, the usual tie-breaks), what the index said of each,
    how many eligible vectors were considered, whether the cap stopped the scan, how many
    were compared exactly, and body-free diagnostics."""

    candidates: list[fusion.Scored]
    facts: dict[str, Facts]
    scanned: int
    capped: bool
    diagnostics: list[str]
    compared: int = 0


def scan(
    uow: UnitOfWork,
    query: SearchQuery,
    space: Space,
    scan_cap: int | None,
    minimum_score: float,
    vector: Sequence[float],
    window: int,
    created_from: int | None = None,
    created_until: int | None = None,
) -> Scan:
    """The best ``window`` of the scope's eligible vectors of ``space`` (all of them, or
    the newest ``scan_cap``) whose cosine similarity with ``vector`` is at least
    ``minimum_score``, optionally only those in the period from ``created_from`` to
    ``created_until`` (microseconds; a claim by its validity, any other memory by its
    ``created_at``)."""
    key = scope_key(query.scope)
    store = vectors_of(uow)
    space_id = current_space_id(store, space)
    if space_id is None:
        return Scan([], {}, 0, False, [NOT_REGISTERED])
    if not any(vector):
        # An all-zero query is similar to nothing: its cosine with every vector is 0,
        # which a minimum of 0 or below would otherwise let through.
        return Scan([], {}, 0, False, [])
    filters = Filters(
        records.to_us(query.as_of),
        tuple(query.kinds),
        None if query.min_trust is None else int(query.min_trust),
        tuple(status.value for status in query.claim_statuses),
        created_from,
        created_until,
    )
    form = query_form(vector)
    chosen = Selection(store, key, filters.as_of, form, window, minimum_score)
    if scan_cap is None:
        # With numpy, the same selection from estimates of a copy kept in memory.
        scanned = accelerated.select(
            store, uow.scratch(), key, space_id, space.dimensions, filters, chosen
        )
        if scanned is not None:
            return chosen.result(scanned, False, [])
    scanned, capped = _stream(store, key, space_id, space.dimensions, filters, scan_cap, chosen)
    return chosen.result(scanned, capped, [CAPPED] if capped else [])


def _stream(
    store: VectorStore,
    key: ScopeKey,
    space_id: int,
    dimensions: int,
    filters: Filters,
    scan_cap: int | None,
    chosen: Selection,
) -> tuple[int, bool]:
    """Estimate every eligible vector (the newest ``scan_cap``) from its sketch, chunk by
    chunk, and offer the estimates; returns how many were considered and whether the
    cap stopped the scan."""
    sketch = query_sketch(chosen.values)
    scanned = 0
    capped = False
    for hits in store.scan(
        key,
        space_id,
        filters.as_of,
        filters.kinds,
        filters.min_trust,
        filters.claim_statuses,
        None if scan_cap is None else scan_cap + 1,
        CHUNK,
        filters.created_from,
        filters.created_until,
    ):
        kept = hits
        if scan_cap is not None and scanned + len(hits) > scan_cap:
            kept = hits[: scan_cap - scanned]
            capped = True
        scanned += len(kept)
        _offer_chunk(chosen, sketch, dimensions, kept)
        if capped:
            break
    return scanned, capped


def _offer_chunk(
    chosen: Selection, sketch: QuerySketch, dimensions: int, hits: Sequence[VectorHit]
) -> None:
    """Estimate the sketched vectors of one chunk; the others can only be compared."""
    if not hits:
        return
    handles, stored, scales, errors = (list(column) for column in zip(*hits, strict=True))
    sketches = _sketches(stored, scales, errors, dimensions)
    if sketches is None:
        # Vectors stored before sketches existed, or damaged sketches: compared exactly.
        known = [
            i
            for i in range(len(hits))
            if _sketches(stored[i : i + 1], scales[i : i + 1], errors[i : i + 1], dimensions)
        ]
        chosen.offer_unknown(sorted(set(handles) - {handles[i] for i in known}))
        handles, stored, scales, errors = (
            [column[i] for i in known] for column in (handles, stored, scales, errors)
        )
        sketches = _sketches(stored, scales, errors, dimensions) or []
    if len(handles) * _SKETCH_SHARE < len(sketch.columns):
        # Too few to pay for a pass over the query's columns: compare them directly.
        chosen.offer_unknown(handles)
    elif handles:
        estimate, bound = estimates(
            sketch, b"".join(sketches), cast(list[float], scales), cast(list[float], errors)
        )
        chosen.offer(
            handles,
            list(map(float.__sub__, estimate, bound)),
            list(map(float.__add__, estimate, bound)),
        )


def _sketches(
    stored: list[object], scales: list[object], errors: list[object], dimensions: int
) -> list[bytes] | None:
    """The sketches, when every one is ``dimensions`` bytes with a finite, non-negative
    scale and residual bound (checked a column at a time); else ``None``."""
    if not stored:
        return []
    if {bytes} != set(map(type, stored)) or {float} != set(map(type, scales)) | set(
        map(type, errors)
    ):
        return None
    sketches = cast(list[bytes], stored)
    numbers = cast(list[float], scales + errors)
    if set(map(len, sketches)) != {dimensions} or not all(map(math.isfinite, numbers)):
        return None
    return sketches if min(numbers) >= 0.0 else None


class Selection:
    """The best ``window`` vectors with exact similarity at least ``minimum``, found from
    bounds offered for every eligible vector: ``lower <= exact <= upper``.

    Three thresholds rule a vector out when its upper bound is below one of them: the
    minimum; the ``window``-th largest lower bound offered (``window`` vectors reach at
    least that); and the ``window``-th exact similarity found. A vector that meets all
    three is kept undecided until it is compared exactly. Ties at a threshold are kept,
    so the tie-breaks see every vector that could be tied."""

    def __init__(
        self,
        store: VectorStore,
        key: ScopeKey,
        as_of: int,
        form: tuple[list[float], list[tuple[int, float]] | None],
        window: int,
        minimum: float,
    ) -> None:
        self.store = store
        self.key = key
        self.as_of = as_of
        self.form = form
        self.values = form[0]
        self.window = window
        self.minimum = minimum
        self.floor = -math.inf
        self.compared = 0
        self._lowest: list[float] = []  # the best `window` lower bounds, ascending
        self._undecided: list[tuple[float, int]] = []  # (upper bound, handle)
        self._best: list[fusion.Scored] = []  # exact, ranked, at most `window`
        self._facts: dict[str, Facts] = {}

    def threshold(self) -> float:
        """The value an upper bound must reach to keep its vector in the running."""
        best = self._best
        edge = best[-1].score if self.window and len(best) >= self.window else -math.inf
        return max(self.minimum, self.floor, edge)

    def raise_floor(self, value: float) -> None:
        """``window`` eligible vectors are known to reach at least ``value``."""
        self.floor = max(self.floor, value)

    def offer(
        self, handles: Sequence[int], lowers: Sequence[float], uppers: Sequence[float]
    ) -> None:
        """Bounds of vectors not offered before."""
        window = self.window
        if not window:
            return
        if lowers:
            lowest = sorted([*self._lowest, *sorted(lowers)[-window:]])[-window:]
            self._lowest = lowest
            if len(lowest) >= window:
                self.raise_floor(lowest[0])
        self.offer_bounds(handles, uppers)

    def offer_bounds(self, handles: Sequence[int], uppers: Sequence[float]) -> None:
        """Upper bounds of vectors not offered before, whose lower bounds the caller
        accounted for (:meth:`raise_floor`)."""
        if not self.window:
            return
        line = self.threshold()
        self._undecided.extend(
            (upper, handle) for upper, handle in zip(uppers, handles, strict=True) if upper >= line
        )
        self._trim()

    def offer_unknown(self, handles: Sequence[int]) -> None:
        """Vectors that can only be compared exactly."""
        if not self.window:
            return
        self._undecided.extend((math.inf, handle) for handle in handles)
        self._trim()

    def _trim(self) -> None:
        if len(self._undecided) > _UNDECIDED:
            line = self.threshold()
            self._undecided = [item for item in self._undecided if item[0] >= line]
            if len(self._undecided) > _UNDECIDED:
                self.decide()

    def decide(self) -> None:
        """Compare the undecided vectors exactly, best bound first, until the rest
        cannot reach the window."""
        undecided = sorted(self._undecided, reverse=True)
        self._undecided = []
        start = 0
        while start < len(undecided):
            line = self.threshold()
            if undecided[start][0] < line:
                break
            end = start
            stop = min(len(undecided), start + _BATCH)
            while end < stop and undecided[end][0] >= line:
                end += 1
            self._compare([handle for _, handle in undecided[start:end]])
            start = end

    def _compare(self, handles: Sequence[int]) -> None:
        rows = self.store.facts(self.key, handles)
        if len(rows) != len(handles) or {row[0] for row in rows} != set(handles):
            loading.corrupt(_INDEX_CORRUPT)
        self.compared += len(rows)
        scores = similarities(self.form, [row[5] for row in rows])
        if any(map(math.isnan, scores)):
            loading.corrupt(_INDEX_CORRUPT)
        found = []
        facts = self._facts
        for (_, memory_id, created_at, clear_until, recall_until, _), score in zip(
            rows, scores, strict=True
        ):
            times = (created_at, clear_until, recall_until)
            if not isinstance(memory_id, str) or not all(type(t) is int for t in times):
                loading.corrupt(_INDEX_CORRUPT)
            if score < self.minimum:
                continue
            clarity = policy.clarity_us(self.as_of, clear_until, recall_until)
            found.append(fusion.Scored(memory_id, score, clarity, created_at))
            facts[memory_id] = Facts(*times)
        if found:
            self._best = fusion.ranked([*self._best, *found])[: self.window]
            # Only the window's facts are kept.
            self._facts = {c.memory_id: facts[c.memory_id] for c in self._best}

    def result(self, scanned: int, capped: bool, diagnostics: list[str]) -> Scan:
        """Decide what is still undecided; the scan's answer."""
        self.decide()
        best = self._best
        facts = {c.memory_id: self._facts[c.memory_id] for c in best}
        return Scan(best, facts, scanned, capped, diagnostics, self.compared)
