"""Property: search returns what a brute-force reading of the contract returns.

Stores are built through the public API with random memories (small vocabulary, random
creation times, retention, kinds and trust), some sealed, restored, forgotten, deleted,
cascaded away by deleting their raw event, or kept in another scope. For random queries
the capsule must respect the budget, the limit and every filter, follow the documented
total order, be deterministic whatever the time zone of ``as_of``, and match exactly the
memories that a reference computed here from the same ``tokenize`` selects.

Reference: candidates are active memories of the exact scope with
``created_at <= as_of < recall_until`` (and the kinds and minimum trust) sharing a term
with the query. BM25 (k1 = 1.2, b = 0.75) with N, df and the mean length over the scope's
active memories whatever ``as_of``. Order: score, clarity, ``created_at`` descending, then
``memory_id`` ascending.
"""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trueheart_core import (
    CapsuleDecision,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryCapsule,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    Utf8BytesEstimator,
)
from trueheart_core.domain.search.tokenize import tokenize

BASE = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other-subject")
VOCAB = ("apple", "Apple", "banana", "cherry", "date", "東京", "京都", "straße", "STRASSE", "tea")
SEPARATORS = (" ", ", ", "_", "-", "\n")
KINDS = ("fact", "preference", "Fact")
FATES = ("active",) * 6 + ("sealed", "restored", "forgotten", "deleted", "raw", "other")
K1, B = 1.2, 0.75


@dataclass(frozen=True)
class Spec:
    memory_id: str
    words: tuple[str, ...]
    separator: str
    kind: str
    trust: TrustLevel
    created_at: datetime
    clear_for: timedelta
    recall_for: timedelta
    fate: str
    shares_event: bool

    @property
    def content(self) -> str:
        return self.separator.join(self.words)


durations = st.sampled_from(
    (timedelta(microseconds=3), timedelta(hours=1), timedelta(days=2), timedelta(days=40))
)


@st.composite
def specs(draw: st.DrawFn) -> list[Spec]:
    ids = draw(
        st.lists(st.text("abAB9é", min_size=1, max_size=3), min_size=6, max_size=18, unique=True)
    )
    out = []
    for memory_id in ids:
        clear_for = draw(durations)
        out.append(
            Spec(
                memory_id,
                tuple(draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=14))),
                draw(st.sampled_from(SEPARATORS)),
                draw(st.sampled_from(KINDS)),
                draw(st.sampled_from(TrustLevel)),
                BASE + timedelta(hours=draw(st.integers(-3, 3))),
                clear_for,
                clear_for + draw(st.sampled_from((timedelta(0), timedelta(hours=2)))),
                draw(st.sampled_from(FATES)),
                draw(st.booleans()),
            )
        )
    return out


def _govern(
    service: TrueHeart,
    action: GovernanceAction,
    entity_id: str,
    entity_type: EntityType = EntityType.MEMORY,
) -> None:
    service.govern(GovernanceCommand(SCOPE, action, entity_type, entity_id, BASE, "test"))


