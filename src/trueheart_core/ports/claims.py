"""The claims role of a unit of work: :class:`ClaimStore`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from trueheart_core.ports.rows import ClaimRow, ExtractionRow, ScopeKey


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
