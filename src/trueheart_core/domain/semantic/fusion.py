"""Evidence fusion of the lexical, semantic and reranker rankings (pure).

Each ranking says how strongly it finds a candidate, on a scale of its own: BM25 grows
with the number and rarity of the query's words a memory holds, a cosine similarity is
bounded by 1. Fusing their *ranks* (reciprocal rank fusion) throws that strength away:
a memory found by one ranking alone can then never outrank one that both rankings hold
with weak evidence, and a question whose words match nothing but noise pushes that
noise into the fused ranking. This rule fuses evidence instead:

- **lexical evidence** ``e = min(1, bm25 / ceiling)``: the share of what a memory of
  average length holding every content word of the query once would score (the
  ``ceiling``, computed by the lexical side: see
  :mod:`trueheart_core.service.search.lexical`). It adds ``e ** 2``: a memory that
  holds a question's informative words adds nearly as much as a perfect cosine, one
  that shares a word or two of a long question adds little.
- **semantic evidence** adds the cosine similarity (``max(0, cosine)``).
- The fused score is the sum. A candidate of one ranking only adds nothing from the
  other.

Each ranking contributes its best ``window`` candidates only (the search's
``2 * limit``). The fused order is total: fused score descending, then cosine
similarity descending (a candidate without one after every candidate with one), then
rank in the lexical ranking (a candidate without one after every candidate with one),
then clarity at ``as_of`` descending, then ``created_at`` descending, then
``memory_id`` ascending. The lexical rank keeps the BM25 order among candidates whose
lexical share is capped at 1 (every score at or above the ceiling). The semantic
ranking orders by cosine similarity with the usual tie-breaks.

An embedder whose vectors only restate the library's own terms (``term_based``, as
:class:`~trueheart_core.domain.semantic.embedders.HashingEmbedder`) repeats the
lexical evidence instead of adding meaning: its similarity then adds nothing to the
score (``TERM_BASED_FUSION``): the lexical order stands, tie-breaks included, and the
candidates only the semantic ranking holds follow the lexical ones by similarity.

A reranker shown ``n`` candidates adds ``weight * (n - rank + 1) / n`` to the candidate
at ``rank`` of its order (its score descending, then the fused order), so its first
choice gains ``weight`` and its last ``weight / n``; the candidates it was not shown
keep their fused score, below every shown one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from trueheart_core.domain.search.model import RankSignal, SignalSource
from trueheart_core.domain.search.ranking import order_key

__all__ = [
    "FUSION",
    "TERM_BASED_FUSION",
    "Fused",
    "Scored",
    "fuse",
    "lexical_evidence",
    "ranked",
    "rerank",
]

FUSION = "evidence-v1"
TERM_BASED_FUSION = "evidence-v1 lexical-first"

_NO_SIMILARITY = -2.0  # below every cosine similarity
_NO_RANK = float("inf")  # after every lexical rank


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
    """A candidate of the fused ranking with its fused score, its cosine similarity
    (``None`` when the semantic ranking does not hold it) and its signals."""

    memory_id: str
    score: float
    clarity: float
    created_at: int
    signals: tuple[RankSignal, ...]
    similarity: float | None = None
    lexical_rank: int | None = None

    def key(self) -> tuple[float, float, float, float, int, str]:
        """Sort key of the fused order (ascending sort puts the best first)."""
        similarity = _NO_SIMILARITY if self.similarity is None else self.similarity
        rank = _NO_RANK if self.lexical_rank is None else float(self.lexical_rank)
        return (-self.score, -similarity, rank, -self.clarity, -self.created_at, self.memory_id)


def lexical_evidence(score: float, ceiling: float) -> float:
    """The share ``min(1, score / ceiling)`` of the query's lexical ceiling that a BM25
    score reaches (0 without a ceiling)."""
    if ceiling <= 0.0:
        return 0.0
    return min(1.0, score / ceiling)


def ranked(candidates: Sequence[Scored]) -> list[Scored]:
    """Candidates in ranking order: score descending, then the usual tie-breaks."""
    return sorted(
        candidates, key=lambda c: order_key(c.score, c.clarity, c.created_at, c.memory_id)
    )


def fuse(
    lexical: Sequence[Scored],
    semantic: Sequence[Scored],
    window: int,
    ceiling: float,
    keep: int | None = None,
    term_based: bool = False,
) -> list[Fused]:
    """The fused ranking of the best ``window`` of each (already ordered) ranking; only
    its best ``keep`` when ``keep`` is given. ``ceiling`` is the lexical side's."""
    found: dict[str, list[RankSignal]] = {}
    facts: dict[str, Scored] = {}
    similarity: dict[str, float] = {}
    lexical_rank: dict[str, int] = {}
    for rank, candidate in enumerate(lexical[:window], start=1):
        evidence = lexical_evidence(candidate.score, ceiling)
        facts.setdefault(candidate.memory_id, candidate)
        lexical_rank.setdefault(candidate.memory_id, rank)
        found.setdefault(candidate.memory_id, []).append(
            RankSignal(SignalSource.LEXICAL, rank, candidate.score, evidence * evidence)
        )
    for rank, candidate in enumerate(semantic[:window], start=1):
        if not term_based or candidate.memory_id not in found:
            # A term-based similarity orders only what the lexical ranking left out.
            similarity[candidate.memory_id] = candidate.score
        facts.setdefault(candidate.memory_id, candidate)
        contribution = 0.0 if term_based else max(0.0, candidate.score)
        found.setdefault(candidate.memory_id, []).append(
            RankSignal(SignalSource.SEMANTIC, rank, candidate.score, contribution)
        )
    fused = [
        Fused(
            memory_id,
            sum(signal.contribution for signal in signals),
            facts[memory_id].clarity,
            facts[memory_id].created_at,
            tuple(signals),
            similarity.get(memory_id),
            lexical_rank.get(memory_id),
        )
        for memory_id, signals in found.items()
    ]
    fused.sort(key=Fused.key)
    return fused[:keep]


def rerank(
    fused: Sequence[Fused], scores: Mapping[str, float], weight: float, shown: int
) -> list[Fused]:
    """``fused`` with the reranker's contribution added to the candidates it scored,
    in the new fused order: of the ``shown`` candidates, the one at rank ``r`` of its
    order gains ``weight * (shown - r + 1) / shown`` (a reranker that scores only some
    of them leaves the rest of the ranks unused)."""
    position = {f.memory_id: i for i, f in enumerate(fused)}
    order = sorted(scores, key=lambda memory_id: (-scores[memory_id], position[memory_id]))
    rank_of = {memory_id: rank for rank, memory_id in enumerate(order, start=1)}
    result = []
    for f in fused:
        rank = rank_of.get(f.memory_id)
        if rank is None:
            result.append(f)
            continue
        contribution = weight * (shown - rank + 1) / shown
        signal = RankSignal(SignalSource.RERANK, rank, scores[f.memory_id], contribution)
        result.append(replace(f, score=f.score + contribution, signals=(*f.signals, signal)))
    result.sort(key=Fused.key)
    return result
