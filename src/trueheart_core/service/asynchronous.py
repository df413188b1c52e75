"""``AsyncTrueHeart``: the TrueHeart face as coroutines, for hosts that run an event loop.

Each coroutine runs the :class:`TrueHeart` method of the same name, with the same
arguments, in the face's own worker thread (``service/worker.py``), and returns what it
returns or raises what it raises. The methods' docstrings are the sync face's own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

from trueheart_core.domain.claims import (
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimView,
    ExtractionRecord,
    ExtractionResult,
    IngestResult,
)
from trueheart_core.domain.extraction.model import ClaimExtractor
from trueheart_core.domain.model import (
    AuditRecord,
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
    BackupReport,
    ErasureReceipt,
    IndexRebuildReport,
    StoreStats,
)
from trueheart_core.domain.portable import ExportReceipt, ImportReceipt, TextWriter
from trueheart_core.domain.search.capsule import TokenEstimator
from trueheart_core.domain.search.model import MemoryCapsule, MemoryPage, SearchQuery
from trueheart_core.domain.semantic.embedders import Embedder
from trueheart_core.domain.semantic.model import SemanticStatus
from trueheart_core.domain.semantic.rerank import Reranker
from trueheart_core.errors import ValidationError
from trueheart_core.ports import Repository
from trueheart_core.service.trueheart import TrueHeart, _utc_now
from trueheart_core.service.worker import Gate, Worker, same_docs_as

__all__ = ["AsyncTrueHeart"]

THREAD_NAME = "trueheart-async"
"""The prefix of the name of an ``AsyncTrueHeart``'s worker thread."""

_R = TypeVar("_R")


def _closed() -> ValidationError:
    """What the sync face raises once its repository is closed."""
    return ValidationError("repository", "is closed")


