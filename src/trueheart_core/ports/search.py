"""The search role of a unit of work: :class:`SearchIndex`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from trueheart_core.ports.rows import (
    Period,
    RecallCandidate,
    ScopeKey,
    SearchCandidate,
    SearchDocRow,
    SearchStatsRow,
    SearchTermRow,
)


class SearchIndex(Protocol):
    """The lexical search index: one entry per searchable memory, the scope's terms as 64-bit keys,
    postings and per-scope statistics. The adapter stores and fetches; ranking is the service's.

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def tokenizer(self) -> object:
        """The tokenizer identity the search index was built with (``""``: not built)."""

    def set_tokenizer(self, identity: str) -> None:
        """Record the tokenizer identity of a freshly built search index."""

    def clear(self) -> None:
        """Remove every search index entry and statistic of every scope."""

    def index(self, doc: SearchDocRow) -> None:
        """Make an existing memory searchable: store ``doc``, one posting per term, and
        add to the scope's statistics and to each term's document frequency."""

    def unindex(self, scope: ScopeKey, memory_id: str) -> tuple[int, int]:
        """Remove a memory's search entry, if any, and subtract it from the statistics;
        a term no memory of the scope holds any longer is removed.

        Returns ``(entries, terms)``: the searchable entries removed (0 or 1) and the
        terms of that entry no other entry of the scope holds (removed now, or by the
        time any read could see them), exactly what ``removal_counts`` reports as
        ``search_entry`` and ``search_term`` when asked before the call. A seal needs
        both, and reading them here saves a second look-up of the same rows."""

    def statistics(self, scope: ScopeKey) -> tuple[int, int]:
        """``(searchable memories, sum of their lengths)`` of the exact scope. Every
        search asks for it first: ``RepositoryCorruption`` when the scope's index holds
        a row it cannot be read through (the ``index_unreadable`` finding of
        verification), so that no search answers without that row."""

    def term_frequencies(self, scope: ScopeKey, terms: Sequence[int]) -> dict[int, int]:
        """Document frequency of each of these term keys in the scope (absent: none).

        A search asks for its query's terms, then for the corrections of its misspelt
        words: hundreds of keys, most of them held by no memory, so the cost of a key
        that is absent should be one index probe."""

    def candidates(
        self,
        scope: ScopeKey,
        weights: Sequence[tuple[int, float]],
        k1: float,
        b: float,
        average_length: float,
        as_of: int,
        kinds: Sequence[str],
        min_trust: int | None,
        window: int,
        claim_statuses: Sequence[str] = (),
        claim_kind: str = "claim",
        period: Period | None = None,
    ) -> tuple[int, list[SearchCandidate]]:
        """Score the scope's searchable memories against weighted query terms.

        Eligible memories have ``created_at <= as_of < recall_until``, a kind in
        ``kinds`` (when non-empty) and trust of at least ``min_trust`` (when given). A
        memory of ``claim_kind`` that has a claim row is eligible only when the claim's
        status at ``as_of`` is in ``claim_statuses``: ``superseded`` when an active
        claim created at or before ``as_of`` supersedes it, else ``ended`` when
        ``valid_to <= as_of``, else ``not_yet_valid`` when ``as_of < valid_from``, else
        ``current`` (the rules of ``claims.status_at`` with ``known_at = as_of``). A
        memory's score is, over the ``(term, weight)`` pairs it holds (``term`` is a
        term key, each at most once; ``weight`` is the service's: the term's ``idf``,
        or a fraction of it for a correction of a misspelt query word, which is looked
        up and scored like any other term), the sum of
        ``weight * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * length / average_length))``
        rounded once, as ``domain.search.ranking.score`` adds it: the same store and
        arguments give the same score, bit for bit, on every backend, and memories
        whose terms score alike tie, whatever order their terms are added in (a SQL
        backend cuts with its own sums and ``adapters.sql.scores`` adds exactly). The
        term is ``domain.search.ranking.bm25_term`` and the status
        ``domain.claims.status_of``; a SQL backend builds both from
        ``adapters.sql.expressions``, which tests pin to them. With a ``period``, only
        the memories in it are eligible (see :data:`~trueheart_core.ports.rows.Period`:
        a claim by its validity, any other memory by its ``created_at``).

        Returns how many eligible memories hold at least one term, and every one of
        them whose score is at least the ``window``-th best score (so ties at the edge
        are all present), unordered. Reads the postings of the given terms only.
        """

    def in_period(
        self,
        scope: ScopeKey,
        period: Period,
        as_of: int,
        kinds: Sequence[str],
        min_trust: int | None,
        claim_statuses: Sequence[str],
        newest: bool,
        limit: int,
        claim_kind: str = "claim",
    ) -> list[RecallCandidate]:
        """Up to ``limit`` of the scope's eligible memories created in ``period``,
        whatever they say: the answer to a question about a period that names nothing
        else.

        Eligibility is that of :meth:`candidates` (a memory of ``claim_kind`` with a
        claim row is kept only when its validity overlaps the period too). The order is
        ``created_at`` descending, then ``memory_id`` ascending, when ``newest``;
        otherwise its exact reverse (``created_at`` ascending, then ``memory_id``
        descending). Returns the first ``limit`` in that order.

        The memories are read by walking an index of the scope's active memories by
        ``created_at`` in the order asked, from the period's end (or ``as_of``) or its
        start, stopping at ``limit``: the cost follows ``limit`` (and the memories the
        filters pass over), not the scope. Claims valid in the period but recorded
        outside it are not read: finding them would read every claim of the scope."""

    def docs_for(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[SearchDocRow]:
        """The search entries (with terms) of these memories in the exact scope."""

    def iter_docs(self, scope: ScopeKey | None) -> Iterator[SearchDocRow]:
        """Every search entry (of one scope, or of the whole store), without terms."""

    def iter_terms(self, scope: ScopeKey | None) -> Iterator[SearchTermRow]:
        """Every stored term row, with its postings and earlier copies counted."""

    def iter_stats(self, scope: ScopeKey | None) -> Iterator[SearchStatsRow]:
        """Every scope's stored statistics (or recomputed ones only) with both values."""

    def orphan_postings(self, scope: ScopeKey | None) -> int:
        """How many postings have no search entry for their memory. For one scope: the
        postings of its terms without an entry of the scope for their memory, and the
        postings of its entries whose term is gone or another scope's, read through the
        scope's own rows; a posting whose term and entry are both gone belongs to no scope,
        and only the whole-store count includes it."""