def _build(service: TrueHeart, memories: list[Spec], delete_shared: bool) -> list[MemoryRecord]:
    """Store the memories, apply their fates; returns the records still active in SCOPE."""
    source = SourceRef("src", "test", BASE, TrustLevel.CONFIRMED)
    long = RetentionPolicy(timedelta(days=1), timedelta(days=400), timedelta(days=400))
    drafts = [RawEventDraft("evt-shared", SCOPE, source, "shared", long)]
    for index, spec in enumerate(memories):
        retention = RetentionPolicy(timedelta(days=1), spec.clear_for, spec.recall_for)
        scope = OTHER if spec.fate == "other" else SCOPE
        drafts.append(RawEventDraft(f"evt-{index}", scope, source, "body", retention))
    service.ingest_events(drafts)
    records: dict[str, MemoryRecord] = {}
    for index, spec in enumerate(memories):
        scope = OTHER if spec.fate == "other" else SCOPE
        sources: tuple[str, ...] = (f"evt-{index}",)
        if spec.shares_event and scope == SCOPE:
            sources += ("evt-shared",)
        draft = MemoryDraft(
            spec.memory_id, scope, spec.content, sources, spec.kind, spec.trust, spec.created_at
        )
        records[spec.memory_id] = service.materialize_once(draft)
    for index, spec in enumerate(memories):
        if spec.fate in ("sealed", "restored"):
            _govern(service, GovernanceAction.SEAL, spec.memory_id)
        if spec.fate == "restored":
            _govern(service, GovernanceAction.RESTORE, spec.memory_id)
        if spec.fate == "forgotten":
            _govern(service, GovernanceAction.FORGET, spec.memory_id)
        if spec.fate == "deleted":
            _govern(service, GovernanceAction.DELETE, spec.memory_id)
        if spec.fate == "raw":
            _govern(service, GovernanceAction.DELETE, f"evt-{index}", EntityType.RAW_EVENT)
    if delete_shared:
        _govern(service, GovernanceAction.DELETE, "evt-shared", EntityType.RAW_EVENT)
    return [
        records[spec.memory_id]
        for spec in memories
        if spec.fate in ("active", "restored") and not (delete_shared and spec.shares_event)
    ]


def _clarity(memory: MemoryRecord, as_of: datetime) -> float:
    if as_of <= memory.clear_until:
        return 1.0
    return (memory.recall_until - as_of) / (memory.recall_until - memory.clear_until)


def _reference(active: list[MemoryRecord], query: SearchQuery) -> dict[str, float]:
    """The matched memories of ``query`` among ``active`` and their BM25 scores."""
    terms = {m.memory_id: Counter(tokenize(m.content)) for m in active}
    documents = len(active)
    total = sum(sum(counts.values()) for counts in terms.values())
    average = total / documents if documents and total else 1.0
    wanted = set(tokenize(query.text))
    scores: dict[str, float] = {}
    for memory in active:
        counts = terms[memory.memory_id]
        shared = wanted & set(counts)
        eligible = (
            memory.created_at <= query.as_of < memory.recall_until
            and (not query.kinds or memory.kind in query.kinds)
            and (query.min_trust is None or memory.trust >= query.min_trust)
        )
        if not shared or not eligible:
            continue
        length = sum(counts.values())
        score = 0.0
        for term in shared:
            df = sum(1 for other in terms.values() if term in other)
            idf = math.log(1.0 + (documents - df + 0.5) / (df + 0.5))
            tf = counts[term]
            score += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average))
        scores[memory.memory_id] = score
    return scores


def _order(score: float, memory: MemoryRecord, as_of: datetime) -> tuple[float, float, int, str]:
    created = (memory.created_at - BASE) // timedelta(microseconds=1)
    return (-score, -_clarity(memory, as_of), -created, memory.memory_id)