class AsyncTrueHeart:
    """Governed long-term memory over a repository, as coroutines.

    ``AsyncTrueHeart(repository, **options)`` takes the options of :class:`TrueHeart`
    and builds one in the caller's thread, as the sync constructor does (with an
    ``embedder`` it reads, and may register, the store's vector space);
    :meth:`wrap` puts a ``TrueHeart`` built elsewhere behind this face instead. Either
    way the face owns the service: closing the face closes it and its repository.

    Every method is a coroutine that runs the ``TrueHeart`` method of the same name in
    the face's worker thread, one call at a time in the order the calls started, and
    returns its result or raises its error (the same ``TrueHeartError``, with the same
    body-free message). The event loop is never blocked, and the face is bound to no
    loop: it may be awaited from one loop after another. Host code the service calls
    (clock, token estimator, embedder, reranker, extractor, a ``progress`` callback)
    runs in the worker thread. The thread starts with the first call and ends with
    :meth:`aclose`.

    A call cancelled before the worker starts it is taken off the queue and never runs.
    A call the worker has started is not interrupted: it runs to its end there (its
    transactions commit or roll back as they would have), its outcome is dropped, and
    the caller gets ``CancelledError`` at once; the next call starts after it. (The
    cancellation reaches a call when its task next runs: a call the worker started
    before that counts as started.)

    :meth:`aclose` (and ``close``, and leaving ``async with``) lets the running call
    finish, fails the calls still waiting and refuses new ones with
    ``ValidationError("repository: is closed")``, closes the service once, and returns
    when the worker thread has ended. It is idempotent. A close the service refuses
    (``RepositoryBusy`` while an erasure's scrub is held up by another connection, or a
    call of another thread outlasts the busy timeout) did not happen: it raises that
    error, the face takes calls again, and the next :meth:`aclose` tries again.
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
        service = TrueHeart(
            repository,
            clock=clock,
            token_estimator=token_estimator,
            embedder=embedder,
            auto_index=auto_index,
            semantic_scan_cap=semantic_scan_cap,
            minimum_semantic_score=minimum_semantic_score,
            reranker=reranker,
            rerank_limit=rerank_limit,
            reranker_weight=reranker_weight,
            replace_semantic_space=replace_semantic_space,
        )
        self._attach(service, Worker(THREAD_NAME), owner=True)

    @classmethod
    def wrap(cls, service: TrueHeart) -> AsyncTrueHeart:
        """This face over an existing ``TrueHeart``, which it then owns: closing the face
        closes the service. Calls made on ``service`` directly run in their caller's
        thread and are not queued behind this face's calls (the repository still runs
        one transaction at a time)."""
        if not isinstance(service, TrueHeart):
            raise ValidationError("service", "must be a TrueHeart")
        return cls._over(service, Worker(THREAD_NAME), owner=True)

    @classmethod
    def _over(cls, service: TrueHeart, worker: Worker, *, owner: bool) -> AsyncTrueHeart:
        """A face over ``service`` whose calls run in ``worker`` (shared with another
        face when ``owner`` is false: closing this face then closes the service but
        leaves the worker to its owner)."""
        face = cls.__new__(cls)
        face._attach(service, worker, owner=owner)
        return face

    def _attach(self, service: TrueHeart, worker: Worker, *, owner: bool) -> None:
        self._service = service
        self._worker = worker
        self._owner = owner
        self._gate = Gate(_closed)

    async def _run(self, function: Callable[[], _R]) -> _R:
        return await self._worker.call(self._gate, function)

    # --- lifecycle of the face -----------------------------------------------------------

    async def aclose(self) -> None:
        """Close the face and the service underneath, once (see the class docstring):
        the running call finishes, waiting and later calls raise ``ValidationError``,
        and the worker thread has ended when this returns. Cancelling it does not stop
        the close."""
        await self._worker.close(self._gate, self._service.close, stop=self._owner)

    async def close(self) -> None:
        """The same as :meth:`aclose`."""
        await self.aclose()

    async def __aenter__(self) -> AsyncTrueHeart:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- ingest and materialize ----------------------------------------------------------

    @same_docs_as(TrueHeart.ingest_event)
    async def ingest_event(self, draft: RawEventDraft) -> RawEventReceipt:
        return await self._run(lambda: self._service.ingest_event(draft))

    @same_docs_as(TrueHeart.ingest_events)
    async def ingest_events(self, drafts: Sequence[RawEventDraft]) -> tuple[RawEventReceipt, ...]:
        return await self._run(lambda: self._service.ingest_events(drafts))

    @same_docs_as(TrueHeart.materialize_once)
    async def materialize_once(self, draft: MemoryDraft) -> MemoryRecord:
        return await self._run(lambda: self._service.materialize_once(draft))

    @same_docs_as(TrueHeart.recall)
    async def recall(self, query: RecallQuery) -> tuple[RecallItem, ...]:
        return await self._run(lambda: self._service.recall(query))

    # --- claims ------------------------------------------------------------------------

    @same_docs_as(TrueHeart.materialize_claim)
    async def materialize_claim(self, draft: ClaimDraft) -> ClaimRecord:
        return await self._run(lambda: self._service.materialize_claim(draft))

    @same_docs_as(TrueHeart.claims)
    async def claims(self, query: ClaimQuery) -> ClaimSet:
        return await self._run(lambda: self._service.claims(query))

    @same_docs_as(TrueHeart.ingest_derived)
    async def ingest_derived(
        self,
        draft: RawEventDraft,
        *,
        memories: Sequence[MemoryDraft] = (),
        claims: Sequence[ClaimDraft] = (),
    ) -> IngestResult:
        return await self._run(
            lambda: self._service.ingest_derived(draft, memories=memories, claims=claims)
        )

    @same_docs_as(TrueHeart.ingest_extracted)
    async def ingest_extracted(
        self,
        draft: RawEventDraft,
        extractor: ClaimExtractor,
        *,
        claim_ids_by_source: Mapping[str, str] | None = None,
        memories: Sequence[MemoryDraft] = (),
    ) -> ExtractionResult:
        return await self._run(
            lambda: self._service.ingest_extracted(
                draft, extractor, claim_ids_by_source=claim_ids_by_source, memories=memories
            )
        )

    @same_docs_as(TrueHeart.get_claims)
    async def get_claims(
        self, scope: Scope, claim_ids: Sequence[str], *, as_of: datetime
    ) -> tuple[ClaimView, ...]:
        return await self._run(lambda: self._service.get_claims(scope, claim_ids, as_of=as_of))

    @same_docs_as(TrueHeart.get_extraction)
    async def get_extraction(self, scope: Scope, event_id: str) -> ExtractionRecord:
        return await self._run(lambda: self._service.get_extraction(scope, event_id))

    # --- search and exact reads ---------------------------------------------------------

    @same_docs_as(TrueHeart.search)
    async def search(self, query: SearchQuery) -> MemoryCapsule:
        return await self._run(lambda: self._service.search(query))

    @same_docs_as(TrueHeart.rebuild_search_index)
    async def rebuild_search_index(self) -> int:
        return await self._run(self._service.rebuild_search_index)

    @same_docs_as(TrueHeart.get_memory)
    async def get_memory(self, scope: Scope, memory_id: str) -> MemoryRecord:
        return await self._run(lambda: self._service.get_memory(scope, memory_id))

    @same_docs_as(TrueHeart.get_receipt)
    async def get_receipt(self, scope: Scope, event_id: str) -> RawEventReceipt:
        return await self._run(lambda: self._service.get_receipt(scope, event_id))

    @same_docs_as(TrueHeart.derived_memories)
    async def derived_memories(self, scope: Scope, event_id: str) -> tuple[str, ...]:
        return await self._run(lambda: self._service.derived_memories(scope, event_id))

    @same_docs_as(TrueHeart.list_memories)
    async def list_memories(
        self,
        scope: Scope,
        *,
        status: MemoryStatus | None = None,
        kinds: tuple[str, ...] = (),
        limit: int = 100,
        cursor: str | None = None,
        descending: bool = False,
    ) -> MemoryPage:
        return await self._run(
            lambda: self._service.list_memories(
                scope,
                status=status,
                kinds=kinds,
                limit=limit,
                cursor=cursor,
                descending=descending,
            )
        )

    # --- semantic projection ----------------------------------------------------------

    @same_docs_as(TrueHeart.index_semantic)
    async def index_semantic(self, scope: Scope, memory_ids: Sequence[str]) -> int:
        return await self._run(lambda: self._service.index_semantic(scope, memory_ids))

    @same_docs_as(TrueHeart.semantic_status)
    async def semantic_status(self, scope: Scope) -> SemanticStatus:
        return await self._run(lambda: self._service.semantic_status(scope))

    @same_docs_as(TrueHeart.sync_semantic)
    async def sync_semantic(
        self,
        scope: Scope,
        batch_size: int = 64,
        progress: Callable[[int, int], object] | None = None,
    ) -> SemanticStatus:
        return await self._run(lambda: self._service.sync_semantic(scope, batch_size, progress))

    # --- govern, expire, audit, integrity --------------------------------------------------

    @same_docs_as(TrueHeart.govern)
    async def govern(self, command: GovernanceCommand) -> GovernanceResult:
        return await self._run(lambda: self._service.govern(command))

    @same_docs_as(TrueHeart.expire_raw_content)
    async def expire_raw_content(self, *, as_of: datetime) -> int:
        return await self._run(lambda: self._service.expire_raw_content(as_of=as_of))

    @same_docs_as(TrueHeart.audit)
    async def audit(self, scope: Scope, *, limit: int = 100) -> tuple[AuditRecord, ...]:
        return await self._run(lambda: self._service.audit(scope, limit=limit))

    @same_docs_as(TrueHeart.verify_integrity)
    async def verify_integrity(self, scope: Scope | None = None) -> IntegrityReport:
        return await self._run(lambda: self._service.verify_integrity(scope))

    # --- operations: subject erasure, statistics, index rebuild, backup ------------------

    @same_docs_as(TrueHeart.erase_subject)
    async def erase_subject(
        self, scope: Scope, *, occurred_at: datetime, dry_run: bool = False, rewrite: bool = True
    ) -> ErasureReceipt:
        return await self._run(
            lambda: self._service.erase_subject(
                scope, occurred_at=occurred_at, dry_run=dry_run, rewrite=rewrite
            )
        )

    @same_docs_as(TrueHeart.compact)
    async def compact(self) -> None:
        return await self._run(self._service.compact)

    @same_docs_as(TrueHeart.stats)
    async def stats(self, scope: Scope | None = None) -> StoreStats:
        return await self._run(lambda: self._service.stats(scope))

    @same_docs_as(TrueHeart.scopes)
    async def scopes(
        self, *, tenant_id: str | None = None, owner_id: str | None = None
    ) -> tuple[Scope, ...]:
        return await self._run(lambda: self._service.scopes(tenant_id=tenant_id, owner_id=owner_id))

    @same_docs_as(TrueHeart.rebuild_indexes)
    async def rebuild_indexes(self) -> IndexRebuildReport:
        return await self._run(self._service.rebuild_indexes)

    @same_docs_as(TrueHeart.backup)
    async def backup(self, path: str | os.PathLike[str]) -> BackupReport:
        return await self._run(lambda: self._service.backup(path))

    @same_docs_as(TrueHeart.export_store)
    async def export_store(self, out: TextWriter, *, scope: Scope | None = None) -> ExportReceipt:
        return await self._run(lambda: self._service.export_store(out, scope=scope))

    @same_docs_as(TrueHeart.import_store)
    async def import_store(self, lines: Iterable[str] | Iterable[bytes]) -> ImportReceipt:
        return await self._run(lambda: self._service.import_store(lines))
