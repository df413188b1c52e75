"""Property: recall returns exactly what a brute-force reading of the contract returns.

Eligibility: active, ``recall_until > as_of``, ``created_at <= as_of``, kind filter.
Clarity: 1.0 while ``as_of <= clear_until``, else the exact ``timedelta`` ratio
``(recall_until - as_of) / (recall_until - clear_until)``.
Order: clarity descending, then ``created_at`` descending, then ``memory_id`` ascending
in Python string order; truncated to ``limit`` after sorting.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

BASE = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
KINDS = ("fact", "preference", "Fact")
# Characters whose Python order differs from case-insensitive or locale order.
ID_ALPHABET = "aAbBzZ09-_.\u00e9\u00c9\u0131\u4e2d\U0001f600\uffef"


def _utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC)


far = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)
).map(_utc)
near = st.integers(-5_000_000, 5_000_000).map(lambda us: BASE + timedelta(microseconds=us))
shared_created = st.sampled_from(
    (BASE, BASE + timedelta(microseconds=1), BASE - timedelta(days=365 * 2000))
)
created_times = st.one_of(far, near, shared_created, shared_created)
durations = st.one_of(
    st.integers(1, 3_000_000).map(lambda us: timedelta(microseconds=us)),
    st.integers(1, 100).map(lambda d: timedelta(days=d)),
    st.integers(1, 3_650_000).map(lambda d: timedelta(days=d)),
    st.sampled_from((timedelta(days=2), timedelta(days=4))),
)
extra = st.one_of(st.just(timedelta(0)), durations, st.sampled_from((timedelta(days=2),)))


@dataclass(frozen=True)
class Spec:
    memory_id: str
    kind: str
    created_at: datetime
    clear_for: timedelta
    recall_for: timedelta
    sealed: bool


@st.composite
def specs(draw: st.DrawFn) -> list[Spec]:
    """Memories that often share creation times and retention, so ties are common."""
    ids = draw(
        st.lists(st.text(ID_ALPHABET, min_size=1, max_size=3), min_size=1, max_size=10, unique=True)
    )
    times = draw(st.lists(created_times, min_size=1, max_size=3))
    retentions = draw(
        st.lists(
            st.tuples(durations, extra).map(lambda pair: (pair[0], pair[0] + pair[1])),
            min_size=1,
            max_size=3,
        )
    )
    out: list[Spec] = []
    for memory_id in ids:
        if draw(st.integers(0, 3)):
            created_at = draw(st.sampled_from(times))
        else:
            created_at = draw(created_times)
        if draw(st.integers(0, 3)):
            clear_for, recall_for = draw(st.sampled_from(retentions))
        else:
            clear_for = draw(durations)
            recall_for = clear_for + draw(extra)
        out.append(
            Spec(
                memory_id,
                draw(st.sampled_from(KINDS)),
                created_at,
                clear_for,
                recall_for,
                draw(st.integers(0, 7)) == 5,
            )
        )
    return out


@dataclass(frozen=True)
class Stored:
    memory_id: str
    kind: str
    created_at: datetime
    clear_until: datetime
    recall_until: datetime
    sealed: bool


def expected_recall(
    stored: list[Stored], as_of: datetime, limit: int, kinds: tuple[str, ...]
) -> list[tuple[str, float]]:
    rows: list[tuple[Stored, float]] = []
    for memory in stored:
        if memory.sealed or not memory.recall_until > as_of or memory.created_at > as_of:
            continue
        if kinds and memory.kind not in kinds:
            continue
        if as_of <= memory.clear_until:
            clarity = 1.0
        else:
            clarity = (memory.recall_until - as_of) / (memory.recall_until - memory.clear_until)
        rows.append((memory, clarity))
    rows.sort(key=lambda row: row[0].memory_id)
    rows.sort(key=lambda row: row[0].created_at, reverse=True)
    rows.sort(key=lambda row: row[1], reverse=True)
    return [(row[0].memory_id, row[1]) for row in rows[:limit]]


def test_recall_order_matches_brute_force(tmp_path: Path) -> None:
    counter = itertools.count()
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: BASE) as service:

        @settings(
            max_examples=200,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(memories=specs(), data=st.data())
        def check(memories: list[Spec], data: st.DataObject) -> None:
            scope = Scope("tenant", "owner", f"subject-{next(counter)}")
            stored: list[Stored] = []
            for index, spec in enumerate(memories):
                try:
                    clear_until = spec.created_at + spec.clear_for
                    recall_until = spec.created_at + spec.recall_for
                except OverflowError:
                    continue
                event_id = f"evt-{index}"
                service.ingest_event(
                    RawEventDraft(
                        event_id,
                        scope,
                        SourceRef("src", "test", BASE, TrustLevel.CONFIRMED),
                        f"body {index}",
                        RetentionPolicy(timedelta(days=1), spec.clear_for, spec.recall_for),
                    )
                )
                record = service.materialize_once(
                    MemoryDraft(
                        spec.memory_id,
                        scope,
                        f"memory {index}",
                        (event_id,),
                        spec.kind,
                        TrustLevel.OBSERVED,
                        spec.created_at,
                    )
                )
                assert record.clear_until == clear_until
                assert record.recall_until == recall_until
                if spec.sealed:
                    service.govern(
                        GovernanceCommand(
                            scope,
                            GovernanceAction.SEAL,
                            EntityType.MEMORY,
                            spec.memory_id,
                            BASE,
                            "seal",
                        )
                    )
                stored.append(
                    Stored(
                        spec.memory_id,
                        spec.kind,
                        spec.created_at,
                        clear_until,
                        recall_until,
                        spec.sealed,
                    )
                )

            boundaries: list[datetime] = []
            for memory in stored:
                for point in (memory.created_at, memory.clear_until, memory.recall_until):
                    for micros in (-1, 0, 1):
                        with contextlib.suppress(OverflowError):
                            boundaries.append(point + timedelta(microseconds=micros))
                # Exactly halfway through the fade, and a quarter of the way.
                fade = memory.recall_until - memory.clear_until
                if fade:
                    boundaries.append(memory.clear_until + fade / 2)
                    boundaries.append(memory.clear_until + fade / 4)
            rng = data.draw(st.randoms(use_true_random=False), label="rng")
            anywhere = st.one_of(far, near)
            for _ in range(3):
                if boundaries and rng.random() < 0.8:
                    as_of = rng.choice(boundaries)
                else:
                    as_of = data.draw(anywhere, label="as_of")
                limit = data.draw(st.one_of(st.integers(1, 100), st.integers(1, 4)), label="limit")
                kinds: tuple[str, ...] = ()
                if data.draw(st.integers(0, 2), label="filter") == 0:
                    kinds = data.draw(
                        st.lists(st.sampled_from((*KINDS, "none")), max_size=3).map(tuple),
                        label="kinds",
                    )
                offset = data.draw(st.sampled_from((0, 90, -600, 1439, -1439)), label="tz")
                try:
                    shown = as_of.astimezone(timezone(timedelta(minutes=offset)))
                except (OverflowError, ValueError):
                    shown = as_of
                got = service.recall(RecallQuery(scope, shown, limit, kinds))
                want = expected_recall(stored, as_of, limit, kinds)
                observed = [(item.memory.memory_id, item.clarity) for item in got]
                assert observed == want
                assert all(type(item.clarity) is float for item in got)
                assert all(item.memory.scope == scope for item in got)

        check()
        assert service.verify_integrity().ok


def test_recall_halfway_and_boundaries(tmp_path: Path) -> None:
    """Fixed points: 1.0 exactly at clear_until, 0.5 halfway, excluded at recall_until."""
    scope = Scope("tenant", "owner", "subject")
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: BASE) as service:
        service.ingest_event(
            RawEventDraft(
                "evt",
                scope,
                SourceRef("src", "test", BASE, TrustLevel.CONFIRMED),
                "body",
                RetentionPolicy(timedelta(days=1), timedelta(days=4), timedelta(days=6)),
            )
        )
        created = datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
        record = service.materialize_once(
            MemoryDraft("m", scope, "memory", ("evt",), "fact", TrustLevel.OBSERVED, created)
        )
        assert record.clear_until == created + timedelta(days=4)
        assert record.recall_until == created + timedelta(days=6)

        def clarity(as_of: datetime) -> list[float]:
            return [item.clarity for item in service.recall(RecallQuery(scope, as_of))]

        assert clarity(created - timedelta(microseconds=1)) == []
        assert clarity(created) == [1.0]
        assert clarity(record.clear_until) == [1.0]
        assert clarity(created + timedelta(days=5)) == [0.5]
        assert clarity(record.recall_until - timedelta(microseconds=1)) == [
            timedelta(microseconds=1) / timedelta(days=2)
        ]
        assert clarity(record.recall_until) == []
