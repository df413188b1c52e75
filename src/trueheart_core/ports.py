"""The persistence port: what the service needs from storage, and nothing more.

The service runs every public operation inside one :class:`UnitOfWork` obtained from a
:class:`Repository`. A unit of work is a transaction: it rolls back unless
:meth:`UnitOfWork.commit` is called. Its methods are *primitive* reads and writes of
stored rows in their canonical primitive form (the ``*Row`` classes below). They make no
lifecycle decisions: validation, digests, idempotency, tombstone and audit rules all live
in the service layer, so every adapter behaves identically by construction and only has
to pass the contract tests.

Rows carry what was stored, unvalidated. Times are integer microseconds since the Unix
epoch (UTC), durations are decimal text of integer microseconds, metadata is canonical
JSON text, and ``digest`` is the row digest written with the row. Values read back may be
of any type if the store was tampered with; the service checks them.

Every method may raise :class:`~trueheart_core.errors.RepositoryBusy`,
:class:`~trueheart_core.errors.RepositoryCorruption` or
:class:`~trueheart_core.errors.RepositoryReadOnly`; driver errors never escape.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

ScopeKey = tuple[str, str, str]
"""A scope as stored: ``(tenant_id, owner_id, subject_id)``."""

Operation = Literal[
    "open",
    "ingest",
    "materialize",
    "recall",
    "govern",
    "expire",
    "audit",
    "verify",
    "search",
    "read",
    "index",
    "erase",
    "stats",
    "rebuild",
]


@dataclass(frozen=True, slots=True)
class EventRow:
    """A body-free raw event receipt as stored. ``status`` is ``active`` or ``expired``."""

    scope: ScopeKey
    event_id: str
    source_id: str
    source_type: str
    source_occurred_at: int
    trust: int
    source_metadata: str
    content_hash: str
    ingested_at: int
    raw_expires_at: int
    clear_for: str
    recall_for: str
    status: str
    metadata: str
    digest: str
    has_body: bool = False


@dataclass(frozen=True, slots=True)
class BodyRow:
    """A raw event body, stored apart from its receipt so that expiry can remove it."""

    scope: ScopeKey
    event_id: str
    content: str
    digest: str


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """A memory as stored, without its lineage edges."""

    scope: ScopeKey
    memory_id: str
    content: str
    dependency_fingerprint: str
    kind: str
    trust: int
    created_at: int
    clear_until: int
    recall_until: int
    status: str
    metadata: str
    digest: str


@dataclass(frozen=True, slots=True)
class EdgeRow:
    """One lineage edge with snapshots of its source's trust and retention."""

    scope: ScopeKey
    memory_id: str
    event_id: str
    trust: int
    clear_for: str
    recall_for: str
    digest: str


@dataclass(frozen=True, slots=True)
class TombstoneRow:
    """A body-free non-resurrection marker for a scoped ID (and fingerprint for memories)."""

    scope: ScopeKey
    entity_type: str
    entity_id: str
    fingerprint: str | None
    deleted_at: int
    reason: str
    digest: str


@dataclass(frozen=True, slots=True)
class AuditRow:
    """A body-free lifecycle record. ``seq`` is the write order, assigned on insert."""

    audit_id: str
    scope: ScopeKey
    action: str
    entity_type: str
    entity_id: str
    occurred_at: int
    reason: str
    metadata: str
    digest: str
    seq: int = 0


@dataclass(frozen=True, slots=True)
class RecallCandidate:
    """The index-only projection of a memory that recall ranks before loading rows."""

    memory_id: str
    created_at: int
    clear_until: int
    recall_until: int


@dataclass(frozen=True, slots=True)
class SearchDocRow:
    """A searchable memory as the search index holds it.

    ``length`` is its length in terms and ``terms`` its ``(term key, frequency)`` pairs
    sorted by key (empty when a read does not ask for them). The time, trust and kind
    columns copy the memory row's so that candidates can be filtered in the index.
    ``memory_id`` is ``None`` when read back for an entry whose memory row is missing.
    """

    scope: ScopeKey
    memory_id: str | None
    length: int
    created_at: int
    clear_until: int
    recall_until: int
    trust: int
    kind: str
    terms: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class SearchCandidate:
    """A matching memory with its relevance score, read from the search index."""

    memory_id: str
    score: float
    created_at: int
    clear_until: int
    recall_until: int


