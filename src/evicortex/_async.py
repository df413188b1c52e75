"""``AsyncEviCortex``: the evicortex face as coroutines, for hosts that run an event loop.

Each coroutine runs the :class:`EviCortex` method of the same name, with the same
arguments, in the face's own worker thread, and returns what it returns or raises what
it raises. The methods' docstrings are the sync face's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from os import PathLike
from typing import Any, TypeVar

from evicortex._model import (
    ClaimInput,
    EmbeddingUpsertResult,
    MemoryCapsule,
    MemoryRecord,
    SemanticIndexStatus,
    StoreStats,
)
from evicortex._store import EviCortex
from evicortex.errors import StorageClosedError, ValidationError
from trueheart_core import (
    AsyncTrueHeart,
    ClaimExtractor,
    Embedder,
    ExtractionRecord,
    IntegrityReport,
    Reranker,
)
from trueheart_core.service.worker import Gate, Worker, same_docs_as, settled

__all__ = ["AsyncEviCortex"]

THREAD_NAME = "evicortex-async"
"""The prefix of the name of an ``AsyncEviCortex``'s worker thread."""

_R = TypeVar("_R")


class AsyncEviCortex:
    """An evidence store with the evicortex API, as coroutines. Create it with
    ``await AsyncEviCortex.open(path, ...)``, or put an open :class:`EviCortex` behind
    it with ``AsyncEviCortex(store)``; the face owns the store either way.

    Every method is a coroutine that runs the ``EviCortex`` method of the same name in
    the face's worker thread, one call at a time in the order the calls started, and
    returns its result or raises its error (the same class, the same body-free message).
    The event loop is never blocked, and the face is bound to no loop. :attr:`engine` is
    an :class:`~trueheart_core.AsyncTrueHeart` over the same store whose calls run in
    the same thread, in the same queue.

    A call cancelled before the worker starts it is taken off the queue and never runs.
    A call the worker has started is not interrupted: it runs to its end there (its
    transactions commit or roll back as they would have), its outcome is dropped, and
    the caller gets ``CancelledError`` at once; the next call starts after it.

    :meth:`aclose` (and ``close``, and leaving ``async with``) lets the running call
    finish, fails the calls still waiting and refuses new ones with
    ``StorageClosedError``, closes the store once, and returns when the worker thread
    has ended. It is idempotent. A close the store refuses (see :meth:`EviCortex.close`)
    did not happen: it raises that error, the face takes calls again, and the next
    :meth:`aclose` tries again.
    """

    def __init__(self, store: EviCortex) -> None:
        if not isinstance(store, EviCortex):
            raise ValidationError("store", "must be an EviCortex")
        self._attach(store, Worker(THREAD_NAME))

    def _attach(self, store: EviCortex, worker: Worker) -> None:
        self._store = store
        self._worker = worker
        self._gate = Gate(StorageClosedError)
        self._engine: AsyncTrueHeart | None = None

    async def _run(self, function: Callable[[], _R]) -> _R:
        return await self._worker.call(self._gate, function)

    # --- opening and closing -----------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | PathLike[str] = ":memory:",
        *,
        embedder: Embedder | None = None,
        extractor: ClaimExtractor | None = None,
        auto_index: bool = True,
        semantic_scan_cap: int = 1024,
        minimum_semantic_score: float = 0.05,
        reranker: Reranker | None = None,
        rerank_limit: int = 16,
        reranker_weight: float = 1.25,
    ) -> AsyncEviCortex:
        """Open (or create) a store at ``path``, as :meth:`EviCortex.open` does, in the
        new face's worker thread (the event loop is not blocked), with the same
        arguments and errors. A cancelled open closes the store it may have opened."""
        worker = Worker(THREAD_NAME)
        gate = Gate(StorageClosedError)
        job = worker.submit(
            gate,
            lambda: EviCortex.open(
                path,
                embedder=embedder,
                extractor=extractor,
                auto_index=auto_index,
                semantic_scan_cap=semantic_scan_cap,
                minimum_semantic_score=minimum_semantic_score,
                reranker=reranker,
                rerank_limit=rerank_limit,
                reranker_weight=reranker_weight,
            ),
        )

        def close_opened() -> None:
            if job.done() and not job.cancelled() and job.exception() is None:
                job.result().close()

        try:
            store = await settled(job, cancel=True)
        except Exception:
            await worker.close(gate, close_opened, stop=True)
            raise
        except BaseException:  # cancelled: the thread ends once it has closed the store
            worker.abandon(close_opened)
            raise
        face = cls.__new__(cls)
        face._attach(store, worker)
        return face

    async def aclose(self) -> None:
        """Close the store, once (see the class docstring): the running call finishes,
        waiting and later calls raise ``StorageClosedError``, and the worker thread has
        ended when this returns. Cancelling it does not stop the close."""
        await self._worker.close(self._gate, self._store.close, stop=True)

    async def close(self) -> None:
        """The same as :meth:`aclose`."""
        await self.aclose()

    async def __aenter__(self) -> AsyncEviCortex:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def engine(self) -> AsyncTrueHeart:
        """The TrueHeart service underneath as an ``AsyncTrueHeart`` whose calls share
        this face's worker thread and queue; closing it closes the service (as
        ``EviCortex.engine.close()`` does), not this face. Raises ``StorageClosedError``
        once the store is closed."""
        if self._gate.closing:
            raise StorageClosedError()
        service = self._store.engine
        if self._engine is None:
            self._engine = AsyncTrueHeart._over(service, self._worker, owner=False)
        return self._engine

    # --- writing evidence ----------------------------------------------------------------

    @same_docs_as(EviCortex.remember)
    async def remember(
        self,
        *,
        namespace: str,
        content: str,
        kind: str = "episode",
        source: str = "",
        occurred_at: datetime | str | None = None,
        recorded_at: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        claims: Iterable[ClaimInput] = (),
    ) -> MemoryRecord:
        return await self._run(
            lambda: self._store.remember(
                namespace=namespace,
                content=content,
                kind=kind,
                source=source,
                occurred_at=occurred_at,
                recorded_at=recorded_at,
                metadata=metadata,
                idempotency_key=idempotency_key,
                claims=claims,
            )
        )

    @same_docs_as(EviCortex.remember_extracted)
    async def remember_extracted(
        self,
        *,
        namespace: str,
        content: str,
        kind: str = "episode",
        source: str = "",
        occurred_at: datetime | str | None = None,
        recorded_at: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        claim_ids_by_source: Mapping[str, str] | None = None,
        extractor: ClaimExtractor | None = None,
    ) -> MemoryRecord:
        return await self._run(
            lambda: self._store.remember_extracted(
                namespace=namespace,
                content=content,
                kind=kind,
                source=source,
                occurred_at=occurred_at,
                recorded_at=recorded_at,
                metadata=metadata,
                idempotency_key=idempotency_key,
                claim_ids_by_source=claim_ids_by_source,
                extractor=extractor,
            )
        )

    @same_docs_as(EviCortex.get_extraction)
    async def get_extraction(self, namespace: str, memory_id: str) -> ExtractionRecord:
        return await self._run(lambda: self._store.get_extraction(namespace, memory_id))

    # --- reading -----------------------------------------------------------------------

    @same_docs_as(EviCortex.recall)
    async def recall(
        self,
        *,
        namespace: str,
        query: str,
        budget_tokens: int = 512,
        as_of: datetime | str | None = None,
        limit: int = 20,
    ) -> MemoryCapsule:
        return await self._run(
            lambda: self._store.recall(
                namespace=namespace,
                query=query,
                budget_tokens=budget_tokens,
                as_of=as_of,
                limit=limit,
            )
        )

    @same_docs_as(EviCortex.expand)
    async def expand(self, *, namespace: str, memory_id: str) -> MemoryRecord:
        return await self._run(lambda: self._store.expand(namespace=namespace, memory_id=memory_id))

    # --- semantic projection -----------------------------------------------------------

    @same_docs_as(EviCortex.index_semantic)
    async def index_semantic(self, record: MemoryRecord) -> EmbeddingUpsertResult:
        return await self._run(lambda: self._store.index_semantic(record))

    @same_docs_as(EviCortex.semantic_status)
    async def semantic_status(self, namespace: str) -> SemanticIndexStatus:
        return await self._run(lambda: self._store.semantic_status(namespace))

    @same_docs_as(EviCortex.sync_semantic)
    async def sync_semantic(self, namespace: str, batch_size: int = 64) -> SemanticIndexStatus:
        return await self._run(lambda: self._store.sync_semantic(namespace, batch_size))

    # --- integrity, repair, diagnostics, purge -------------------------------------------

    @same_docs_as(EviCortex.verify_integrity)
    async def verify_integrity(self, namespace: str | None = None) -> IntegrityReport:
        return await self._run(lambda: self._store.verify_integrity(namespace))

    @same_docs_as(EviCortex.rebuild_indexes)
    async def rebuild_indexes(self) -> None:
        await self._run(self._store.rebuild_indexes)

    @same_docs_as(EviCortex.stats)
    async def stats(self, namespace: str | None = None) -> StoreStats:
        return await self._run(lambda: self._store.stats(namespace))

    @same_docs_as(EviCortex.purge_memory)
    async def purge_memory(self, *, namespace: str, memory_id: str) -> bool:
        return await self._run(
            lambda: self._store.purge_memory(namespace=namespace, memory_id=memory_id)
        )
