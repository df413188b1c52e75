"""Search: answering a query, and keeping the lexical index in step with the memories.

One search is one pass down and back: :func:`answer` ranks the scope's memories
(``lexical``: BM25 through the search role; ``hybrid``: that ranking fused with the
semantic scan and the reranker), then packs the window into the capsule and verifies
what enters it (``capsule``). ``index`` keeps the index in step with every write. The
rules (tokenisation, BM25, the result order, fusion, packing) live in ``domain``.
"""

from __future__ import annotations

from collections.abc import Sequence

from trueheart_core.domain.search.capsule import TokenEstimator
from trueheart_core.domain.search.model import MemoryCapsule, SearchQuery
from trueheart_core.ports import UnitOfWork
from trueheart_core.service.search import hybrid, lexical
from trueheart_core.service.search.capsule import ClaimViews, capsule
from trueheart_core.service.search.index import (
    doc_row,
    ensure_index,
    index_is_current,
    rebuild,
)

__all__ = [
    "ClaimViews",
    "answer",
    "doc_row",
    "ensure_index",
    "index_is_current",
    "rebuild",
]


def answer(
    uow: UnitOfWork,
    query: SearchQuery,
    estimator: TokenEstimator,
    claim_views: ClaimViews,
    semantic: hybrid.SemanticSearch | None = None,
    vector: Sequence[float] | None = None,
) -> MemoryCapsule:
    """The capsule of ``query`` (the index must be current, see
    :func:`index_is_current`): hybrid when semantic settings and the query's vector are
    given, lexical otherwise. Every memory that enters the capsule is loaded from its
    row and verified; an index answer that disagrees with its row fails closed."""
    if semantic is None or vector is None:
        ranking = lexical.ranked(uow, query)
    else:
        ranking = hybrid.ranked(uow, query, semantic, vector)
    return capsule(uow, query, estimator, claim_views, ranking)
