"""Hybrid search: the lexical ranking fused with the semantic scan and an optional
reranker (see :mod:`trueheart_core.domain.semantic.fusion` for the fusion rule).

Service-layer functions over one reading unit of work. The query's vector is computed
by the service before the transaction opens; the reranker, which needs the candidates'
contents, is called inside it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from trueheart_core.domain import policy
from trueheart_core.domain import validation as v
from trueheart_core.domain.search import ranking
from trueheart_core.domain.search.capsule import Ranked
from trueheart_core.domain.search.model import SearchQuery, SemanticTrace
from trueheart_core.domain.semantic import fusion
from trueheart_core.domain.semantic.embedders import Embedder
from trueheart_core.domain.semantic.rerank import RerankCandidate, Reranker, checked_scores
from trueheart_core.domain.semantic.vectors import (
    checked_vector,
)
from trueheart_core.errors import ProviderError, TrueHeartError, ValidationError
from trueheart_core.ports import MemoryRow, Period, UnitOfWork
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key
from trueheart_core.service.search.lexical import Facts, Ranking, lexical
from trueheart_core.service.search.scan import scan
from trueheart_core.service.semantic import Space, check_unchanged, vectors_of

__all__ = ["SemanticSearch", "embed_query", "ranked", "reranker_settings", "term_based"]

_INDEX_CORRUPT = "invalid semantic index"


@dataclass(frozen=True, slots=True)
class SemanticSearch:
    """The service's semantic settings."""

    embedder: Embedder
    space: Space
    scan_cap: int | None
    minimum_score: float
    reranker: Reranker | None
    rerank_limit: int
    reranker_weight: float
    term_based: bool = False
    reranker_identity: str | None = None
    """The reranker's identity when the service was built: a reranker whose identity
    has changed since is refused, and traces name the one the service was built with."""


def embed_query(settings: SemanticSearch, text: str) -> list[float]:
    """The checked, unit-length vector of a search text (outside any transaction).
    What the host's code raises (its properties, its call, its answer's ``len()`` and
    items) becomes ``ProviderError("the embedder failed")``; a ``TrueHeartError``
    passes unchanged."""
    space = settings.space
    check_unchanged(settings.embedder, space)
    try:
        answer = settings.embedder.embed_query(text)
        check_unchanged(settings.embedder, space)
        return checked_vector("embedder", answer, space.dimensions, space.normalized)
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the embedder failed") from error


def ranked(
    uow: UnitOfWork,
    query: SearchQuery,
    settings: SemanticSearch,
    vector: Sequence[float],
    text: str | None = None,
    period: Period | None = None,
) -> Ranking:
    """The fused window of a hybrid search (of the memories in ``period`` only, when
    given), with the rows of its candidates."""
    key = scope_key(query.scope)
    as_of = records.to_us(query.as_of)
    window = ranking.candidate_window(query.limit)
    lexical_ranking = lexical(uow, query, window, text, period)
    start, end = (None, None) if period is None else period
    found = scan(
        uow,
        query,
        settings.space,
        settings.scan_cap,
        settings.minimum_score,
        vector,
        window,
        created_from=start,
        created_until=end,
    )
    semantic, facts, diagnostics = found.candidates, found.facts, found.diagnostics
    lexical_window = lexical_ranking.candidates[:window]
    for c in lexical_window:
        facts[c.memory_id] = Facts(c.created_at, c.clear_until, c.recall_until)
    fused = fusion.fuse(
        [
            fusion.Scored(
                c.memory_id,
                c.score,
                policy.clarity_us(as_of, c.clear_until, c.recall_until),
                c.created_at,
            )
            for c in lexical_window
        ],
        semantic,
        window,
        lexical_ranking.ceiling,
        keep=window,
        term_based=settings.term_based,
    )
    rows = {r.memory_id: r for r in uow.memories.get_many(key, [f.memory_id for f in fused])}
    if len(rows) != len(fused) or not all(isinstance(r.content, str) for r in rows.values()):
        loading.corrupt(_INDEX_CORRUPT)
    reranked = 0
    if settings.reranker is not None and fused:
        _check_reranker(settings.reranker, settings.reranker_identity)
        shown = fused[: settings.rerank_limit]
        reranked = len(shown)
        fused = fusion.rerank(
            fused,
            _rerank(uow, query, settings.reranker, shown, rows),
            settings.reranker_weight,
            len(shown),
        )
    window_ranked = [
        Ranked(f.memory_id, rows[f.memory_id].content, f.score, f.clarity, f.signals) for f in fused
    ]
    matched = lexical_ranking.matched + len(semantic)
    if semantic and lexical_ranking.terms:
        matched -= vectors_of(uow).lexical_matches(
            key, lexical_ranking.terms, [s.memory_id for s in semantic]
        )
    trace = SemanticTrace(
        settings.space.identity,
        settings.scan_cap,
        found.scanned,
        found.capped,
        len(semantic),
        settings.minimum_score,
        fusion.TERM_BASED_FUSION if settings.term_based else fusion.FUSION,
        settings.reranker_identity,
        None if settings.reranker is None else settings.reranker_weight,
        reranked,
        tuple(diagnostics),
    )
    return Ranking(window_ranked, rows, facts, matched, trace)


