"""Budget packing, token estimation and the capsule DTOs, mostly without a database."""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core import (
    CapsuleDecision,
    CapsuleItem,
    CapsuleTraceEntry,
    MemoryCapsule,
    MemoryDraft,
    MemoryPage,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TokenEstimator,
    TrueHeart,
    TrustLevel,
    Utf8BytesEstimator,
    ValidationError,
)
from trueheart_core.domain.search.capsule import Ranked, cost, pack

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
INCLUDED, BUDGET, LIMIT = CapsuleDecision.INCLUDED, CapsuleDecision.BUDGET, CapsuleDecision.LIMIT


def _msg(text: str) -> str:
    return "^" + re.escape(text) + "$"


class CharEstimator:
    """One token per character: makes packing arithmetic easy to read."""

    @property
    def name(self) -> str:
        return "chars"

    def estimate(self, text: str) -> int:
        return len(text)


class FixedEstimator:
    """Returns one fixed value, valid or not."""

    def __init__(self, value: object) -> None:
        self.value = value

    @property
    def name(self) -> str:
        return "fixed"

    def estimate(self, text: str) -> Any:
        return self.value


def _ranked(*sizes: int) -> list[Ranked]:
    return [Ranked(f"m{index}", "x" * size, 10.0 - index, 1.0) for index, size in enumerate(sizes)]


def _decisions(trace: tuple[CapsuleTraceEntry, ...]) -> list[CapsuleDecision]:
    return [entry.decision for entry in trace]


# --- pack -----------------------------------------------------------------------------------


def test_pack_includes_in_rank_order_until_the_budget_is_spent() -> None:
    trace, used = pack(_ranked(3, 4, 2), 10, 5, CharEstimator())
    assert _decisions(trace) == [INCLUDED, INCLUDED, INCLUDED]
    assert [e.remaining_tokens for e in trace] == [10, 7, 3]
    assert [e.tokens for e in trace] == [3, 4, 2]
    assert used == 9


def test_pack_skips_a_too_large_candidate_and_continues() -> None:
    trace, used = pack(_ranked(5, 10, 3, 2, 1), 10, 3, CharEstimator())
    assert _decisions(trace) == [INCLUDED, BUDGET, INCLUDED, INCLUDED, LIMIT]
    assert [e.remaining_tokens for e in trace] == [10, 5, 5, 2, 0]
    assert used == 10


def test_pack_limit_wins_over_budget_once_reached() -> None:
    trace, used = pack(_ranked(1, 1, 100, 1), 50, 2, CharEstimator())
    assert _decisions(trace) == [INCLUDED, INCLUDED, LIMIT, LIMIT]
    assert used == 2


def test_pack_includes_an_exact_fit_and_a_free_candidate_with_nothing_left() -> None:
    trace, used = pack(_ranked(4, 6, 0, 1), 10, 10, CharEstimator())
    assert _decisions(trace) == [INCLUDED, INCLUDED, INCLUDED, BUDGET]
    assert [e.remaining_tokens for e in trace] == [10, 6, 0, 0]
    assert used == 10


def test_pack_of_nothing_is_empty() -> None:
    assert pack([], 10, 3, CharEstimator()) == ((), 0)


def test_pack_copies_ids_scores_and_clarity_and_numbers_ranks_from_one() -> None:
    ranked = [Ranked("b", "xy", 3.5, 0.25), Ranked("a", "z", 1.5, 1.0)]
    trace, _ = pack(ranked, 100, 5, CharEstimator())
    assert [(e.memory_id, e.rank, e.score, e.clarity) for e in trace] == [
        ("b", 1, 3.5, 0.25),
        ("a", 2, 1.5, 1.0),
    ]


def test_pack_all_too_large_includes_nothing() -> None:
    trace, used = pack(_ranked(11, 12), 10, 5, CharEstimator())
    assert _decisions(trace) == [BUDGET, BUDGET]
    assert used == 0


@settings(max_examples=300)
@given(
    sizes=st.lists(st.integers(0, 30), max_size=15),
    budget=st.integers(1, 60),
    limit=st.integers(1, 6),
)
def test_pack_follows_the_documented_rule(sizes: list[int], budget: int, limit: int) -> None:
    trace, used = pack(_ranked(*sizes), budget, limit, CharEstimator())
    included, remaining = 0, budget
    for entry, size in zip(trace, sizes, strict=True):
        assert entry.remaining_tokens == remaining
        if included >= limit:
            assert entry.decision is LIMIT
        elif size > remaining:
            assert entry.decision is BUDGET
        else:
            assert entry.decision is INCLUDED
            included += 1
            remaining -= size
    assert used == budget - remaining <= budget
    assert included <= limit


# --- estimators -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abc", 1),
        ("abcd", 2),
        ("abcdef", 2),
        ("abcdefg", 3),
        ("\u00e9", 1),  # 2 bytes
        ("a\u00e9", 1),  # 3 bytes
        ("\u00e9\u00e9", 2),  # 4 bytes
        ("\U0001f600", 2),  # 4 bytes
        ("東京", 2),  # 6 bytes
        ("東京都", 3),  # 9 bytes
    ],
)
def test_utf8_bytes_estimator(text: str, tokens: int) -> None:
    assert Utf8BytesEstimator().estimate(text) == tokens


