"""recall: eligibility, clarity, ordering, limits and kinds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta, timezone
from typing import Any

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, command, event, memory, msg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trueheart_core import (
    GovernanceAction,
    RecallItem,
    RecallQuery,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Repository


def _ids(items: tuple[RecallItem, ...]) -> list[str]:
    return [item.memory.memory_id for item in items]


def _fading(service: TrueHeart) -> None:
    """mem-1 created at NOW: clear_until NOW+4d, recall_until NOW+6d."""
    service.ingest_event(event(clear_for=timedelta(days=4), recall_for=timedelta(days=6)))
    service.materialize_once(memory())


def test_empty_scope_recalls_nothing(service: TrueHeart) -> None:
    assert service.recall(RecallQuery(SCOPE, NOW)) == ()


def test_recall_returns_items_for_the_materialised_record(service: TrueHeart) -> None:
    service.ingest_event(event())
    record = service.materialize_once(memory(metadata={"a": [1]}))
    result = service.recall(RecallQuery(SCOPE, NOW))
    assert isinstance(result, tuple)
    (item,) = result
    assert isinstance(item, RecallItem)
    assert item.memory == record
    assert type(item.clarity) is float
    assert item.clarity == 1.0


def test_clarity_is_one_through_clear_until(service: TrueHeart) -> None:
    _fading(service)
    for offset in (timedelta(0), timedelta(days=1), timedelta(days=4)):
        (item,) = service.recall(RecallQuery(SCOPE, NOW + offset))
        assert item.clarity == 1.0


def test_clarity_fades_linearly_to_recall_until(service: TrueHeart) -> None:
    _fading(service)
    expected = {
        timedelta(days=5): 0.5,
        timedelta(days=4, hours=12): 0.75,
        timedelta(days=5, hours=12): 0.25,
        timedelta(days=6) - timedelta(microseconds=1): 1 / 172_800_000_000,
    }
    for offset, clarity in expected.items():
        (item,) = service.recall(RecallQuery(SCOPE, NOW + offset))
        assert item.clarity == clarity, offset


def test_recall_until_is_strict(service: TrueHeart) -> None:
    _fading(service)
    assert service.recall(RecallQuery(SCOPE, NOW + timedelta(days=6))) == ()
    assert service.recall(RecallQuery(SCOPE, NOW + timedelta(days=60))) == ()
    just_before = NOW + timedelta(days=6) - timedelta(microseconds=1)
    assert _ids(service.recall(RecallQuery(SCOPE, just_before))) == ["mem-1"]


def test_equal_clear_and_recall_never_divides_by_zero(service: TrueHeart) -> None:
    service.ingest_event(event(clear_for=timedelta(days=2), recall_for=timedelta(days=2)))
    service.materialize_once(memory())
    (item,) = service.recall(
        RecallQuery(SCOPE, NOW + timedelta(days=2) - timedelta(microseconds=1))
    )
    assert item.clarity == 1.0
    assert service.recall(RecallQuery(SCOPE, NOW + timedelta(days=2))) == ()


def test_future_memories_are_excluded(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-future", created_at=NOW + timedelta(days=1)))
    service.materialize_once(memory("mem-now", created_at=NOW))
    assert _ids(service.recall(RecallQuery(SCOPE, NOW))) == ["mem-now"]
    assert _ids(
        service.recall(RecallQuery(SCOPE, NOW + timedelta(days=1) - timedelta(microseconds=1)))
    ) == ["mem-now"]
    assert _ids(service.recall(RecallQuery(SCOPE, NOW + timedelta(days=1)))) == [
        "mem-future",
        "mem-now",
    ]


def test_sealed_memories_are_excluded_until_restored(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-1"))
    service.materialize_once(memory("mem-2"))
    service.govern(command(GovernanceAction.SEAL, "mem-1"))
    assert _ids(service.recall(RecallQuery(SCOPE, NOW))) == ["mem-2"]
    service.govern(command(GovernanceAction.RESTORE, "mem-1"))
    assert _ids(service.recall(RecallQuery(SCOPE, NOW))) == ["mem-1", "mem-2"]


def test_kinds_filter_is_exact(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("m-fact", kind="fact"))
    service.materialize_once(memory("m-pref", kind="preference"))
    service.materialize_once(memory("m-Fact", kind="Fact"))
    service.materialize_once(memory("m-space", kind="fact "))

    def recall(kinds: tuple[str, ...]) -> list[str]:
        return _ids(service.recall(RecallQuery(SCOPE, NOW, 100, kinds)))

    assert recall(()) == ["m-Fact", "m-fact", "m-pref", "m-space"]
    assert recall(("fact",)) == ["m-fact"]
    assert recall(("fact", "fact")) == ["m-fact"]
    assert recall(("fact", "preference")) == ["m-fact", "m-pref"]
    assert recall(("nothing",)) == []


def test_recall_is_scoped(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.ingest_event(event(scope=OTHER_SCOPE))
    service.materialize_once(memory("mem-here"))
    service.materialize_once(memory("mem-there", scope=OTHER_SCOPE))
    assert _ids(service.recall(RecallQuery(SCOPE, NOW))) == ["mem-here"]
    assert _ids(service.recall(RecallQuery(OTHER_SCOPE, NOW))) == ["mem-there"]


def test_ordering_clarity_then_created_then_id(service: TrueHeart) -> None:
    service.ingest_event(event("evt-long"))
    service.ingest_event(
        event("evt-short", clear_for=timedelta(days=1), recall_for=timedelta(days=3))
    )
    # clarity 0.5 at NOW+3d although it is the newest memory
    service.materialize_once(memory("m-low", ("evt-short",), created_at=NOW + timedelta(days=1)))
    service.materialize_once(memory("m-old", ("evt-long",), created_at=NOW - timedelta(days=1)))
    service.materialize_once(memory("m-new-b", ("evt-long",), created_at=NOW))
    service.materialize_once(memory("m-new-a", ("evt-long",), created_at=NOW))
    items = service.recall(RecallQuery(SCOPE, NOW + timedelta(days=3)))
    assert _ids(items) == ["m-new-a", "m-new-b", "m-old", "m-low"]
    assert [item.clarity for item in items] == [1.0, 1.0, 1.0, 0.5]


def test_memory_id_ties_use_python_string_order(service: TrueHeart) -> None:
    service.ingest_event(event())
    ids = ["mem-2", "\U0001f600", "a", "mem-10", "\uff21", "Z", "\u00c9"]
    for memory_id in ids:
        service.materialize_once(memory(memory_id))
    assert _ids(service.recall(RecallQuery(SCOPE, NOW))) == sorted(ids)
    assert sorted(ids) == ["Z", "a", "mem-10", "mem-2", "\u00c9", "\uff21", "\U0001f600"]


def test_memory_id_ties_with_control_characters(service: TrueHeart) -> None:
    service.ingest_event(event("evt-wide", recall_for=timedelta(days=90)))
    ids = ["a\x01", "a", "a\x00b", "a\x00", "a b", "a\t"]
    for memory_id in ids:
        service.materialize_once(memory(memory_id, ("evt-wide",)))
    # in the clear window and in the fading window
    for as_of in (NOW, NOW + timedelta(days=60)):
        assert _ids(service.recall(RecallQuery(SCOPE, as_of))) == sorted(ids)
        assert _ids(service.recall(RecallQuery(SCOPE, as_of, 2))) == sorted(ids)[:2]


def test_limit_truncates_after_sorting(service: TrueHeart) -> None:
    service.ingest_event(event())
    for index in range(25):
        service.materialize_once(
            memory(f"mem-{index:02d}", created_at=NOW - timedelta(minutes=index))
        )
    default = service.recall(RecallQuery(SCOPE, NOW))
    assert _ids(default) == [f"mem-{index:02d}" for index in range(20)]
    assert len(service.recall(RecallQuery(SCOPE, NOW, 100))) == 25
    assert _ids(service.recall(RecallQuery(SCOPE, NOW, 1))) == ["mem-00"]
    assert _ids(service.recall(RecallQuery(SCOPE, NOW, 3))) == ["mem-00", "mem-01", "mem-02"]


def test_limit_one_picks_the_clearest_not_the_newest(service: TrueHeart) -> None:
    service.ingest_event(event("evt-long"))
    service.ingest_event(
        event("evt-short", clear_for=timedelta(days=1), recall_for=timedelta(days=3))
    )
    service.materialize_once(memory("z-clear", ("evt-long",), created_at=NOW - timedelta(days=1)))
    service.materialize_once(memory("a-faded", ("evt-short",), created_at=NOW))
    assert _ids(service.recall(RecallQuery(SCOPE, NOW + timedelta(days=2), 1))) == ["z-clear"]


def test_equivalent_as_of_in_other_zones_gives_identical_results(service: TrueHeart) -> None:
    _fading(service)
    as_of = NOW + timedelta(days=5)
    utc = service.recall(RecallQuery(SCOPE, as_of))
    for offset in (timedelta(hours=-11), timedelta(hours=5, minutes=45)):
        assert service.recall(RecallQuery(SCOPE, as_of.astimezone(timezone(offset)))) == utc


def test_recall_survives_raw_expiry(service: TrueHeart) -> None:
    service.ingest_event(event(raw_ttl=timedelta(days=1)))
    record = service.materialize_once(memory())
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1
    (item,) = service.recall(RecallQuery(SCOPE, NOW + timedelta(days=2)))
    assert item.memory == record


def test_recall_is_deterministic(service: TrueHeart) -> None:
    service.ingest_event(event())
    for memory_id in ("c", "a", "b"):
        service.materialize_once(memory(memory_id))
    query = RecallQuery(SCOPE, NOW)
    assert service.recall(query) == service.recall(query)


@pytest.mark.parametrize(
    "argument",
    [None, SCOPE, {"scope": SCOPE}, memory()],
    ids=["none", "scope", "dict", "memory-draft"],
)
def test_recall_type_checks_its_argument(service: TrueHeart, argument: Any) -> None:
    with pytest.raises(ValidationError, match=msg("query: must be a RecallQuery")):
        service.recall(argument)


def test_clarity_formula_property(service: TrueHeart) -> None:
    _fading(service)
    clear_until = NOW + timedelta(days=4)
    recall_until = NOW + timedelta(days=6)

    @settings(max_examples=40, deadline=None)
    @given(st.integers(min_value=0, max_value=6 * 86_400_000_000 - 1))
    def check(offset_us: int) -> None:
        as_of = NOW + timedelta(microseconds=offset_us)
        (item,) = service.recall(RecallQuery(SCOPE, as_of))
        if as_of <= clear_until:
            assert item.clarity == 1.0
        else:
            expected = (recall_until - as_of) / (recall_until - clear_until)
            assert item.clarity == pytest.approx(expected, rel=1e-12, abs=1e-15)
            assert 0.0 < item.clarity < 1.0

    check()


_MEMORY_SPEC = st.tuples(
    st.integers(min_value=0, max_value=3),  # source index
    st.integers(min_value=-5, max_value=5),  # created_at offset in hours
    st.sampled_from(["fact", "preference"]),
    st.booleans(),  # sealed
)
_RETENTIONS = [
    (timedelta(hours=1), timedelta(hours=3)),
    (timedelta(hours=2), timedelta(hours=2)),
    (timedelta(hours=1), timedelta(hours=7)),
    (timedelta(microseconds=1), timedelta(hours=5)),
]


@settings(
    max_examples=30,
    deadline=None,
    # Each example opens its own store through the factory, so nothing is shared.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    specs=st.lists(_MEMORY_SPEC, min_size=1, max_size=12),
    as_of_minutes=st.integers(min_value=-360, max_value=720),
    limit=st.integers(min_value=1, max_value=15),
    kinds=st.sampled_from([(), ("fact",), ("preference", "fact"), ("other",)]),
)
def test_recall_matches_the_reference_model(
    fresh_repository: Callable[[], Repository],
    specs: list[tuple[int, int, str, bool]],
    as_of_minutes: int,
    limit: int,
    kinds: tuple[str, ...],
) -> None:
    with TrueHeart(fresh_repository(), clock=lambda: NOW) as service:
        for index, (clear_for, recall_for) in enumerate(_RETENTIONS):
            service.ingest_event(event(f"evt-{index}", clear_for=clear_for, recall_for=recall_for))
        records = []
        for number, (source_index, hours, kind, sealed) in enumerate(specs):
            memory_id = f"m-{(number * 7919) % 101:03d}-{number}"
            records.append(
                service.materialize_once(
                    memory(
                        memory_id,
                        (f"evt-{source_index}",),
                        kind=kind,
                        created_at=NOW + timedelta(hours=hours),
                    )
                )
            )
            if sealed:
                service.govern(command(GovernanceAction.SEAL, memory_id))
        as_of = NOW + timedelta(minutes=as_of_minutes)
        expected = []
        for record, (_, _, _, sealed) in zip(records, specs, strict=True):
            if sealed or record.recall_until <= as_of or record.created_at > as_of:
                continue
            if kinds and record.kind not in kinds:
                continue
            if as_of <= record.clear_until:
                clarity = 1.0
            else:
                clarity = (record.recall_until - as_of) / (record.recall_until - record.clear_until)
            expected.append((record.memory_id, clarity, record.created_at))
        expected.sort(key=lambda e: e[0])
        expected.sort(key=lambda e: e[2], reverse=True)
        expected.sort(key=lambda e: e[1], reverse=True)
        items = service.recall(RecallQuery(SCOPE, as_of, limit, kinds))
        assert [(i.memory.memory_id, i.clarity) for i in items] == [
            (memory_id, clarity) for memory_id, clarity, _ in expected[:limit]
        ]


@pytest.mark.parametrize(
    ("after_clear_us", "first"), [(1, "p-wide"), (2, "p-wide"), (3, "q-clear")]
)
def test_clarity_that_rounds_to_one_ties_with_clear_memories(
    service: TrueHeart, after_clear_us: int, first: str
) -> None:
    # A fade window of 2**55 microseconds: 1 - d / 2**55 rounds to exactly 1.0 for d <= 2.
    window = timedelta(microseconds=2**55)
    service.ingest_event(
        event("evt-wide", clear_for=timedelta(days=1), recall_for=timedelta(days=1) + window)
    )
    service.ingest_event(event("evt-normal"))
    service.materialize_once(memory("p-wide", ("evt-wide",), created_at=NOW))
    service.materialize_once(
        memory("q-clear", ("evt-normal",), created_at=NOW - timedelta(hours=1))
    )
    as_of = NOW + timedelta(days=1, microseconds=after_clear_us)
    items = service.recall(RecallQuery(SCOPE, as_of))
    expected_wide = (2**55 - after_clear_us) / 2**55
    assert {i.memory.memory_id: i.clarity for i in items} == {
        "p-wide": expected_wide,
        "q-clear": 1.0,
    }
    assert _ids(items)[0] == first
    assert _ids(service.recall(RecallQuery(SCOPE, as_of, 1))) == [first]


@pytest.mark.parametrize(
    "kind",
    ["k\x00", "k\x00x", "k'); --", 'k"', "k%", "k_", "k\\u0000", "K", "k\u00e9", "k\U0001f600"],
    ids=[
        "nul",
        "nul-inside",
        "quote",
        "dquote",
        "percent",
        "underscore",
        "escape",
        "upper",
        "accent",
        "astral",
    ],
)
def test_kinds_filter_is_an_exact_match_for_any_text(service: TrueHeart, kind: str) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("m-plain", kind="k"))
    service.materialize_once(memory("m-odd", kind=kind))
    query = RecallQuery(SCOPE, NOW, 10, (kind,))
    assert [(i.memory.memory_id, i.memory.kind) for i in service.recall(query)] == [("m-odd", kind)]
    assert _ids(service.recall(RecallQuery(SCOPE, NOW, 10, ("k",)))) == ["m-plain"]
