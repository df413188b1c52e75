"""Stateful model check of the whole lifecycle.

A hypothesis state machine drives ingest (new, replay, conflicting replay, batches),
materialization (new, replay, trust escalation, missing sources, tombstones), recall,
governance, raw-content expiry and audit against a small in-memory model that follows the
written contract literally. Every result is compared in full: receipts, records, recall
ids/order/clarity, affected ids, error classes and messages, audit rows and their order.
It runs on a SQLite file and on a PostgreSQL schema, against the same model.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any, cast

from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import postgres_configuration
from trueheart_core import (
    AuditRecord,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    IdempotencyConflict,
    InvalidTransition,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    RecallQuery,
    RetentionPolicy,
    Scope,
    ScopeMismatch,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    TrustEscalation,
    TrustLevel,
    ValidationError,
)
from trueheart_core.domain.search.tokenize import tokenize
from trueheart_core.ports import Repository

BASE = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
MIN_UTC = datetime(1, 1, 1, tzinfo=UTC)
MAX_UTC = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)

SCOPES = (
    Scope("tenant", "owner", "subject-1"),
    Scope("tenant", "owner", "subject-2"),
)
EVENT_IDS = ("e0", "e1", "e2", "e3", "e4")
MEMORY_IDS = ("m0", "m1", "m2", "m3", "M4", "m-é")
KINDS = ("fact", "preference")
CONTENTS = ("alpha", "beta", "  ", "gamma \u00e9\U0001f600")
SEARCH_TEXTS = ("alpha", "beta", "ALPHA gamma", "\u00c9", "\U0001f600", "delta", "beta, alpha!")
METADATAS: tuple[dict[str, Any], ...] = (
    {},
    {"a": 1},
    {"a": True},
    {"a": 1.0},
    {"k": [1, "x", None]},
    {"\u00e9": {"n": -5, "f": 0.5}},
)
OFFSETS_MINUTES = (0, 0, 330, -480, 23 * 60 + 59, -(23 * 60 + 59))

INGEST_REASON = "event ingested"
MATERIALIZE_REASON = "memory materialized"
EXPIRE_REASON = "raw content expired"
GOVERN_REASON = "governance requested"


# ---------------------------------------------------------------------------
# strategies


def _utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC)


far_instants = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)
).map(_utc)
near_instants = st.integers(-10_000_000, 10_000_000).map(
    lambda us: BASE + timedelta(microseconds=us)
)
day_instants = st.integers(-4_000, 4_000).map(lambda d: BASE + timedelta(days=d))
shared_instants = st.sampled_from((BASE, BASE + timedelta(microseconds=1), MIN_UTC))
instants = st.one_of(far_instants, near_instants, near_instants, day_instants)

durations = st.one_of(
    st.integers(1, 1_000_000).map(lambda us: timedelta(microseconds=us)),
    st.integers(1, 400).map(lambda d: timedelta(days=d)),
    st.integers(1, 400).map(lambda d: timedelta(days=d)),
    st.integers(1, 3_650_000).map(lambda d: timedelta(days=d)),
)
extra_durations = st.one_of(st.just(timedelta(0)), durations)
event_trusts = st.sampled_from(
    (TrustLevel.UNTRUSTED, TrustLevel.OBSERVED, TrustLevel.CONFIRMED, TrustLevel.CONFIRMED)
)
memory_trusts = st.sampled_from(
    (TrustLevel.UNTRUSTED, TrustLevel.UNTRUSTED, TrustLevel.OBSERVED, TrustLevel.CONFIRMED)
)


# ---------------------------------------------------------------------------
# helpers


def canon(value: object) -> str:
    """Canonical JSON text exactly as the contract defines it."""

    def plain(item: object) -> object:
        if isinstance(item, Mapping):
            return {key: plain(sub) for key, sub in item.items()}
        if isinstance(item, list | tuple):
            return [plain(sub) for sub in item]
        return item

    return json.dumps(
        plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprint(scope: Scope, kind: str, source_ids: tuple[str, ...]) -> str:
    payload = {
        "kind": kind,
        "scope": {
            "tenant_id": scope.tenant_id,
            "owner_id": scope.owner_id,
            "subject_id": scope.subject_id,
        },
        "source_event_ids": sorted(source_ids),
    }
    return sha(canon(payload))


def present(dt: datetime, offset_minutes: int) -> datetime:
    """The same instant shown in another fixed offset, when representable."""
    try:
        return dt.astimezone(timezone(timedelta(minutes=offset_minutes)))
    except (OverflowError, ValueError):
        return dt


def pick(
    boundaries: list[datetime], fallback: st.SearchStrategy[datetime], weight: int
) -> st.SearchStrategy[datetime]:
    """A boundary point ``weight`` times out of ``weight + 1``, else the fallback."""
    if not boundaries:
        return fallback
    return st.integers(0, weight).flatmap(lambda n: st.sampled_from(boundaries) if n else fallback)


def shift(dt: datetime, micros: int) -> datetime | None:
    try:
        return dt + timedelta(microseconds=micros)
    except OverflowError:
        return None


def add(dt: datetime, delta: timedelta) -> datetime | None:
    try:
        return dt + delta
    except OverflowError:
        return None


def outcome(name: str, expected: object) -> None:
    """Record which branch an operation took (shown by --hypothesis-show-statistics)."""
    label = type(expected).__name__ if isinstance(expected, TrueHeartError) else "ok"
    event(f"{name}: {label}")


def same_error(raised: BaseException, expected: TrueHeartError) -> bool:
    return type(raised) is type(expected) and str(raised) == str(expected)


def call(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return fn(), None
    except TrueHeartError as exc:
        return None, exc


# ---------------------------------------------------------------------------
# model


@dataclass
class EventModel:
    draft: RawEventDraft
    ingested_at: datetime
    raw_expires_at: datetime
    body: bool = True

    def receipt(self) -> RawEventReceipt:
        d = self.draft
        return RawEventReceipt(
            d.event_id,
            d.scope,
            d.source,
            sha(d.content),
            self.ingested_at,
            self.raw_expires_at,
            d.retention.clear_for,
            d.retention.recall_for,
            self.body,
            d.metadata,
        )


@dataclass
class MemoryModel:
    draft: MemoryDraft
    fingerprint: str
    trust_floor: TrustLevel
    clear_until: datetime
    recall_until: datetime
    status: MemoryStatus = MemoryStatus.ACTIVE

    def record(self) -> MemoryRecord:
        d = self.draft
        return MemoryRecord(
            d.memory_id,
            d.scope,
            d.content,
            tuple(sorted(d.source_event_ids)),
            self.fingerprint,
            d.kind,
            d.trust,
            d.created_at,
            self.clear_until,
            self.recall_until,
            self.status,
            d.metadata,
        )


@dataclass(frozen=True)
class AuditEntry:
    scope: Scope
    action: str
    entity_type: str
    entity_id: str
    occurred_at: datetime
    reason: str
    group: int

    def key(self) -> tuple[str, str, str, datetime, str, Scope]:
        return (
            self.action,
            self.entity_type,
            self.entity_id,
            self.occurred_at,
            self.reason,
            self.scope,
        )


@dataclass
class Model:
    events: dict[tuple[Scope, str], EventModel] = field(default_factory=dict)
    memories: dict[tuple[Scope, str], MemoryModel] = field(default_factory=dict)
    raw_tombs: set[tuple[Scope, str]] = field(default_factory=set)
    mem_tombs: set[tuple[Scope, str]] = field(default_factory=set)
    fp_tombs: set[tuple[Scope, str]] = field(default_factory=set)
    audit: list[AuditEntry] = field(default_factory=list)
    removed: list[MemoryDraft] = field(default_factory=list)
    group: int = 0

    def next_group(self) -> int:
        self.group += 1
        return self.group

    def diagnose(self, scope: Scope, entity_id: str, raw: bool) -> TrueHeartError:
        tombs = self.raw_tombs if raw else self.mem_tombs
        live: Mapping[tuple[Scope, str], object] = self.events if raw else self.memories
        if (scope, entity_id) in tombs:
            return EntityDeleted(entity_id)
        if any(key[1] == entity_id for key in live) or any(
            key[1] == entity_id and key[0] != scope for key in tombs
        ):
            return ScopeMismatch(entity_id)
        return EntityNotFound(entity_id)

    # -- ingest -----------------------------------------------------------------

    def ingest(self, draft: RawEventDraft, now: datetime) -> RawEventReceipt | TrueHeartError:
        expires = add(draft.source.occurred_at, draft.retention.raw_ttl)
        if expires is None:
            return ValidationError("raw_expires_at", "must be a representable datetime")
        key = (draft.scope, draft.event_id)
        if key in self.raw_tombs:
            return EntityDeleted(draft.event_id)
        stored = self.events.get(key)
        if stored is not None:
            if ingest_identity(stored.draft) != ingest_identity(draft):
                return IdempotencyConflict(draft.event_id)
            return stored.receipt()
        event = EventModel(draft, now, expires)
        self.events[key] = event
        self.audit.append(
            AuditEntry(
                draft.scope,
                "ingest",
                "raw_event",
                draft.event_id,
                now,
                INGEST_REASON,
                self.next_group(),
            )
        )
        return event.receipt()

    # -- materialize ------------------------------------------------------------

    def materialize(self, draft: MemoryDraft) -> MemoryRecord | TrueHeartError:
        scope, memory_id = draft.scope, draft.memory_id
        fp = fingerprint(scope, draft.kind, draft.source_event_ids)
        if (scope, memory_id) in self.mem_tombs:
            return EntityDeleted(memory_id)
        stored = self.memories.get((scope, memory_id))
        if stored is not None:
            if memory_identity(stored.draft) != memory_identity(draft):
                return IdempotencyConflict(memory_id)
            return stored.record()
        if (scope, fp) in self.fp_tombs:
            return EntityDeleted(memory_id)
        sources: list[EventModel] = []
        for event_id in draft.source_event_ids:
            event = self.events.get((scope, event_id))
            if event is None:
                return self.diagnose(scope, event_id, raw=True)
            sources.append(event)
        floor = min(event.draft.source.trust for event in sources)
        if draft.trust > floor:
            return TrustEscalation(memory_id)
        clear_until = add(draft.created_at, min(e.draft.retention.clear_for for e in sources))
        recall_until = add(draft.created_at, min(e.draft.retention.recall_for for e in sources))
        if clear_until is None or recall_until is None:
            return ValidationError("created_at", "retention deadline must be representable")
        memory = MemoryModel(draft, fp, floor, clear_until, recall_until)
        self.memories[(scope, memory_id)] = memory
        self.audit.append(
            AuditEntry(
                scope,
                "materialize",
                "memory",
                memory_id,
                draft.created_at,
                MATERIALIZE_REASON,
                self.next_group(),
            )
        )
        return memory.record()

    # -- recall -------------------------------------------------------------------

    def recall(
        self, scope: Scope, as_of: datetime, limit: int, kinds: tuple[str, ...]
    ) -> list[tuple[MemoryRecord, float]]:
        rows: list[tuple[MemoryRecord, float]] = []
        for (mem_scope, _), memory in self.memories.items():
            if mem_scope != scope or memory.status is not MemoryStatus.ACTIVE:
                continue
            if not memory.recall_until > as_of or memory.draft.created_at > as_of:
                continue
            if kinds and memory.draft.kind not in kinds:
                continue
            if as_of <= memory.clear_until:
                clarity = 1.0
            else:
                clarity = (memory.recall_until - as_of) / (memory.recall_until - memory.clear_until)
            rows.append((memory.record(), clarity))
        rows.sort(key=lambda row: row[0].memory_id)
        rows.sort(key=lambda row: row[0].created_at, reverse=True)
        rows.sort(key=lambda row: row[1], reverse=True)
        return rows[:limit]

    # -- govern ---------------------------------------------------------------------

    def govern(self, command: GovernanceCommand) -> GovernanceResult | TrueHeartError:
        scope, entity_id = command.scope, command.entity_id
        if command.entity_type is EntityType.RAW_EVENT:
            if command.action is not GovernanceAction.DELETE:
                return ValidationError("action", "is not supported for raw events")
            if (scope, entity_id) not in self.events:
                return self.diagnose(scope, entity_id, raw=True)
            dependents = sorted(
                memory_id
                for (mem_scope, memory_id), memory in self.memories.items()
                if mem_scope == scope and entity_id in memory.draft.source_event_ids
            )
            for memory_id in dependents:
                memory = self.memories.pop((scope, memory_id))
                self.removed.append(memory.draft)
                self.mem_tombs.add((scope, memory_id))
                self.fp_tombs.add((scope, memory.fingerprint))
            del self.events[(scope, entity_id)]
            self.raw_tombs.add((scope, entity_id))
            affected = tuple(sorted([entity_id, *dependents]))
        else:
            memory = self.memories.get((scope, entity_id))
            if memory is None:
                return self.diagnose(scope, entity_id, raw=False)
            action = command.action
            if action is GovernanceAction.SEAL:
                if memory.status is not MemoryStatus.ACTIVE:
                    return InvalidTransition(entity_id)
                memory.status = MemoryStatus.SEALED
            elif action is GovernanceAction.RESTORE:
                if memory.status is not MemoryStatus.SEALED:
                    return InvalidTransition(entity_id)
                memory.status = MemoryStatus.ACTIVE
            else:
                del self.memories[(scope, entity_id)]
                self.removed.append(memory.draft)
                self.mem_tombs.add((scope, entity_id))
                self.fp_tombs.add((scope, memory.fingerprint))
            affected = (entity_id,)
        self.audit.append(
            AuditEntry(
                scope,
                command.action.value,
                command.entity_type.value,
                entity_id,
                command.occurred_at,
                GOVERN_REASON,
                self.next_group(),
            )
        )
        return GovernanceResult(command, affected)

    # -- expire -------------------------------------------------------------------------

    def expire(self, as_of: datetime) -> int:
        group = self.next_group()
        count = 0
        for (scope, event_id), stored in self.events.items():
            if stored.body and stored.raw_expires_at <= as_of:
                stored.body = False
                count += 1
                self.audit.append(
                    AuditEntry(scope, "expire", "raw_event", event_id, as_of, EXPIRE_REASON, group)
                )
        return count


def ingest_identity(draft: RawEventDraft) -> tuple[object, ...]:
    source = draft.source
    return (
        draft.scope,
        source.source_id,
        source.source_type,
        source.occurred_at,
        source.trust,
        canon(source.metadata),
        sha(draft.content),
        source.occurred_at + draft.retention.raw_ttl,
        draft.retention.clear_for,
        draft.retention.recall_for,
        canon(draft.metadata),
    )


def memory_identity(draft: MemoryDraft) -> tuple[object, ...]:
    return (
        draft.memory_id,
        draft.scope,
        draft.content,
        tuple(sorted(draft.source_event_ids)),
        fingerprint(draft.scope, draft.kind, draft.source_event_ids),
        draft.kind,
        draft.trust,
        draft.created_at,
        canon(draft.metadata),
    )


# ---------------------------------------------------------------------------
# state machine


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory(prefix="trueheart-sm-")
        self.path = Path(self.tmp.name) / "store.db"
        self.now = BASE
        self.clock_calls = 0
        self.model = Model()
        self.steps = 0
        self.service = self._open()

    def _clock(self) -> datetime:
        self.clock_calls += 1
        return self.now

    def _repository(self, *, read_only: bool = False) -> Repository:
        """A new repository on this machine's store."""
        return SQLiteRepository(self.path, read_only=read_only)

    def _open(self) -> TrueHeart:
        return TrueHeart(self._repository(), clock=self._clock)

    def teardown(self) -> None:
        event(f"steps: {self.steps // 10 * 10}+")
        try:
            report = self.service.verify_integrity()
            assert report.ok, report.problems
            self._sweep()
        finally:
            self.service.close()
            self.tmp.cleanup()

    def _sweep(self) -> None:
        """Final state: recall at every boundary of every memory, and the full audit."""
        for scope in SCOPES:
            points = {BASE, MIN_UTC, MAX_UTC}
            for (mem_scope, _), memory in self.model.memories.items():
                if mem_scope != scope:
                    continue
                for point in (memory.draft.created_at, memory.clear_until, memory.recall_until):
                    for delta in (-1, 0, 1):
                        moved = shift(point, delta)
                        if moved is not None:
                            points.add(moved)
                fade = memory.recall_until - memory.clear_until
                if fade:
                    points.add(memory.clear_until + fade / 2)
            for as_of in sorted(points):
                self._compare_recall(scope, as_of, 100, ())
            assert self.service.verify_integrity(scope).ok
        # A second, read-only repository on the same store sees the same committed state.
        with TrueHeart(self._repository(read_only=True)) as reader:
            for scope in SCOPES:
                assert reader.recall(RecallQuery(scope, BASE, 100)) == self.service.recall(
                    RecallQuery(scope, BASE, 100)
                )
                assert reader.audit(scope) == self.service.audit(scope)
        # Expire every remaining body exactly at, and one microsecond before, its deadline.
        deadlines = sorted({e.raw_expires_at for e in self.model.events.values() if e.body})
        for deadline in deadlines:
            for as_of in (shift(deadline, -1), deadline):
                if as_of is not None:
                    expected = self.model.expire(as_of)
                    assert self.service.expire_raw_content(as_of=as_of) == expected, as_of
        for scope in SCOPES:
            check_audit(self.model, scope, 100, self.service.audit(scope, limit=100))

    def _compare_recall(
        self, scope: Scope, as_of: datetime, limit: int, kinds: tuple[str, ...]
    ) -> None:
        expected = self.model.recall(scope, as_of, limit, kinds)
        got = self.service.recall(RecallQuery(scope, as_of, limit, kinds))
        assert isinstance(got, tuple)
        assert [(item.memory.memory_id, item.clarity) for item in got] == [
            (record.memory_id, clarity) for record, clarity in expected
        ], as_of
        for item, (record, _) in zip(got, expected, strict=True):
            assert type(item.clarity) is float
            assert item.memory == record

    # -- drafting -------------------------------------------------------------

    def _draw_event_draft(self, data: st.DataObject, *, bounded: bool = False) -> RawEventDraft:
        scope = data.draw(st.sampled_from(SCOPES), label="scope")
        event_id = data.draw(st.sampled_from(EVENT_IDS), label="event_id")
        occurred_at = data.draw(instants, label="occurred_at")
        raw_ttl = data.draw(durations, label="raw_ttl")
        if bounded and add(occurred_at, raw_ttl) is None:
            occurred_at, raw_ttl = BASE, timedelta(days=1)
        clear_for = data.draw(durations, label="clear_for")
        recall_for = clear_for + data.draw(extra_durations, label="fade")
        offset = data.draw(st.sampled_from(OFFSETS_MINUTES), label="offset")
        source = SourceRef(
            data.draw(st.sampled_from(("src-a", "src-b")), label="source_id"),
            "chat",
            present(occurred_at, offset),
            data.draw(event_trusts, label="trust"),
            data.draw(st.sampled_from(METADATAS), label="source_metadata"),
        )
        return RawEventDraft(
            event_id,
            scope,
            source,
            data.draw(st.sampled_from(CONTENTS), label="content"),
            RetentionPolicy(raw_ttl, clear_for, recall_for),
            data.draw(st.sampled_from(METADATAS), label="metadata"),
        )

    def _check_receipt(
        self, got: RawEventReceipt | None, err: BaseException | None, expected: object
    ) -> None:
        if isinstance(expected, TrueHeartError):
            assert err is not None, f"expected {expected!r}, got {got!r}"
            assert same_error(err, expected), (err, expected)
            return
        assert err is None, f"unexpected {err!r}, expected {expected!r}"
        assert isinstance(got, RawEventReceipt)
        assert isinstance(expected, RawEventReceipt)
        assert got == expected
        assert got.ingested_at.tzinfo is UTC
        assert canon(got.metadata) == canon(expected.metadata)
        assert canon(got.source.metadata) == canon(expected.source.metadata)

    # -- seeding ------------------------------------------------------------------

    @initialize(data=st.data())
    def seed(self, data: st.DataObject) -> None:
        """Start from events in both scopes and a few memories, to reach deep states."""
        for _ in range(data.draw(st.integers(3, 8), label="seed_events")):
            draft = self._draw_event_draft(data, bounded=True)
            expected = self.model.ingest(draft, self.now)
            got, err = call(partial(self.service.ingest_event, draft))
            self._check_receipt(got, err, expected)
        for _ in range(data.draw(st.integers(1, 6), label="seed_memories")):
            self._materialize(self._draw_memory_draft(data, likely=True))

    # -- ingest rules -----------------------------------------------------------

    @rule(data=st.data())
    def ingest_new(self, data: st.DataObject) -> None:
        draft = self._draw_event_draft(data)
        expected = self.model.ingest(draft, self.now)
        outcome("ingest", expected)
        before = self.clock_calls
        got, err = call(lambda: self.service.ingest_event(draft))
        assert self.clock_calls - before == 1
        self._check_receipt(got, err, expected)

    @rule(data=st.data())
    def ingest_replay(self, data: st.DataObject) -> None:
        if not self.model.events:
            return
        key = data.draw(st.sampled_from(sorted(self.model.events, key=repr)), label="replay")
        stored = self.model.events[key].draft
        offset = data.draw(st.sampled_from(OFFSETS_MINUTES), label="offset")
        source = SourceRef(
            stored.source.source_id,
            stored.source.source_type,
            present(stored.source.occurred_at, offset),
            stored.source.trust,
            canon_roundtrip(stored.source.metadata),
        )
        draft = RawEventDraft(
            stored.event_id,
            stored.scope,
            source,
            stored.content,
            stored.retention,
            canon_roundtrip(stored.metadata),
        )
        # A replay with a different clock keeps the original ingested_at.
        self.now = data.draw(instants, label="clock")
        expected = self.model.ingest(draft, self.now)
        assert isinstance(expected, RawEventReceipt)
        got, err = call(lambda: self.service.ingest_event(draft))
        self._check_receipt(got, err, expected)

    @rule(data=st.data())
    def ingest_conflicting_replay(self, data: st.DataObject) -> None:
        if not self.model.events:
            return
        key = data.draw(st.sampled_from(sorted(self.model.events, key=repr)), label="replay")
        stored = self.model.events[key].draft
        change = data.draw(
            st.sampled_from(("content", "metadata", "trust", "clear_for", "raw_ttl")),
            label="change",
        )
        source = stored.source
        retention = stored.retention
        content = stored.content
        metadata: Mapping[str, Any] = stored.metadata
        if change == "content":
            content = stored.content + "!"
        elif change == "metadata":
            # 1, True and 1.0 are different requests.
            options = [m for m in METADATAS if canon(m) != canon(stored.metadata)]
            metadata = data.draw(st.sampled_from(options), label="new_metadata")
        elif change == "trust":
            trust = TrustLevel((int(source.trust) + 1) % 3)
            source = SourceRef(
                stored.source.source_id,
                stored.source.source_type,
                stored.source.occurred_at,
                trust,
                canon_roundtrip(stored.source.metadata),
            )
        elif change == "clear_for":
            retention = RetentionPolicy(
                retention.raw_ttl, retention.recall_for, retention.recall_for
            )
            if retention == stored.retention:
                retention = RetentionPolicy(
                    retention.raw_ttl,
                    retention.clear_for + timedelta(microseconds=1),
                    retention.recall_for + timedelta(microseconds=1),
                )
        else:
            retention = RetentionPolicy(
                retention.raw_ttl + timedelta(microseconds=1),
                retention.clear_for,
                retention.recall_for,
            )
        draft = RawEventDraft(stored.event_id, stored.scope, source, content, retention, metadata)
        expected = self.model.ingest(draft, self.now)
        got, err = call(lambda: self.service.ingest_event(draft))
        self._check_receipt(got, err, expected)

    @rule(data=st.data())
    def ingest_batch(self, data: st.DataObject) -> None:
        count = data.draw(st.integers(1, 3), label="batch_size")
        drafts = [self._draw_event_draft(data, bounded=True) for _ in range(count)]
        if data.draw(st.booleans(), label="repeat_first"):
            drafts.append(drafts[0])
        trial = copy.deepcopy(self.model)
        expected: list[RawEventReceipt] = []
        failure: TrueHeartError | None = None
        for draft in drafts:
            result = trial.ingest(draft, self.now)
            if isinstance(result, TrueHeartError):
                failure = result
                break
            expected.append(result)
        before = self.clock_calls
        got, err = call(lambda: self.service.ingest_events(drafts))
        assert self.clock_calls - before == 1
        if failure is not None:
            assert err is not None, f"expected {failure!r}"
            assert same_error(err, failure), (err, failure)
            return
        assert err is None, repr(err)
        self.model = trial
        assert isinstance(got, tuple)
        assert len(got) == len(expected)
        for receipt, want in zip(got, expected, strict=True):
            self._check_receipt(receipt, None, want)

    @rule()
    def ingest_empty_batch(self) -> None:
        assert self.service.ingest_events([]) == ()
        assert self.service.ingest_events(()) == ()

    # -- materialize rules ---------------------------------------------------

    def _draw_memory_draft(self, data: st.DataObject, *, likely: bool) -> MemoryDraft:
        """A new memory draft; ``likely`` favours drafts that can succeed."""
        scopes_with_events = sorted({scope for scope, _ in self.model.events}, key=repr)
        if likely and scopes_with_events:
            scope = data.draw(st.sampled_from(scopes_with_events), label="scope")
        else:
            scope = data.draw(st.sampled_from(SCOPES), label="scope")
        known = sorted({event_id for (s, event_id) in self.model.events if s == scope})
        pool = st.sampled_from(known) if known else st.sampled_from(EVENT_IDS)
        element = pool if likely else st.one_of(pool, pool, pool, st.sampled_from(EVENT_IDS))
        ids = data.draw(
            st.lists(element, min_size=1, max_size=3).map(
                lambda items: tuple(dict.fromkeys(items))
            ),
            label="sources",
        )
        if likely:
            created_at = data.draw(st.one_of(near_instants, shared_instants), label="created_at")
            trust = TrustLevel.UNTRUSTED
        else:
            created_at = data.draw(
                st.one_of(instants, near_instants, shared_instants), label="created_at"
            )
            trust = data.draw(memory_trusts, label="trust")
        return MemoryDraft(
            data.draw(st.sampled_from(MEMORY_IDS), label="memory_id"),
            scope,
            data.draw(st.sampled_from(CONTENTS), label="content"),
            ids,
            data.draw(st.sampled_from(KINDS), label="kind"),
            trust,
            present(created_at, data.draw(st.sampled_from(OFFSETS_MINUTES), label="offset")),
            data.draw(st.sampled_from(METADATAS), label="metadata"),
        )

    @rule(data=st.data())
    def materialize_new(self, data: st.DataObject) -> None:
        self._materialize(self._draw_memory_draft(data, likely=False))

    @rule(data=st.data())
    def materialize_likely(self, data: st.DataObject) -> None:
        self._materialize(self._draw_memory_draft(data, likely=True))

    @rule(data=st.data())
    def materialize_resurrect(self, data: st.DataObject) -> None:
        """A new memory with the kind and sources of a removed one: fingerprint tombstone."""
        if not self.model.removed:
            return
        old = data.draw(st.sampled_from(self.model.removed), label="removed")
        order = data.draw(st.permutations(old.source_event_ids), label="order")
        draft = MemoryDraft(
            *_fields(
                old,
                memory_id=data.draw(st.sampled_from(MEMORY_IDS), label="memory_id"),
                source_event_ids=tuple(order),
                created_at=data.draw(st.one_of(near_instants, shared_instants)),
            )
        )
        self._materialize(draft)

    @rule(data=st.data())
    def materialize_replay(self, data: st.DataObject) -> None:
        if not self.model.memories:
            return
        key = data.draw(st.sampled_from(sorted(self.model.memories, key=repr)), label="replay")
        stored = self.model.memories[key].draft
        order = data.draw(st.permutations(stored.source_event_ids), label="order")
        offset = data.draw(st.sampled_from(OFFSETS_MINUTES), label="offset")
        draft = MemoryDraft(
            stored.memory_id,
            stored.scope,
            stored.content,
            tuple(order),
            stored.kind,
            stored.trust,
            present(stored.created_at, offset),
            canon_roundtrip(stored.metadata),
        )
        conflict = data.draw(st.sampled_from((None, "content", "kind", "trust", "created")))
        if conflict == "content":
            draft = MemoryDraft(*_fields(draft, content=draft.content + "?"))
        elif conflict == "kind":
            other = "other-kind"
            draft = MemoryDraft(*_fields(draft, kind=other))
        elif conflict == "trust" and draft.trust is not TrustLevel.UNTRUSTED:
            draft = MemoryDraft(*_fields(draft, trust=TrustLevel.UNTRUSTED))
        elif conflict == "created":
            moved = shift(draft.created_at, 1) or shift(draft.created_at, -1)
            assert moved is not None
            draft = MemoryDraft(*_fields(draft, created_at=moved))
        self._materialize(draft)

    @rule(data=st.data())
    def materialize_twin(self, data: st.DataObject) -> None:
        """A second memory with the fingerprint of an existing one (allowed)."""
        if not self.model.memories:
            return
        key = data.draw(st.sampled_from(sorted(self.model.memories, key=repr)), label="twin")
        stored = self.model.memories[key].draft
        draft = MemoryDraft(
            *_fields(
                stored,
                memory_id=data.draw(st.sampled_from(MEMORY_IDS), label="memory_id"),
                created_at=data.draw(st.one_of(instants, shared_instants), label="created_at"),
            )
        )
        self._materialize(draft)

    def _materialize(self, draft: MemoryDraft) -> None:
        expected = self.model.materialize(draft)
        outcome("materialize", expected)
        got, err = call(lambda: self.service.materialize_once(draft))
        if isinstance(expected, TrueHeartError):
            assert err is not None, f"expected {expected!r}, got {got!r}"
            assert same_error(err, expected), (err, expected)
            return
        assert err is None, f"unexpected {err!r}, expected {expected!r}"
        assert isinstance(got, MemoryRecord)
        assert got == expected
        assert canon(got.metadata) == canon(expected.metadata)
        assert got.clear_until.tzinfo is UTC and got.recall_until.tzinfo is UTC

    # -- recall rule ---------------------------------------------------------------

    def _scope_and_instant(self, data: st.DataObject) -> tuple[Scope, datetime]:
        """A scope that holds memories (if any does), and an instant that is often one
        microsecond around one of their deadlines."""
        populated = sorted({scope for scope, _ in self.model.memories}, key=repr)
        scope = data.draw(st.sampled_from(populated or SCOPES), label="scope")
        boundaries: list[datetime] = []
        for (mem_scope, _), memory in sorted(self.model.memories.items(), key=repr):
            if mem_scope != scope:
                continue
            for point in (memory.draft.created_at, memory.clear_until, memory.recall_until):
                for delta in (-1, 0, 1):
                    moved = shift(point, delta)
                    if moved is not None:
                        boundaries.append(moved)
        return scope, data.draw(pick(boundaries, instants, 3), label="as_of")

    @rule(data=st.data())
    def recall(self, data: st.DataObject) -> None:
        scope, as_of = self._scope_and_instant(data)
        limit = data.draw(st.one_of(st.integers(1, 100), st.sampled_from((1, 2, 3))))
        kinds = data.draw(
            st.one_of(
                st.just(()),
                st.lists(st.sampled_from((*KINDS, "missing")), max_size=3).map(tuple),
            ),
            label="kinds",
        )
        offset = data.draw(st.sampled_from(OFFSETS_MINUTES), label="offset")
        query = RecallQuery(scope, present(as_of, offset), limit, kinds)
        expected = self.model.recall(scope, as_of, limit, kinds)
        event(f"recall: {min(len(expected), 3)} items")
        if any(clarity < 1.0 for _, clarity in expected):
            event("recall: fading item")
        got = self.service.recall(query)
        assert isinstance(got, tuple)
        assert [(item.memory.memory_id, item.clarity) for item in got] == [
            (record.memory_id, clarity) for record, clarity in expected
        ]
        for item, (record, _) in zip(got, expected, strict=True):
            assert type(item.clarity) is float
            assert item.memory == record

    # -- search rule ------------------------------------------------------------------

    @rule(data=st.data())
    def search(self, data: st.DataObject) -> None:
        scope, as_of = self._scope_and_instant(data)
        text = data.draw(st.sampled_from(SEARCH_TEXTS), label="text")
        kinds = data.draw(
            st.one_of(st.just(()), st.lists(st.sampled_from(KINDS), max_size=2).map(tuple)),
            label="kinds",
        )
        offset = data.draw(st.sampled_from(OFFSETS_MINUTES), label="offset")
        wanted = set(tokenize(text))
        expected = {
            record.memory_id: record
            for record, _ in self.model.recall(scope, as_of, 10**6, kinds)
            if wanted & set(tokenize(record.content))
        }
        event(f"search: {min(len(expected), 3)} matches")
        query = SearchQuery(scope, text, present(as_of, offset), 1_048_576, 100, kinds)
        got = self.service.search(query)
        assert got.matched == len(expected)
        assert {item.memory.memory_id: item.memory for item in got.items} == expected
        assert got.used_tokens == sum(item.tokens for item in got.items)

    # -- governance rules ------------------------------------------------------------

    @rule(
        scope=st.sampled_from(SCOPES),
        action=st.sampled_from(tuple(GovernanceAction)),
        memory_id=st.sampled_from(MEMORY_IDS),
        occurred_at=instants,
    )
    def govern_memory(
        self, scope: Scope, action: GovernanceAction, memory_id: str, occurred_at: datetime
    ) -> None:
        command = GovernanceCommand(
            scope, action, EntityType.MEMORY, memory_id, occurred_at, "caller reason"
        )
        self._govern(command)

    @rule(
        scope=st.sampled_from(SCOPES),
        action=st.sampled_from(
            (GovernanceAction.DELETE, GovernanceAction.DELETE, GovernanceAction.SEAL)
        ),
        event_id=st.sampled_from(EVENT_IDS),
        occurred_at=instants,
    )
    def govern_raw(
        self, scope: Scope, action: GovernanceAction, event_id: str, occurred_at: datetime
    ) -> None:
        command = GovernanceCommand(
            scope, action, EntityType.RAW_EVENT, event_id, occurred_at, "caller reason"
        )
        self._govern(command)

    @rule(data=st.data())
    def govern_existing_memory(self, data: st.DataObject) -> None:
        if not self.model.memories:
            return
        scope, memory_id = data.draw(
            st.sampled_from(sorted(self.model.memories, key=repr)), label="target"
        )
        action = data.draw(st.sampled_from(tuple(GovernanceAction)), label="action")
        occurred_at = data.draw(instants, label="occurred_at")
        self._govern(
            GovernanceCommand(scope, action, EntityType.MEMORY, memory_id, occurred_at, "r")
        )

    def _govern(self, command: GovernanceCommand) -> None:
        expected = self.model.govern(command)
        outcome(f"govern {command.action.value} {command.entity_type.value}", expected)
        got, err = call(lambda: self.service.govern(command))
        if isinstance(expected, TrueHeartError):
            assert err is not None, f"expected {expected!r}, got {got!r}"
            assert same_error(err, expected), (err, expected)
            return
        assert err is None, f"unexpected {err!r}, expected {expected!r}"
        assert isinstance(got, GovernanceResult)
        assert got.command is command
        assert got.affected_ids == expected.affected_ids

    # -- expiry, audit, clock, reopen ------------------------------------------------

    @rule(data=st.data())
    def expire(self, data: st.DataObject) -> None:
        boundaries = []
        for stored in self.model.events.values():
            if not stored.body:
                continue
            for delta in (-1, 0, 1):
                moved = shift(stored.raw_expires_at, delta)
                if moved is not None:
                    boundaries.append(moved)
        as_of = data.draw(pick(sorted(boundaries), instants, 2), label="as_of")
        offset = data.draw(st.sampled_from(OFFSETS_MINUTES), label="offset")
        expected = self.model.expire(as_of)
        event(f"expire: {min(expected, 2)}")
        assert self.service.expire_raw_content(as_of=present(as_of, offset)) == expected
        # Running it again expires nothing and writes nothing.
        assert self.service.expire_raw_content(as_of=as_of) == 0

    @rule(scope=st.sampled_from(SCOPES), limit=st.one_of(st.integers(1, 100), st.integers(1, 4)))
    def audit(self, scope: Scope, limit: int) -> None:
        got = self.service.audit(scope, limit=limit)
        assert isinstance(got, tuple)
        assert all(isinstance(record, AuditRecord) for record in got)
        check_audit(self.model, scope, limit, got)
        assert self.service.audit(scope, limit=limit) == got

    @rule(now=instants, offset=st.sampled_from(OFFSETS_MINUTES))
    def set_clock(self, now: datetime, offset: int) -> None:
        self.now = present(now, offset)

    @rule()
    def reopen(self) -> None:
        self.service.close()
        self.service = self._open()

    @invariant()
    def integrity(self) -> None:
        self.steps += 1
        report = self.service.verify_integrity()
        assert report.ok, report.problems


