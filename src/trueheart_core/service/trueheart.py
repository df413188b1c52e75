"""The TrueHeart lifecycle service: one public operation is one unit of work.

The service validates arguments, applies the lifecycle policy (``policy``), converts
between DTOs and stored rows (``records``), and orchestrates primitive reads and writes
on the repository port. It never sees SQL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TypeVar, cast

from trueheart_core import logs
from trueheart_core.domain import policy
from trueheart_core.domain import validation as v
from trueheart_core.domain.claims import (
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimView,
    ExtractionRecord,
    ExtractionResult,
    IngestResult,
    is_known,
)
from trueheart_core.domain.extraction.model import ClaimExtractor
from trueheart_core.domain.model import (
    AuditRecord,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    IntegrityReport,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    RecallItem,
    RecallQuery,
    Scope,
)
from trueheart_core.domain.operations import (
    ArtifactCounts,
    BackupReport,
    ErasureReceipt,
    IndexRebuildReport,
    StoreStats,
)
from trueheart_core.domain.portable import ExportReceipt, ImportReceipt, TextWriter
from trueheart_core.domain.search.capsule import TokenEstimator, Utf8BytesEstimator
from trueheart_core.domain.search.model import MemoryCapsule, MemoryPage, SearchQuery, status_filter
from trueheart_core.domain.semantic.embedders import Embedder
from trueheart_core.domain.semantic.model import SemanticStatus
from trueheart_core.domain.semantic.rerank import Reranker
from trueheart_core.errors import (
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    SemanticProjectionError,
    TrueHeartError,
    ValidationError,
    body_free_errors,
)
from trueheart_core.ports import (
    Repository,
    SupportsBackup,
    SupportsStorageSizes,
)
from trueheart_core.service import (
    claim_pages,
    erasure,
    expiry,
    governance,
    hosted,
    integrity,
    loading,
    maintenance,
    portable,
    reading,
    records,
    writing,
)
from trueheart_core.service import claims as claiming
from trueheart_core.service import search as searching
from trueheart_core.service import semantic as projecting
from trueheart_core.service.recall import recall as recall_memories
from trueheart_core.service.records import RowInvalid, scope_key
from trueheart_core.service.retry import retry_conflicts
from trueheart_core.service.search import hybrid

__all__ = ["TrueHeart"]


_D = TypeVar("_D")
MAX_SCAN_CAP = 1_000_000
MAX_SYNC_BATCH = 4096


def _utc_now() -> datetime:
    return datetime.now(UTC)


@body_free_errors
@retry_conflicts(exclude=frozenset({"import_store", "export_store"}))
class TrueHeart:
    """Governed long-term memory over a repository.

    ``clock`` supplies ingest time (called once per ``ingest_event`` call, replays
    included, and once per ``ingest_events`` batch); it must return aware datetimes.
    ``token_estimator`` prices memories in search capsules (default:
    :class:`Utf8BytesEstimator`, ``ceil(UTF-8 bytes / 3)``).
    Closing the service (or leaving its ``with`` block) closes the repository.

    Semantic projection is off unless an ``embedder`` is given. The service then
    snapshots the embedder's identity, dimensions and normalisation, and registers that
    vector space in the store; a store whose current space is another embedder's is
    refused with ``EmbedderMismatch`` unless ``replace_semantic_space`` is true (then
    every existing vector becomes stale, is never scanned, and ``sync_semantic``
    replaces it). With ``auto_index`` every write that creates or restores memories is
    followed, after it commits, by their projection: one ``embed_documents`` call for
    all the memories and claims of the write, in the order written. Searches fuse the
    lexical ranking with the best candidates of an exact cosine comparison of the
    scope's vectors (every eligible one, or only the newest ``semantic_scan_cap`` when it
    is an int; matches need ``minimum_semantic_score``), and with the ``reranker``'s
    order of the best ``rerank_limit`` candidates, weighted ``reranker_weight``. See
    ``docs/semantic.md``.
    """

    def __init__(
        self,
        repository: Repository,
        *,
        clock: Callable[[], datetime] = _utc_now,
        token_estimator: TokenEstimator | None = None,
        embedder: Embedder | None = None,
        auto_index: bool = True,
        semantic_scan_cap: int | None = None,
        minimum_semantic_score: float = 0.05,
        reranker: Reranker | None = None,
        rerank_limit: int = 16,
        reranker_weight: float = 1.25,
        replace_semantic_space: bool = False,
    ) -> None:
        if not callable(getattr(repository, "unit_of_work", None)) or not callable(
            getattr(repository, "close", None)
        ):
            raise ValidationError("repository", "must be a Repository")
        if not callable(clock):
            raise ValidationError("clock", "must be callable")
        estimator = Utf8BytesEstimator() if token_estimator is None else token_estimator
        if (
            isinstance(estimator, type)
            or not isinstance(estimator, TokenEstimator)
            or not callable(estimator.estimate)
            or not isinstance(estimator.name, str)
        ):
            raise ValidationError("token_estimator", "must be a TokenEstimator")
        v.text("token_estimator", estimator.name)
        self._semantic = _semantic_settings(
            embedder,
            semantic_scan_cap,
            minimum_semantic_score,
            reranker,
            rerank_limit,
            reranker_weight,
        )
        if not isinstance(auto_index, bool):
            raise ValidationError("auto_index", "must be a bool")
        if not isinstance(replace_semantic_space, bool):
            raise ValidationError("replace_semantic_space", "must be a bool")
        self._repository = repository
        self._clock = clock
        self._estimator = estimator
        self._auto_index = auto_index and self._semantic is not None
        if self._semantic is not None:
            self._open_space(self._semantic.space, replace_semantic_space)

    # --- lifecycle of the service object ---------------------------------------------------

    def close(self) -> None:
        """Close the underlying repository (idempotent)."""
        self._repository.close()

    def __enter__(self) -> TrueHeart:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- ingest ----------------------------------------------------------------------------

    def _now(self) -> datetime:
        return v.clock_now(self._clock)

    def ingest_event(self, draft: RawEventDraft) -> RawEventReceipt:
        """Record a source event: its body-free receipt, its body and one audit row.

        An identical replay returns the stored receipt (``content_available`` is False if
        the body has expired since); a different one raises ``IdempotencyConflict``. A
        deleted event ID raises ``EntityDeleted`` in that scope forever.
        """
        if not isinstance(draft, RawEventDraft):
            raise ValidationError("draft", "must be a RawEventDraft")
        now = self._now()
        prepared = writing.prepare_event(draft, now)
        with self._repository.unit_of_work("ingest", write=True) as uow:
            receipt = writing.ingest(uow, draft, prepared, alone=True)
            uow.commit()
        return receipt

    def ingest_events(self, drafts: Sequence[RawEventDraft]) -> tuple[RawEventReceipt, ...]:
        """Ingest many events in one transaction, all or nothing, with the rules of
        :meth:`ingest_event`. The clock is read once for the batch. A repeated scope and
        event ID within the batch is a replay of its first occurrence."""
        if not isinstance(drafts, list | tuple):
            raise ValidationError("drafts", "must be a list or tuple of RawEventDraft")
        drafts = v.items(drafts)
        if not all(isinstance(draft, RawEventDraft) for draft in drafts):
            raise ValidationError("drafts", "must contain only RawEventDraft")
        if not drafts:
            return ()
        now = self._now()
        prepared = [writing.prepare_event(draft, now) for draft in drafts]
        with self._repository.unit_of_work("ingest", write=True) as uow:
            receipts = tuple(
                writing.ingest(uow, draft, ready)
                for draft, ready in zip(drafts, prepared, strict=True)
            )
            uow.commit()
        return receipts

    # --- materialize -----------------------------------------------------------------------

    def materialize_once(self, draft: MemoryDraft) -> MemoryRecord:
        """Store a host-derived memory with lineage to its source events, exactly once.

        Checks, in order: a tombstone of this memory ID; an identical replay (returned
        as stored); a tombstone of the same dependency fingerprint; every source in draft
        order; the trust ceiling; the deadlines.
        """
        if not isinstance(draft, MemoryDraft):
            raise ValidationError("draft", "must be a MemoryDraft")
        with self._repository.unit_of_work("materialize", write=True) as uow:
            record = writing.materialize(uow, draft)
            uow.commit()
        self._project_after_write(((record.scope, record.memory_id),))
        return record

    # --- recall ----------------------------------------------------------------------------

    def recall(self, query: RecallQuery) -> tuple[RecallItem, ...]:
        """Active, unexpired, already-created memories of the exact scope at ``as_of``:
        clarity descending, then ``created_at`` descending, then ``memory_id`` ascending,
        at most ``limit``. Every returned row is verified against its digest."""
        if not isinstance(query, RecallQuery):
            raise ValidationError("query", "must be a RecallQuery")
        with self._repository.unit_of_work("recall", write=False) as uow:
            return recall_memories(uow, query)

    # --- claims ------------------------------------------------------------------------

    def materialize_claim(self, draft: ClaimDraft) -> ClaimRecord:
        """Store a claim exactly once, as a governed memory (kind ``"claim"``, content
        its canonical text) plus its structured fields, in one transaction.

        The memory checks of :meth:`materialize_once` come first; then an identical
        replay returns the stored claim (any other difference raises
        ``IdempotencyConflict``), and ``supersedes`` must name a claim of the same scope
        (``EntityDeleted``, ``ScopeMismatch``, ``EntityNotFound`` otherwise).
        """
        if not isinstance(draft, ClaimDraft):
            raise ValidationError("draft", "must be a ClaimDraft")
        with self._repository.unit_of_work("materialize", write=True) as uow:
            record = claiming.materialize(uow, draft)
            uow.commit()
        self._project_after_write(((record.scope, record.claim_id),))
        return record

    def claims(self, query: ClaimQuery) -> ClaimSet:
        """What we believed at ``query.known_at`` about ``query.as_of``: the known claims
        of the exact scope (optionally one subject and predicate) with their status, and
        the conflicts among the current ones. See :mod:`trueheart_core.domain.claims`.

        Without ``query.limit`` the answer holds every claim (the whole scope, or
        subject, is read into memory). With a limit it is one page, in the same
        (subject, predicate, created_at, claim_id) order, whose memory is bounded by the
        limit and one subject and predicate's claims (see ``docs/claims.md``); pass its
        ``next_cursor`` as ``query.cursor`` (same query otherwise) for
        the next page. Each conflict is on the page that holds the last claim of its
        subject and predicate, so the pages' claims and conflicts together are those of
        the unpaged answer. A cursor of another query, or not made by a page, raises
        ``ValidationError`` (``cursor: must be a cursor returned by the same query``),
        and so does one whose last claim has since been deleted (``cursor: names a claim
        that is no longer held``): start again without a cursor.
        """
        if not isinstance(query, ClaimQuery):
            raise ValidationError("query", "must be a ClaimQuery")
        with self._repository.unit_of_work("read", write=False) as uow:
            if query.limit is not None:
                return claim_pages.page(uow, query)
            return claiming.answer(uow, query)

    def ingest_derived(
        self,
        draft: RawEventDraft,
        *,
        memories: Sequence[MemoryDraft] = (),
        claims: Sequence[ClaimDraft] = (),
    ) -> IngestResult:
        """Ingest an event together with memories and claims derived from it (or from
        other events of the scope), all or nothing, in ONE transaction.

        Each part follows the rules of :meth:`ingest_event`, :meth:`materialize_once`
        and :meth:`materialize_claim`, in that order (the memories and claims in the
        order given); the first refusal rolls everything back. A replay of the same
        event, memories and claims returns what is stored.
        """
        if not isinstance(draft, RawEventDraft):
            raise ValidationError("draft", "must be a RawEventDraft")
        memory_drafts = _drafts("memories", memories, MemoryDraft)
        claim_drafts = _drafts("claims", claims, ClaimDraft)
        prepared = writing.prepare_event(draft, self._now())
        with self._repository.unit_of_work("ingest", write=True) as uow:
            receipt = writing.ingest(uow, draft, prepared)
            stored = tuple(writing.materialize(uow, d) for d in memory_drafts)
            claimed = tuple(claiming.materialize(uow, d) for d in claim_drafts)
            uow.commit()
        self._project_after_write(_targets(stored, claimed))
        return IngestResult(receipt, stored, claimed)

    def ingest_extracted(
        self,
        draft: RawEventDraft,
        extractor: ClaimExtractor,
        *,
        claim_ids_by_source: Mapping[str, str] | None = None,
        memories: Sequence[MemoryDraft] = (),
    ) -> ExtractionResult:
        """Ingest an event and the claims an extractor reads from it, in ONE transaction.

        Extraction, and the check of every span against the content, happen before the
        transaction, so invalid extractor output stores nothing. Each claim is made at
        the event's ``occurred_at``, with its source's trust, citing the event alone, under
        a deterministic ID; a replay of the same event and extraction returns what is
        stored. Supersession targets named by the extractor are looked up only in
        ``claim_ids_by_source``. A body-free extraction record is stored with them, and
        ``memories`` (for example the event's own searchable memory) are materialised in
        the same transaction, before the claims.
        """
        if not isinstance(draft, RawEventDraft):
            raise ValidationError("draft", "must be a RawEventDraft")
        memory_drafts = _drafts("memories", memories, MemoryDraft)
        mapping = v.claim_ids_by_source(claim_ids_by_source)
        identity, extraction = claiming.extract(draft, extractor)
        drafts = claiming.drafts_from(draft, extraction, mapping)
        record = ExtractionRecord(
            draft.event_id,
            draft.scope,
            identity,
            tuple(d.claim_id for d in drafts),
            tuple(c.provenance for c in extraction.claims),
            extraction.diagnostics,
        )
        prepared = writing.prepare_event(draft, self._now())
        with self._repository.unit_of_work("ingest", write=True) as uow:
            receipt = writing.ingest(uow, draft, prepared)
            stored_memories = tuple(writing.materialize(uow, d) for d in memory_drafts)
            claims = tuple(claiming.materialize(uow, d) for d in drafts)
            stored = claiming.record_extraction(uow, record)
            uow.commit()
        self._project_after_write(_targets(stored_memories, claims))
        return ExtractionResult(receipt, claims, stored, stored_memories)

    def get_claims(
        self, scope: Scope, claim_ids: Sequence[str], *, as_of: datetime
    ) -> tuple[ClaimView, ...]:
        """The claims with these IDs in the exact scope, each with its status at
        ``as_of`` (as known at ``as_of``), in the order asked; IDs that name no claim of
        the scope, or a claim not known at ``as_of`` (not yet created, sealed, or past its
        recall deadline), are left out."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        # Plain copies: a subclass of str could hash, compare or encode as it likes.
        ids = tuple(
            [v.text("claim_ids", claim_id) for claim_id in _drafts("claim_ids", claim_ids, str)]
        )
        when = v.utc("as_of", as_of)
        with self._repository.unit_of_work("read", write=False) as uow:
            views = claiming.views_for(uow, scope, ids, when)
        return tuple(
            views[claim_id]
            for claim_id in dict.fromkeys(ids)
            if claim_id in views and is_known(views[claim_id].claim, when)
        )

    def get_extraction(self, scope: Scope, event_id: str) -> ExtractionRecord:
        """The extraction record of an event of the exact scope, with the governance
        diagnosis when the event is missing."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        event_id = v.text("event_id", event_id)
        with self._repository.unit_of_work("read", write=False) as uow:
            return claiming.get_extraction(uow, scope, event_id)

    # --- search and exact reads ---------------------------------------------------------

    def search(self, query: SearchQuery) -> MemoryCapsule:
        """The memories of the exact scope most relevant to ``query.text`` at
        ``query.as_of``, packed whole into ``query.budget_tokens``.

        Candidates are active memories with ``created_at <= as_of < recall_until`` (and
        the query's kinds and minimum trust) that share a term with the query. They are
        ranked by BM25 score, then clarity, then ``created_at`` (newest first), then
        ``memory_id``; the best ``2 * limit`` are considered and packed in that order,
        each one whole or not at all, at most ``limit`` of them. The capsule's trace
        says, body-free, why each considered candidate is in or out.

        With an embedder (and ``query.semantic``), the lexical ranking is fused with the
        semantic one (and the reranker's); ``score`` is then the fused score, each trace
        entry carries its signals and ``capsule.semantic`` reports the scan. The query's
        vector is computed before the transaction opens, from the query without its
        time expression.

        A ``time_aware`` query's time expression ("in March", "last week", "most
        recently", "昨天"; ``docs/time-expressions.md``) is resolved at ``as_of``: the
        candidates are limited to the period it names (memories created in it, claims
        valid at some time in it; every time when nothing is in it), the relevant ones
        are ordered newest or oldest first when it asks, and ``capsule.time`` says so.
        A question about a period that names nothing else ("what did I do yesterday?")
        is answered with the memories about the period in time order, never with those
        of every time, and without the embedder.

        An index built by other tokenisation rules (or by a version without search, or
        not built yet) is rebuilt first, in a writing transaction of its own, unless the
        store holds no memory.
        """
        if not isinstance(query, SearchQuery):
            raise ValidationError("query", "must be a SearchQuery")
        semantic = self._semantic if query.semantic else None
        time = searching.read_time(query)
        # A question about a period alone ranks nothing: its vector would not be used.
        vector = None if semantic is None or time.only else hybrid.embed_query(semantic, time.text)
        for _ in range(2):
            with self._repository.unit_of_work("search", write=False) as uow:
                # A store that holds no memory (a new one, or one of events only) has
                # nothing to index: it is answered as it is, so that a read-only open
                # can search it too.
                if searching.index_is_current(uow) or not searching.has_memories(uow):
                    return searching.answer(
                        uow, query, self._estimator, claiming.views_for, semantic, vector, time
                    )
            with self._repository.unit_of_work("index", write=True) as uow:
                searching.ensure_index(uow)
                uow.commit()
        raise RepositoryCorruption("invalid search index")

    def rebuild_search_index(self) -> int:
        """Rebuild the whole search index from the memory rows, in one transaction, and
        return how many memories it holds. Active memories whose rows do not verify are
        left out (``verify_integrity`` reports them). When it returns, entries that were
        removed are gone from the database files (on PostgreSQL, with a role that does
        not own the tables, once the owner's next erasing call has run the rewrite this
        leaves owed)."""
        with self._repository.unit_of_work("index", write=True, erasing=True) as uow:
            indexed = searching.rebuild(uow)
            uow.commit()
        logs.INDEX.info("search index rebuilt: %d memories", indexed)
        return indexed

    def get_memory(self, scope: Scope, memory_id: str) -> MemoryRecord:
        """The memory with this ID in the exact scope, active or sealed.

        Raises ``EntityDeleted`` if it was forgotten or deleted here, ``ScopeMismatch``
        if the ID is known only in another scope, ``EntityNotFound`` otherwise.
        """
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        memory_id = v.text("memory_id", memory_id)
        with self._repository.unit_of_work("read", write=False) as uow:
            return reading.get_memory(uow, scope, memory_id)

    def get_receipt(self, scope: Scope, event_id: str) -> RawEventReceipt:
        """The body-free receipt of the event with this ID in the exact scope, with the
        same diagnosis as :meth:`get_memory` when it is missing."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        event_id = v.text("event_id", event_id)
        with self._repository.unit_of_work("read", write=False) as uow:
            return reading.get_receipt(uow, scope, event_id)

    def derived_memories(self, scope: Scope, event_id: str) -> tuple[str, ...]:
        """The IDs of every memory held (active or sealed) in the exact scope that was
        derived from this event, in ID order: the memories that deleting the event
        would delete with it. With the same diagnosis as :meth:`get_receipt` when the
        event is missing."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        event_id = v.text("event_id", event_id)
        with self._repository.unit_of_work("read", write=False) as uow:
            return reading.derived_memories(uow, scope, event_id)

    def list_memories(
        self,
        scope: Scope,
        *,
        status: MemoryStatus | None = None,
        kinds: tuple[str, ...] = (),
        limit: int = 100,
        cursor: str | None = None,
        descending: bool = False,
    ) -> MemoryPage:
        """Every memory held in the exact scope, page by page, in ``memory_id`` order
        (``descending``: in the reverse order, from the greatest ID).

        ``status`` selects one status (``None``: active and sealed), ``kinds`` some kinds
        (empty: all). Pass a page's ``next_cursor`` to get the next page; it is ``None``
        on the last one. A cursor only works for the listing that made it (the same
        scope, status, kinds and order; ``limit`` may change between pages). Memories
        added while paging appear on a later page if their ID sorts after the cursor in
        the listing's order. Each page walks an index of the scope in that order and
        stops at ``limit``, so a page from either end costs the same; with ``kinds``, the
        walk also passes the scope's memories of other kinds on its way.
        """
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        statuses = status_filter(status)
        kinds = v.text_tuple("kinds", kinds)
        limit = v.limit(limit)
        if cursor is not None:
            if not isinstance(cursor, str):
                raise ValidationError("cursor", "must be a cursor returned by the same listing")
            cursor = v.plain(cursor)
        if type(descending) is not bool:
            raise ValidationError("descending", "must be a bool")
        with self._repository.unit_of_work("read", write=False) as uow:
            return reading.list_memories(uow, scope, statuses, kinds, limit, cursor, descending)

    # --- semantic projection ----------------------------------------------------------

    def _open_space(self, space: projecting.Space, replace: bool) -> None:
        """Refuse another embedder's store; register this embedder's space if it is not
        current (a read-only store is only checked: nothing can be projected into it)."""
        with self._repository.unit_of_work("read", write=False) as uow:
            if not projecting.needs_registration(uow, space, replace):
                return
        try:
            with self._repository.unit_of_work("project", write=True) as uow:
                projecting.register(uow, space, replace)
                uow.commit()
        except RepositoryReadOnly:
            pass

    def _project(self, targets: Sequence[tuple[Scope, str]], *, explicit: bool = False) -> int:
        """Project those of ``targets`` (scope and memory ID pairs) that need it: read
        them in one unit, call the embedder's ``embed_documents`` ONCE with all their
        contents (in the order of ``targets``) with no transaction open, and store the
        vectors in a second unit. A failure names the first memory of that order; an
        ``explicit`` projection (not one after a write) of a service whose space was
        replaced raises ``EmbedderMismatch`` before calling the embedder."""
        settings = self._settings()
        with self._repository.unit_of_work("project", write=False) as uow:
            if explicit:
                projecting.check_current(uow, settings.space)
            todo = projecting.pending(uow, settings.space, targets)
        if not todo:
            return 0
        if explicit:
            # A store that cannot be written is refused (``RepositoryReadOnly``) before
            # the embedder is called: opening a writing unit is the check.
            with self._repository.unit_of_work("project", write=True):
                pass
        blobs = projecting.compute(settings.embedder, settings.space, todo)
        try:
            with self._repository.unit_of_work("project", write=True) as uow:
                stored = projecting.store(uow, settings.space, todo, blobs)
                uow.commit()
        except TrueHeartError as error:
            raise SemanticProjectionError(
                todo[0].memory_id, "the vectors could not be stored"
            ) from error
        return stored

    def _project_after_write(self, targets: Sequence[tuple[Scope, str]]) -> None:
        """After a write committed: project what it created or restored, as one batch.
        Whatever fails now fails after the commit: ``SemanticProjectionError``, so that
        the caller knows the write is stored (another thread may have closed the
        repository, or the store may be busy, before the memories were read)."""
        if self._auto_index and targets:
            try:
                self._project(targets)
            except SemanticProjectionError:
                raise
            except TrueHeartError as error:
                raise SemanticProjectionError(
                    targets[0][1], "the memories to project could not be read"
                ) from error

    def _settings(self) -> hybrid.SemanticSearch:
        if self._semantic is None:
            raise ValidationError("embedder", "is not configured")
        return self._semantic

    def index_semantic(self, scope: Scope, memory_ids: Sequence[str]) -> int:
        """Project those of ``memory_ids`` that are active in the exact scope and lack a
        current vector, with one ``embed_documents`` call (in the order given); returns
        how many vectors were stored. Raises
        ``SemanticProjectionError`` if the embedder fails (vectors stored earlier stay)."""
        settings = self._settings()
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        ids = v.text_tuple(
            "memory_ids", v.items(memory_ids) if isinstance(memory_ids, list) else memory_ids
        )
        projecting.check_unchanged(settings.embedder, settings.space)
        return self._project([(scope, memory_id) for memory_id in ids], explicit=True)

    def semantic_status(self, scope: Scope) -> SemanticStatus:
        """How far the scope's active memories and claims are projected: the IDs without
        a vector (missing) and with a vector of an earlier space or other content
        (stale). Works without an embedder too (against the store's current space)."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        space = None if self._semantic is None else self._semantic.space
        with self._repository.unit_of_work("read", write=False) as uow:
            return projecting.status(uow, scope, space)

    def sync_semantic(
        self,
        scope: Scope,
        batch_size: int = 64,
        progress: Callable[[int, int], object] | None = None,
    ) -> SemanticStatus:
        """Repair the scope's projection: embed every missing or stale memory and claim,
        ``batch_size`` (1 through 4,096) per embedder call and per transaction, calling
        ``progress(done, total)`` after each batch; returns the status afterwards. A
        failing embedder raises ``SemanticProjectionError``; the batches before it stay
        stored, so calling again resumes."""
        settings = self._settings()
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        batch_size = v.whole("batch_size", batch_size, 1, MAX_SYNC_BATCH)
        if progress is not None and not callable(progress):
            raise ValidationError("progress", "must be callable or None")
        projecting.check_unchanged(settings.embedder, settings.space)
        with self._repository.unit_of_work("read", write=False) as uow:
            projecting.check_current(uow, settings.space)
            todo = projecting.repair_ids(projecting.status(uow, scope, settings.space))
        logs.INDEX.info("semantic repair: %d entries to embed", len(todo))
        done = 0
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            self._project([(scope, memory_id) for memory_id in batch], explicit=True)
            done += len(batch)
            if progress is not None:
                progress(done, len(todo))
        with self._repository.unit_of_work("read", write=False) as uow:
            return projecting.status(uow, scope, settings.space)

    # --- govern ----------------------------------------------------------------------------

    def govern(self, command: GovernanceCommand) -> GovernanceResult:
        """Seal, restore, forget or delete one entity, with tombstones and one audit row.

        Deleting a raw event deletes and tombstones every memory derived from it. When a
        forget or delete returns, the removed bodies are gone from the database files.
        The result names the affected IDs and the classes of artifacts removed.
        """
        if not isinstance(command, GovernanceCommand):
            raise ValidationError("command", "must be a GovernanceCommand")
        if (
            command.entity_type is EntityType.RAW_EVENT
            and command.action is not GovernanceAction.DELETE
        ):
            raise ValidationError("action", "is not supported for raw events")
        erasing = command.action in (GovernanceAction.FORGET, GovernanceAction.DELETE)
        with self._repository.unit_of_work("govern", write=True, erasing=erasing) as uow:
            if command.entity_type is EntityType.MEMORY:
                affected, removed = governance.govern_memory(uow, command)
            else:
                affected, removed = governance.delete_event(uow, command)
            writing.audit(
                uow,
                command.scope,
                command.action.value,
                command.entity_type,
                command.entity_id,
                command.occurred_at,
            )
            uow.commit()
        if command.action is GovernanceAction.RESTORE:
            self._project_after_write(((command.scope, command.entity_id),))
        return governance.result(command, affected, removed)

    # --- expire ----------------------------------------------------------------------------

    def expire_raw_content(self, *, as_of: datetime) -> int:
        """Remove every raw body whose ``raw_expires_at`` is at or before ``as_of``, in
        every scope; returns how many were removed. Receipts, hashes, memories and lineage
        stay. When it returns, the removed bodies are gone from the database files."""
        when = v.utc("as_of", as_of)
        with self._repository.unit_of_work("expire", write=True, erasing=True) as uow:
            expired = expiry.expire(uow, when)
            uow.commit()
        return expired

    # --- audit -----------------------------------------------------------------------------

    def audit(self, scope: Scope, *, limit: int = 100) -> tuple[AuditRecord, ...]:
        """The newest body-free lifecycle records of the scope: ``occurred_at``
        descending, then write order descending; ``limit`` is 1 through 100. An ingest's
        record holds the service clock's ingest time, every other record the time its
        caller claimed (a memory's ``created_at``, a command's ``occurred_at``)."""
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        limit = v.limit(limit)
        with self._repository.unit_of_work("audit", write=False) as uow:
            rows = uow.audit.recent(scope_key(scope), limit)
        result: list[AuditRecord] = []
        for row in rows:
            try:
                record = records.audit_from_row(row, scope)
            except RowInvalid:
                loading.corrupt("invalid audit record")
            if not policy.audit_row_allowed(row.action, row.entity_type, row.reason):
                loading.corrupt("invalid audit record")
            result.append(record)
        return tuple(result)

    # --- integrity -------------------------------------------------------------------------

    def verify_integrity(self, scope: Scope | None = None) -> IntegrityReport:
        """Check every stored row (of one scope, or of the whole store) without changing
        anything, and report body-free problems. The whole-store check's cost grows with
        the store, and it alone runs the storage engine's own consistency check; a
        scope's check reads the scope's rows through its indexes, at a cost that follows
        the scope."""
        if scope is not None and not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        with self._repository.unit_of_work("verify", write=False) as uow:
            return integrity.verify(uow, scope)

    # --- operations: subject erasure, statistics, index rebuild, backup ------------------

    def erase_subject(
        self, scope: Scope, *, occurred_at: datetime, dry_run: bool = False, rewrite: bool = True
    ) -> ErasureReceipt:
        """Erase everything held in the exact scope, in one transaction: receipts and
        bodies, memories (active and sealed), lineage edges, claim rows, extraction
        records and the scope's search entries, postings, terms and statistics.

        Every erased event and memory ID is tombstoned as a delete would (memory
        tombstones carry the dependency fingerprint), so ingesting or materialising any
        of them again raises ``EntityDeleted``; one body-free ``erase_subject`` audit row
        is written. Tombstones and audit rows already in the scope are kept. When it
        returns, the removed bytes are gone from the database file and its WAL, and
        ``remaining`` (read in a new transaction) counts what the scope still holds:
        rows another thread or process stored in the scope after the commit included;
        it is ``None`` (and ``verified`` too) when that transaction could not begin
        within the busy timeout.

        ``dry_run=True`` changes nothing (a read-only transaction) and returns what would
        be erased, with ``remaining=None``.

        ``rewrite`` says whether the backend may rewrite its storage to reach that
        guarantee. On SQLite it never needs to: the scope's rows are found through its
        indexes, cross-checked against its audit log (a row a damaged index lost is
        erased too), and overwritten where they lie, at a cost that follows the scope, so
        both values behave the same; :meth:`compact` reclaims the space of erased rows.
        On PostgreSQL ``rewrite=True`` (the default) rewrites every table the rows were
        removed from, at a cost that follows those tables, and ``rewrite=False`` leaves
        the removed row versions until :meth:`compact` (see
        ``docs/security-guarantees.md``).
        See ``docs/operations.md``.
        """
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        when = v.utc("occurred_at", occurred_at)
        if not isinstance(dry_run, bool):
            raise ValidationError("dry_run", "must be a bool")
        if not isinstance(rewrite, bool):
            raise ValidationError("rewrite", "must be a bool")
        if dry_run:
            with self._repository.unit_of_work("erase", write=False) as uow:
                planned = erasure.plan(uow, scope, count=True, thorough=rewrite)
            return ErasureReceipt(
                scope,
                when,
                True,
                planned.counts,
                planned.event_ids,
                planned.memory_ids,
                planned.claim_ids,
            )
        with self._repository.unit_of_work("erase", write=True, erasing=True) as uow:
            planned = erasure.plan(uow, scope, count=False, thorough=rewrite)
            removed = erasure.erase(uow, scope, planned, when, rewrite=rewrite)
            uow.commit()
        left: ArtifactCounts | None
        try:
            with self._repository.unit_of_work("erase", write=False) as uow:
                left = erasure.remaining(uow, scope, thorough=rewrite)
        except RepositoryBusy:
            # The erasure is committed, and was checked complete in its own transaction:
            # only the independent count after it could not be read (another thread or
            # connection held the store past the timeout). The receipt of what was
            # erased is still the caller's.
            left = None
        return ErasureReceipt(
            scope,
            when,
            False,
            removed,
            planned.event_ids,
            planned.memory_ids,
            planned.claim_ids,
            left,
        )

    def compact(self) -> None:
        """Reclaim the space of what was erased, and rewrite the whole store into fresh
        storage, in one erasing unit of work. On SQLite, erased rows keep their size
        (overwritten in place, see :meth:`erase_subject`) until this removes them and
        rewrites the file, then truncates the WAL. On PostgreSQL it rewrites every table,
        which removes the row versions that forget, delete, expiry and
        ``erase_subject(..., rewrite=False)`` leave. Costs what the store holds and holds
        the write lock meanwhile; a store with no files (``:memory:``) has nothing to
        rewrite."""
        with self._repository.unit_of_work("compact", write=True, erasing=True) as uow:
            uow.operations.request_rewrite()
            uow.commit()

    def stats(self, scope: Scope | None = None) -> StoreStats:
        """Row counts of the whole store, or of one exact scope, in one read transaction,
        and the size of the stored data read just before it (``None`` when the backend
        cannot tell, as for ``:memory:``).
        Body-free. Counts of a scope are read through indexes of the scope, at a cost
        that follows the scope's rows, not the store's."""
        if scope is not None and not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        repository = self._repository
        # Sizes first, outside the unit: a backend may read them over a connection of
        # its own, which a unit holding the only one would wait for.
        sizes = repository.storage_sizes() if isinstance(repository, SupportsStorageSizes) else None
        with repository.unit_of_work("stats", write=False) as uow:
            return maintenance.stats(uow, scope, sizes)

    def scopes(
        self, *, tenant_id: str | None = None, owner_id: str | None = None
    ) -> tuple[Scope, ...]:
        """The scopes that hold at least one raw event or memory (of one tenant, and one
        owner, when given), sorted. Cost grows with the number of scopes listed, with
        ``tenant_id``: of the tenant's; without it (``owner_id`` alone too): of every
        scope of the store."""
        if tenant_id is not None:
            tenant_id = v.text("tenant_id", tenant_id)
        if owner_id is not None:
            owner_id = v.text("owner_id", owner_id)
        with self._repository.unit_of_work("stats", write=False) as uow:
            keys = uow.operations.held_scopes(tenant_id, owner_id)
        result = []
        for key in keys:
            try:
                result.append(records.scope_of(key))
            except RowInvalid:
                loading.corrupt("invalid scope")
        return tuple(result)

    def rebuild_indexes(self) -> IndexRebuildReport:
        """Rebuild every derived index from the canonical rows, in one transaction: the
        search index (as :meth:`rebuild_search_index`), the index keys of claim subjects
        and predicates, and the storage engine's own indexes. Calls no provider. Reports
        what changed. When it returns, removed index rows are gone from the database
        files. Cost grows with the store."""
        with self._repository.unit_of_work("rebuild", write=True, erasing=True) as uow:
            report = maintenance.rebuild(uow)
            uow.commit()
        logs.INDEX.info(
            "derived indexes rebuilt: %d search entries (%d added, %d removed), "
            "%d claim keys and %d vector copies repaired",
            report.search_entries_after,
            report.search_entries_added,
            report.search_entries_removed,
            report.claim_keys_repaired,
            report.vector_copies_repaired,
        )
        return report

    def backup(self, path: str | os.PathLike[str]) -> BackupReport:
        """Copy the store, online and as of one committed state, into a new database
        file at ``path`` (file and ``:memory:`` stores alike), readable by
        :class:`SQLiteRepository`. An existing ``path`` is refused with
        ``ValidationError`` and nothing is overwritten; so is a repository without the
        backup capability. The copy keeps whatever the store held when it was made:
        later erasure does not reach it."""
        target = maintenance.backup_target(path)
        repository = self._repository
        if not isinstance(repository, SupportsBackup):
            raise ValidationError("repository", "does not support backup")
        pages, size = repository.backup(target)
        return BackupReport(target, pages, size)

    def export_store(self, out: TextWriter, *, scope: Scope | None = None) -> ExportReceipt:
        """Write the store (or only the exact ``scope``) to ``out`` as a TrueHeart export:
        JSON Lines of format version 1 (``docs/export-format.md``), one ``out.write``
        call per line, as of one consistent snapshot (one reading transaction). Streamed:
        each line is written as soon as its row is read, so memory use does not grow with
        the store. Every row is verified as it is read (``RepositoryCorruption`` for one
        that does not; the lines written before it have no trailer, so an import refuses
        them). Derived indexes and semantic vectors are not exported. A writer
        that refuses text (a binary file, a closed one) raises ``ValidationError``; any
        other exception of the writer (an ``OSError``) propagates as it was raised, after
        the reading transaction has ended. Returns the rows written per kind and the
        file's digest."""
        if scope is not None and not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope or None")
        write = getattr(out, "write", None)
        if not callable(write):
            raise ValidationError("out", "must be a writable text stream")

        def emit(line: str) -> None:
            try:
                write(line)
            except (TypeError, ValueError, UnicodeError):
                raise ValidationError("out", "must be a writable text stream") from None
            except Exception as error:
                raise hosted.HostRaised(error) from None

        exported_at = self._now()
        with hosted.unwrapped(), self._repository.unit_of_work("export", write=False) as uow:
            receipt = portable.export(uow, scope, exported_at, emit)
        logs.STORE.info("store exported: %d rows", receipt.rows)
        return receipt

    def import_store(self, lines: Iterable[str] | Iterable[bytes]) -> ImportReceipt:
        """Store the rows of a TrueHeart export (``lines``: a file opened for reading,
        or any iterable of its lines as ``str`` or UTF-8 ``bytes``, each with its
        newline) into this store, which must be empty, in one writing transaction: all
        or nothing. IDs, times, trust, statuses, lineage, tombstones and audit records
        are stored exactly as exported; the search index is built from the memories, and
        semantic vectors are not (``semantic_status`` shows them pending until
        ``sync_semantic``). Before committing, the whole store is verified as
        ``verify_integrity`` does.

        Raises ``ImportRefused`` when the store is not empty or the file is not a sound
        export: another format or schema version, a line over 16 MiB (a file object is
        read in pieces, so such a line is never read whole), a line that is not
        canonical JSON or whose digest does not match, rows out of order, a missing or
        wrong trailer (a truncated, reordered or edited file), an invalid row, or a row
        that a tombstone of the file forbids. Its message names the problem and the line
        number, never the line's content; nothing is stored. Raises ``ValidationError``
        when ``lines`` is not an iterable of lines (a ``str`` or ``bytes``, an object
        whose ``__iter__`` returns no iterator, a closed file or one not open for
        reading, an item that is neither ``str`` nor ``bytes``). Any other exception of
        ``lines`` (its ``__iter__``, its iterator, reading the file) but a decoding error
        propagates as it was raised, and nothing is stored."""
        source = portable.lines_of(lines)
        with hosted.unwrapped(), self._repository.unit_of_work("import", write=True) as uow:
            receipt = portable.import_lines(uow, source)
            uow.commit()
        logs.STORE.info("store imported: %d rows", receipt.rows)
        return receipt


# --- helpers: one function per rule, shared by the operations above ----------------------


def _drafts(field: str, value: object, kind: type[_D]) -> tuple[_D, ...]:
    if not isinstance(value, list | tuple):
        raise ValidationError(field, f"must be a list or tuple of {kind.__name__}")
    items = v.items(value)
    if not all(isinstance(d, kind) for d in items):
        raise ValidationError(field, f"must be a list or tuple of {kind.__name__}")
    return items


def _targets(
    memories: Sequence[MemoryRecord], claims: Sequence[ClaimRecord]
) -> tuple[tuple[Scope, str], ...]:
    """What a write that stored ``memories`` then ``claims`` projects, in that order, each
    in its own scope."""
    return tuple((m.scope, m.memory_id) for m in memories) + tuple(
        (c.scope, c.claim_id) for c in claims
    )


def _semantic_settings(
    embedder: object,
    scan_cap: object,
    minimum_score: object,
    reranker: object,
    rerank_limit: object,
    reranker_weight: object,
) -> hybrid.SemanticSearch | None:
    if scan_cap is not None:
        if isinstance(scan_cap, bool) or not isinstance(scan_cap, int):
            raise ValidationError(
                "semantic_scan_cap", f"must be None or from 1 through {MAX_SCAN_CAP}"
            )
        scan_cap = int.__int__(scan_cap)
        if not 1 <= scan_cap <= MAX_SCAN_CAP:
            raise ValidationError(
                "semantic_scan_cap", f"must be None or from 1 through {MAX_SCAN_CAP}"
            )
    minimum = v.real(minimum_score)
    if minimum is None or not -1.0 <= minimum <= 1.0:
        raise ValidationError("minimum_semantic_score", "must be from -1.0 through 1.0")
    checked, limit, weight, identity = hybrid.reranker_settings(
        reranker, rerank_limit, reranker_weight
    )
    if embedder is None:
        if reranker is not None:
            raise ValidationError("reranker", "needs an embedder")
        return None
    space = projecting.snapshot(embedder)
    # snapshot checked the protocol; checking it again would read the properties again
    return hybrid.SemanticSearch(
        cast(Embedder, embedder),
        space,
        scan_cap,
        float(minimum),
        checked,
        limit,
        weight,
        hybrid.term_based(embedder),
        reranker_identity=identity,
    )