def _check(capsule: MemoryCapsule, query: SearchQuery, active: list[MemoryRecord]) -> None:
    by_id = {m.memory_id: m for m in active}
    reference = _reference(active, query)
    wanted = set(tokenize(query.text))
    estimator = Utf8BytesEstimator()

    assert capsule.scope == query.scope
    assert capsule.as_of == query.as_of
    assert capsule.estimator == estimator.name
    assert capsule.used_tokens == sum(item.tokens for item in capsule.items)
    assert capsule.used_tokens <= query.budget_tokens
    assert len(capsule.items) <= query.limit
    assert capsule.matched == len(reference)
    window = 2 * query.limit
    assert len(capsule.trace) == min(window, len(reference))

    # every considered candidate is an eligible match with the reference score and clarity
    for entry in capsule.trace:
        assert entry.memory_id in reference
        memory = by_id[entry.memory_id]
        assert math.isclose(entry.score, reference[entry.memory_id], rel_tol=1e-9)
        assert entry.clarity == _clarity(memory, query.as_of)
        assert entry.tokens == estimator.estimate(memory.content)
    # the considered ones are the best ``window`` matches, in the documented order
    assert [entry.rank for entry in capsule.trace] == list(range(1, len(capsule.trace) + 1))
    keys = [_order(e.score, by_id[e.memory_id], query.as_of) for e in capsule.trace]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    if capsule.trace:
        worst = capsule.trace[-1].score
        traced = {entry.memory_id for entry in capsule.trace}
        for memory_id, score in reference.items():
            if memory_id not in traced:
                assert score <= worst * (1 + 1e-9)
    # memories with the same terms have exactly the same score, so ties break as documented
    for first in capsule.trace:
        for second in capsule.trace:
            same = Counter(tokenize(by_id[first.memory_id].content)) == Counter(
                tokenize(by_id[second.memory_id].content)
            )
            if same:
                assert first.score == second.score

    # the packing decisions follow the rule, and the items are the included entries
    included, remaining = 0, query.budget_tokens
    for entry in capsule.trace:
        assert entry.remaining_tokens == remaining
        if included >= query.limit:
            assert entry.decision is CapsuleDecision.LIMIT
        elif entry.tokens > remaining:
            assert entry.decision is CapsuleDecision.BUDGET
        else:
            assert entry.decision is CapsuleDecision.INCLUDED
            included += 1
            remaining -= entry.tokens
    chosen = [e for e in capsule.trace if e.decision is CapsuleDecision.INCLUDED]
    assert [(i.memory.memory_id, i.rank, i.score, i.clarity, i.tokens) for i in capsule.items] == [
        (e.memory_id, e.rank, e.score, e.clarity, e.tokens) for e in chosen
    ]

    for item in capsule.items:
        memory = item.memory
        assert memory == by_id[memory.memory_id]  # active, same scope, not erased
        assert memory.status is MemoryStatus.ACTIVE
        assert memory.scope == query.scope
        assert memory.created_at <= query.as_of < memory.recall_until
        assert wanted & set(tokenize(memory.content))
        assert not query.kinds or memory.kind in query.kinds
        assert query.min_trust is None or memory.trust >= query.min_trust


@st.composite
def queries(draw: st.DrawFn, stored: list[Spec]) -> SearchQuery:
    words = draw(st.lists(st.sampled_from((*VOCAB, "kiwi", "TEA", "京")), min_size=1, max_size=5))
    text = draw(st.sampled_from(SEPARATORS)).join(words)
    if draw(st.integers(0, 9)) == 0:
        text = "?!"  # no term at all
    moments = [BASE + timedelta(hours=h) for h in (-4, 0, 1, 5)]
    for spec in stored:
        for point in (spec.created_at, spec.created_at + spec.clear_for):
            moments += [point, point + timedelta(microseconds=1)]
        recall_until = spec.created_at + spec.recall_for
        moments += [recall_until - timedelta(microseconds=1), recall_until]
    kinds: tuple[str, ...] = ()
    if draw(st.integers(0, 2)) == 0:
        kinds = tuple(draw(st.lists(st.sampled_from((*KINDS, "none")), min_size=1, max_size=2)))
    return SearchQuery(
        SCOPE,
        text,
        draw(st.sampled_from(moments)),
        budget_tokens=draw(st.one_of(st.integers(1, 40), st.integers(1, 1000))),
        limit=draw(st.one_of(st.integers(1, 2), st.integers(1, 5))),
        kinds=kinds,
        min_trust=draw(st.one_of(st.none(), st.sampled_from(TrustLevel))),
    )


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(memories=specs(), delete_shared=st.booleans(), data=st.data())
def test_search_matches_the_brute_force_reference(
    memories: list[Spec], delete_shared: bool, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        repository = SQLiteRepository(Path(directory) / "store.db")
        with TrueHeart(repository, clock=lambda: BASE) as service:
            active = _build(service, memories, delete_shared)
            for _ in range(4):
                query = data.draw(queries(memories), label="query")
                capsule = service.search(query)
                _check(capsule, query, active)
                assert service.search(query) == capsule
                shifted = query.as_of.astimezone(timezone(timedelta(hours=-7)))
                moved = SearchQuery(
                    query.scope,
                    query.text,
                    shifted,
                    query.budget_tokens,
                    query.limit,
                    query.kinds,
                    query.min_trust,
                )
                assert service.search(moved) == capsule
            assert service.verify_integrity().ok