def canon_roundtrip(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Feed stored metadata back as plain JSON values (lists, dicts)."""
    loaded = json.loads(canon(metadata))
    assert isinstance(loaded, dict)
    return loaded


def _fields(draft: MemoryDraft, **changes: Any) -> list[Any]:
    values = {
        "memory_id": draft.memory_id,
        "scope": draft.scope,
        "content": draft.content,
        "source_event_ids": draft.source_event_ids,
        "kind": draft.kind,
        "trust": draft.trust,
        "created_at": draft.created_at,
        "metadata": canon_roundtrip(draft.metadata),
    }
    values.update(changes)
    return list(values.values())


def check_audit(model: Model, scope: Scope, limit: int, got: tuple[AuditRecord, ...]) -> None:
    """Compare audit rows with the model.

    Rows are ordered by occurred_at descending, then write order descending. Rows written
    by one expiry call share a group whose internal order is not specified.
    """
    entries = [entry for entry in model.audit if entry.scope == scope]
    entries.sort(key=lambda entry: (entry.occurred_at, entry.group), reverse=True)
    assert len(got) == min(limit, len(entries)), (len(got), len(entries))
    assert len({record.audit_id for record in got}) == len(got)
    observed = [
        (
            record.action,
            record.entity_type.value,
            record.entity_id,
            record.occurred_at,
            record.reason,
            record.scope,
        )
        for record in got
    ]
    for record in got:
        assert record.metadata == {}
        assert record.occurred_at.tzinfo is UTC
    start = 0
    while start < len(observed):
        end = start
        marker = (entries[start].occurred_at, entries[start].group)
        while end < len(entries) and (entries[end].occurred_at, entries[end].group) == marker:
            end += 1
        want = Counter(entry.key() for entry in entries[start:end])
        have = Counter(observed[start : min(end, len(observed))])
        if end <= len(observed):
            assert have == want, (start, have, want)
        else:
            assert not (have - want), (start, have, want)
        start = end


LifecycleMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    # Shrinking a 30-step run can take minutes; the failure report already lists every
    # step with its drawn values, so the run stops at the first failure instead.
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
TestLifecycle = LifecycleMachine.TestCase


class PostgresLifecycleMachine(LifecycleMachine):
    """The same model check on a PostgreSQL store: a new schema of the session's test
    server for every run (the server's database goes when the test session ends)."""

    def __init__(self) -> None:
        self.target = postgres_configuration.fresh_target()
        super().__init__()

    def _repository(self, *, read_only: bool = False) -> Repository:
        opened = postgres_configuration.open_target(self.target, read_only=read_only)
        return cast(Repository, opened)


PostgresLifecycleMachine.TestCase.settings = settings(
    LifecycleMachine.TestCase.settings, max_examples=25
)
TestLifecyclePostgres = PostgresLifecycleMachine.TestCase
