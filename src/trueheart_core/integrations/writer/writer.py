"""The memory writer: a message in, checked memories and claims out, in one transaction.

:meth:`MemoryWriter.write` runs, in this order:

1. **The event.** A text message becomes a :class:`RawEventDraft` (a new event ID unless
   one is given; the writer's retention; the source's time, type and trust); a draft is
   used as given. An event of the scope that already has an extraction record is
   refused with ``IdempotencyConflict`` before the model is asked, and a deleted event
   ID raises ``EntityDeleted`` there.
2. **One model call** for memories and claims, each with a quote of the message
   (:mod:`.reading` for the prompt, the schema and every check). A model failure raises
   ``ProviderError`` and nothing is stored.
3. **The checks** of :mod:`.reading`: every quote located exactly, every span checked;
   what fails is dropped and reported by code.
4. **What the scope already holds**, read through the public API of
   :class:`~trueheart_core.TrueHeart` in the event's scope only, at the event's time:
   a memory whose normalised content equals that of a memory held in the scope
   (active or sealed, any kind) is dropped (``already_stored``); so is a claim whose
   subject and predicate equal, and whose normalised value equals, those of a claim
   ``CURRENT`` in the scope at the event's ``occurred_at``. A claim with the same subject
   and predicate as exactly one current claim of another value supersedes that claim;
   with several, it supersedes none (``supersession_ambiguous``).
5. **One transaction**: :meth:`TrueHeart.ingest_extracted` stores the event, the
   memories (lineage: the event), the claims and the extraction record together, or
   nothing.

The library never runs this on its own: the writer is code the host chooses to call.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trueheart_core.domain import validation as v
from trueheart_core.domain.claims import (
    ClaimQuery,
    ClaimRecord,
    ClaimStatus,
    ExtractionRecord,
)
from trueheart_core.domain.extraction import MAX_EXTRACTED_CLAIMS, ClaimExtraction, ExtractedClaim
from trueheart_core.domain.model import (
    MemoryDraft,
    MemoryRecord,
    RawEventDraft,
    RawEventReceipt,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrustLevel,
)
from trueheart_core.errors import (
    EntityNotFound,
    IdempotencyConflict,
    ProviderError,
    ScopeMismatch,
    ValidationError,
    body_free_errors,
)
from trueheart_core.integrations.writer.chat import ChatClient, ChatSettings, asked
from trueheart_core.integrations.writer.extractor import (
    DEFAULT_AUTHORITY,
    ModelClaimExtractor,
    model_identity,
)
from trueheart_core.integrations.writer.reading import (
    ALREADY_STORED,
    MAX_MEMORIES,
    PROMPT_VERSION,
    SUPERSESSION_AMBIGUOUS,
    TOO_MANY,
    WRITER_PROMPT,
    ReadClaim,
    ReadMemory,
    WriteIssue,
    diagnostics,
    normalised,
    proposals,
    read,
)
from trueheart_core.service.claims import claim_id_for
from trueheart_core.service.trueheart import TrueHeart

__all__ = ["DEFAULT_MEMORY_KIND", "MemoryWriter", "WriteReport", "memory_id_for"]

DEFAULT_MEMORY_KIND = "memory"
"""The ``kind`` of the memories the writer stores, unless the host names another."""

_PAGE = 100


def _utc_now() -> datetime:
    return datetime.now(UTC)


def memory_id_for(scope: Scope, event_id: str, index: int) -> str:
    """The ID of the ``index``-th memory a write stores for an event: ``"memory-"`` and
    the first 32 hexadecimal digits of the SHA-256 of the JSON text
    ``[[tenant_id, owner_id, subject_id], event_id, index]`` (no spaces, UTF-8)."""
    text = json.dumps(
        [[scope.tenant_id, scope.owner_id, scope.subject_id], event_id, index],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return "memory-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _extracted_ids(draft: RawEventDraft) -> frozenset[str]:
    """The IDs an extraction of ``draft``'s event gives its claims (one per position a
    write may keep)."""
    return frozenset(
        claim_id_for(draft.scope, draft.event_id, index) for index in range(MAX_EXTRACTED_CLAIMS)
    )


@dataclass(frozen=True, slots=True)
class WriteReport:
    """What one :meth:`MemoryWriter.write` stored, and what it left out and why.

    ``receipt``, ``memories``, ``claims`` and ``extraction`` are what the transaction
    stored (memories and claims in answer order). ``proposed_memories`` and
    ``proposed_claims`` count what the model proposed; ``dropped`` says, for each item
    left out, which list, its position and a fixed code; ``notes`` holds what was noticed
    about items (``quote_ambiguous``, ``supersession_ambiguous``). Body-free: IDs, counts,
    codes and spans only (the records' own ``repr`` hides their text).
    """

    receipt: RawEventReceipt
    memories: tuple[MemoryRecord, ...]
    claims: tuple[ClaimRecord, ...]
    extraction: ExtractionRecord
    proposed_memories: int
    proposed_claims: int
    dropped: tuple[WriteIssue, ...]
    notes: tuple[WriteIssue, ...]

    @property
    def superseded(self) -> tuple[str, ...]:
        """The IDs of the claims the write's claims supersede, in claim order."""
        return tuple(claim.supersedes for claim in self.claims if claim.supersedes is not None)

    def dropped_counts(self) -> dict[str, int]:
        """How many items were dropped for each code, by code."""
        return dict(sorted(Counter(issue.code for issue in self.dropped).items()))


class _Prepared:
    """The writer's checked extraction, handed to ``ingest_extracted`` as an extractor:
    the model was asked once, before the transaction, and is not asked again."""

    __slots__ = ("_content", "_extraction", "_identity")

    def __init__(self, identity: str, content: str, extraction: ClaimExtraction) -> None:
        self._identity = identity
        self._content = content
        self._extraction = extraction

    @property
    def identity(self) -> str:
        return self._identity

    def extract(self, content: str) -> ClaimExtraction:
        if content != self._content:
            raise ProviderError("the writer's extraction was made for another message")
        return self._extraction


def _model(model: object) -> tuple[ChatClient, bool]:
    if isinstance(model, ModelClaimExtractor):
        return model.client, False
    if isinstance(model, ChatClient):
        return model, False
    if isinstance(model, ChatSettings):
        return ChatClient(model), True
    raise ValidationError("model", "must be a ChatSettings, a ChatClient or a ModelClaimExtractor")


def _retention(value: object) -> RetentionPolicy | None:
    if value is not None and not isinstance(value, RetentionPolicy):
        raise ValidationError("retention", "must be a RetentionPolicy or None")
    return value


@body_free_errors
class MemoryWriter:
    """Turns messages into governed memories and claims with a chat model, keeping only
    what the message says where the model says it does.

    ``service`` is the :class:`TrueHeart` to write to. ``model`` is a :class:`ChatSettings`
    (the writer makes its own client; :meth:`close` closes it), or a :class:`ChatClient`
    or :class:`ModelClaimExtractor` whose client it shares (never closed here).
    ``retention`` is the policy of the events made from text messages (required to write
    text; a :class:`RawEventDraft` brings its own). Memories are stored with ``kind``
    ``memory_kind``; claims with ``authority``. With ``supersede`` false, no claim
    supersedes another. ``clock`` gives the time of a text message written without
    ``occurred_at``.

    Its identity, recorded in each extraction record and memory, is
    ``"trueheart.writer/1:<model>"``.
    """

    __slots__ = (
        "_authority",
        "_client",
        "_clock",
        "_identity",
        "_kind",
        "_owns_client",
        "_retention",
        "_service",
        "_supersede",
    )

    def __init__(
        self,
        service: TrueHeart,
        model: ChatSettings | ChatClient | ModelClaimExtractor,
        *,
        retention: RetentionPolicy | None = None,
        memory_kind: str = DEFAULT_MEMORY_KIND,
        authority: str = DEFAULT_AUTHORITY,
        supersede: bool = True,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if not isinstance(service, TrueHeart):
            raise ValidationError("service", "must be a TrueHeart")
        self._retention = _retention(retention)
        self._kind = v.text("memory_kind", memory_kind)
        self._authority = v.text("authority", authority)
        if not isinstance(supersede, bool):
            raise ValidationError("supersede", "must be a bool")
        if not callable(clock):
            raise ValidationError("clock", "must be callable")
        self._supersede = supersede
        self._clock = clock
        self._service = service
        self._client, self._owns_client = _model(model)
        self._identity = model_identity(
            f"trueheart.writer/{PROMPT_VERSION}", self._client.settings.model
        )

    @property
    def identity(self) -> str:
        """The prompt version and the model name."""
        return self._identity

    def close(self) -> None:
        """Close the client this writer made (idempotent); the service stays open."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> MemoryWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def write(
        self,
        scope: Scope,
        message: str | RawEventDraft,
        *,
        event_id: str | None = None,
        occurred_at: datetime | None = None,
        source_id: str | None = None,
        source_type: str | None = None,
        trust: TrustLevel | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> WriteReport:
        """Ask the model about ``message`` and store what passes, with the event, in ONE
        transaction.

        A text ``message`` becomes an event of ``scope``: ``event_id`` (default
        ``"message-"`` and a random UUID), the writer's retention, and a source
        ``source_id`` (default: the event ID), ``source_type`` (default ``"message"``),
        ``occurred_at`` (default: the clock) and ``trust`` (default ``OBSERVED``), with
        ``metadata``. A :class:`RawEventDraft` is used as it is; it must be of ``scope``
        and these keywords must not be given.

        :raises ProviderError: the model failed (timeout, connection, HTTP error,
            refusal, an answer that is not one JSON object of the documented shape):
            nothing is stored.
        :raises IdempotencyConflict: the event already has an extraction record in the
            scope (checked before the model is asked).
        """
        if not isinstance(scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        draft = self._draft(
            scope, message, event_id, occurred_at, source_id, source_type, trust, metadata
        )
        self._refuse_written(draft)
        answer = asked(self._client, WRITER_PROMPT, draft.content)
        proposed_memories, proposed_claims = proposals(answer, memories=True)
        # Not capped at 100 yet: what the scope already holds is dropped first, so that
        # it takes no place among the kept.
        reading = read(
            draft.content, proposed_memories, proposed_claims, self._authority, capped=False
        )
        dropped, notes = list(reading.dropped), list(reading.notes)
        as_of = draft.source.occurred_at
        memories = self._new_memories(draft.scope, reading.memories, dropped)
        claims, targets = self._new_claims(draft, as_of, reading.claims, dropped, notes)
        gone = {(issue.item, issue.index) for issue in dropped}
        notes = [note for note in notes if (note.item, note.index) not in gone]
        extraction = ClaimExtraction(tuple(claims), diagnostics([*dropped, *notes]))
        result = self._service.ingest_extracted(
            draft,
            _Prepared(self._identity, draft.content, extraction),
            claim_ids_by_source=targets,
            memories=[
                self._memory_draft(draft, position, memory)
                for position, memory in enumerate(memories)
            ],
        )
        return WriteReport(
            result.receipt,
            result.memories,
            result.claims,
            result.extraction,
            len(proposed_memories),
            len(proposed_claims),
            tuple(sorted(dropped, key=_order)),
            tuple(sorted(notes, key=_order)),
        )

    # --- the event ---------------------------------------------------------------------

    def _draft(
        self,
        scope: Scope,
        message: object,
        event_id: str | None,
        occurred_at: datetime | None,
        source_id: str | None,
        source_type: str | None,
        trust: TrustLevel | None,
        metadata: Mapping[str, Any] | None,
    ) -> RawEventDraft:
        if isinstance(message, RawEventDraft):
            given = {
                "event_id": event_id,
                "occurred_at": occurred_at,
                "source_id": source_id,
                "source_type": source_type,
                "trust": trust,
                "metadata": metadata,
            }
            for name, value in given.items():
                if value is not None:
                    raise ValidationError(name, "applies only to a text message")
            if message.scope != scope:
                raise ValidationError("message", "must be a RawEventDraft of the scope")
            return message
        if not isinstance(message, str):
            raise ValidationError("message", "must be a string or a RawEventDraft")
        if self._retention is None:
            raise ValidationError("retention", "must be given to write a text message")
        event = f"message-{uuid.uuid4().hex}" if event_id is None else v.text("event_id", event_id)
        when = v.clock_now(self._clock) if occurred_at is None else occurred_at
        source = SourceRef(
            event if source_id is None else source_id,
            "message" if source_type is None else source_type,
            when,
            TrustLevel.OBSERVED if trust is None else trust,
        )
        return RawEventDraft(
            event, scope, source, message, self._retention, {} if metadata is None else metadata
        )

    def _refuse_written(self, draft: RawEventDraft) -> None:
        """Refuse an event that already has an extraction record, before the model call.

        An event stored without one (by ``ingest_event``) may be written: the transaction
        then replays it, identical or ``IdempotencyConflict``. A deleted ID raises
        ``EntityDeleted`` here."""
        try:
            self._service.get_extraction(draft.scope, draft.event_id)
        except (EntityNotFound, ScopeMismatch):
            return
        except ValidationError as error:
            # The event is stored without an extraction record; anything else (a closed
            # service) fails here, before the model is asked.
            if str(error) != "event_id: has no extraction record":
                raise
            return
        raise IdempotencyConflict(draft.event_id)

    # --- what the scope already holds ---------------------------------------------------

    def _held(self, scope: Scope, wanted: set[str]) -> set[str]:
        """Those of the ``wanted`` normalised contents that a memory held in the scope
        (active or sealed) has. The scope is read page by page and only until every
        wanted content is found, so no more than a page of it is held at a time."""
        found: set[str] = set()
        cursor = None
        while True:
            page = self._service.list_memories(scope, limit=_PAGE, cursor=cursor)
            found.update(wanted.intersection(normalised(m.content) for m in page.items))
            cursor = page.next_cursor
            if cursor is None or found == wanted:
                return found

    def _new_memories(
        self, scope: Scope, memories: Sequence[ReadMemory], dropped: list[WriteIssue]
    ) -> list[ReadMemory]:
        if not memories:
            return []
        held = self._held(scope, {normalised(memory.content) for memory in memories})
        kept: list[ReadMemory] = []
        for memory in memories:
            code = None
            if normalised(memory.content) in held:
                code = ALREADY_STORED
            elif len(kept) >= MAX_MEMORIES:
                code = TOO_MANY
            if code is None:
                kept.append(memory)
            else:
                dropped.append(WriteIssue("memory", memory.index, code, memory.start, memory.end))
        return kept

    def _current(
        self, scope: Scope, as_of: datetime, subject: str, predicate: str
    ) -> list[ClaimRecord]:
        answer = self._service.claims(
            ClaimQuery(
                scope,
                as_of=as_of,
                subject=subject,
                predicate=predicate,
                statuses=(ClaimStatus.CURRENT,),
            )
        )
        return [view.claim for view in answer.claims]

    def _new_claims(
        self,
        draft: RawEventDraft,
        as_of: datetime,
        claims: Sequence[ReadClaim],
        dropped: list[WriteIssue],
        notes: list[WriteIssue],
    ) -> tuple[list[ExtractedClaim], dict[str, str]]:
        current: dict[tuple[str, str], list[ClaimRecord]] = {}
        kept: list[ExtractedClaim] = []
        targets: dict[str, str] = {}
        extracted = _extracted_ids(draft) if claims else frozenset()
        for item in claims:
            claim = item.claim
            key = (claim.subject, claim.predicate)
            if key not in current:
                # A claim extracted from this very event (under an ID its extraction
                # gives) is an earlier write of it that committed while the model
                # answered this one, which the transaction then refuses as a replay that
                # differs: it is neither held nor superseded here. A claim the host made
                # from the event under an ID of its own counts as any other.
                current[key] = [
                    stored
                    for stored in self._current(draft.scope, as_of, *key)
                    if stored.claim_id not in extracted
                ]
            span = claim.provenance
            value = normalised(claim.value)
            code = None
            if any(normalised(stored.value) == value for stored in current[key]):
                code = ALREADY_STORED
            elif len(kept) >= MAX_EXTRACTED_CLAIMS:
                code = TOO_MANY
            if code is not None:
                dropped.append(WriteIssue("claim", item.index, code, span.start, span.end))
                continue
            others = sorted({stored.claim_id for stored in current[key]})
            if self._supersede and len(others) == 1:
                targets[others[0]] = others[0]
                claim = dataclasses.replace(claim, supersedes_source=others[0])
            elif self._supersede and others:
                notes.append(
                    WriteIssue("claim", item.index, SUPERSESSION_AMBIGUOUS, span.start, span.end)
                )
            kept.append(claim)
        return kept, targets

    # --- the memories ------------------------------------------------------------------

    def _memory_draft(self, draft: RawEventDraft, position: int, memory: ReadMemory) -> MemoryDraft:
        return MemoryDraft(
            memory_id_for(draft.scope, draft.event_id, position),
            draft.scope,
            memory.content,
            (draft.event_id,),
            self._kind,
            draft.source.trust,
            draft.source.occurred_at,
            {"writer": self._identity, "span_start": memory.start, "span_end": memory.end},
        )


def _order(issue: WriteIssue) -> tuple[int, int]:
    return (0 if issue.item == "memory" else 1, issue.index)
