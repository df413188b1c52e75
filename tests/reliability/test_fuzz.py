"""Fuzzing: arbitrary values never make the library raise anything but TrueHeartError.

DTO constructors and service methods are fed a hostile mixture of values (None, bools,
huge integers, non-finite floats, strings with lone surrogates, bytes, deep containers,
naive, aware and extreme datetimes, negative and maximal timedeltas, wrong DTOs). Every
escaping exception must be a ``TrueHeartError``; constructed DTOs must survive ``repr``,
``pickle`` and ``copy.deepcopy``; and the store must stay consistent.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trueheart_core import (
    ArtifactCounts,
    AuditRecord,
    BackupReport,
    EntityType,
    ErasureReceipt,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    IndexRebuildReport,
    IntegrityProblem,
    IntegrityReport,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    RecallItem,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    StoreStats,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "fuzz")
OTHER_SCOPE = Scope("tenant", "owner", "fuzz-2")
SOURCE = SourceRef("src", "fuzz", NOW, TrustLevel.CONFIRMED, {"k": [1, 2]})
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=3))
FINGERPRINT = "0" * 64

EXTREME_ZONES = (
    UTC,
    timezone(timedelta(hours=23, minutes=59)),
    timezone(-timedelta(hours=23, minutes=59)),
    timezone(timedelta(hours=23, minutes=59, seconds=59, microseconds=999999)),
    timezone(timedelta(microseconds=1)),
    timezone(timedelta(hours=5, minutes=30)),
)

# ---------------------------------------------------------------------------
# value strategies

surrogate = st.integers(0xD800, 0xDFFF).map(chr)
texts = st.one_of(
    st.text(max_size=8),
    st.text(st.one_of(st.characters(), surrogate), max_size=8),
    st.sampled_from(("", " ", "\t\n", "a", "x" * 128, "x" * 129, "\x00", "\ud800", "é" * 130)),
)
huge_ints = st.sampled_from(
    (
        1 << 63,
        -(1 << 63) - 1,
        (1 << 4095),
        (1 << 4096) - 1,
        1 << 4096,
        -(1 << 4096),
        1 << 14000,
        2**64,
        -1,
        0,
        101,
    )
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from((float("nan"), float("inf"), float("-inf"), -0.0, 1e308, 5e-324)),
)
naive_datetimes = st.datetimes()
aware_datetimes = st.datetimes(timezones=st.sampled_from(EXTREME_ZONES))
extreme_datetimes = st.sampled_from(
    [datetime.min.replace(tzinfo=zone) for zone in EXTREME_ZONES]
    + [datetime.max.replace(tzinfo=zone) for zone in EXTREME_ZONES]
    + [datetime.min, datetime.max]
)
timedeltas = st.one_of(
    st.timedeltas(),
    st.sampled_from(
        (
            timedelta.max,
            timedelta.min,
            timedelta(0),
            timedelta(microseconds=1),
            timedelta(microseconds=-1),
            timedelta(days=999_999_999),
        )
    ),
)
enums = st.sampled_from(
    (*TrustLevel, *EntityType, *GovernanceAction, *MemoryStatus, "seal", "memory", 1, 2)
)
valid_objects = st.sampled_from(
    (
        SCOPE,
        OTHER_SCOPE,
        SOURCE,
        RETENTION,
        (),
        ("e0",),
        ("e0", "e1"),
        ("e0", "e0"),
        ["e0"],
        {},
        {"a": 1},
        object(),
        NOW,
        int,
    )
)


def nest(depth: int, as_list: bool) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value] if as_list else {"k": value}
    return value


deep = st.tuples(st.integers(60, 2_000), st.booleans()).map(lambda pair: nest(*pair))

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge_ints,
    floats,
    texts,
    st.binary(max_size=8),
    naive_datetimes,
    aware_datetimes,
    extreme_datetimes,
    timedeltas,
    enums,
    valid_objects,
)
anything = st.one_of(
    scalars,
    deep,
    st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(st.one_of(texts, st.integers(), st.none()), children, max_size=3),
            st.frozensets(st.integers(), max_size=3),
        ),
        max_leaves=10,
    ),
)

# ---------------------------------------------------------------------------
# valid bases, one per DTO


def memory_record() -> MemoryRecord:
    return MemoryRecord(
        "m0",
        SCOPE,
        "content",
        ("e0",),
        FINGERPRINT,
        "fact",
        TrustLevel.OBSERVED,
        NOW,
        NOW + timedelta(days=1),
        NOW + timedelta(days=2),
        MemoryStatus.ACTIVE,
        {},
    )


def command() -> GovernanceCommand:
    return GovernanceCommand(SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, "m0", NOW, "why")


BASES: dict[type, dict[str, Any]] = {
    Scope: {"tenant_id": "t", "owner_id": "o", "subject_id": "s"},
    RetentionPolicy: {
        "raw_ttl": timedelta(days=1),
        "clear_for": timedelta(days=2),
        "recall_for": timedelta(days=3),
    },
    SourceRef: {
        "source_id": "src",
        "source_type": "t",
        "occurred_at": NOW,
        "trust": TrustLevel.OBSERVED,
        "metadata": {"a": [1, {"b": None}]},
    },
    RawEventDraft: {
        "event_id": "e0",
        "scope": SCOPE,
        "source": SOURCE,
        "content": "body",
        "retention": RETENTION,
        "metadata": {},
    },
    MemoryDraft: {
        "memory_id": "m0",
        "scope": SCOPE,
        "content": "memory",
        "source_event_ids": ("e0",),
        "kind": "fact",
        "trust": TrustLevel.OBSERVED,
        "created_at": NOW,
        "metadata": {},
    },
    RecallQuery: {"scope": SCOPE, "as_of": NOW, "limit": 20, "kinds": ()},
    GovernanceCommand: {
        "scope": SCOPE,
        "action": GovernanceAction.SEAL,
        "entity_type": EntityType.MEMORY,
        "entity_id": "m0",
        "occurred_at": NOW,
        "reason": "why",
    },
    RawEventReceipt: {
        "event_id": "e0",
        "scope": SCOPE,
        "source": SOURCE,
        "content_hash": "ab" * 32,
        "ingested_at": NOW,
        "raw_expires_at": NOW + timedelta(days=1),
        "clear_for": timedelta(days=2),
        "recall_for": timedelta(days=3),
        "content_available": True,
        "metadata": {},
    },
    MemoryRecord: {
        field.name: getattr(memory_record(), field.name)
        for field in dataclasses.fields(MemoryRecord)
    },
    RecallItem: {"memory": memory_record(), "clarity": 0.5},
    GovernanceResult: {"command": command(), "affected_ids": ("m0",), "removed": ()},
    AuditRecord: {
        "audit_id": "a1",
        "scope": SCOPE,
        "action": "seal",
        "entity_type": EntityType.MEMORY,
        "entity_id": "m0",
        "occurred_at": NOW,
        "reason": "governance requested",
        "metadata": {},
    },
    IntegrityProblem: {
        "entity_type": "memory",
        "entity_id": "m0",
        "scope": SCOPE,
        "code": "digest_mismatch",
    },
    IntegrityReport: {"problems": (), "rows_checked": 0},
    ArtifactCounts: {field.name: 1 for field in dataclasses.fields(ArtifactCounts)},
    ErasureReceipt: {
        "scope": SCOPE,
        "occurred_at": NOW,
        "dry_run": False,
        "erased": ArtifactCounts(memory=1),
        "event_ids": ("e0",),
        "memory_ids": ("m0", "m1"),
        "claim_ids": (),
        "remaining": ArtifactCounts(),
    },
    StoreStats: {
        "scope": SCOPE,
        "events": 2,
        "events_with_body": 1,
        "memories": 1,
        "active_memories": 1,
        "sealed_memories": 0,
        "memories_by_kind": (("fact", 1),),
        "claims": 0,
        "extraction_records": 0,
        "tombstones": 0,
        "audit_records": 3,
        "search_entries": 1,
        "search_terms": 2,
        "search_postings": 2,
        "vectors": 0,
        "database_bytes": 4096,
        "wal_bytes": None,
        "storage_bytes": 4096,
        "storage_detail": (("database", 4096),),
    },
    IndexRebuildReport: {field.name: 1 for field in dataclasses.fields(IndexRebuildReport)},
    BackupReport: {"path": "/tmp/copy.db", "pages": 1, "size_bytes": 4096},
}
CONTRACT_DTOS = tuple(cls for cls in BASES if cls not in {IntegrityProblem, IntegrityReport})


def check_dto(obj: object) -> None:
    """A constructed DTO must be printable, comparable, picklable and deep-copyable."""
    repr(obj)
    assert obj == copy.copy(obj)
    if type(obj) in CONTRACT_DTOS:
        assert pickle.loads(pickle.dumps(obj)) == obj
        assert copy.deepcopy(obj) == obj


def build(cls: type, kwargs: dict[str, Any], positional: bool) -> object | None:
    try:
        if positional:
            names = [field.name for field in dataclasses.fields(cls)]
            obj = cls(*[kwargs[name] for name in names])
        else:
            obj = cls(**kwargs)
    except TrueHeartError:
        return None
    except BaseException as exc:
        raise AssertionError(f"{cls.__name__} raised {type(exc).__name__}: {exc!r:.200}") from exc
    check_dto(obj)
    return obj


def test_base_values_are_valid() -> None:
    for cls, kwargs in BASES.items():
        assert build(cls, kwargs, positional=True) is not None, cls.__name__


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cls=st.sampled_from(tuple(BASES)), data=st.data())
def test_dto_constructors_only_raise_library_errors(cls: type, data: st.DataObject) -> None:
    base = BASES[cls]
    names = list(base)
    if data.draw(st.booleans(), label="all_fields"):
        kwargs = {name: data.draw(anything, label=name) for name in names}
    else:
        kwargs = dict(base)
        for name in data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=2)):
            kwargs[name] = data.draw(anything, label=name)
    build(cls, kwargs, positional=data.draw(st.booleans(), label="positional"))


@st.composite
def mutated(draw: st.DrawFn, cls: type, changes: int = 2) -> object:
    """A DTO close to valid: up to ``changes`` fields replaced, falling back to the base."""
    base = dict(BASES[cls])
    if cls is RawEventDraft:
        base["event_id"] = draw(st.sampled_from(("e0", "e1", "e2")))
        base["scope"] = draw(st.sampled_from((SCOPE, OTHER_SCOPE)))
        base["content"] = draw(st.sampled_from(("body", "other body")))
    elif cls is MemoryDraft:
        base["memory_id"] = draw(st.sampled_from(("m0", "m1")))
        base["source_event_ids"] = draw(st.sampled_from((("e0",), ("e1", "e0"), ("e2",))))
        base["trust"] = draw(st.sampled_from(tuple(TrustLevel)))
    elif cls is GovernanceCommand:
        base["action"] = draw(st.sampled_from(tuple(GovernanceAction)))
        base["entity_type"] = draw(st.sampled_from(tuple(EntityType)))
        base["entity_id"] = draw(st.sampled_from(("m0", "m1", "e0", "e1")))
    elif cls is RecallQuery:
        base["scope"] = draw(st.sampled_from((SCOPE, OTHER_SCOPE)))
    kwargs = dict(base)
    if changes:
        for name in draw(st.lists(st.sampled_from(list(base)), max_size=changes, unique=True)):
            kwargs[name] = draw(anything)
    built = build(cls, kwargs, positional=False)
    if built is None:
        built = build(cls, base, positional=False)
    return built


def either(first: st.SearchStrategy[Any], second: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Half and half (``one_of`` strongly favours its first branch)."""
    return st.sampled_from((0, 1)).flatmap(lambda n: (first, second)[n])