@settings(max_examples=300)
@given(st.text(max_size=100))
def test_utf8_bytes_estimator_is_ceil_of_a_third_of_the_bytes(text: str) -> None:
    tokens = Utf8BytesEstimator().estimate(text)
    assert type(tokens) is int
    assert tokens == math.ceil(len(text.encode("utf-8")) / 3)


def test_estimators_conform_to_the_protocol() -> None:
    assert Utf8BytesEstimator().name == "utf8-bytes/3"
    assert isinstance(Utf8BytesEstimator(), TokenEstimator)
    assert isinstance(CharEstimator(), TokenEstimator)
    assert not isinstance(object(), TokenEstimator)


@pytest.mark.parametrize("value", [-1, 1.5, 2.0, True, False, "3", None, [1]])
def test_cost_rejects_what_is_not_a_non_negative_int(value: object) -> None:
    with pytest.raises(
        ValidationError, match=_msg("token_estimator: must return a non-negative int")
    ):
        cost(FixedEstimator(value), "text")


def test_pack_rejects_a_bad_estimate() -> None:
    with pytest.raises(ValidationError, match="token_estimator"):
        pack(_ranked(1), 10, 1, FixedEstimator(-3))


def test_cost_accepts_zero_and_large_ints() -> None:
    assert cost(FixedEstimator(0), "x") == 0
    assert cost(FixedEstimator(2**40), "x") == 2**40


# --- DTO validation ---------------------------------------------------------------------------


def _record(memory_id: str = "mem-1", content: str = "a memory") -> MemoryRecord:
    return MemoryRecord(
        memory_id,
        SCOPE,
        content,
        ("evt-2", "evt-1"),
        "f" * 64,
        "fact",
        TrustLevel.OBSERVED,
        NOW,
        NOW + timedelta(days=1),
        NOW + timedelta(days=2),
        MemoryStatus.ACTIVE,
        {},
    )


def _item(tokens: int = 3, rank: int = 1, memory_id: str = "mem-1") -> CapsuleItem:
    return CapsuleItem(_record(memory_id), rank, 1.5, 1.0, tokens)


def _entry(
    tokens: int = 3, rank: int = 1, decision: CapsuleDecision = INCLUDED
) -> CapsuleTraceEntry:
    return CapsuleTraceEntry(f"mem-{rank}", rank, 1.5, 1.0, tokens, 10, decision)


def _capsule(**changes: Any) -> MemoryCapsule:
    fields: dict[str, Any] = {
        "scope": SCOPE,
        "as_of": NOW,
        "items": (_item(3),),
        "budget_tokens": 10,
        "used_tokens": 3,
        "limit": 2,
        "estimator": "utf8-bytes/3",
        "matched": 4,
        "trace": (_entry(3), _entry(20, 2, BUDGET)),
    }
    fields.update(changes)
    return MemoryCapsule(**fields)


def test_capsule_item_source_event_ids_are_the_memory_sources() -> None:
    item = _item()
    assert item.source_event_ids == item.memory.source_event_ids == ("evt-2", "evt-1")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("memory", "mem-1", "memory: must be a MemoryRecord"),
        ("rank", 0, "rank: must be from 1 through 2147483648"),
        ("rank", True, "rank: must be from 1 through 2147483648"),
        ("rank", 1.0, "rank: must be from 1 through 2147483648"),
        ("score", 1, "score: must be a finite float"),
        ("score", math.nan, "score: must be a finite float"),
        ("score", math.inf, "score: must be a finite float"),
        ("clarity", -math.inf, "clarity: must be a finite float"),
        ("tokens", -1, "tokens: must be from 0 through 9223372036854775807"),
        ("tokens", False, "tokens: must be from 0 through 9223372036854775807"),
        ("tokens", 2**63, "tokens: must be from 0 through 9223372036854775807"),
    ],
)
def test_capsule_item_validation(field: str, value: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=_msg(message)):
        dataclasses.replace(_item(), **{field: value})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("memory_id", "", "memory_id: must be a non-blank string"),
        ("memory_id", 7, "memory_id: must be a non-blank string"),
        ("rank", 2**31 + 1, "rank: must be from 1 through 2147483648"),
        ("score", math.nan, "score: must be a finite float"),
        ("clarity", 1, "clarity: must be a finite float"),
        ("tokens", -5, "tokens: must be from 0 through 9223372036854775807"),
        ("remaining_tokens", -1, "remaining_tokens: must be from 0 through 1048576"),
        ("remaining_tokens", 1_048_577, "remaining_tokens: must be from 0 through 1048576"),
        ("decision", "included", "decision: must be a CapsuleDecision"),
    ],
)
def test_capsule_trace_entry_validation(field: str, value: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=_msg(message)):
        dataclasses.replace(_entry(), **{field: value})


