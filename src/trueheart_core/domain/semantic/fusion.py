"""Reciprocal rank fusion of the lexical, semantic and reranker rankings (pure).

Each ranking orders its own candidates best first. A candidate at rank ``r`` (1 is best)
of a ranking with weight ``w`` receives ``w / (60 + r)`` from it; its fused score is the
sum over the rankings that hold it. Lexical and semantic rankings weigh 1.0 each; the
reranker's weight is the service's ``reranker_weight``. Ranks, not raw scores, are
fused: BM25 scores and cosine similarities live on scales that cannot be added.

Each ranking contributes its best ``window`` candidates only (the search's
``2 * limit``). The fused order is total: fused score descending, then clarity at
``as_of`` descending, then ``created_at`` descending, then ``memory_id`` ascending. The
semantic ranking orders by cosine similarity with the same tie-breaks; candidates the
reranker scored are ranked by its score descending, then by their fused order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from trueheart_core.domain.search.model import RankSignal, SignalSource
from trueheart_core.domain.search.ranking import order_key

__all__ = [
    "FUSION",
    "LEXICAL_WEIGHT",
    "RRF_K",
    "SEMANTIC_WEIGHT",
    "Fused",
    "Scored",
    "contribution",
    "fuse",
    "rerank",
]

RRF_K = 60
LEXICAL_WEIGHT = 1.0
SEMANTIC_WEIGHT = 1.0
FUSION = "rrf k=60"


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate of one ranking: its ID, raw score, clarity at ``as_of`` and
    ``created_at`` (microseconds), which break ties."""

    memory_id: str
    score: float
    clarity: float
    created_at: int


@dataclass(frozen=True, slots=True)
class Fused:
    """A candidate of the fused ranking with its fused score and signals."""

    memory_id: str
    score: float
    clarity: float
    created_at: int
    signals: tuple[RankSignal, ...]

    def key(self) -> tuple[float, float, int, str]:
        """Sort key of the fused order (ascending sort puts the best first)."""
        return order_key(self.score, self.clarity, self.created_at, self.memory_id)


def contribution(weight: float, rank: int) -> float:
    """What rank ``rank`` of a ranking with weight ``weight`` adds to a fused score."""
    return weight / (RRF_K + rank)


def ranked(candidates: Sequence[Scored]) -> list[Scored]:
    """Candidates in ranking order: score descending, then the usual tie-breaks."""
    return sorted(
        candidates, key=lambda c: order_key(c.score, c.clarity, c.created_at, c.memory_id)
    )


def fuse(
    lexical: Sequence[Scored], semantic: Sequence[Scored], window: int, keep: int | None = None
) -> list[Fused]:
    """The fused ranking of the best ``window`` of each (already ordered) ranking; only
    its best ``keep`` when ``keep`` is given."""
    found: dict[str, list[tuple[SignalSource, int, float, float]]] = {}
    facts: dict[str, Scored] = {}
    for source, weight, ranking in (
        (SignalSource.LEXICAL, LEXICAL_WEIGHT, lexical),
        (SignalSource.SEMANTIC, SEMANTIC_WEIGHT, semantic),
    ):
        for rank, candidate in enumerate(ranking[:window], start=1):
            facts.setdefault(candidate.memory_id, candidate)
            found.setdefault(candidate.memory_id, []).append(
                (source, rank, candidate.score, contribution(weight, rank))
            )
    scores = {memory_id: sum(s[3] for s in signals) for memory_id, signals in found.items()}
    best = sorted(
        scores,
        key=lambda m: order_key(scores[m], facts[m].clarity, facts[m].created_at, m),
    )[:keep]
    # Signals are built for the candidates that are kept only.
    return [
        Fused(
            memory_id,
            scores[memory_id],
            facts[memory_id].clarity,
            facts[memory_id].created_at,
            tuple(RankSignal(*signal) for signal in found[memory_id]),
        )
        for memory_id in best
    ]


def rerank(fused: Sequence[Fused], scores: Mapping[str, float], weight: float) -> list[Fused]:
    """``fused`` with the reranker's contribution added to the candidates it scored,
    in the new fused order."""
    position = {f.memory_id: i for i, f in enumerate(fused)}
    order = sorted(scores, key=lambda memory_id: (-scores[memory_id], position[memory_id]))
    rank_of = {memory_id: rank for rank, memory_id in enumerate(order, start=1)}
    result = []
    for f in fused:
        rank = rank_of.get(f.memory_id)
        if rank is None:
            result.append(f)
            continue
        signal = RankSignal(
            SignalSource.RERANK, rank, scores[f.memory_id], contribution(weight, rank)
        )
        result.append(replace(f, score=f.score + signal.contribution, signals=(*f.signals, signal)))
    result.sort(key=Fused.key)
    return result