def argument_for(cls: type) -> st.SearchStrategy[object]:
    """Arbitrary values, near-valid DTOs and valid DTOs, in roughly equal parts."""
    return st.sampled_from((0, 1, 2)).flatmap(
        lambda n: (anything, mutated(cls), mutated(cls, changes=0))[n]
    )


def test_service_methods_only_raise_library_errors(tmp_path: Path) -> None:
    clock_values: list[object] = [NOW]
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: clock_values[0]) as svc:
        operations: dict[str, Callable[[st.DataObject], object]] = {
            "ingest_event": lambda d: svc.ingest_event(d.draw(argument_for(RawEventDraft))),
            "ingest_events": lambda d: svc.ingest_events(
                d.draw(
                    st.one_of(
                        anything,
                        st.lists(argument_for(RawEventDraft), max_size=3),
                        st.lists(mutated(RawEventDraft), max_size=3).map(tuple),
                    )
                )
            ),
            "materialize_once": lambda d: svc.materialize_once(d.draw(argument_for(MemoryDraft))),
            "recall": lambda d: svc.recall(d.draw(argument_for(RecallQuery))),
            "govern": lambda d: svc.govern(d.draw(argument_for(GovernanceCommand))),
            "audit": lambda d: svc.audit(
                d.draw(either(anything, st.just(SCOPE))),
                limit=d.draw(either(anything, st.integers(-5, 105))),
            ),
            "audit_default": lambda d: svc.audit(d.draw(either(anything, st.just(SCOPE)))),
            "expire_raw_content": lambda d: svc.expire_raw_content(
                as_of=d.draw(either(anything, aware_datetimes))
            ),
            "verify_integrity": lambda d: svc.verify_integrity(
                d.draw(either(anything, st.just(SCOPE)))
            ),
        }

        @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(name=st.sampled_from(sorted(operations)), data=st.data())
        def check(name: str, data: st.DataObject) -> None:
            bad_clock = data.draw(st.integers(0, 4), label="bad_clock") == 4
            clock_values[0] = data.draw(anything, label="clock") if bad_clock else NOW
            try:
                operations[name](data)
            except TrueHeartError as exc:
                outcomes[f"{name}: {type(exc).__name__}"] += 1
            except BaseException as exc:
                raise AssertionError(f"{name} raised {type(exc).__name__}: {exc!r:.200}") from exc
            else:
                outcomes[f"{name}: ok"] += 1

        outcomes: Counter[str] = Counter()
        check()
        # The fuzzer reached the database, not only the argument checks.
        assert outcomes["ingest_event: ok"] + outcomes["ingest_events: ok"] > 0, outcomes
        assert outcomes["recall: ok"] > 0, outcomes
        clock_values[0] = NOW
        report = svc.verify_integrity()
        assert report.ok, report.problems
        # The store still works normally afterwards.
        draft = RawEventDraft("after-fuzz", SCOPE, SOURCE, "body after fuzzing", RETENTION)
        receipt = svc.ingest_event(draft)
        assert receipt.content_available is True
        assert receipt.ingested_at == NOW
        assert svc.ingest_event(draft) == receipt
        assert svc.verify_integrity().ok


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=anything.filter(lambda value: not isinstance(value, str)))
def test_repository_path_only_raises_library_errors(path: object) -> None:
    try:
        repo = SQLiteRepository(path)  # type: ignore[arg-type]
    except TrueHeartError:
        return
    except BaseException as exc:
        raise AssertionError(f"raised {type(exc).__name__}: {exc!r:.200}") from exc
    repo.close()
    raise AssertionError(f"accepted a non-path value {path!r:.100}")


def test_repository_options_only_raise_library_errors(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    TrueHeart(SQLiteRepository(db)).close()

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(busy_timeout=anything, read_only=anything)
    def check(busy_timeout: object, read_only: object) -> None:
        try:
            repo = SQLiteRepository(
                db,
                busy_timeout=busy_timeout,  # type: ignore[arg-type]
                read_only=read_only,  # type: ignore[arg-type]
            )
        except TrueHeartError:
            return
        except BaseException as exc:
            raise AssertionError(f"raised {type(exc).__name__}: {exc!r:.200}") from exc
        try:
            with TrueHeart(repo) as service:
                service.recall(RecallQuery(SCOPE, NOW))
        except TrueHeartError:
            pass

    check()
    with TrueHeart(SQLiteRepository(db)) as service:
        assert service.verify_integrity().ok
