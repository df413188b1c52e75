"""BM25 relevance and the total order of search results (pure).

Relevance is Okapi BM25 over the scope's searchable memories (the active ones), with
``k1 = 1.2`` and ``b = 0.75``. For query terms ``t`` (each distinct term once) and a
memory ``d``::

    idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d) = sum over t in d of
               idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * len(d) / avglen))

The sum is correctly rounded (``math.fsum`` of the terms' scores, see :func:`score`),
so it does not depend on the order the terms are added in: every backend gives a
memory the same score, bit for bit, and two memories whose terms score alike tie.
``N`` is the number of searchable memories in the scope, ``df(t)`` how many contain
``t``, ``len(d)`` the memory's length in terms and ``avglen`` the scope's mean length.
The statistics describe the scope's searchable set, whatever ``as_of`` says; time,
kind and trust filters then choose among the matches.

Spelling tolerance: every English query word also counts its *inflections*, the other
forms of it that the scope holds (``spelling.inflections``), each with the weight
``INFLECTION_WEIGHT * min(idf(f), idf(w))`` for the word ``w`` it is a form of; and a
query word that no memory of the scope holds, and that ``spelling.correctable``
accepts, is replaced by its *corrections*, the terms of the scope one edit away from it
(``spelling.corrections``), each with the weight ``CORRECTION_WEIGHT * idf(t)``. Each
distinct term counts once, at its best weight, unless it is itself a query word. A
query whose words all occur in the scope and have no other form in it is therefore
scored exactly as above.

Clarity and trust do not scale relevance. The order is lexicographic: score
descending, then clarity at ``as_of`` descending, then ``created_at`` descending, then
``memory_id`` ascending (code-point order). A memory that matches the question better
always ranks first; among equally relevant ones the clearer, then the newer wins.
Trust is a filter (``SearchQuery.min_trust``), not a weight: a relevance score that
silently mixed in trust could not be explained to a user.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

_T = TypeVar("_T")

__all__ = [
    "BM25_B",
    "BM25_K1",
    "CORRECTION_WEIGHT",
    "INFLECTION_WEIGHT",
    "RELEVANT_SHARE",
    "SUM_SLACK",
    "average_length",
    "bm25_term",
    "by_time",
    "candidate_window",
    "idf",
    "order_key",
    "score",
    "window_floor",
]

BM25_K1 = 1.2
BM25_B = 0.75
CORRECTION_WEIGHT = 0.5
"""The factor of a correction's weight: a memory that holds what the query may have
meant is evidence, but weaker than one that holds what it says. Of 0.3 to 1.0, 0.5
ranked misspelt questions best while leaving the other kinds of question where they
were (docs/search.md, "Spelling tolerance")."""
INFLECTION_WEIGHT = 0.8
"""The factor of an inflection's weight (``spelling.inflections``: ``hiked`` for
``hiking``), for every query word, held by the scope or not: a memory that holds another
form of a word says nearly what the word says, better evidence than a correction, which
may be another word; capped at this factor times the word's own weight
(docs/search.md, "Spelling tolerance")."""
WINDOW_FACTOR = 2
RELEVANT_SHARE = 0.75
"""A query that asks for the newest or oldest memory ("what did I order most
recently?") is answered from the candidates that score at least this share of the best
score: they are put first, by ``created_at``; the others follow in score order. Of
0.5 to 1.0, shares from 0.7 to 0.8 ranked such questions best (docs/search.md,
"Time in queries"): lower shares let weak matches in, higher ones leave the relevant
older memories no room to be passed over."""


def idf(documents: int, frequency: int) -> float:
    """BM25 inverse document frequency (always positive)."""
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


def bm25_term(
    tf: int, length: int, weight: float, k1: float, b: float, average_length: float
) -> float:
    """The score of one query term in one memory: ``weight`` (the term's :func:`idf`)
    times the saturated term frequency, in double precision and in exactly this order
    of operations (a backend that sums it in SQL evaluates the same expression, see
    ``adapters.sql.expressions.bm25_term``):
    ``weight * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * length / average_length))``.
    A memory's score is the exact sum of its terms' scores (:func:`score`)."""
    return weight * (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * length / average_length))


def score(parts: Iterable[float]) -> float:
    """A memory's score from its terms' scores (:func:`bm25_term`): their sum, rounded
    once (``math.fsum``). A sum added left to right rounds at every step, so its last
    bit depends on the order of the terms, which a database's plan chooses; the exact
    sum does not."""
    return math.fsum(parts)


SUM_SLACK = 1e-9
"""Relative room a backend leaves below the ``window``-th best score when it cuts its
candidates with its own (rounded at every step) sums, before :func:`score` decides:
sums of a few hundred positive doubles are within 1e-13 of exact, so a cut at
``(1 - SUM_SLACK)`` of the rounded edge keeps every memory whose exact score reaches the
exact edge."""


def window_floor(scores: Iterable[float], window: int) -> float:
    """The ``window``-th best of ``scores`` (``-inf`` when there are fewer): a search
    keeps every candidate scoring at least this, so ties at the edge are all kept."""
    best = sorted(scores, reverse=True)
    edge = max(window, 1)
    return best[edge - 1] if edge <= len(best) else -math.inf


def average_length(documents: int, total_length: int) -> float:
    """Mean length in terms of the scope's searchable memories (at least 1.0)."""
    if documents <= 0 or total_length <= 0:
        return 1.0
    return total_length / documents


def candidate_window(limit: int) -> int:
    """How many of the best matches a search considers for its capsule: ``2 * limit``.

    Considering more than ``limit`` lets smaller memories fill a budget that a large
    one would overflow; bounding it keeps the cost independent of the store size.
    """
    return WINDOW_FACTOR * limit


def order_key(
    score: float, clarity: float, created_at: int, memory_id: str
) -> tuple[float, float, int, str]:
    """Sort key of the total result order (ascending sort puts the best first)."""
    return (-score, -clarity, -created_at, memory_id)


def by_time(
    items: Sequence[_T], score: Callable[[_T], float], created: Callable[[_T], int], newest: bool
) -> list[_T]:
    """``items`` (in ranking order) with those scoring at least :data:`RELEVANT_SHARE`
    of the best first, newest (or oldest) first, ties kept in ranking order; then the
    others in ranking order."""
    if not items:
        return []
    best = max(score(item) for item in items)
    relevant = [item for item in items if score(item) >= RELEVANT_SHARE * best]
    rest = [item for item in items if score(item) < RELEVANT_SHARE * best]
    sign = -1 if newest else 1
    relevant.sort(key=lambda item: sign * created(item))  # stable: ties keep their rank
    return [*relevant, *rest]