def test_capsule_decision_values() -> None:
    assert [d.value for d in CapsuleDecision] == ["included", "budget", "limit"]


def test_capsule_properties_and_time_normalisation() -> None:
    shown = NOW.astimezone(timezone(timedelta(hours=-7)))
    capsule = _capsule(as_of=shown)
    assert capsule.as_of == NOW
    assert capsule.as_of.tzinfo is UTC
    assert capsule.considered == 2
    assert capsule.omitted_by_score == 2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"scope": ("tenant", "owner", "subject")}, "scope: must be a Scope"),
        ({"as_of": datetime(2026, 1, 1)}, "as_of: must be timezone-aware"),
        ({"items": [_item(3)]}, "items: must be a tuple of CapsuleItem"),
        ({"items": (_entry(3),)}, "items: must be a tuple of CapsuleItem"),
        ({"budget_tokens": 0}, "budget_tokens: must be from 1 through 1048576"),
        ({"budget_tokens": 1_048_577}, "budget_tokens: must be from 1 through 1048576"),
        ({"used_tokens": 11}, "used_tokens: must be from 0 through 10"),
        ({"used_tokens": -1}, "used_tokens: must be from 0 through 10"),
        ({"used_tokens": 4}, "used_tokens: must equal the items' token costs"),
        ({"items": (), "used_tokens": 3}, "used_tokens: must equal the items' token costs"),
        (
            {"items": (_item(4), _item(5, 2, "mem-2")), "used_tokens": 9, "budget_tokens": 8},
            "used_tokens: must be from 0 through 8",
        ),
        ({"limit": 0}, "limit: must be from 1 through 100"),
        (
            {"items": (_item(1), _item(1, 2, "m2"), _item(1, 3, "m3")), "used_tokens": 3},
            "items: must not exceed limit",
        ),
        ({"estimator": " "}, "estimator: must be a non-blank string"),
        ({"matched": True}, "matched: must be a non-negative int"),
        ({"matched": 2.0}, "matched: must be a non-negative int"),
        ({"matched": 1}, "matched: must count at least the traced candidates"),
        ({"matched": -1, "trace": ()}, "matched: must count at least the traced candidates"),
        ({"trace": [_entry()]}, "trace: must be a tuple of CapsuleTraceEntry"),
        ({"trace": (_item(),)}, "trace: must be a tuple of CapsuleTraceEntry"),
    ],
)
def test_memory_capsule_validation(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=_msg(message)):
        _capsule(**changes)


def test_memory_capsule_accepts_the_boundaries() -> None:
    full = _capsule(items=(_item(6), _item(4, 2, "mem-2")), used_tokens=10)
    assert full.used_tokens == full.budget_tokens
    empty = _capsule(items=(), used_tokens=0, matched=0, trace=())
    assert empty.considered == empty.omitted_by_score == 0


def test_memory_page_validation() -> None:
    page = MemoryPage((_record(),), "cursor")
    assert page.next_cursor == "cursor"
    assert MemoryPage((), None).items == ()
    with pytest.raises(ValidationError, match=_msg("items: must be a tuple of MemoryRecord")):
        MemoryPage([_record()], None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=_msg("items: must be a tuple of MemoryRecord")):
        MemoryPage(("mem-1",), None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=_msg("next_cursor: must be a string or None")):
        MemoryPage((), 7)  # type: ignore[arg-type]


def test_dtos_survive_pickle_deepcopy_and_replace() -> None:
    for value in (_item(), _entry(), _capsule(), MemoryPage((_record(),), "c")):
        assert pickle.loads(pickle.dumps(value)) == value
        assert copy.deepcopy(value) == value
        assert dataclasses.replace(value) == value


# --- a real capsule -----------------------------------------------------------------------------


def test_a_searched_capsule_survives_pickle(tmp_path: Path) -> None:
    retention = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=4))
    source = SourceRef("src", "chat", NOW, TrustLevel.CONFIRMED)
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: NOW) as service:
        for event_id in ("evt-2", "evt-1"):
            service.ingest_event(RawEventDraft(event_id, SCOPE, source, "body", retention))
        for index, content in enumerate(["green tea at noon", "tea", "coffee", "green " * 40]):
            service.materialize_once(
                MemoryDraft(
                    f"mem-{index}",
                    SCOPE,
                    content,
                    ("evt-2", "evt-1"),
                    "fact",
                    TrustLevel.OBSERVED,
                    NOW,
                    {"n": index},
                )
            )
        capsule = service.search(
            SearchQuery(SCOPE, "green tea", NOW + timedelta(days=3), budget_tokens=10, limit=2)
        )
    assert capsule.items and capsule.trace
    assert CapsuleDecision.BUDGET in _decisions(capsule.trace)
    assert capsule.items[0].source_event_ids == ("evt-1", "evt-2")
    copied = pickle.loads(pickle.dumps(capsule))
    assert copied == capsule
    assert copied.items[0].memory.metadata == capsule.items[0].memory.metadata
    assert copy.deepcopy(capsule) == capsule
