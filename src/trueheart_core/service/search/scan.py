"""The semantic side of a hybrid search: an exact cosine scan of the scope's vectors.

A service-layer function over one reading unit of work. The query's vector is computed
by the service before the transaction opens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from trueheart_core.domain import policy
from trueheart_core.domain.search.model import SearchQuery
from trueheart_core.domain.semantic import fusion
from trueheart_core.domain.semantic.vectors import (
    component_similarities,
    query_form,
    similarities,
)
from trueheart_core.ports import UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search.lexical import Facts
from trueheart_core.service.semantic import Space, current_space_id, vectors_of

__all__ = ["CAPPED", "NOT_REGISTERED", "Scan", "scan"]

CAPPED = "semantic_scan_capped"

NOT_REGISTERED = "semantic_space_not_registered"

_INDEX_CORRUPT = "invalid semantic index"


@dataclass(frozen=True, slots=True)
class Scan:
    """What the scan found: the matching candidates best first (cosine similarity at
    least the minimum, the usual tie-breaks), what the index said of each, how many
    vectors were compared, whether the cap stopped the scan, and body-free
    diagnostics."""

    candidates: list[fusion.Scored]
    facts: dict[str, Facts]
    scanned: int
    capped: bool
    diagnostics: list[str]


def scan(
    uow: UnitOfWork,
    query: SearchQuery,
    space: Space,
    scan_cap: int,
    minimum_score: float,
    vector: Sequence[float],
) -> Scan:
    """Compare ``vector`` with the scope's eligible vectors of ``space``."""
    key = scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    store = vectors_of(uow)
    space_id = current_space_id(store, space)
    diagnostics: list[str] = []
    hits = []
    if space_id is None:
        diagnostics.append(NOT_REGISTERED)
    values, sparse = query_form(vector)
    if space_id is not None:
        hits = store.scan(
            key,
            space_id,
            as_of,
            query.kinds,
            None if query.min_trust is None else int(query.min_trust),
            [status.value for status in query.claim_statuses],
            scan_cap + 1,
            None if sparse is None else [i for i, _ in sparse],
            space.dimensions,
        )
    capped = len(hits) > scan_cap
    if capped:
        hits = hits[:scan_cap]
        diagnostics.append(CAPPED)
    blobs = [hit[1] for hit in hits]
    if sparse is None:
        scores = similarities((values, None), blobs)
    else:
        scores = component_similarities([w for _, w in sparse], blobs)
    if any(map(math.isnan, scores)):
        loading.corrupt(_INDEX_CORRUPT)
    facts: dict[str, Facts] = {}
    found: list[fusion.Scored] = []
    # Only the matches are described and checked: the rest of the scan was only compared.
    score_of = {hits[i][0]: score for i, score in enumerate(scores) if score >= minimum_score}
    for handle, memory_id, created_at, clear_until, recall_until in store.facts(
        key, list(score_of)
    ):
        times = (created_at, clear_until, recall_until)
        if not isinstance(memory_id, str) or not all(type(t) is int for t in times):
            loading.corrupt(_INDEX_CORRUPT)
        clarity = policy.clarity_us(as_of, clear_until, recall_until)
        found.append(fusion.Scored(memory_id, score_of.pop(handle), clarity, created_at))
        facts[memory_id] = Facts(*times)
    if score_of:
        loading.corrupt(_INDEX_CORRUPT)
    return Scan(fusion.ranked(found), facts, len(hits), capped, diagnostics)
