"""recall (capsules within a hard token budget, at a valid time) and expand (the exact
record, or one KeyError whatever the reason)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from evicortex_builders import NS, OTHER, T0, T1, T2, T3, tokens

from evicortex import CapsuleItem, ClaimInput, EviCortex, MemoryCapsule, OmittedCandidate
from evicortex.errors import ValidationError


def ids(capsule: MemoryCapsule) -> list[str]:
    return [item.id for item in capsule.items]


# --- the capsule -------------------------------------------------------------------------


def test_recall_returns_a_capsule_with_the_documented_defaults(memory: EviCortex) -> None:
    record = memory.remember(namespace=NS, content="Ada selected dark mode.")
    memory.remember(namespace=NS, content="Unrelated words here.")
    memory.remember(namespace=OTHER, content="Bob selected dark mode.")
    before = datetime.now(UTC) - timedelta(seconds=1)
    capsule = memory.recall(namespace=NS, query="dark mode")
    after = datetime.now(UTC)
    assert isinstance(capsule, MemoryCapsule)
    assert capsule.namespace == NS
    assert capsule.query == "dark mode"
    assert capsule.budget_tokens == 512
    assert capsule.limit == 20
    assert capsule.estimator == "utf8-bytes/3"
    assert before <= capsule.as_of <= after
    assert capsule.as_of.utcoffset() == timedelta(0)
    assert ids(capsule) == [record.id]
    (item,) = capsule.items
    assert isinstance(item, CapsuleItem)
    assert item.kind == "episode"
    assert item.content == record.content
    assert item.memory_id == record.id
    assert item.claim is None
    assert item.rank == 1
    assert item.tokens == tokens(record.content)
    assert capsule.used_tokens == item.tokens
    assert capsule.matched == 1
    assert capsule.omitted == ()
    assert capsule.semantic is None


def test_a_claim_is_recalled_with_its_evidence_id(memory: EviCortex) -> None:
    record = memory.remember(
        namespace=NS,
        content="Ada changed her settings.",
        claims=[ClaimInput("user:ada", "prefers_theme", "magenta")],
    )
    capsule = memory.recall(namespace=NS, query="magenta")
    (item,) = capsule.items
    (claim,) = record.claims
    assert item.kind == "claim"
    assert item.id == claim.id
    assert item.memory_id == record.id
    assert item.claim is not None
    assert item.claim.id == claim.id
    assert (item.claim.subject, item.claim.predicate, item.claim.value) == (
        "user:ada",
        "prefers_theme",
        "magenta",
    )
    assert item.claim.status == "current"
    assert "magenta" in item.content
    assert item.tokens == tokens(item.content)


def test_other_namespaces_are_never_recalled(memory: EviCortex) -> None:
    memory.remember(namespace=OTHER, content="Bob keeps a quokka.")
    assert memory.recall(namespace=NS, query="quokka").items == ()
    assert len(memory.recall(namespace=OTHER, query="quokka").items) == 1


# --- the budget and the limit ------------------------------------------------------------

# Sizes in UTF-8 bytes vary, with two- and three-byte characters, so that the estimate
# is not the number of characters.
CONTENTS = [f"quokka {'é' * (5 * i)} {'日本' * (i % 3)} {'x' * i}" for i in range(1, 11)]


@pytest.mark.parametrize("limit", [20, 100])
@pytest.mark.parametrize("budget", [1, 5, 12, 30, 60, 200, 5000])
def test_the_budget_is_a_hard_limit_under_utf8_bytes_over_3(
    memory: EviCortex, budget: int, limit: int
) -> None:
    by_id = {memory.remember(namespace=NS, content=c).id: c for c in CONTENTS}
    capsule = memory.recall(namespace=NS, query="quokka", budget_tokens=budget, limit=limit)
    assert capsule.budget_tokens == budget
    assert capsule.limit == limit
    assert capsule.used_tokens <= budget
    assert capsule.used_tokens == sum(item.tokens for item in capsule.items)
    for item in capsule.items:
        assert item.tokens == tokens(by_id[item.id])
        assert item.content == by_id[item.id]
    for omitted in capsule.omitted:
        assert isinstance(omitted, OmittedCandidate)
        assert omitted.reason == "budget"
        assert omitted.tokens == tokens(by_id[omitted.id])
    included = set(ids(capsule))
    left_out = {omitted.id for omitted in capsule.omitted}
    assert included.isdisjoint(left_out)
    assert included | left_out == set(by_id)
    if budget >= sum(tokens(c) for c in CONTENTS):
        assert included == set(by_id)
    if budget < min(tokens(c) for c in CONTENTS):
        assert capsule.items == ()


def test_the_limit_bounds_the_items_without_raising_the_budget(memory: EviCortex) -> None:
    for content in CONTENTS[:6]:
        memory.remember(namespace=NS, content=content)
    capsule = memory.recall(namespace=NS, query="quokka", budget_tokens=100_000, limit=3)
    assert len(capsule.items) == 3
    assert [item.rank for item in capsule.items] == [1, 2, 3]
    assert [omitted.reason for omitted in capsule.omitted] == ["limit"] * 3
    assert capsule.matched == 6


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"budget_tokens": 0}, id="budget-0"),
        pytest.param({"budget_tokens": -1}, id="budget-negative"),
        pytest.param({"budget_tokens": True}, id="budget-bool"),
        pytest.param({"budget_tokens": 1.5}, id="budget-float"),
        pytest.param({"budget_tokens": 1_048_577}, id="budget-too-large"),
        pytest.param({"limit": 0}, id="limit-0"),
        pytest.param({"limit": 101}, id="limit-101"),
        pytest.param({"limit": True}, id="limit-bool"),
        pytest.param({"query": ""}, id="query-empty"),
        pytest.param({"query": "   "}, id="query-blank"),
        pytest.param({"query": 5}, id="query-not-text"),
        pytest.param({"as_of": datetime(2025, 3, 1)}, id="as-of-naive"),
        pytest.param({"as_of": "2025-03-01T09:00:00"}, id="as-of-naive-iso"),
    ],
)
def test_recall_arguments_out_of_bounds_are_refused(
    memory: EviCortex, arguments: dict[str, Any]
) -> None:
    memory.remember(namespace=NS, content="quokka")
    call: dict[str, Any] = {"namespace": NS, "query": "quokka", **arguments}
    with pytest.raises(ValidationError):
        memory.recall(**call)


# --- as_of is valid time -----------------------------------------------------------------


def test_a_claim_valid_only_later_is_not_current_at_an_earlier_as_of(memory: EviCortex) -> None:
    record = memory.remember(
        namespace=NS,
        content="Ada changed her settings.",
        occurred_at=T0,
        claims=[ClaimInput("user:ada", "prefers_theme", "magenta", valid_from=T2)],
    )
    (claim,) = record.claims

    def statuses(as_of: datetime) -> list[str]:
        capsule = memory.recall(namespace=NS, query="magenta", as_of=as_of)
        assert capsule.as_of == as_of
        return [
            item.claim.status
            for item in capsule.items
            if item.id == claim.id and item.claim is not None
        ]

    # as_of selects valid-time state: a claim not yet valid then is no candidate.
    assert statuses(T1) == []
    assert statuses(T3) == ["current"]


def test_recall_leaves_out_claims_not_yet_valid_and_ended_at_as_of(memory: EviCortex) -> None:
    memory.remember(
        namespace=NS,
        content="Ada plans a move.",
        occurred_at=T0,
        claims=[
            ClaimInput("user:ada", "lives_in", "Paris", valid_from=T2),
            ClaimInput("user:ada", "lives_in", "Lyon", valid_from=T0, valid_to=T2),
        ],
    )

    def claims(as_of: datetime) -> list[tuple[str, str]]:
        capsule = memory.recall(namespace=NS, query="lives_in Paris Lyon", as_of=as_of)
        return sorted((item.claim.value, item.claim.status) for item in capsule.items if item.claim)

    assert claims(T1) == [("Lyon", "current")]
    assert claims(T3) == [("Paris", "current")]


def test_a_superseded_claim_is_left_out_at_every_as_of(memory: EviCortex) -> None:
    # Supersession does not look at valid time: once the revision is recorded, the claim
    # it replaces is out of recall, also before the revision's valid_from.
    tea = memory.remember(
        namespace=NS,
        content="Ada likes tea.",
        occurred_at=T0,
        claims=[ClaimInput("user:ada", "likes", "tea", valid_from=T1)],
    )
    memory.remember(
        namespace=NS,
        content="Ada likes coffee.",
        occurred_at=T0,
        claims=[
            ClaimInput("user:ada", "likes", "coffee", valid_from=T3, supersedes=tea.claims[0].id)
        ],
    )

    def claims(as_of: datetime) -> list[str]:
        capsule = memory.recall(namespace=NS, query="likes tea coffee", as_of=as_of)
        return sorted(item.claim.value for item in capsule.items if item.claim)

    assert claims(T2) == []  # tea is valid then, but superseded
    assert claims(T3 + timedelta(days=1)) == ["coffee"]


def test_evidence_that_occurred_after_as_of_is_not_recalled(memory: EviCortex) -> None:
    record = memory.remember(namespace=NS, content="Ada booked a flight.", occurred_at=T2)
    assert ids(memory.recall(namespace=NS, query="flight", as_of=T1)) == []
    assert ids(memory.recall(namespace=NS, query="flight", as_of=T2)) == [record.id]
    assert ids(memory.recall(namespace=NS, query="flight", as_of=T3)) == [record.id]
    later = "2025-09-01T11:00:00+02:00"
    assert ids(memory.recall(namespace=NS, query="flight", as_of=later)) == [record.id]
    assert ids(memory.recall(namespace=NS, query="flight")) == [record.id]


def test_as_of_is_not_a_known_at_filter(memory: EviCortex) -> None:
    # Recorded now, about something that happened at T0: recalled as of T1.
    record = memory.remember(namespace=NS, content="Ada adopted a quokka.", occurred_at=T0)
    assert record.recorded_at > T1
    assert ids(memory.recall(namespace=NS, query="quokka", as_of=T1)) == [record.id]


# --- expand ------------------------------------------------------------------------------


def test_expand_returns_the_exact_record(memory: EviCortex) -> None:
    record = memory.remember(
        namespace=NS,
        content="Ada prefers dark mode.",
        source="chat",
        metadata={"channel": "chat"},
        idempotency_key="k",
        claims=[ClaimInput("user:ada", "prefers_theme", "dark")],
    )
    assert memory.expand(namespace=NS, memory_id=record.id) == record


def test_expand_raises_one_key_error_whatever_the_reason(memory: EviCortex) -> None:
    foreign = memory.remember(
        namespace=OTHER,
        content="Bob keeps a quokka.",
        claims=[ClaimInput("user:bob", "keeps", "quokka")],
    )
    own = memory.remember(
        namespace=NS,
        content="Ada keeps a cat.",
        claims=[ClaimInput("user:ada", "keeps", "cat")],
    )
    cases = {
        "missing": "mem-" + "0" * 32,
        "another namespace's record": foreign.id,
        "a claim": own.claims[0].id,
        "another namespace's claim": foreign.claims[0].id,
    }
    shapes = set()
    for memory_id in cases.values():
        for read in (memory.expand, memory.get_extraction):
            with pytest.raises(KeyError) as caught:
                read(namespace=NS, memory_id=memory_id)
            message = str(caught.value)
            assert OTHER not in message
            assert "Bob" not in message
            # Not even the chain tells the cases apart.
            error = caught.value
            assert error.__cause__ is None and error.__context__ is None
            shapes.add((type(error), message.replace(memory_id, "<id>")))
    assert len(shapes) == 1, shapes
    assert memory.expand(namespace=OTHER, memory_id=foreign.id) == foreign