def _check_reranker(reranker: Reranker, snapshot: str | None) -> None:
    """Refuse a reranker whose identity is no longer the one the service was built
    with (its scores would be traced under a name they are not from)."""
    try:
        identity = reranker.identity
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the reranker failed") from error
    # Compared as plain text: a value that is not a str (whatever its own comparison
    # says, or raises) is not the identity the service opened with.
    if not isinstance(identity, str) or v.plain(identity) != snapshot:
        raise ValidationError("reranker", "its identity changed since the service opened")


def _rerank(
    uow: UnitOfWork,
    query: SearchQuery,
    reranker: Reranker,
    shown: Sequence[fusion.Fused],
    rows: dict[str, MemoryRow],
) -> dict[str, float]:
    """The reranker's checked scores of the shown candidates, whose rows are verified
    first: a model is never shown content that fails its digest."""
    key = scope_key(query.scope)
    ids = [f.memory_id for f in shown]
    edges = loading.edges_by_memory(uow.memories.edges(key, ids))
    candidates = []
    for fused_rank, f in enumerate(shown, start=1):
        memory = loading.memory(
            rows[f.memory_id], edges[f.memory_id], query.scope, "invalid memory record"
        )
        ranks = {s.source.value: s.rank for s in f.signals}
        candidates.append(
            RerankCandidate(
                memory.memory_id,
                memory.kind,
                memory.content,
                ranks.get("lexical"),
                ranks.get("semantic"),
                fused_rank,
            )
        )
    # The answer is the host's object too: what its reading raises (an iteration, a
    # property, a hash of its own) is the reranker failing, as what ``rerank`` raises is.
    try:
        answer = reranker.rerank(query.text, tuple(candidates))
        return checked_scores(answer, candidates)
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the reranker failed") from error


def term_based(embedder: object) -> bool:
    """Whether an embedder says its vectors only restate the library's terms (an
    optional ``term_based`` attribute; absent means ``False``). An exception raised
    while it is read becomes ``ProviderError("the embedder failed")``."""
    try:
        value = getattr(embedder, "term_based", False)
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the embedder failed") from error
    if not isinstance(value, bool):
        raise ValidationError("embedder", "term_based must be a bool")
    return value


def reranker_settings(
    reranker: object, rerank_limit: object, reranker_weight: object
) -> tuple[Reranker | None, int, float, str | None]:
    """The checked reranker settings of the service, and the reranker's identity. An
    exception raised while the reranker's properties are read (by the protocol check,
    too) becomes ``ProviderError("the reranker failed")``; a ``TrueHeartError`` passes
    unchanged."""
    checked: Reranker | None = None
    identity: str | None = None
    if reranker is not None:
        read: object = None
        try:
            if not isinstance(reranker, type) and isinstance(reranker, Reranker):
                checked, read = reranker, reranker.identity
        except TrueHeartError:
            raise
        except Exception as error:
            raise ProviderError("the reranker failed") from error
        if checked is None:
            raise ValidationError("reranker", "must be a Reranker or None")
        identity = v.text("reranker", read)
    limit = v.whole("rerank_limit", rerank_limit, 1, 100)
    weight = v.real(reranker_weight)
    if weight is None or not 0 <= weight <= sys.float_info.max:
        raise ValidationError("reranker_weight", "must be a finite number >= 0")
    return checked, limit, float(weight), identity
