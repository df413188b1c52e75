"""The claims role of a unit of work: :class:`ClaimStore`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from trueheart_core.ports.rows import ClaimPosition, ClaimRow, ExtractionRow, ScopeKey


class ClaimStore(Protocol):
    """Claim rows (the structured fields of a memory that carries a claim) and extraction records.

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def insert(self, row: ClaimRow) -> None:
        """Store a claim's fields; its memory row is inserted in the same unit."""

    def get(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        """The claims with these IDs in the exact scope, in no particular order."""

    def about(self, scope: ScopeKey, subject: str | None, predicate: str | None) -> list[ClaimRow]:
        """Every claim of the exact scope, or those of one subject (and predicate), read
        through an index of the scope by subject and predicate."""

    def page(
        self,
        scope: ScopeKey,
        subject: str | None,
        predicate: str | None,
        after: ClaimPosition | None,
        limit: int,
    ) -> list[ClaimRow]:
        """Up to ``limit`` claims of the exact scope (or of one subject, or one subject
        and predicate, as :meth:`about` selects) in answer order: ``subject``, then
        ``predicate`` (both in code-point order), then the ``created_at`` of the claim's
        memory row (integer microseconds), then ``claim_id``; only those strictly after
        ``after`` (that order's key of a claim: ``(subject, predicate, created_at,
        claim_id)``) when it is given.

        Reads through the index of the scope by subject and predicate and holds no more
        than ``limit`` rows at once: memory is bounded by ``limit``, whatever the size
        of the scope (without a subject, every claim of the scope is compared, in the
        store, to find them). A claim row without its memory row sorts first among the
        claims of its subject and predicate; whoever loads it reports it as corrupt.
        """

    def superseders_of(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        """The claims of the exact scope whose ``supersedes`` names one of these IDs."""

    def iter(self, scope: ScopeKey | None) -> Iterator[ClaimRow]:
        """Every claim row (of one scope, or of the whole store), in storage order."""

    def iter_extractions(self, scope: ScopeKey | None) -> Iterator[ExtractionRow]:
        """Every extraction record (of one scope, or of the whole store)."""

    def insert_extraction(self, row: ExtractionRow) -> None:
        """Store the record of an extraction."""

    def get_extraction(self, scope: ScopeKey, event_id: str) -> ExtractionRow | None:
        """The extraction record of this event in the exact scope."""

    def stale_keys(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        """``(scope, claim_id)`` of every claim row whose index keys differ from the keys
        of its subject and predicate, as the adapter derives them."""

    def rekey(self) -> int:
        """Recompute the index keys of every claim row whose keys differ from those of its
        texts; returns how many rows changed."""