@dataclass(frozen=True, slots=True)
class SearchTermRow:
    """A term's stored document frequency next to the postings actually held for it,
    and how many earlier rows (lower ``term_id``) of its scope hold the same term key
    (0 when the index is sound)."""

    scope: ScopeKey
    term: int
    df: int
    postings: int
    earlier_copies: int = 0


@dataclass(frozen=True, slots=True)
class SearchStatsRow:
    """A scope's stored search statistics next to the ones recomputed from its entries."""

    scope: ScopeKey
    docs: int
    length: int
    actual_docs: int
    actual_length: int


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """A claim's structured fields as stored, next to its memory row (same ID and scope).
    Valid times are integer microseconds or ``None``."""

    scope: ScopeKey
    claim_id: str
    subject: str
    predicate: str
    value: str
    valid_from: int | None
    valid_to: int | None
    confidence: float
    authority: str
    supersedes: str | None
    digest: str


@dataclass(frozen=True, slots=True)
class ExtractionRow:
    """The body-free record of one extraction: the extractor's identity and canonical
    JSON of the claim IDs, their spans and the diagnostics."""

    scope: ScopeKey
    event_id: str
    extractor: str
    claim_ids: str
    spans: str
    diagnostics: str
    digest: str


class UnitOfWork(Protocol):
    """One transaction. Reads see one consistent snapshot; writes are all-or-nothing."""

    def commit(self) -> None:
        """Make every write of this unit durable. Without it, everything rolls back."""

    # --- raw events -------------------------------------------------------------------

    def get_events(self, scope: ScopeKey, event_ids: Sequence[str]) -> dict[str, EventRow]:
        """Receipts with these IDs in the exact scope, keyed by ID (missing IDs absent).

        ``has_body`` tells whether the body row is present. Served by an index.
        """

    def event_id_elsewhere(self, event_id: str, scope: ScopeKey) -> bool:
        """Whether a receipt with this ID exists in any *other* scope. Served by an index."""

    def insert_event(self, row: EventRow, body: BodyRow) -> None:
        """Store a new receipt and its body."""

    def expirable_events(self, as_of: int, limit: int) -> list[EventRow]:
        """Up to ``limit`` receipts, in any scope, whose body is present and
        ``raw_expires_at <= as_of``, earliest deadline first.

        Read from an index that holds only receipts with a body, so the cost grows with
        the number of such rows, not with the database. Expiring the returned rows
        removes them from the next call's answer.
        """

    def expire_event(self, row: EventRow) -> None:
        """Remove the body of ``row`` and store ``row`` (its new status and digest)."""

    def delete_event(self, scope: ScopeKey, event_id: str) -> None:
        """Remove the receipt, the body (if any) and the extraction record (if any) of
        one event."""

    def iter_events(self, scope: ScopeKey | None) -> Iterator[EventRow]:
        """Every receipt (of one scope, or of the whole store), in storage order."""

    def iter_bodies(self, scope: ScopeKey | None) -> Iterator[BodyRow]:
        """Every stored body (of one scope, or of the whole store), in storage order."""

    # --- memories and lineage ---------------------------------------------------------

    def get_memory(self, scope: ScopeKey, memory_id: str) -> MemoryRow | None:
        """The memory with this ID in the exact scope. Served by an index."""

    def memory_id_elsewhere(self, memory_id: str, scope: ScopeKey) -> bool:
        """Whether a memory with this ID exists in any *other* scope. Served by an index."""

    def get_memories(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[MemoryRow]:
        """The memories with these IDs in the exact scope, in no particular order."""

    def get_edges(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[EdgeRow]:
        """Every lineage edge of these memories in the exact scope."""

    def dependent_memory_ids(self, scope: ScopeKey, event_id: str) -> list[str]:
        """IDs of the memories with an edge to this event in the exact scope (indexed)."""

    def insert_memory(self, row: MemoryRow, edges: Sequence[EdgeRow]) -> None:
        """Store a new memory and its lineage edges."""

    def update_memory(self, row: MemoryRow) -> None:
        """Store a changed status (and its new digest) of an existing memory."""

    def delete_memory(self, scope: ScopeKey, memory_id: str) -> None:
        """Remove a memory, all of its lineage edges, its search entries (as
        :meth:`unindex_memory` does) and its claim fields if it is a claim."""

    def recall_clear(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        limit: int,
        rounding_shift: int,
    ) -> list[MemoryRow]:
        """Up to ``limit`` active memories of full clarity at ``as_of``, best first.

        Selects ``status = 'active'``, ``created_at <= as_of < recall_until``, the kind in
        ``kinds`` when it is non-empty, and
        ``clear_until + ((recall_until - clear_until) >> rounding_shift) >= as_of`` (the
        memories whose clarity is exactly 1.0, including fades so long that the float
        ratio rounds to 1.0). Ordered by ``created_at`` descending, then ``memory_id``
        ascending in code-point order. Walks an index and stops at ``limit``.
        """

    def recall_fading(
        self,
        scope: ScopeKey,
        as_of: int,
        kinds: Sequence[str],
        rounding_shift: int,
        limit: int,
        exact_span: int,
    ) -> list[RecallCandidate]:
        """The fading memories that can rank among the best ``limit``: a superset of them
        drawn from the complement of :meth:`recall_clear` (same eligibility, clarity
        condition negated), read from an index without loading memory rows.

        Of the memories whose fade span ``recall_until - clear_until`` is below
        ``exact_span``, it returns the best ``limit`` by
        ``(recall_until - as_of) / (recall_until - clear_until)`` in double precision
        (exact, and equal to Python's integer division, while both operands are below
        2**53), then ``created_at`` descending, then ``memory_id`` ascending. It adds every
        fading memory with a longer span, unordered, for the caller to rank exactly.
        """

    def iter_memories(self, scope: ScopeKey | None) -> Iterator[MemoryRow]:
        """Every memory (of one scope, or of the whole store), in storage order."""

    def iter_edges(self, scope: ScopeKey | None) -> Iterator[EdgeRow]:
        """Every lineage edge (of one scope, or of the whole store), in storage order."""

    # --- tombstones --------------------------------------------------------------------

    def get_tombstones(self, scope: ScopeKey, entity_id: str) -> list[TombstoneRow]:
        """The tombstones (of either type) with this entity ID in the exact scope (indexed)."""

    def tombstone_elsewhere(
        self, entity_id: str, entity_type: str, scope: ScopeKey
    ) -> TombstoneRow | None:
        """One tombstone of this type and ID in any *other* scope, if any (indexed)."""

    def tombstones_for_fingerprint(self, scope: ScopeKey, fingerprint: str) -> list[TombstoneRow]:
        """Memory tombstones in the exact scope carrying this fingerprint (indexed)."""

    def insert_tombstone(self, row: TombstoneRow) -> None:
        """Store a tombstone."""

    def iter_tombstones(self, scope: ScopeKey | None) -> Iterator[TombstoneRow]:
        """Every tombstone (of one scope, or of the whole store), in write order."""

    # --- audit ------------------------------------------------------------------------

    def insert_audit(self, row: AuditRow) -> None:
        """Append an audit row; its write order is assigned here."""

    def recent_audit(self, scope: ScopeKey, limit: int) -> list[AuditRow]:
        """The first ``limit`` audit rows of the scope by ``occurred_at`` descending, then
        write order descending. Walks an index and stops at ``limit``."""

    def iter_audit(self, scope: ScopeKey | None) -> Iterator[AuditRow]:
        """Every audit row (of one scope, or of the whole store), in write order."""

    # --- claims and extractions --------------------------------------------------------

    def insert_claim(self, row: ClaimRow) -> None:
        """Store a claim's fields; its memory row is inserted in the same unit."""

    def get_claims(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        """The claims with these IDs in the exact scope, in no particular order."""

    def claims_about(
        self, scope: ScopeKey, subject: str | None, predicate: str | None
    ) -> list[ClaimRow]:
        """Every claim of the exact scope, or those of one subject (and predicate), read
        through an index of the scope by subject and predicate."""

    def superseders_of(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        """The claims of the exact scope whose ``supersedes`` names one of these IDs."""

    def iter_claims(self, scope: ScopeKey | None) -> Iterator[ClaimRow]:
        """Every claim row (of one scope, or of the whole store), in storage order."""

    def iter_extractions(self, scope: ScopeKey | None) -> Iterator[ExtractionRow]:
        """Every extraction record (of one scope, or of the whole store)."""

    def insert_extraction(self, row: ExtractionRow) -> None:
        """Store the record of an extraction."""

    def get_extraction(self, scope: ScopeKey, event_id: str) -> ExtractionRow | None:
        """The extraction record of this event in the exact scope."""

    # --- listing and search -------------------------------------------------------------

    def list_memories(
        self,
        scope: ScopeKey,
        statuses: Sequence[str],
        kinds: Sequence[str],
        after: str | None,
        limit: int,
    ) -> list[MemoryRow]:
        """Up to ``limit`` memories of the exact scope whose status is in ``statuses``
        and (when ``kinds`` is non-empty) whose kind is in ``kinds``, with ``memory_id``
        greater than ``after`` (if given), in ``memory_id`` code-point order. Walks an
        index of the scope in that order and stops at ``limit``."""

    def search_tokenizer(self) -> object:
        """The tokenizer identity the search index was built with (``""``: not built)."""

    def set_search_tokenizer(self, identity: str) -> None:
        """Record the tokenizer identity of a freshly built search index."""

    def clear_search_index(self) -> None:
        """Remove every search index entry and statistic of every scope."""

    def index_memory(self, doc: SearchDocRow) -> None:
        """Make an existing memory searchable: store ``doc``, one posting per term, and
        add to the scope's statistics and to each term's document frequency."""

    def unindex_memory(self, scope: ScopeKey, memory_id: str) -> None:
        """Remove a memory's search entries, if any, and subtract them from the
        statistics; a term no memory of the scope holds any longer is removed."""

    def search_statistics(self, scope: ScopeKey) -> tuple[int, int]:
        """``(searchable memories, sum of their lengths)`` of the exact scope."""

    def term_frequencies(self, scope: ScopeKey, terms: Sequence[int]) -> dict[int, int]:
        """Document frequency of each of these term keys in the scope (absent: none)."""

    def search_candidates(
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
        term key), the double-precision sum of
        ``weight * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * length / average_length))``.
        The summation order is the adapter's, but fixed: the same store and arguments
        give the same score, bit for bit.

        Returns how many eligible memories hold at least one term, and every one of
        them whose score is at least the ``window``-th best score (so ties at the edge
        are all present), unordered. Reads the postings of the given terms only.
        """

    def search_docs_for(self, scope: ScopeKey, memory_ids: Sequence[str]) -> list[SearchDocRow]:
        """The search entries (with terms) of these memories in the exact scope."""

    def iter_search_docs(self, scope: ScopeKey | None) -> Iterator[SearchDocRow]:
        """Every search entry (of one scope, or of the whole store), without terms."""

    def iter_search_terms(self, scope: ScopeKey | None) -> Iterator[SearchTermRow]:
        """Every stored term row, with its postings and earlier copies counted."""

    def iter_search_stats(self, scope: ScopeKey | None) -> Iterator[SearchStatsRow]:
        """Every scope's stored statistics (or recomputed ones only) with both values."""

    def orphan_postings(self, scope: ScopeKey | None) -> int:
        """How many postings have no search entry for their memory."""

    # --- storage ------------------------------------------------------------------------

    def storage_is_consistent(self) -> bool:
        """Whether the storage engine's own whole-store check passes: page structure, and
        every index agreeing with its table (reads rely on indexes to select rows)."""

    # --- operations: counts, whole-scope erasure, derived keys ------------------------
    #
    # Artifact names used as keys below: raw_event, raw_event_with_body, raw_body,
    # memory, claim, lineage_edge, extraction_record, search_entry, search_term,
    # search_posting, search_statistics, tombstone, audit.

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
        """What removing these memories of the exact scope (as :meth:`delete_memory` or
        :meth:`unindex_memory` does) would remove: the memory rows, lineage edges and
        claim rows, the search entries, and the term rows that no other memory of the
        scope holds (keys ``memory``, ``lineage_edge``, ``claim``, ``search_entry``,
        ``search_term``). Served by indexes."""

    def scope_event_ids(self, scope: ScopeKey) -> list[str]:
        """The IDs of every receipt of the exact scope."""

    def scope_memory_fingerprints(self, scope: ScopeKey) -> list[tuple[str, object]]:
        """``(memory_id, stored dependency fingerprint)`` of every memory of the exact
        scope, active and sealed."""

    def scope_claim_ids(self, scope: ScopeKey) -> list[str]:
        """The IDs of every claim row of the exact scope."""

    def erase_scope(self, scope: ScopeKey) -> dict[str, int]:
        """Remove every row held in the exact scope except its tombstones, its audit rows
        and the scope's own row: receipts, bodies, extraction records, memories, lineage
        edges, claim rows, search entries, postings, terms and statistics (and any later
        scoped artifact). A few statements per table, whatever the number of rows.
        Returns the rows removed per artifact (the names of :meth:`count_rows` that it
        removes). Before returning it checks, reading the tables themselves and not
        their indexes, that none of the scope's removable rows is left, and raises
        ``RepositoryCorruption`` (the caller rolls back) if one is: a damaged index must
        not turn an erasure into a silent no-op. The scope is found even when its index
        entry is lost."""

    def stale_claim_keys(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        """``(scope, claim_id)`` of every claim row whose index keys differ from the keys
        of its subject and predicate, as the adapter derives them."""

    def rekey_claims(self) -> int:
        """Recompute the index keys of every claim row whose keys differ from those of its
        texts; returns how many rows changed."""

    def rebuild_storage_indexes(self) -> int:
        """Rebuild every index of the storage engine from its table; returns how many."""


class Capability(StrEnum):
    """An ability a backend may or may not have. A repository declares its own in
    :attr:`Repository.capabilities`; the service and the conformance suite ask for a
    capability by name, never by the adapter's type."""

    PERSISTENT = "persistent"
    """The store outlives its repository object: another repository opened on the same
    target sees everything committed."""
    SHARED_ACROSS_PROCESSES = "shared_across_processes"
    """Several processes may open the same store at once."""
    READ_ONLY_OPEN = "read_only_open"
    """The store can be opened for reading only (``read_only=True``)."""
    BACKUP = "backup"
    """An online, consistent copy into a new store (:class:`SupportsBackup`)."""
    STORAGE_SIZES = "storage_sizes"
    """The size of the stored data can be reported (:class:`SupportsFileSizes`)."""
    VECTORS = "vectors"
    """Units of work store and scan semantic vectors (:class:`SupportsVectors`)."""
    FORENSICS = "forensics"
    """The backend can search the bytes of its own storage (:class:`SupportsForensics`):
    after an erasing call returns, none of the removed bodies is found there."""


class Repository(Protocol):
    """A store that hands out units of work. Safe to share between threads."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What this repository can do beyond the unit of work (see :class:`Capability`)."""

    def unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool = False
    ) -> AbstractContextManager[UnitOfWork]:
        """Open one transaction for ``operation``.

        A writing unit takes the write lock before any read, so contention surfaces as
        ``RepositoryBusy`` before any work is done; a read-only repository raises
        ``RepositoryReadOnly`` here. Leaving the block without :meth:`UnitOfWork.commit`
        rolls everything back. When ``erasing`` is true and the unit committed, the
        adapter makes sure that removed bytes are gone from the storage files before the
        block exits. Driver errors inside the block surface as library errors carrying
        the operation's fixed diagnostic.
        """

    def close(self) -> None:
        """Release every resource. Idempotent. Later use raises ``ValidationError``."""


# --- operations: capabilities a repository may offer --------------------------------------


@runtime_checkable
class SupportsBackup(Protocol):
    """A repository that can copy itself, online and consistently, to a new file."""

    def backup(self, target: str) -> tuple[int, int]:
        """Copy the whole store, as of one committed state, into a new database file at
        ``target`` (refused with ``ValidationError`` if it, or a journal or WAL of it,
        exists; nothing is overwritten). Returns ``(pages, bytes)`` of the copy. A copy
        that fails part-way is removed."""


@runtime_checkable
class SupportsForensics(Protocol):
    """A repository that can search the bytes of its own storage, as a forensic examiner
    of it would: the evidence of the erasure guarantee in a backend's own terms."""

    def residue(self, needles: Collection[bytes]) -> frozenset[bytes]:
        """The needles that occur anywhere in the storage this repository keeps (for a
        file store: the database file, its WAL and journal). Reads only."""


@runtime_checkable
class SupportsFileSizes(Protocol):
    """A repository that can report the size of its storage files."""

    def file_sizes(self) -> tuple[int, int] | None:
        """``(database bytes, WAL bytes)``, or ``None`` when the store has no file."""
