"""The operations role of a unit of work: :class:`StoreOperations`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from trueheart_core.ports.rows import ScopeKey


class StoreOperations(Protocol):
    """Operating a store: counts, whole-scope erasure, the scope listing and the storage engine's
    own consistency and indexes.

    Every method runs inside the unit of work's transaction and may raise
    ``RepositoryBusy``, ``RepositoryCorruption`` or ``RepositoryReadOnly``; driver errors
    never escape.
    """

    def storage_is_consistent(self) -> bool:
        """Whether the storage engine's own whole-store check passes: page structure, and
        every index agreeing with its table (reads rely on indexes to select rows); and,
        where rows name their scope by a key of the store's own, that every such key
        names a recorded scope."""

    def count_rows(self, scope: ScopeKey | None, *, from_tables: bool = False) -> dict[str, int]:
        """How many stored rows of each artifact the exact scope (or the whole store)
        holds, every artifact name present. A scope's rows are counted through an index
        of the scope wherever the schema has one; ``from_tables=True`` (for erasure
        receipts) reads the tables themselves instead, so that rows a damaged index has
        lost are still counted."""

    def held_scopes(self, tenant_id: str | None, owner_id: str | None) -> list[ScopeKey]:
        """The scopes (of one tenant and owner, when given) that hold at least one raw
        event or memory, sorted."""

    def count_memories(self, scope: ScopeKey | None) -> list[tuple[object, object, int]]:
        """``(status, kind, count)`` for each status and kind of the scope's (or the
        store's) memories, read from an index that holds both."""

    def removal_counts(self, scope: ScopeKey, memory_ids: Sequence[str]) -> dict[str, int]:
        """What removing these memories of the exact scope (as :meth:`MemoryStore.delete` or
        :meth:`SearchIndex.unindex` does) would remove: the memory rows, lineage edges and
        claim rows, the search entries, and the term rows that no other memory of the
        scope holds (keys ``memory``, ``lineage_edge``, ``claim``, ``search_entry``,
        ``search_term``). Served by indexes."""

    def scope_event_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        """The IDs of every receipt of the exact scope: read from the table itself when
        ``thorough`` (so that a row a damaged index lost is still found; the cost grows
        with the table), else through an index of the scope."""

    def scope_memory_fingerprints(
        self, scope: ScopeKey, *, thorough: bool = True
    ) -> list[tuple[str, object]]:
        """``(memory_id, stored dependency fingerprint)`` of every memory of the exact
        scope, active and sealed (``thorough`` as for :meth:`scope_event_ids`)."""

    def scope_claim_ids(self, scope: ScopeKey, *, thorough: bool = True) -> list[str]:
        """The IDs of every claim row of the exact scope (``thorough`` as for
        :meth:`scope_event_ids`)."""

    def erase_scope(self, scope: ScopeKey, *, rewrite: bool = True) -> dict[str, int]:
        """Remove every row held in the exact scope except its tombstones, its audit rows
        and the scope's own row: receipts, bodies, extraction records, memories, lineage
        edges, claim rows, search entries, postings, terms and statistics (and any later
        scoped artifact). A few statements per table, whatever the number of rows.
        Returns the rows removed per artifact (the names of
        :meth:`StoreOperations.count_rows` that it removes). The scope is found even when
        its index entry is lost.

        With ``rewrite`` (the default) it checks before returning, reading the tables
        themselves and not their indexes, that none of the scope's removable rows is
        left, and raises ``RepositoryCorruption`` (the caller rolls back) if one is: a
        damaged index must not turn an erasure into a silent no-op; and it asks for the
        storage to be rewritten after the commit, so that no copy of a removed row is
        left anywhere in it. Without ``rewrite`` it costs what the scope holds: it finds
        the rows through the scope's indexes, first overwrites every stored text and
        byte of them in place, so that moving rows between pages as they go copies none
        of it, and checks through the same indexes that none is left."""

    def request_rewrite(self) -> None:
        """Ask for the whole storage to be rewritten into fresh pages after this unit
        commits (as an erasure with ``rewrite`` does)."""

    def rebuild_storage_indexes(self) -> int:
        """Rebuild every index of the storage engine from its table; returns how many."""
