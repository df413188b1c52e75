"""``EviCortex``: the evicortex 0.3 API over the governed TrueHeart engine.

Every call maps onto one or more engine calls (see ``docs/evicortex.md``); this module
converts arguments and results and translates errors, and holds no policy of its own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

from evicortex._mapping import (
    call,
    claim_id,
    engine_errors,
    moment,
    plain_text,
    record_id,
    scope_of,
)
from evicortex._model import (
    CapsuleItem,
    ClaimInput,
    ClaimRecord,
    EmbeddingUpsertResult,
    MemoryCapsule,
    MemoryRecord,
    OmittedCandidate,
    SemanticIndexStatus,
    StoreStats,
)
from evicortex.errors import (
    IdempotencyConflictError,
    PurgedError,
    StorageClosedError,
    ValidationError,
)
from trueheart_core import (
    CapsuleDecision,
    ClaimDraft,
    ClaimExtractor,
    ClaimStatus,
    ClaimView,
    Embedder,
    EntityType,
    ExtractionRecord,
    ExtractionResult,
    GovernanceAction,
    GovernanceCommand,
    IngestResult,
    IntegrityReport,
    MemoryDraft,
    RawEventDraft,
    RawEventReceipt,
    Reranker,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    TrueHeart,
    TrustLevel,
    stores,
)
from trueheart_core import MemoryRecord as EngineMemory
from trueheart_core.domain import validation as v
from trueheart_core.domain.validation import utf8_size
from trueheart_core.errors import EntityDeleted, EntityNotFound, ScopeMismatch, body_free_errors

__all__ = ["EviCortex"]

_END_OF_TIME = datetime.max.replace(tzinfo=UTC)
"""The deadline of every record's body, clarity and recall, the last instant a
``datetime`` holds (9999-12-31T23:59:59.999999Z): evidence neither fades nor expires,
however long ago it occurred; it goes when purged."""
_ONE_MICROSECOND = timedelta(microseconds=1)


def _evidence_retention(occurred: datetime) -> RetentionPolicy:
    """The retention that puts every deadline of evidence that occurred at ``occurred``
    at :data:`_END_OF_TIME`. Its spans must be positive, so the evidence must have
    occurred before that instant."""
    span = _END_OF_TIME - occurred
    if span <= timedelta(0):
        raise ValidationError("occurred_at", "must be before 9999-12-31T23:59:59.999999Z")
    return RetentionPolicy(span, span, span)


def _stored_retention(receipt: RawEventReceipt) -> RetentionPolicy:
    """The retention a stored record was written with (records of earlier versions kept
    theirs for 1,000 years), for a replay to be the same request."""
    raw_ttl = receipt.raw_expires_at - receipt.source.occurred_at
    return RetentionPolicy(raw_ttl, receipt.clear_for, receipt.recall_for)


SOURCE_TYPE = "evicortex"
PURGE_REASON = "purge requested"
CLAIM_KIND = "claim"
_VALID = (ClaimStatus.CURRENT,)
"""The claim statuses ``recall`` considers: ``as_of`` selects valid-time state, so only
claims valid then (current) are candidates, for the capsule and the reranker alike."""
_MISSING = (EntityNotFound, ScopeMismatch, EntityDeleted, PurgedError)


def _now() -> datetime:
    return datetime.now(UTC)


@body_free_errors
class EviCortex:
    """An evidence store with the evicortex API. Create it with :meth:`open`."""

    def __init__(self, engine: TrueHeart, clock: _Clock, extractor: ClaimExtractor | None) -> None:
        self._engine: TrueHeart | None = engine
        self._clock = clock
        self._extractor = extractor

    # --- opening and closing -----------------------------------------------------------

    @classmethod
    def open(
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
    ) -> EviCortex:
        """Open (or create) a store at ``path`` (``":memory:"``, a string path or a
        ``pathlib.Path``). The embedder's and reranker's identities are snapshotted
        now; a store projected by another embedder is refused (``EmbedderMismatch``)."""
        if not isinstance(path, str | Path | PathLike):
            raise ValidationError("path", "must be a str or pathlib.Path")
        if extractor is not None and not isinstance(extractor, ClaimExtractor):
            raise ValidationError("extractor", "must be a ClaimExtractor")
        clock = _Clock()
        with engine_errors():
            repository = stores.open_repository(path)
            try:
                engine = TrueHeart(
                    repository,
                    clock=clock,
                    embedder=embedder,
                    auto_index=auto_index,
                    semantic_scan_cap=semantic_scan_cap,
                    minimum_semantic_score=minimum_semantic_score,
                    reranker=reranker,
                    rerank_limit=rerank_limit,
                    reranker_weight=reranker_weight,
                )
            except BaseException:
                repository.close()
                raise
        return cls(engine, clock, extractor)

    def close(self) -> None:
        """Close the store (idempotent). Later calls raise ``StorageClosedError``.

        A close the service underneath refuses (``RepositoryBusy`` while another
        connection holds up an erasure's scrub, or a call of another thread still runs;
        ``RepositoryFull``) closes nothing: the store stays usable, and the next
        ``close()`` tries again."""
        engine = self._engine
        if engine is not None:
            engine.close()
            self._engine = None

    def __enter__(self) -> EviCortex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def engine(self) -> TrueHeart:
        """The TrueHeart service underneath (the governed API of the same store)."""
        if self._engine is None:
            raise StorageClosedError()
        return self._engine

    # --- writing evidence ----------------------------------------------------------------

    def remember(
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
        """Store evidence and its explicit claims atomically (one engine transaction).

        An identical replay under the same ``idempotency_key`` returns the stored record;
        any difference raises ``IdempotencyConflictError``; a purged record's key raises
        ``PurgedError``.
        """
        engine = self.engine
        scope = scope_of(namespace)
        namespace = scope.subject_id
        inputs = _claim_inputs(claims)
        plan = functools.partial(
            self._plan,
            engine,
            scope,
            namespace,
            content,
            kind,
            source,
            occurred_at,
            recorded_at,
            metadata,
            idempotency_key,
            extracted=False,
        )

        def write(plan: _Plan) -> IngestResult:
            drafts = [
                _claim_draft(scope, namespace, plan.memory.memory_id, plan.event, index, claim)
                for index, claim in enumerate(inputs)
            ]
            event = _with_claim_ids(plan.event, [d.claim_id for d in drafts])
            return engine.ingest_derived(event, memories=[plan.memory], claims=drafts)

        named = {claim.supersedes for claim in inputs if claim.supersedes is not None}
        stored = self._written(plan, write, named)
        # The claims of the stored record, as its metadata lists them (a replay returns
        # it as stored; a record with an extraction record is refused by ``_plan``).
        ids = _listed_claim_ids(stored.receipt) or []
        return _built(engine, scope, stored.receipt, stored.memories[0], ids)

    def remember_extracted(
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
        """Store evidence with the claims an extractor reads from it. Extraction and the
        check of every provenance span run before the transaction: invalid extractor
        output stores nothing. ``extractor`` overrides the one given to :meth:`open`."""
        engine = self.engine
        scope = scope_of(namespace)
        namespace = scope.subject_id
        chosen = extractor if extractor is not None else self._extractor
        if chosen is None:
            raise ValidationError("extractor", "must be given here or to open()")
        plan = functools.partial(
            self._plan,
            engine,
            scope,
            namespace,
            content,
            kind,
            source,
            occurred_at,
            recorded_at,
            metadata,
            idempotency_key,
            extracted=True,
        )

        # Read once, as the engine reads it: what it checks is what it is given.
        mapping = call(lambda: v.claim_ids_by_source(claim_ids_by_source))

        def write(plan: _Plan) -> ExtractionResult:
            return engine.ingest_extracted(
                plan.event, chosen, claim_ids_by_source=mapping, memories=[plan.memory]
            )

        result = self._written(plan, write, set(mapping.values()))
        ids = list(result.extraction.claim_ids)
        return _built(engine, scope, result.receipt, result.memories[0], ids)

    def get_extraction(self, namespace: str, memory_id: str) -> ExtractionRecord:
        """The body-free extraction record of a record; ``KeyError`` if there is none."""
        engine = self.engine
        scope = scope_of(namespace)
        try:
            return call(lambda: engine.get_extraction(scope, memory_id))
        except (*_MISSING, ValidationError):
            pass
        _still_open(engine, scope)
        # Raised after the handler: not even ``__context__`` tells why it is missing.
        raise KeyError(memory_id)

    # --- reading -----------------------------------------------------------------------

    def recall(
        self,
        *,
        namespace: str,
        query: str,
        budget_tokens: int = 512,
        as_of: datetime | str | None = None,
        limit: int = 20,
    ) -> MemoryCapsule:
        """The evidence and claims of the namespace most relevant to ``query``, packed
        whole into ``budget_tokens`` (a hard limit under UTF-8 bytes / 3); ``limit``
        bounds the items and never raises the budget. ``as_of`` (default: now) is valid
        time: evidence that occurred later, and claims not valid then (not yet valid,
        ended or superseded), are left out. A claim is recorded when its evidence
        occurred, so a claim (or a superseder) whose evidence occurred after ``as_of`` is
        not seen either."""
        engine = self.engine
        scope = scope_of(namespace)
        namespace = scope.subject_id
        when = _now() if as_of is None else moment("as_of", as_of)
        # Every deadline of evidence is the last instant a datetime holds, and a window
        # ends before its deadline: at that instant the store is read as at the one
        # before, when nothing has faded (no evidence can occur at the last instant).
        searched = when - _ONE_MICROSECOND if when == _END_OF_TIME else when
        with engine_errors(renamed={"text": "query"}):
            question = SearchQuery(
                scope, query, searched, budget_tokens, limit, claim_statuses=_VALID
            )
            capsule = engine.search(question)
        signals = {entry.memory_id: entry.signals for entry in capsule.trace}
        items = []
        for item in capsule.items:
            view = item.claim
            claim = None if view is None else _claim_record(namespace, view)
            items.append(
                CapsuleItem(
                    item.memory.memory_id,
                    item.memory.kind,
                    item.memory.content,
                    item.score,
                    item.rank,
                    item.tokens,
                    item.memory.memory_id if claim is None else claim.memory_id,
                    claim,
                    signals[item.memory.memory_id],
                )
            )
        omitted = tuple(
            OmittedCandidate(e.memory_id, e.rank, e.tokens, e.decision.value)
            for e in capsule.trace
            if e.decision is not CapsuleDecision.INCLUDED
        )
        return MemoryCapsule(
            namespace,
            question.text,  # the plain text searched for, not the caller's object
            when if searched != when else capsule.as_of,
            tuple(items),
            capsule.budget_tokens,
            capsule.used_tokens,
            capsule.limit,
            capsule.estimator,
            capsule.matched,
            omitted,
            () if capsule.semantic is None else capsule.semantic.diagnostics,
            capsule.semantic,
        )

    def expand(self, *, namespace: str, memory_id: str) -> MemoryRecord:
        """The exact record; ``KeyError`` for a missing ID and for another namespace's ID
        alike (nothing is revealed about other namespaces), and for a purged one."""
        engine = self.engine
        scope = scope_of(namespace)
        wanted = plain_text(memory_id)
        if not isinstance(wanted, str):
            _still_open(engine, scope)
            raise KeyError(memory_id)
        return self._record(engine, scope, wanted)

    # --- semantic projection -----------------------------------------------------------

    def index_semantic(self, record: MemoryRecord) -> EmbeddingUpsertResult:
        """Project a record and its claims (those without a current vector); ``KeyError``
        when the store holds no such record (purged, or another store's), as for
        :meth:`expand`. The claims are the stored record's, whatever ``record`` lists."""
        engine = self.engine
        if not isinstance(record, MemoryRecord):
            raise ValidationError("record", "must be a MemoryRecord")
        scope = scope_of(record.namespace)
        stored = self._record(engine, scope, record.id)
        ids = (stored.id, *(claim.id for claim in stored.claims))
        embedded = call(lambda: engine.index_semantic(scope, ids), record.id)
        return EmbeddingUpsertResult(record.id, embedded, len(ids) - embedded)

    def semantic_status(self, namespace: str) -> SemanticIndexStatus:
        """Missing and stale vectors of the namespace's evidence and claims."""
        engine = self.engine
        scope = scope_of(namespace)
        namespace = scope.subject_id
        status = call(lambda: engine.semantic_status(scope))
        return _status(namespace, status)

    def sync_semantic(self, namespace: str, batch_size: int = 64) -> SemanticIndexStatus:
        """Project every missing or stale vector of the namespace, ``batch_size`` per
        embedder call; returns the status afterwards."""
        engine = self.engine
        scope = scope_of(namespace)
        namespace = scope.subject_id
        status = call(lambda: engine.sync_semantic(scope, batch_size))
        return _status(namespace, status)

    # --- integrity, repair, diagnostics, purge -------------------------------------------

    def verify_integrity(self, namespace: str | None = None) -> IntegrityReport:
        """Check every stored row and derived index (of one namespace, or all)."""
        engine = self.engine
        scope = None if namespace is None else scope_of(namespace)
        return call(lambda: engine.verify_integrity(scope))

    def rebuild_indexes(self) -> None:
        """Rebuild the derived indexes from the stored rows; keeps vectors and never
        calls a provider."""
        engine = self.engine
        call(engine.rebuild_indexes)

    def stats(self, namespace: str | None = None) -> StoreStats:
        """Counts of evidence records, claims, namespaces and vectors (of one namespace,
        or of the whole store), with the engine's full statistics."""
        engine = self.engine
        scope = None if namespace is None else scope_of(namespace)
        found = call(lambda: engine.stats(scope))
        claims = dict(found.memories_by_kind).get(CLAIM_KIND, 0)
        if scope is None:
            held = call(lambda: engine.scopes(tenant_id="evicortex", owner_id="namespace"))
            namespaces = len(held)
        else:
            namespaces = 1 if found.memories or found.events else 0
        return StoreStats(found.memories - claims, found.claims, namespaces, found.vectors, found)

    def purge_memory(self, *, namespace: str, memory_id: str) -> bool:
        """Delete one record, its claims and every derived row, with tombstones (it can
        never be written again) and audit, erasing the bytes from the database file.
        Returns whether a record was removed."""
        engine = self.engine
        scope = scope_of(namespace)
        wanted = plain_text(memory_id)
        if not isinstance(wanted, str) or not wanted.strip():
            _still_open(engine, scope)
            return False
        try:
            # No record has an ID the engine refuses (too long, not UTF-8).
            command = call(
                lambda: GovernanceCommand(
                    scope,
                    GovernanceAction.DELETE,
                    EntityType.RAW_EVENT,
                    wanted,
                    _now(),
                    PURGE_REASON,
                )
            )
            call(lambda: engine.govern(command))
        except (*_MISSING, ValidationError):
            _still_open(engine, scope)
            return False
        return True

    # --- helpers ---------------------------------------------------------------------

    def _plan(
        self,
        engine: TrueHeart,
        scope: Scope,
        namespace: str,
        content: object,
        kind: object,
        source: object,
        occurred_at: object,
        recorded_at: object,
        metadata: object,
        idempotency_key: object,
        *,
        extracted: bool,
    ) -> _Plan:
        content, kind, source, idempotency_key = (
            plain_text(content),
            plain_text(kind),
            plain_text(source),
            plain_text(idempotency_key),
        )
        if not isinstance(content, str) or not content:
            raise ValidationError("content", "must be a non-empty string")
        if not isinstance(kind, str) or not kind.strip():
            raise ValidationError("kind", "must be a non-blank string")
        if kind == CLAIM_KIND:
            raise ValidationError("kind", "is reserved for claims")
        if not isinstance(source, str):
            raise ValidationError("source", "must be a string")
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise ValidationError("metadata", "must be a JSON object")
        if idempotency_key is not None and (
            not isinstance(idempotency_key, str) or not idempotency_key.strip()
        ):
            raise ValidationError("idempotency_key", "must be a non-blank string or None")
        if idempotency_key is not None and utf8_size(idempotency_key) is None:
            raise ValidationError("idempotency_key", "must be valid UTF-8")
        occurred = None if occurred_at is None else moment("occurred_at", occurred_at)
        recorded = None if recorded_at is None else moment("recorded_at", recorded_at)
        rid = record_id(namespace, idempotency_key)
        stored = None
        if idempotency_key is not None:
            # A replay takes the times it leaves out from the stored request, so that an
            # identical request is recognised whenever it is repeated.
            stored = self._stored_receipt(engine, scope, rid)
            if stored is not None:
                if recorded is not None and recorded != stored.ingested_at:
                    raise IdempotencyConflictError(rid)
                # A request with an extractor and one without are different requests,
                # but without claims given they write the same event, which the engine
                # would take as a replay (and ingest_extracted would then add claims and
                # an extraction record to the stored record). Whether the stored record
                # was extracted (it has an extraction record) tells them apart, for
                # records written by earlier versions too. This is read before the
                # write, not in its transaction (the engine offers no check there): two
                # such different requests made at once, both finding no record of the
                # key, are not told apart.
                if _has_extraction(engine, scope, rid) != extracted:
                    raise IdempotencyConflictError(rid)
                occurred = stored.source.occurred_at if occurred is None else occurred
                recorded = stored.ingested_at if recorded is None else recorded
        now = _now()
        occurred = now if occurred is None else occurred
        recorded = now if recorded is None else recorded
        if stored is not None and stored.source.occurred_at == occurred:
            retention = _stored_retention(stored)
        else:
            retention = _evidence_retention(occurred)
        source_metadata = {"source": source, "idempotency_key": idempotency_key}
        # Only the key can make the source's metadata too large (the source is checked
        # for at most 128 characters first).
        with engine_errors(rid, {"source_id": "source", "metadata": "idempotency_key"}):
            source_ref = SourceRef(
                source or SOURCE_TYPE, SOURCE_TYPE, occurred, TrustLevel.OBSERVED, source_metadata
            )
        with engine_errors(rid):
            event = RawEventDraft(
                rid,
                scope,
                source_ref,
                content,
                retention,
                metadata,
            )
            memory = MemoryDraft(
                rid, scope, content, (rid,), kind, TrustLevel.OBSERVED, occurred, metadata
            )
        return _Plan(event, memory, recorded, first=idempotency_key is not None and stored is None)

    def _written(
        self, plan: Callable[[], _Plan], write: Callable[[_Plan], _W], supersedes: set[str]
    ) -> _W:
        """``write`` of a new plan, at its recorded time and with the engine's errors
        translated (``supersedes``: the claim IDs the request names as superseded);
        once more, planned again, when a keyed write that found no record of its key
        conflicts: another writer's request of the same key was stored meanwhile, and an
        identical one is then a replay that takes that record's times."""

        def attempt(planned: _Plan) -> _W:
            rid = planned.memory.memory_id
            with (
                engine_errors(rid),
                _supersession(supersedes),
                self._clock.at(planned.recorded_at),
            ):
                return write(planned)

        planned = plan()
        try:
            return attempt(planned)
        except IdempotencyConflictError:
            if not planned.first:
                raise
        return attempt(plan())

    @staticmethod
    def _stored_receipt(engine: TrueHeart, scope: Scope, rid: str) -> RawEventReceipt | None:
        try:
            return call(lambda: engine.get_receipt(scope, rid), rid)
        except (EntityNotFound, ScopeMismatch):
            return None

    def _record(self, engine: TrueHeart, scope: Scope, rid: str) -> MemoryRecord:
        found: tuple[RawEventReceipt, EngineMemory] | None = None
        try:
            with engine_errors():
                found = engine.get_receipt(scope, rid), engine.get_memory(scope, rid)
        except (*_MISSING, ValidationError):
            pass
        # Raised after the handler: not even ``__context__`` tells why it is missing (a
        # missing ID, another namespace's, or a purged one).
        if found is None or found[1].kind == CLAIM_KIND:
            _still_open(engine, scope)
            raise KeyError(rid)
        receipt, memory = found
        return _built(engine, scope, receipt, memory, _claim_ids(engine, scope, receipt))


_PROBE = "evicortex-open-probe"


def _still_open(engine: TrueHeart, scope: Scope) -> None:
    """Raise ``StorageClosedError`` when the service underneath was closed
    (``memory.engine.close()``): it checks a call's arguments before its repository,
    so an ID it refuses tells nothing of whether the store is open. One look-up of a
    receipt that tells (its outcome otherwise does not matter)."""
    try:
        with engine_errors():
            engine.get_receipt(scope, _PROBE)
    except (*_MISSING, ValidationError):
        pass


@contextmanager
def _supersession(supersedes: set[str]) -> Iterator[None]:
    """A write's only reference to other rows is the claim it supersedes: a missing one,
    or one of another namespace, is a bad argument (and says nothing about which); so is
    a purged one, a tombstone of one of the IDs in ``supersedes``. A tombstone of any
    other ID is the record's own or one of its claims': the write is of something purged
    (``PurgedError``)."""
    try:
        yield
    except (EntityNotFound, ScopeMismatch):
        raise ValidationError("supersedes", "must name a claim of the same namespace") from None
    except EntityDeleted as error:
        if str(error).partition(": ")[2] not in supersedes:
            raise
        raise ValidationError("supersedes", "must not name a purged claim") from None


class _Clock:
    """The engine's clock: now, or the ``recorded_at`` of the write in progress."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self) -> datetime:
        fixed: datetime | None = getattr(self._local, "fixed", None)
        return _now() if fixed is None else fixed

    def at(self, moment_: datetime) -> _Fixed:
        return _Fixed(self._local, moment_)


class _Fixed:
    def __init__(self, local: threading.local, moment_: datetime) -> None:
        self._local = local
        self._moment = moment_

    def __enter__(self) -> None:
        self._local.fixed = self._moment

    def __exit__(self, *exc_info: object) -> None:
        self._local.fixed = None


_W = TypeVar("_W")


class _Plan:
    """A write's drafts and time; ``first``: it is keyed, and no record of its key was
    stored when it was planned (a conflict may then be another writer's identical
    request that won the race: see :meth:`EviCortex._written`)."""

    __slots__ = ("event", "first", "memory", "recorded_at")

    def __init__(
        self, event: RawEventDraft, memory: MemoryDraft, recorded_at: datetime, *, first: bool
    ) -> None:
        self.event = event
        self.memory = memory
        self.recorded_at = recorded_at
        self.first = first


def _claim_inputs(claims: object) -> list[ClaimInput]:
    if isinstance(claims, str | bytes) or not isinstance(claims, Iterable):
        raise ValidationError("claims", "must be an iterable of ClaimInput")
    found: list[object] | None
    if isinstance(claims, list | tuple):
        found = list(v.items(claims))  # through the base class, as the engine reads lists
    else:
        try:
            found = list(claims)
        except Exception:  # the host's iterator failed: refused, never passed on
            found = None
    inputs = [claim for claim in found or () if isinstance(claim, ClaimInput)]
    if found is None or len(inputs) != len(found):
        raise ValidationError("claims", "must be an iterable of ClaimInput")
    return inputs


def _claim_draft(
    scope: Scope, namespace: str, rid: str, event: RawEventDraft, index: int, claim: ClaimInput
) -> ClaimDraft:
    assert not isinstance(claim.valid_from, str) and not isinstance(claim.valid_to, str)
    with engine_errors(rid):
        return ClaimDraft(
            claim_id(namespace, rid, index),
            scope,
            claim.subject,
            claim.predicate,
            claim.value,
            (rid,),
            TrustLevel.OBSERVED,
            event.source.occurred_at,
            claim.valid_from,
            claim.valid_to,
            claim.confidence,
            claim.authority,
            claim.supersedes,
        )


def _with_claim_ids(event: RawEventDraft, ids: list[str]) -> RawEventDraft:
    if not ids:
        return event
    source = event.source
    metadata = {**source.metadata, "claim_ids": ids}
    # The claims' IDs are kept in the source's metadata, bounded at 16 KiB.
    with engine_errors(event.event_id, {"metadata": "claims"}):
        return RawEventDraft(
            event.event_id,
            event.scope,
            SourceRef(
                source.source_id, source.source_type, source.occurred_at, source.trust, metadata
            ),
            event.content,
            event.retention,
            event.metadata,
        )


def _has_extraction(engine: TrueHeart, scope: Scope, rid: str) -> bool:
    """Whether the stored event ``rid`` has an extraction record (it was written by
    :meth:`EviCortex.remember_extracted`)."""
    try:
        call(lambda: engine.get_extraction(scope, rid), rid)
    except ValidationError:
        return False
    return True


def _listed_claim_ids(receipt: RawEventReceipt) -> list[str] | None:
    """The claims given with a record, as its source metadata lists them; ``None`` when
    it lists none (a record written without claims, or by an extractor)."""
    listed = receipt.source.metadata.get("claim_ids")
    return [str(x) for x in listed] if isinstance(listed, tuple | list) else None


def _claim_ids(engine: TrueHeart, scope: Scope, receipt: RawEventReceipt) -> list[str]:
    """The claims of a record: those given with it (listed in its source metadata), or
    those an extractor read from it (listed in its extraction record)."""
    listed = _listed_claim_ids(receipt)
    if listed is not None:
        return listed
    try:
        return list(call(lambda: engine.get_extraction(scope, receipt.event_id)).claim_ids)
    except (*_MISSING, ValidationError):
        return []


def _built(
    engine: TrueHeart,
    scope: Scope,
    receipt: RawEventReceipt,
    memory: EngineMemory,
    claim_ids: list[str],
) -> MemoryRecord:
    """The record of an event and its memory, with its claims' status now, or, when the
    evidence occurs later than now, at the time it occurs: a claim is known from its
    evidence's time on, and the record lists every claim it was written with."""
    when = max(_now(), receipt.source.occurred_at)
    views = call(lambda: engine.get_claims(scope, claim_ids, as_of=when))
    return _memory_record(scope.subject_id, receipt, memory, views)


def _claim_record(namespace: str, view: ClaimView) -> ClaimRecord:
    claim = view.claim
    sources = claim.memory.source_event_ids
    return ClaimRecord(
        claim.claim_id,
        namespace,
        sources[0] if sources else "",
        claim.subject,
        claim.predicate,
        claim.value,
        claim.valid_from,
        claim.valid_to,
        claim.confidence,
        claim.authority,
        claim.supersedes,
        view.status.value,
        view.superseded_by,
    )


def _memory_record(
    namespace: str,
    receipt: RawEventReceipt,
    memory: EngineMemory,
    views: tuple[ClaimView, ...],
) -> MemoryRecord:
    source_metadata = receipt.source.metadata
    source = source_metadata.get("source")
    key = source_metadata.get("idempotency_key")
    return MemoryRecord(
        memory.memory_id,
        namespace,
        memory.content,
        memory.kind,
        source if isinstance(source, str) else "",
        receipt.source.occurred_at,
        receipt.ingested_at,
        memory.metadata,
        key if isinstance(key, str) else None,
        receipt.content_hash,
        tuple(_claim_record(namespace, view) for view in views),
    )


def _status(namespace: str, status: Any) -> SemanticIndexStatus:
    return SemanticIndexStatus(
        namespace,
        status.registered,
        status.missing_memory_ids,
        status.stale_memory_ids,
        status.missing_claim_ids,
        status.stale_claim_ids,
    )
