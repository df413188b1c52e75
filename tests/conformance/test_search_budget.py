"""search: token budgets, the limit, the considered window and token estimators."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, check_capsule, event, materialize_all, memory, msg
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core import (
    CapsuleDecision,
    MemoryCapsule,
    ProviderError,
    SearchQuery,
    TrueHeart,
    Utf8BytesEstimator,
    ValidationError,
)
from trueheart_core.ports import Repository

INCLUDED = CapsuleDecision.INCLUDED
BUDGET = CapsuleDecision.BUDGET
LIMIT = CapsuleDecision.LIMIT


def _ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


def _search(service: TrueHeart, text: str, **fields: Any) -> MemoryCapsule:
    capsule = service.search(SearchQuery(SCOPE, text, NOW, **fields))
    check_capsule(capsule)
    return capsule


# --- budgets and limits -------------------------------------------------------------------


class TagCost:
    """Prices a memory by the number in its ``cost<N>`` word."""

    @property
    def name(self) -> str:
        return "tag-cost"

    def estimate(self, text: str) -> int:
        found = re.search(r"cost(\d+)", text)
        assert found is not None
        return int(found.group(1))


def _priced(repository: Repository, costs: Sequence[int]) -> TrueHeart:
    """Memories m01, m02, ... that all score the same for "alpha", priced by ``costs``."""
    service = TrueHeart(repository, clock=lambda: NOW, token_estimator=TagCost())
    materialize_all(service, {f"m{n:02d}": f"alpha cost{c}" for n, c in enumerate(costs, 1)})
    return service


def _decisions(capsule: MemoryCapsule) -> list[CapsuleDecision]:
    return [entry.decision for entry in capsule.trace]


def test_a_too_large_memory_does_not_stop_smaller_ones(repository: Repository) -> None:
    service = _priced(repository, [5, 8, 3, 2])
    capsule = _search(service, "alpha", budget_tokens=10)
    assert capsule.estimator == "tag-cost"
    assert _decisions(capsule) == [INCLUDED, BUDGET, INCLUDED, INCLUDED]
    assert [e.remaining_tokens for e in capsule.trace] == [10, 5, 5, 2]
    assert [e.tokens for e in capsule.trace] == [5, 8, 3, 2]
    assert _ids(capsule) == ["m01", "m03", "m04"]
    assert capsule.used_tokens == 10


def test_an_exact_fit_is_included(repository: Repository) -> None:
    service = _priced(repository, [4, 6, 7])
    capsule = _search(service, "alpha", budget_tokens=10)
    assert _decisions(capsule) == [INCLUDED, INCLUDED, BUDGET]
    assert capsule.used_tokens == 10


def test_zero_cost_memories_fit_an_exhausted_budget(repository: Repository) -> None:
    service = _priced(repository, [5, 0, 1])
    capsule = _search(service, "alpha", budget_tokens=5)
    assert _decisions(capsule) == [INCLUDED, INCLUDED, BUDGET]
    assert [e.remaining_tokens for e in capsule.trace] == [5, 0, 0]


def test_limit_decisions_and_the_considered_window(repository: Repository) -> None:
    service = _priced(repository, [1, 1, 1, 1, 1])
    capsule = _search(service, "alpha", budget_tokens=100, limit=2)
    assert _decisions(capsule) == [INCLUDED, INCLUDED, LIMIT, LIMIT]
    assert [e.remaining_tokens for e in capsule.trace] == [100, 99, 98, 98]
    assert (capsule.matched, capsule.considered, capsule.omitted_by_score) == (5, 4, 1)
    assert capsule.used_tokens == 2
    assert capsule.limit == 2


def test_limit_is_decided_before_budget(repository: Repository) -> None:
    service = _priced(repository, [3, 20, 2])
    capsule = _search(service, "alpha", budget_tokens=10, limit=1)
    assert _decisions(capsule) == [INCLUDED, LIMIT]
    assert capsule.omitted_by_score == 1


def test_limit_never_overrides_the_budget(repository: Repository) -> None:
    service = _priced(repository, [6, 6, 6])
    capsule = _search(service, "alpha", budget_tokens=10, limit=3)
    assert _decisions(capsule) == [INCLUDED, BUDGET, BUDGET]
    assert capsule.used_tokens == 6
    nothing = _search(service, "alpha", budget_tokens=5, limit=3)
    assert _decisions(nothing) == [BUDGET, BUDGET, BUDGET]
    assert (nothing.items, nothing.used_tokens, nothing.matched) == ((), 0, 3)


PACKING_COSTS = [7, 3, 12, 1, 0, 5, 9, 2, 4, 11, 6, 8]


def test_packing_matches_the_reference_walk(repository: Repository) -> None:
    service = _priced(repository, PACKING_COSTS)

    @settings(max_examples=60, deadline=None)
    @given(st.integers(min_value=1, max_value=70), st.integers(min_value=1, max_value=8))
    def check(budget: int, limit: int) -> None:
        capsule = _search(service, "alpha", budget_tokens=budget, limit=limit)
        remaining, included, expected = budget, 0, []
        for cost in PACKING_COSTS[: 2 * limit]:
            if included >= limit:
                expected.append((LIMIT, remaining))
            elif cost > remaining:
                expected.append((BUDGET, remaining))
            else:
                expected.append((INCLUDED, remaining))
                included += 1
                remaining -= cost
        assert [(e.decision, e.remaining_tokens) for e in capsule.trace] == expected
        assert capsule.used_tokens == budget - remaining
        assert capsule.omitted_by_score == len(PACKING_COSTS) - min(2 * limit, 12)

    check()


def test_the_default_estimator_prices_utf8_bytes(service: TrueHeart) -> None:
    contents = {"m-1": "caf\u00e9 cr\u00e8me", "m-2": "caf\u00e9", "m-3": "caf\u00e9 \u6771\u4eac"}
    materialize_all(service, contents)
    capsule = _search(service, "caf\u00e9")
    assert capsule.estimator == "utf8-bytes/3"
    assert len(capsule.items) == 3
    for item in capsule.items:
        size = len(item.memory.content.encode("utf-8"))
        assert item.tokens == -(-size // 3) == Utf8BytesEstimator().estimate(item.memory.content)
    assert {i.memory.memory_id: i.tokens for i in capsule.items} == {"m-1": 4, "m-2": 2, "m-3": 4}


def test_matched_considered_and_omitted_count_only_eligible_matches(service: TrueHeart) -> None:
    service.ingest_event(event())
    for number in range(7):
        service.materialize_once(memory(f"m-{number}", content=f"alpha {number}"))
    service.materialize_once(memory("m-other-kind", content="alpha", kind="other"))
    service.materialize_once(memory("m-unrelated", content="beta"))
    three = _search(service, "alpha", kinds=("fact",), limit=3)
    assert (three.matched, three.considered, three.omitted_by_score) == (7, 6, 1)
    ten = _search(service, "alpha", kinds=("fact",), limit=10)
    assert (ten.matched, ten.considered, ten.omitted_by_score) == (7, 7, 0)
    every_kind = _search(service, "alpha", limit=10)
    assert every_kind.matched == 8


# --- estimators ---------------------------------------------------------------------------


class _EstimateOnly:
    def estimate(self, text: str) -> int:
        return 1


class _NameOnly:
    name = "name-only"


class _EstimateNotCallable:
    name = "not-callable"
    estimate = 5


@pytest.mark.parametrize(
    "estimator",
    [object(), "utf8-bytes/3", 3, _EstimateOnly(), _NameOnly(), _EstimateNotCallable()],
    ids=["object", "str", "int", "estimate-only", "name-only", "estimate-not-callable"],
)
def test_a_non_conforming_estimator_is_rejected(repository: Repository, estimator: object) -> None:
    with pytest.raises(ValidationError, match=msg("token_estimator: must be a TokenEstimator")):
        TrueHeart(repository, token_estimator=estimator)  # type: ignore[arg-type]


class _Returns:
    def __init__(self, value: object) -> None:
        self.value = value

    @property
    def name(self) -> str:
        return "returns"

    def estimate(self, text: str) -> int:
        return self.value  # type: ignore[return-value]


@pytest.mark.parametrize("value", [-1, 1.5, True, False, "3", None, 2.0, 2**63])
def test_an_estimator_returning_a_bad_cost_is_rejected_at_search(
    repository: Repository, value: object
) -> None:
    good = TrueHeart(repository, clock=lambda: NOW)
    materialize_all(good, {"mem-1": "green tea"})
    bad = TrueHeart(repository, clock=lambda: NOW, token_estimator=_Returns(value))
    with pytest.raises(
        ValidationError, match=msg("token_estimator: must return a non-negative int")
    ):
        bad.search(SearchQuery(SCOPE, "tea", NOW))
    assert _ids(_search(good, "tea")) == ["mem-1"]


class _Failing:
    name = "failing"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def estimate(self, text: str) -> int:
        raise self.error


def test_an_estimator_that_raises_is_a_provider_error(repository: Repository) -> None:
    good = TrueHeart(repository, clock=lambda: NOW)
    materialize_all(good, {"mem-1": "green tea"})
    for error in (ValueError("no tokenizer"), KeyError("model"), RuntimeError("down")):
        bad = TrueHeart(repository, clock=lambda: NOW, token_estimator=_Failing(error))
        with pytest.raises(
            ProviderError, match=msg("provider error: the token estimator failed")
        ) as caught:
            bad.search(SearchQuery(SCOPE, "tea", NOW))
        assert caught.value.__cause__ is error and error.args  # the host's, unchanged
    assert _ids(_search(good, "tea")) == ["mem-1"]
    assert good.verify_integrity().ok


class _Touchy(int):
    """A count whose own comparisons raise."""

    def __lt__(self, other: object) -> bool:
        raise RuntimeError("comparison of the host's count")

    __le__ = __gt__ = __ge__ = __lt__


class _BytesEstimator:
    """One token per UTF-8 byte, as a plain ``int`` or (``touchy``) a :class:`_Touchy`."""

    name = "bytes"

    def __init__(self, *, touchy: bool) -> None:
        self.touchy = touchy

    def estimate(self, text: str) -> int:
        size = len(text.encode("utf-8"))
        return _Touchy(size) if self.touchy else size


def test_an_estimate_is_read_as_its_plain_int_whatever_its_subclass_redefines(
    repository: Repository,
) -> None:
    plain = TrueHeart(repository, clock=lambda: NOW, token_estimator=_BytesEstimator(touchy=False))
    materialize_all(plain, {"mem-1": "green tea"})
    touchy = TrueHeart(repository, clock=lambda: NOW, token_estimator=_BytesEstimator(touchy=True))
    expected = plain.search(SearchQuery(SCOPE, "tea", NOW))
    found = touchy.search(SearchQuery(SCOPE, "tea", NOW))
    assert (found.items, found.used_tokens) == (expected.items, expected.used_tokens)


_REENTRANT = (
    "repository: is already in a call on this thread (a callback may not call back into the store)"
)


class _CallsBack:
    """A token estimator that does ``act`` to the service it serves, inside its call."""

    name = "calls-back"

    def __init__(self, act: Callable[[TrueHeart], object]) -> None:
        self.act = act
        self.service: TrueHeart | None = None

    def estimate(self, text: str) -> int:
        assert self.service is not None
        self.act(self.service)
        return 1


def _calling_back(repository: Repository, act: Callable[[TrueHeart], object]) -> TrueHeart:
    estimator = _CallsBack(act)
    service = TrueHeart(repository, clock=lambda: NOW, token_estimator=estimator)
    estimator.service = service
    materialize_all(service, {"mem-1": "green tea"})
    with pytest.raises(ValidationError, match=msg(_REENTRANT)):
        service.search(SearchQuery(SCOPE, "tea", NOW))
    return service


def test_a_callback_may_not_call_back_into_the_store(repository: Repository) -> None:
    service = _calling_back(repository, lambda service: service.stats(SCOPE))
    # nothing is left held: the next call runs, on this thread and on another
    assert service.stats(SCOPE).memories == 1
    plain = TrueHeart(repository, clock=lambda: NOW)
    assert _ids(_search(plain, "tea")) == ["mem-1"]


def test_a_callback_may_not_close_the_store_under_its_call(repository: Repository) -> None:
    service = _calling_back(repository, lambda service: service.close())
    # the store stayed open and whole; closing it outside a call works
    assert service.stats(SCOPE).memories == 1
    assert service.verify_integrity().ok
    service.close()
    with pytest.raises(ValidationError, match=msg("repository: is closed")):
        service.stats(SCOPE)
