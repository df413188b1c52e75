"""Reciprocal rank fusion of the lexical, semantic and reranker rankings (pure)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.search.model import RankSignal, SignalSource
from trueheart_core.domain.semantic import fusion
from trueheart_core.domain.semantic.fusion import Fused, Scored, contribution, fuse, rerank

LEX = SignalSource.LEXICAL
SEM = SignalSource.SEMANTIC
RR = SignalSource.RERANK


def _scored(memory_id: str, score: float = 1.0, clarity: float = 1.0, created: int = 0) -> Scored:
    return Scored(memory_id, score, clarity, created)


def _ids(fused: Sequence[Fused]) -> list[str]:
    return [f.memory_id for f in fused]


def test_the_constants_are_the_documented_ones() -> None:
    assert fusion.RRF_K == 60
    assert fusion.LEXICAL_WEIGHT == 1.0
    assert fusion.SEMANTIC_WEIGHT == 1.0
    assert fusion.FUSION == "rrf k=60"


@pytest.mark.parametrize(
    ("weight", "rank", "expected"),
    [(1.0, 1, 1 / 61), (1.0, 40, 1 / 100), (1.25, 3, 1.25 / 63), (0.0, 1, 0.0), (2.0, 140, 0.01)],
)
def test_contribution_is_weight_over_60_plus_rank(
    weight: float, rank: int, expected: float
) -> None:
    assert contribution(weight, rank) == expected


# --- fuse ----------------------------------------------------------------------------------


def test_fuse_sums_the_contributions_of_both_rankings() -> None:
    lexical = [_scored("a", 9.0), _scored("b", 5.0)]
    semantic = [_scored("b", 0.9), _scored("a", 0.8)]
    fused = fuse(lexical, semantic, 10)
    by_id = {f.memory_id: f for f in fused}
    assert by_id["a"].score == 1 / 61 + 1 / 62
    assert by_id["b"].score == 1 / 62 + 1 / 61
    assert by_id["a"].signals == (
        RankSignal(LEX, 1, 9.0, 1 / 61),
        RankSignal(SEM, 2, 0.8, 1 / 62),
    )
    assert by_id["b"].signals == (
        RankSignal(LEX, 2, 5.0, 1 / 62),
        RankSignal(SEM, 1, 0.9, 1 / 61),
    )


def test_a_candidate_of_one_ranking_has_one_signal() -> None:
    fused = fuse([_scored("lex-only", 3.0)], [_scored("sem-only", 0.7)], 10)
    by_id = {f.memory_id: f for f in fused}
    assert by_id["lex-only"].signals == (RankSignal(LEX, 1, 3.0, 1 / 61),)
    assert by_id["sem-only"].signals == (RankSignal(SEM, 1, 0.7, 1 / 61),)
    assert by_id["lex-only"].score == by_id["sem-only"].score == 1 / 61


def test_fuse_orders_by_fused_score_first() -> None:
    lexical = [_scored("a"), _scored("b"), _scored("c")]
    semantic = [_scored("c"), _scored("b")]
    fused = fuse(lexical, semantic, 10)
    # c: 1/63 + 1/61 > b: 1/62 + 1/62 (1/x is convex) > a: 1/61
    assert _ids(fused) == ["c", "b", "a"]
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)


def test_each_ranking_contributes_its_best_window_only() -> None:
    lexical = [_scored(f"l{i}") for i in range(5)]
    semantic = [_scored(f"s{i}") for i in range(4)] + [_scored("l0")]
    fused = fuse(lexical, semantic, 3)
    assert set(_ids(fused)) == {"l0", "l1", "l2", "s0", "s1", "s2"}
    # l0 is 5th in the semantic ranking, outside the window: it gets no semantic signal
    assert {f.memory_id: f for f in fused}["l0"].signals == (RankSignal(LEX, 1, 1.0, 1 / 61),)
    assert fuse(lexical, semantic, 0) == []


def test_an_empty_ranking_leaves_the_other() -> None:
    fused = fuse([], [_scored("x", 0.5, created=3), _scored("y", 0.4)], 10)
    assert _ids(fused) == ["x", "y"]
    assert fused[0] == Fused("x", 1 / 61, 1.0, 3, (RankSignal(SEM, 1, 0.5, 1 / 61),))
    assert fuse([], [], 10) == []


def test_exact_ties_are_broken_by_clarity_then_created_at_then_memory_id() -> None:
    # Rank 1 of one ranking only: every fused score is exactly 1/61 or 1/62.
    lexical = [_scored("m-clear", clarity=1.0, created=1), _scored("z-low", clarity=0.1)]
    semantic = [_scored("m-faded", clarity=0.5, created=9), _scored("a-low", clarity=0.1)]
    assert _ids(fuse(lexical, semantic, 10)) == ["m-clear", "m-faded", "a-low", "z-low"]
    lexical = [_scored("old", created=1)]
    semantic = [_scored("new", created=2)]
    assert _ids(fuse(lexical, semantic, 10)) == ["new", "old"]
    lexical = [_scored("b", created=5)]
    semantic = [_scored("a", created=5)]
    assert _ids(fuse(lexical, semantic, 10)) == ["a", "b"]


def test_memory_ids_are_compared_in_code_point_order() -> None:
    fused = fuse([_scored("Z"), _scored("é")], [_scored("a"), _scored("_")], 10)
    assert _ids(fused) == ["Z", "a", "_", "é"]


def test_the_fused_key_is_the_total_order() -> None:
    f = Fused("m", 0.5, 0.25, 7, ())
    assert f.key() == (-0.5, -0.25, -7, "m")


# --- rerank --------------------------------------------------------------------------------


def _three() -> list[Fused]:
    return fuse([_scored("a"), _scored("b"), _scored("c")], [], 10)


def test_rerank_adds_its_contribution_to_the_scored_candidates_only() -> None:
    fused = _three()
    result = rerank(fused, {"c": 0.9, "b": 0.1}, 1.25)
    by_id = {f.memory_id: f for f in result}
    assert by_id["a"] == fused[0]
    assert by_id["c"].score == 1 / 63 + 1.25 / 61
    assert by_id["c"].signals[-1] == RankSignal(RR, 1, 0.9, 1.25 / 61)
    assert by_id["b"].score == 1 / 62 + 1.25 / 62
    assert by_id["b"].signals[-1] == RankSignal(RR, 2, 0.1, 1.25 / 62)
    assert len(by_id["b"].signals) == 2
    assert _ids(result) == ["c", "b", "a"]


def test_rerank_breaks_score_ties_by_fused_position() -> None:
    fused = fuse([_scored("c"), _scored("a"), _scored("b")], [], 10)
    assert _ids(fused) == ["c", "a", "b"]
    result = rerank(fused, {"b": 0.5, "a": 0.5, "c": 0.5}, 1.0)
    ranks = {f.memory_id: f.signals[-1].rank for f in result}
    assert ranks == {"c": 1, "a": 2, "b": 3}
    assert _ids(result) == ["c", "a", "b"]


def test_rerank_orders_by_score_descending_including_negative_scores() -> None:
    fused = _three()
    result = rerank(fused, {"a": -3.0, "b": -1.0, "c": 2.0}, 1.0)
    ranks = {f.memory_id: f.signals[-1].rank for f in result}
    assert ranks == {"c": 1, "b": 2, "a": 3}


def test_rerank_with_no_scores_or_weight_zero_keeps_the_order() -> None:
    fused = _three()
    assert rerank(fused, {}, 1.25) == fused
    zero = rerank(fused, {"c": 9.0}, 0.0)
    assert _ids(zero) == _ids(fused)
    assert zero[2].score == fused[2].score
    assert zero[2].signals[-1] == RankSignal(RR, 1, 9.0, 0.0)


def test_rerank_can_reverse_a_fused_tie() -> None:
    # x and y tie on 1/61; y is newer, so it is first until the reranker prefers x
    fused = fuse([_scored("x", created=1)], [_scored("y", created=2)], 10)
    assert _ids(fused) == ["y", "x"]
    assert _ids(rerank(fused, {"x": 1.0, "y": 0.0}, 1.0)) == ["x", "y"]
    assert _ids(rerank(fused, {"x": 0.0, "y": 1.0}, 1.0)) == ["y", "x"]


# --- properties against a brute-force model -------------------------------------------------

_FACTS = st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.integers(0, 3))


@st.composite
def _rankings(draw: st.DrawFn) -> tuple[list[Scored], list[Scored], int]:
    ids = draw(st.lists(st.sampled_from("abcdefghijkl"), unique=True, max_size=12))
    facts = {memory_id: draw(_FACTS) for memory_id in ids}

    def ranking() -> list[Scored]:
        chosen = draw(st.permutations(ids))[: draw(st.integers(0, len(ids)))]
        return [Scored(i, draw(st.floats(-1.0, 100.0)), facts[i][0], facts[i][1]) for i in chosen]

    return ranking(), ranking(), draw(st.integers(0, 14))


def _brute_fuse(
    lexical: Sequence[Scored], semantic: Sequence[Scored], window: int
) -> list[tuple[str, float, tuple[RankSignal, ...]]]:
    found: dict[str, list[RankSignal]] = {}
    facts: dict[str, tuple[float, int]] = {}
    for source, ranking in ((LEX, lexical), (SEM, semantic)):
        for position, candidate in enumerate(ranking):
            if position >= window:
                break
            rank = position + 1
            facts[candidate.memory_id] = (candidate.clarity, candidate.created_at)
            found.setdefault(candidate.memory_id, []).append(
                RankSignal(source, rank, candidate.score, 1.0 / (60 + rank))
            )
    rows = []
    for memory_id, signals in found.items():
        score = 0.0
        for signal in signals:
            score += signal.contribution
        rows.append((memory_id, score, tuple(signals)))

    def better(one: tuple[str, float, object], other: tuple[str, float, object]) -> bool:
        a, b = facts[one[0]], facts[other[0]]
        if one[1] != other[1]:
            return one[1] > other[1]
        if a[0] != b[0]:
            return a[0] > b[0]
        if a[1] != b[1]:
            return a[1] > b[1]
        return one[0] < other[0]

    ordered: list[tuple[str, float, tuple[RankSignal, ...]]] = []
    for row in rows:  # insertion sort by the comparison above, spelled out
        at = 0
        while at < len(ordered) and better(ordered[at], row):
            at += 1
        ordered.insert(at, row)
    return ordered


@settings(max_examples=500)
@given(_rankings())
def test_fuse_matches_a_brute_force_model(case: tuple[list[Scored], list[Scored], int]) -> None:
    lexical, semantic, window = case
    fused = fuse(lexical, semantic, window)
    assert [(f.memory_id, f.score, f.signals) for f in fused] == _brute_fuse(
        lexical, semantic, window
    )
    for f in fused:
        source = next(
            c for c in (*lexical[:window], *semantic[:window]) if c.memory_id == f.memory_id
        )
        assert (f.clarity, f.created_at) == (source.clarity, source.created_at)


@settings(max_examples=300)
@given(_rankings(), st.data())
def test_rerank_matches_a_brute_force_model(
    case: tuple[list[Scored], list[Scored], int], data: st.DataObject
) -> None:
    lexical, semantic, window = case
    fused = fuse(lexical, semantic, window)
    chosen = data.draw(
        st.lists(st.sampled_from(_ids(fused)), unique=True) if fused else st.just([])
    )
    scores = {memory_id: float(data.draw(st.integers(-2, 2))) for memory_id in chosen}
    weight = data.draw(st.sampled_from([0.0, 1.0, 1.25]))
    result = rerank(fused, scores, weight)
    # reranker ranks: score descending, then fused position
    order = sorted(chosen, key=lambda m: (-scores[m], _ids(fused).index(m)))
    expected = []
    for f in fused:
        if f.memory_id in scores:
            rank = order.index(f.memory_id) + 1
            signal = RankSignal(RR, rank, scores[f.memory_id], weight / (60 + rank))
            expected.append(
                Fused(
                    f.memory_id,
                    f.score + signal.contribution,
                    f.clarity,
                    f.created_at,
                    (*f.signals, signal),
                )
            )
        else:
            expected.append(f)
    expected.sort(key=lambda f: (-f.score, -f.clarity, -f.created_at, f.memory_id))
    assert result == expected
    assert sorted(_ids(result)) == sorted(_ids(fused))
