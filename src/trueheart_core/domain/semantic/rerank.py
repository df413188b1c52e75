"""The reranker seam: a host's model reorders the best fused candidates of a search.

A :class:`Reranker` sees at most ``rerank_limit`` candidates: already filtered (scope,
time, kind, trust, claim status), eligible at the query's ``as_of`` and each memory once.
It returns scores for some or all of them; the library checks the answer
(:func:`checked_scores`) and fuses the reranker's order into the ranking with its weight.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.errors import ValidationError

__all__ = ["RerankCandidate", "RerankResult", "Reranker", "checked_scores"]


@dataclass(frozen=True, slots=True, repr=False)
class RerankCandidate:
    """A candidate offered to a reranker: the memory's ID, kind and content, and its
    ranks so far (1 is best; ``None`` where that ranking did not find it)."""

    memory_id: str
    kind: str
    content: str
    lexical_rank: int | None
    semantic_rank: int | None
    fused_rank: int

    __repr__ = body_free_repr("content")


@dataclass(frozen=True, slots=True)
class RerankResult:
    """A reranker's score of one candidate; higher is better."""

    memory_id: str
    score: float


@runtime_checkable
class Reranker(Protocol):
    """Scores candidates against a query text.

    ``identity`` names the model (it appears in every capsule the reranker touched).
    ``rerank`` returns at most one :class:`RerankResult` per candidate, for candidates
    it was given only, each with a finite score. Candidates it does not score get no
    reranker contribution. Anything else is refused with ``ValidationError``.
    """

    @property
    def identity(self) -> str:
        """A short, stable name of the model."""
        ...

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> Sequence[RerankResult]:
        """Scores of (some of) ``candidates`` for ``query``."""
        ...


def checked_scores(results: object, candidates: Sequence[RerankCandidate]) -> dict[str, float]:
    """The reranker's scores by memory ID, after checking the answer's contract.

    The answer is read through the plain types' own methods (a subclass of ``list`` or
    ``str`` may redefine iteration, hashing or comparison): what is kept is plain
    ``str`` IDs and ``float`` scores. Reading it may still raise what the host's object
    raises (a property of a ``RerankResult`` subclass), which the caller reports as the
    reranker failing."""
    if isinstance(results, list):
        items = list.__iter__(results)
    elif isinstance(results, tuple):
        items = tuple.__iter__(results)
    else:
        raise ValidationError("reranker", "must return a list or tuple of RerankResult")
    known = {candidate.memory_id for candidate in candidates}
    scores: dict[str, float] = {}
    for result in items:
        if not isinstance(result, RerankResult):
            raise ValidationError("reranker", "must return a list or tuple of RerankResult")
        memory_id = result.memory_id
        if not isinstance(memory_id, str):
            raise ValidationError("reranker", "returned a score for an unknown candidate")
        memory_id = str.__str__(memory_id)  # a plain copy, whatever a subclass does
        if memory_id not in known:
            raise ValidationError("reranker", "returned a score for an unknown candidate")
        if memory_id in scores:
            raise ValidationError("reranker", "returned two scores for one candidate")
        score = result.score
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise ValidationError("reranker", "must return finite scores")
        try:
            number = float(score)
        except Exception:
            raise ValidationError("reranker", "must return finite scores") from None
        if not math.isfinite(number):
            raise ValidationError("reranker", "must return finite scores")
        scores[memory_id] = number
    return scores
