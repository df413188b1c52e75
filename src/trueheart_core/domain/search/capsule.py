"""Token estimation and budget packing (pure).

A capsule holds whole memories only. Packing walks the considered candidates best
first: a candidate is included when fewer than ``limit`` items are in and its cost fits
the budget that remains; otherwise the trace records ``limit`` or ``budget``. A
candidate too large for the remaining budget does not stop the walk, so a smaller,
lower-ranked memory can still use the room. ``limit`` never raises the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.domain.search.model import CapsuleDecision, CapsuleTraceEntry, RankSignal
from trueheart_core.errors import ProviderError, TrueHeartError, ValidationError

__all__ = ["TokenEstimator", "Utf8BytesEstimator", "pack"]


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts the tokens a memory's content costs in a capsule.

    ``name`` identifies the estimator in every capsule it priced. ``estimate`` must be
    deterministic and return a non-negative ``int`` for any text.
    """

    @property
    def name(self) -> str:
        """A short, stable identity, e.g. ``"utf8-bytes/3"``."""
        ...

    def estimate(self, text: str) -> int:
        """The token cost of ``text``."""
        ...


class Utf8BytesEstimator:
    """The default estimator: ``ceil(len(text.encode("utf-8")) / 3)`` tokens.

    It over-counts English for common model tokenizers (about four bytes per token). For
    other scripts it can under-count; pass the model's own tokenizer when the budget must
    hold in the model's tokens.
    """

    @property
    def name(self) -> str:
        return "utf8-bytes/3"

    def estimate(self, text: str) -> int:
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        return -(-size // 3)


@dataclass(frozen=True, slots=True, repr=False)
class Ranked:
    """A candidate in its final rank: its ID, content (to price it), score and clarity,
    and in a hybrid search what each ranking contributed."""

    memory_id: str
    content: str
    score: float
    clarity: float
    signals: tuple[RankSignal, ...] = ()

    __repr__ = body_free_repr("content")


def cost(estimator: TokenEstimator, text: str) -> int:
    """The estimator's cost of ``text``, checked to be a non-negative ``int``. An
    exception of the estimator is ``ProviderError``, with it as the cause."""
    try:
        tokens = estimator.estimate(text)
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the token estimator failed") from error
    if isinstance(tokens, bool) or not isinstance(tokens, int):
        raise ValidationError("token_estimator", "must return a non-negative int")
    # A plain int, whatever a subclass says of itself (its comparisons may raise).
    try:
        tokens = int.__int__(tokens)
    except TypeError:  # an object that only claims to be an int
        raise ValidationError("token_estimator", "must return a non-negative int") from None
    if not 0 <= tokens < 2**63:
        raise ValidationError("token_estimator", "must return a non-negative int")
    return tokens


def pack(
    ranked: Sequence[Ranked], budget: int, limit: int, estimator: TokenEstimator
) -> tuple[tuple[CapsuleTraceEntry, ...], int]:
    """The trace of packing ``ranked`` (best first) and the tokens used (see the module
    docstring); the included candidates are the entries marked ``INCLUDED``."""
    trace: list[CapsuleTraceEntry] = []
    included = 0
    remaining = budget
    for rank, candidate in enumerate(ranked, start=1):
        tokens = cost(estimator, candidate.content)
        if included >= limit:
            decision = CapsuleDecision.LIMIT
        elif tokens > remaining:
            decision = CapsuleDecision.BUDGET
        else:
            decision = CapsuleDecision.INCLUDED
        trace.append(
            CapsuleTraceEntry(
                candidate.memory_id,
                rank,
                candidate.score,
                candidate.clarity,
                tokens,
                remaining,
                decision,
                candidate.signals,
            )
        )
        if decision is CapsuleDecision.INCLUDED:
            included += 1
            remaining -= tokens
    return tuple(trace), budget - remaining
