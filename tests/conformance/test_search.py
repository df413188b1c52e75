"""search: SearchQuery validation, eligibility, BM25 relevance, the total order, Unicode
folding, and what a capsule carries (budgets and estimators: test_search_budget.py)."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import pickle
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    bm25_reference,
    check_capsule,
    event,
    materialize_all,
    memory,
    msg,
)

from trueheart_core import (
    CapsuleDecision,
    CapsuleTraceEntry,
    MemoryCapsule,
    MemoryRecord,
    Scope,
    SearchQuery,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.domain.search import ranking
from trueheart_core.domain.search.ranking import BM25_B, BM25_K1
from trueheart_core.domain.search.tokenize import term_key

INCLUDED = CapsuleDecision.INCLUDED
LIMIT = CapsuleDecision.LIMIT
IST = timezone(timedelta(hours=5, minutes=30))


def _ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


def _search(service: TrueHeart, text: str, **fields: Any) -> MemoryCapsule:
    fields.setdefault("as_of", NOW)
    capsule = service.search(SearchQuery(fields.pop("scope", SCOPE), text, **fields))
    check_capsule(capsule)
    return capsule


# --- SearchQuery validation -------------------------------------------------------------


def test_search_query_defaults() -> None:
    query = SearchQuery(SCOPE, "ada", NOW)
    assert (query.budget_tokens, query.limit, query.kinds, query.min_trust) == (512, 20, (), None)


INVALID_QUERY_FIELDS: list[tuple[str, object, str]] = [
    ("scope", ("tenant", "owner", "subject"), "scope: must be a Scope"),
    ("scope", None, "scope: must be a Scope"),
    ("text", "", "text: must be a non-blank string"),
    ("text", " \t\n\u3000", "text: must be a non-blank string"),
    ("text", None, "text: must be a non-blank string"),
    ("text", b"ada", "text: must be a non-blank string"),
    ("text", "a" * 4097, "text: must be at most 4096 characters"),
    ("text", "\u6771" * 4097, "text: must be at most 4096 characters"),
    ("text", "ada \ud800", "text: must be valid UTF-8"),
    ("as_of", datetime(2026, 8, 13, 12, 0), "as_of: must be timezone-aware"),
    ("as_of", date(2026, 8, 13), "as_of: must be timezone-aware"),
    ("as_of", "2026-08-13T12:00:00+00:00", "as_of: must be timezone-aware"),
    ("budget_tokens", 0, "budget_tokens: must be from 1 through 1048576"),
    ("budget_tokens", -1, "budget_tokens: must be from 1 through 1048576"),
    ("budget_tokens", 1_048_577, "budget_tokens: must be from 1 through 1048576"),
    ("budget_tokens", True, "budget_tokens: must be from 1 through 1048576"),
    ("budget_tokens", 512.0, "budget_tokens: must be from 1 through 1048576"),
    ("budget_tokens", "512", "budget_tokens: must be from 1 through 1048576"),
    ("budget_tokens", None, "budget_tokens: must be from 1 through 1048576"),
    ("limit", 0, "limit: must be from 1 through 100"),
    ("limit", 101, "limit: must be from 1 through 100"),
    ("limit", True, "limit: must be from 1 through 100"),
    ("limit", 20.0, "limit: must be from 1 through 100"),
    ("limit", None, "limit: must be from 1 through 100"),
    ("kinds", ["fact"], "kinds: must be a tuple"),
    ("kinds", "fact", "kinds: must be a tuple"),
    ("kinds", None, "kinds: must be a tuple"),
    ("kinds", ("fact", ""), "kinds: must be a non-blank string"),
    ("kinds", (1,), "kinds: must be a non-blank string"),
    ("kinds", ("k" * 129,), "kinds: must be at most 128 characters"),
    ("min_trust", 1, "min_trust: must be a TrustLevel or None"),
    ("min_trust", "observed", "min_trust: must be a TrustLevel or None"),
    ("min_trust", True, "min_trust: must be a TrustLevel or None"),
    ("min_trust", 1.0, "min_trust: must be a TrustLevel or None"),
]


@pytest.mark.parametrize(("field", "value", "message"), INVALID_QUERY_FIELDS)
def test_search_query_rejects_each_invalid_field(field: str, value: object, message: str) -> None:
    arguments: dict[str, object] = {"scope": SCOPE, "text": "ada", "as_of": NOW, field: value}
    with pytest.raises(ValidationError, match=msg(message)):
        SearchQuery(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("text", "a" * 4096),
        ("text", "\u6771" * 4096),
        ("text", "!!!"),
        ("budget_tokens", 1),
        ("budget_tokens", 1_048_576),
        ("limit", 1),
        ("limit", 100),
        ("kinds", ("fact", "k" * 128)),
        ("min_trust", TrustLevel.UNTRUSTED),
        ("min_trust", TrustLevel.CONFIRMED),
    ],
)
def test_search_query_accepts_the_bounds(field: str, value: object) -> None:
    arguments: dict[str, object] = {"scope": SCOPE, "text": "ada", "as_of": NOW, field: value}
    query = SearchQuery(**arguments)  # type: ignore[arg-type]
    assert getattr(query, field) == value


def test_the_first_invalid_field_wins() -> None:
    valid: list[object] = [SCOPE, "ada", NOW, 512, 20, (), None]
    invalid: list[object] = ["scope", " ", datetime(2026, 1, 1), 0, 0, ["x"], 2]
    fields = ["scope", "text", "as_of", "budget_tokens", "limit", "kinds", "min_trust"]
    for position, field in enumerate(fields):
        arguments = valid[:position] + invalid[position:]
        with pytest.raises(ValidationError, match=f"^{field}: "):
            SearchQuery(*arguments)  # type: ignore[arg-type]


def test_as_of_is_normalised_to_utc() -> None:
    query = SearchQuery(SCOPE, "ada", NOW.astimezone(IST))
    assert query.as_of == NOW
    assert query.as_of.utcoffset() == timedelta(0)
    assert query.as_of.tzinfo is not IST
    assert query == SearchQuery(SCOPE, "ada", NOW)


def test_search_query_survives_pickle_deepcopy_and_replace() -> None:
    query = SearchQuery(
        SCOPE, "ada lovelace", NOW.astimezone(IST), 100, 7, ("fact", "pref"), TrustLevel.OBSERVED
    )
    for copied in (pickle.loads(pickle.dumps(query)), copy.deepcopy(query)):
        assert type(copied) is SearchQuery
        assert copied == query
        assert copied.as_of.utcoffset() == timedelta(0)
        assert copied.min_trust is TrustLevel.OBSERVED
    assert dataclasses.replace(query, limit=8).limit == 8
    with pytest.raises(ValidationError, match=msg("limit: must be from 1 through 100")):
        dataclasses.replace(query, limit=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        query.text = "other"  # type: ignore[misc]


def test_search_rejects_a_non_query(service: TrueHeart) -> None:
    with pytest.raises(ValidationError, match=msg("query: must be a SearchQuery")):
        service.search("ada")  # type: ignore[arg-type]


# --- what is found ----------------------------------------------------------------------

CORPUS = {
    "mem-ada": "Ada Lovelace wrote the first program",
    "mem-tea": "the user likes green tea",
    "mem-coffee": "the user drinks coffee every morning",
}


def test_the_relevant_memory_is_found(service: TrueHeart) -> None:
    records = materialize_all(service, CORPUS)
    capsule = _search(service, "who wrote the first program?")
    assert _ids(capsule)[0] == "mem-ada"
    assert capsule.matched == 1  # "who" and "the" are stop words: left out
    the = _search(service, "the")
    assert the.matched == 3  # a query of stop words only is searched as it is
    assert capsule.items[0].memory == records["mem-ada"]
    coffee = _search(service, "coffee")
    assert _ids(coffee) == ["mem-coffee"]
    assert coffee.matched == 1


def test_only_the_exact_scope_is_searched(service: TrueHeart) -> None:
    materialize_all(service, CORPUS)
    materialize_all(service, {**CORPUS, "mem-elsewhere": "green tea ceremony"}, scope=OTHER_SCOPE)
    capsule = _search(service, "green tea ceremony")
    assert _ids(capsule) == ["mem-tea"]
    assert capsule.matched == 1
    assert [entry.memory_id for entry in capsule.trace] == ["mem-tea"]
    assert capsule.scope == SCOPE
    assert capsule.items[0].memory.scope == SCOPE
    # The statistics are the scope's own: the other scope's memories do not count.
    expected = bm25_reference("green tea ceremony", list(CORPUS.values()), CORPUS["mem-tea"])
    assert math.isclose(capsule.items[0].score, expected, rel_tol=1e-12)
    other = _search(service, "green tea ceremony", scope=OTHER_SCOPE)
    assert _ids(other) == ["mem-elsewhere", "mem-tea"]
    assert all(item.memory.scope == OTHER_SCOPE for item in other.items)
    assert _search(service, "green tea", scope=Scope("tenant", "owner", "nobody")).matched == 0


def test_kinds_filter_is_exact_and_does_not_change_scores(service: TrueHeart) -> None:
    service.ingest_event(event())
    for memory_id, kind in [("m-fact", "fact"), ("m-pref", "preference"), ("m-Fact", "Fact")]:
        service.materialize_once(memory(memory_id, kind=kind, content=f"tea {memory_id}"))
    unfiltered = {i.memory.memory_id: i.score for i in _search(service, "tea").items}
    assert sorted(unfiltered) == ["m-Fact", "m-fact", "m-pref"]
    only_fact = _search(service, "tea", kinds=("fact",))
    assert _ids(only_fact) == ["m-fact"]
    assert only_fact.matched == 1
    assert only_fact.items[0].score == unfiltered["m-fact"]
    assert sorted(_ids(_search(service, "tea", kinds=("preference", "fact")))) == [
        "m-fact",
        "m-pref",
    ]
    none = _search(service, "tea", kinds=("other",))
    assert (none.items, none.matched, none.trace) == ((), 0, ())


def test_min_trust_filter(service: TrueHeart) -> None:
    service.ingest_event(event(trust=TrustLevel.CONFIRMED))
    for level in TrustLevel:
        service.materialize_once(memory(f"m-{level.value}", trust=level, content="tea"))
    expected = {
        None: ["m-0", "m-1", "m-2"],
        TrustLevel.UNTRUSTED: ["m-0", "m-1", "m-2"],
        TrustLevel.OBSERVED: ["m-1", "m-2"],
        TrustLevel.CONFIRMED: ["m-2"],
    }
    for min_trust, ids in expected.items():
        capsule = _search(service, "tea", min_trust=min_trust)
        assert _ids(capsule) == ids, min_trust
        assert capsule.matched == len(ids)
        assert all(min_trust is None or i.memory.trust >= min_trust for i in capsule.items)


def test_future_memories_are_excluded_but_counted_in_the_statistics(service: TrueHeart) -> None:
    service.ingest_event(event())
    service.materialize_once(memory("mem-now", content="green tea"))
    service.materialize_once(
        memory("mem-future", content="tea with lemon and honey", created_at=NOW + timedelta(days=1))
    )
    now = _search(service, "tea")
    assert _ids(now) == ["mem-now"]
    assert now.matched == 1
    corpus = ["green tea", "tea with lemon and honey"]
    assert math.isclose(
        now.items[0].score, bm25_reference("tea", corpus, "green tea"), rel_tol=1e-12
    )
    just_before = NOW + timedelta(days=1) - timedelta(microseconds=1)
    assert _ids(_search(service, "tea", as_of=just_before)) == ["mem-now"]
    later = _search(service, "tea", as_of=NOW + timedelta(days=1))
    assert _ids(later) == ["mem-now", "mem-future"]


def test_recall_until_is_strict_and_fading_memories_are_found(service: TrueHeart) -> None:
    service.ingest_event(event(clear_for=timedelta(days=4), recall_for=timedelta(days=6)))
    service.materialize_once(memory(content="green tea"))
    expected = {
        timedelta(days=4): 1.0,
        timedelta(days=5): 0.5,
        timedelta(days=6) - timedelta(microseconds=1): 1 / 172_800_000_000,
    }
    for offset, clarity in expected.items():
        capsule = _search(service, "tea", as_of=NOW + offset)
        assert _ids(capsule) == ["mem-1"]
        assert capsule.items[0].clarity == clarity
        assert capsule.trace[0].clarity == clarity
    for offset in (timedelta(days=6), timedelta(days=600)):
        gone = _search(service, "tea", as_of=NOW + offset)
        assert (gone.items, gone.matched, gone.trace) == ((), 0, ())


# --- ranking ------------------------------------------------------------------------------


def test_the_total_order_score_clarity_newest_then_code_points(service: TrueHeart) -> None:
    service.ingest_event(event("evt-long", clear_for=timedelta(days=30)))
    service.ingest_event(
        event("evt-short", clear_for=timedelta(days=1), recall_for=timedelta(days=10))
    )

    def add(memory_id: str, content: str, source: str, created_at: datetime = NOW) -> None:
        service.materialize_once(
            memory(memory_id, (source,), content=content, created_at=created_at)
        )

    add("z-best", "tea tea", "evt-short")  # best score, though fading, oldest, last ID
    add("x-fading-newer", "tea cake", "evt-short", NOW + timedelta(days=1))
    add("y-clear", "tea cake", "evt-long")
    add("w-newer", "tea cake", "evt-long", NOW + timedelta(hours=1))
    add("\u00c9-same", "tea cake", "evt-long")
    add("a-same", "tea cake", "evt-long")
    add("Z-same", "tea cake", "evt-long")
    capsule = _search(service, "tea", as_of=NOW + timedelta(days=5))
    assert _ids(capsule) == [
        "z-best",
        "w-newer",
        "Z-same",
        "a-same",
        "y-clear",
        "\u00c9-same",
        "x-fading-newer",
    ]
    assert [e.memory_id for e in capsule.trace] == _ids(capsule)
    best, *rest = capsule.items
    assert best.score > rest[0].score
    assert best.clarity == 5 / 9
    assert len({item.score for item in rest}) == 1  # identical contents tie exactly
    assert [item.clarity for item in rest] == [1.0] * 5 + [6 / 9]


def test_bm25_scores_equal_the_reference_formula(service: TrueHeart) -> None:
    corpus = {
        "d1": "green tea with lemon",
        "d2": "black tea",
        "d3": "tea tea tea and more tea in the morning",
        "d4": "coffee in the morning",
        "d5": "the user prefers green tea over black coffee",
        "d6": "nothing relevant here at all",
    }
    materialize_all(service, corpus)
    texts = list(corpus.values())
    queries = ("Green TEA tea morning", "coffee", "black coffee morning the")
    misspelt = ("Gren tae mornnig", "blakc cofee", "lemno heer", "user prefres", "moring thee")
    for query in (*queries, *misspelt):
        capsule = _search(service, query, limit=100)
        expected = {
            memory_id: bm25_reference(query, texts, content)
            for memory_id, content in corpus.items()
            if bm25_reference(query, texts, content) > 0
        }
        assert capsule.matched == len(expected)
        assert set(_ids(capsule)) == set(expected)
        for item in capsule.items:
            assert type(item.score) is float
            assert math.isclose(item.score, expected[item.memory.memory_id], rel_tol=1e-12)
        assert _ids(capsule) == sorted(expected, key=lambda m: (-expected[m], m))


def test_the_window_is_cut_by_the_total_order(service: TrueHeart) -> None:
    service.ingest_event(event())
    for hours, memory_id in [(0, "m-a"), (3, "m-b"), (1, "m-c"), (5, "m-d"), (2, "m-e")]:
        service.materialize_once(
            memory(memory_id, content="tea", created_at=NOW + timedelta(hours=hours))
        )
    capsule = _search(service, "tea", as_of=NOW + timedelta(days=1), limit=1)
    assert [e.memory_id for e in capsule.trace] == ["m-d", "m-b"]
    assert [e.decision for e in capsule.trace] == [INCLUDED, LIMIT]
    assert (capsule.matched, capsule.considered, capsule.omitted_by_score) == (5, 2, 3)


# --- terms, scripts and folding -------------------------------------------------------------


@pytest.mark.parametrize("text", ["!!! ???", "___", "\u3002\u3001", "zzz unknown"])
def test_a_query_without_matching_terms_gives_an_empty_capsule(
    service: TrueHeart, text: str
) -> None:
    materialize_all(service, CORPUS)
    capsule = _search(service, text, budget_tokens=77, limit=5, as_of=NOW.astimezone(IST))
    assert capsule == MemoryCapsule(SCOPE, NOW, (), 77, 0, 5, "utf8-bytes/3", 0, ())


def test_an_empty_store_gives_an_empty_capsule(service: TrueHeart) -> None:
    capsule = _search(service, "anything")
    assert (capsule.items, capsule.matched, capsule.trace, capsule.used_tokens) == ((), 0, (), 0)


def test_japanese_and_chinese_are_found_without_spaces(service: TrueHeart) -> None:
    contents = {"mem-ja": "ユーザーは東京に住んでいます", "mem-zh": "用户住在北京市海淀区"}
    materialize_all(service, contents)
    assert _ids(_search(service, "東京")) == ["mem-ja"]
    assert _ids(_search(service, "東京に住む")) == ["mem-ja"]
    assert _ids(_search(service, "北京")) == ["mem-zh"]
    assert _ids(_search(service, "海淀区的用户")) == ["mem-zh"]
    assert _search(service, "大阪").matched == 0
    assert _search(service, "上海").matched == 0


def test_case_width_and_compatibility_forms_fold(service: TrueHeart) -> None:
    materialize_all(
        service,
        {
            "mem-ada": "ada lovelace",
            "mem-street": "Stra\u00dfe",
            "mem-file": "file system",
            "mem-kana": "\u30ab\u30bf\u30ab\u30ca",
        },
    )
    scores = {_search(service, q).items[0].score for q in ("ada", "ADA", "\uff21\uff24\uff21")}
    assert len(scores) == 1
    assert _ids(_search(service, "\uff21\uff24\uff21")) == ["mem-ada"]  # full-width ADA
    assert _ids(_search(service, "LOVELACE")) == ["mem-ada"]
    assert _ids(_search(service, "STRASSE")) == ["mem-street"]
    assert _ids(_search(service, "\ufb01le")) == ["mem-file"]  # the "fi" ligature
    assert _ids(_search(service, "\uff76\uff80\uff76\uff85")) == ["mem-kana"]  # half-width


# --- items, trace and determinism -----------------------------------------------------------


def test_items_are_verified_records_with_their_sources(service: TrueHeart) -> None:
    service.ingest_event(event("evt-2"))
    service.ingest_event(event("evt-1"))
    record = service.materialize_once(
        memory("mem-1", ("evt-2", "evt-1"), content="green tea", metadata={"k": [1]})
    )
    (item,) = _search(service, "tea").items
    assert isinstance(item.memory, MemoryRecord)
    assert item.memory == record == service.get_memory(SCOPE, "mem-1")
    assert item.source_event_ids == ("evt-1", "evt-2") == record.source_event_ids
    assert item.memory.metadata == {"k": (1,)}


def test_the_trace_is_body_free(service: TrueHeart) -> None:
    secret = "tea zq7-private-body-marker"
    materialize_all(service, {"mem-1": secret})
    capsule = _search(service, "tea")
    assert [f.name for f in dataclasses.fields(CapsuleTraceEntry)] == [
        "memory_id",
        "rank",
        "score",
        "clarity",
        "tokens",
        "remaining_tokens",
        "decision",
        "signals",
    ]
    assert "private" not in repr(capsule.trace)
    assert "private" in capsule.items[0].memory.content


def test_search_is_deterministic_across_calls_and_time_zones(service: TrueHeart) -> None:
    materialize_all(service, CORPUS)
    service.ingest_event(event("evt-2", clear_for=timedelta(hours=1)))
    service.materialize_once(memory("mem-fading", ("evt-2",), content="the tea fades"))
    as_of = NOW + timedelta(hours=2)
    first = _search(service, "the tea", as_of=as_of, budget_tokens=20)
    assert first.items[0].clarity < 1.0 or first.items[-1].clarity < 1.0
    zones: list[Callable[[datetime], datetime]] = [
        lambda t: t,
        lambda t: t.astimezone(IST),
        lambda t: t.astimezone(timezone(timedelta(hours=-9, minutes=-30))),
    ]
    for zone in zones:
        for _ in range(2):
            again = _search(service, "the tea", as_of=zone(as_of), budget_tokens=20)
            assert again == first
            assert again.as_of.utcoffset() == timedelta(0)
    assert pickle.loads(pickle.dumps(first)) == first
    assert copy.deepcopy(first) == first


# --- scores are exact sums --------------------------------------------------------------

_WORDS = ("amber", "basil", "cedar", "delta", "ember", "fjord")


def _plain_sum(parts: list[float]) -> float:
    total = 0.0
    for part in parts:
        total += part
    return total


def _rounding_apart() -> tuple[list[str], list[str], list[int]]:
    """Two triples of words, and how many memories hold each position's pair of words,
    such that the memories holding one triple each have the same terms' scores, while
    adding those scores left to right in the order of the terms' keys (the order an
    index reads them in) rounds the two sums differently."""
    by_key = sorted(_WORDS, key=term_key)
    for frequencies in itertools.permutations(range(1, 9), 3):
        fillers = sum(f - 1 for f in frequencies)
        documents = 2 + fillers
        average = (6 + 2 * fillers) / documents
        parts = [
            ranking.bm25_term(1, 3, ranking.idf(documents, f), BM25_K1, BM25_B, average)
            for f in frequencies
        ]
        orders = list(itertools.permutations(range(3)))
        for one, other in itertools.combinations(orders, 2):
            if _plain_sum([parts[i] for i in one]) != _plain_sum([parts[i] for i in other]):
                # The j-th word by key goes to the position read j-th.
                first, second = [""] * 3, [""] * 3
                for j in range(3):
                    first[one[j]], second[other[j]] = by_key[j], by_key[3 + j]
                return first, second, list(frequencies)
    raise AssertionError("no order-sensitive sum among the frequencies")


def test_memories_whose_terms_score_alike_tie_whatever_order_their_terms_take(
    service: TrueHeart,
) -> None:
    first, second, frequencies = _rounding_apart()
    corpus = {"m-a": " ".join(first), "m-b": " ".join(second)}
    for position, frequency in enumerate(frequencies):
        for n in range(frequency - 1):
            corpus[f"m-fill-{position}-{n}"] = f"{first[position]} {second[position]}"
    materialize_all(service, corpus)
    query = " ".join(first + second)
    capsule = _search(service, query, limit=100, budget_tokens=100_000)
    scores = {item.memory.memory_id: item.score for item in capsule.items}
    # Each score is the exactly rounded sum the docs define, so the two tie ...
    assert scores["m-a"] == scores["m-b"]
    assert scores["m-a"] == bm25_reference(query, list(corpus.values()), corpus["m-a"])
    # ... and the tie is broken by ID, so one result holds the same memory on every store.
    best = [m for m in _ids(capsule) if m in ("m-a", "m-b")]
    assert best == ["m-a", "m-b"]
