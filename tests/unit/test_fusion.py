"""Evidence fusion of the lexical, semantic and reranker rankings (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from math import inf

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.search.model import RankSignal, SignalSource
from trueheart_core.domain.semantic import fusion
from trueheart_core.domain.semantic.fusion import (
    Fused,
    Scored,
    fuse,
    lexical_evidence,
    ranked,
    rerank,
)

LEX = SignalSource.LEXICAL
SEM = SignalSource.SEMANTIC
RR = SignalSource.RERANK


def _scored(memory_id: str, score: float = 1.0, clarity: float = 1.0, created: int = 0) -> Scored:
    return Scored(memory_id, score, clarity, created)


def _ids(fused: Sequence[Fused]) -> list[str]:
    return [f.memory_id for f in fused]


def test_the_rule_names_are_the_documented_ones() -> None:
    assert fusion.FUSION == "evidence-v1"
    assert fusion.TERM_BASED_FUSION == "evidence-v1 lexical-first"


@pytest.mark.parametrize(
    ("score", "ceiling", "expected"),
    [(2.0, 8.0, 0.25), (8.0, 8.0, 1.0), (9.5, 8.0, 1.0), (3.0, 0.0, 0.0), (1.0, -1.0, 0.0)],
)
def test_lexical_evidence_is_the_share_of_the_ceiling_at_most_one(
    score: float, ceiling: float, expected: float
) -> None:
    assert lexical_evidence(score, ceiling) == expected


# --- fuse ----------------------------------------------------------------------------------


def test_fuse_adds_the_squared_lexical_evidence_and_the_cosine() -> None:
    lexical = [_scored("a", 6.0), _scored("b", 3.0)]
    semantic = [_scored("b", 0.9), _scored("a", 0.25)]
    by_id = {f.memory_id: f for f in fuse(lexical, semantic, 10, 12.0)}
    assert by_id["a"].score == 0.25 + 0.25
    assert by_id["b"].score == 0.0625 + 0.9
    assert by_id["a"].signals == (RankSignal(LEX, 1, 6.0, 0.25), RankSignal(SEM, 2, 0.25, 0.25))
    assert by_id["b"].signals == (RankSignal(LEX, 2, 3.0, 0.0625), RankSignal(SEM, 1, 0.9, 0.9))
    assert (by_id["a"].similarity, by_id["b"].similarity) == (0.25, 0.9)


def test_a_memory_found_by_one_ranking_can_outrank_one_found_by_both() -> None:
    # Reciprocal rank fusion could never put "paraphrase" first: both rankings hold "noise".
    lexical = [_scored("noise", 1.0)]
    semantic = [_scored("paraphrase", 0.71), _scored("noise", 0.30)]
    fused = fuse(lexical, semantic, 10, 10.0)
    assert _ids(fused) == ["paraphrase", "noise"]
    assert fused[1].score == 0.01 + 0.30
    # ...and a strong lexical match outranks a semantic neighbour it shares nothing with.
    fused = fuse(
        [_scored("exact", 9.0)], [_scored("neighbour", 0.6), _scored("exact", 0.2)], 10, 9.0
    )
    assert _ids(fused) == ["exact", "neighbour"]


def test_negative_cosines_add_nothing_but_still_break_ties() -> None:
    fused = fuse([], [_scored("x", -0.2), _scored("y", -0.5)], 10, 1.0)
    assert [f.score for f in fused] == [0.0, 0.0]
    assert _ids(fused) == ["x", "y"]
    assert fused[0].signals == (RankSignal(SEM, 1, -0.2, 0.0),)


def test_each_ranking_contributes_its_best_window_only() -> None:
    lexical = [_scored(f"l{i}", 5.0 - i) for i in range(5)]
    semantic = [_scored(f"s{i}", 0.9 - i / 10) for i in range(4)] + [_scored("l0", 0.1)]
    fused = fuse(lexical, semantic, 3, 10.0)
    assert set(_ids(fused)) == {"l0", "l1", "l2", "s0", "s1", "s2"}
    # l0 is 5th in the semantic ranking, outside the window: it gets no semantic signal
    assert {f.memory_id: f for f in fused}["l0"].signals == (RankSignal(LEX, 1, 5.0, 0.25),)
    assert fuse(lexical, semantic, 0, 10.0) == []
    assert len(fuse(lexical, semantic, 3, 10.0, keep=2)) == 2


def test_an_empty_ranking_leaves_the_other() -> None:
    fused = fuse([], [_scored("x", 0.5, created=3), _scored("y", 0.4)], 10, 4.0)
    assert _ids(fused) == ["x", "y"]
    assert fused[0] == Fused("x", 0.5, 1.0, 3, (RankSignal(SEM, 1, 0.5, 0.5),), 0.5)
    assert fuse([], [], 10, 4.0) == []


def test_exact_ties_are_broken_by_similarity_lexical_rank_clarity_created_at_then_id() -> None:
    lexical = [_scored("lex", 2.0)]
    semantic = [_scored("sem", 0.25), _scored("lex", 0.1)]
    # lex: 0.25 + 0.1 > sem: 0.25
    assert _ids(fuse(lexical, semantic, 10, 4.0)) == ["lex", "sem"]
    # equal fused scores: the candidate with a similarity first, then the higher one
    assert _ids(fuse([_scored("lex", 2.0)], [_scored("sem", 0.25)], 10, 4.0)) == ["sem", "lex"]
    # equal scores and no similarity: the lexical ranking's order
    same = ranked([_scored("z-low", clarity=0.1), _scored("m-clear", clarity=1.0, created=1)])
    assert _ids(fuse(same, [], 10, 1.0)) == ["m-clear", "z-low"]
    # equal scores and similarities, no lexical rank: clarity, created_at, then ID
    same = [_scored("z-low", 0.5, clarity=0.1), _scored("m-clear", 0.5, clarity=1.0)]
    assert _ids(fuse([], same, 10, 1.0)) == ["m-clear", "z-low"]
    older, newer = _scored("old", 0.5, created=1), _scored("new", 0.5, created=2)
    assert _ids(fuse([], [older, newer], 10, 1.0)) == ["new", "old"]
    assert _ids(fuse([], [_scored("b", 0.5), _scored("a", 0.5)], 10, 1.0)) == ["a", "b"]


def test_lexical_shares_capped_at_one_keep_the_bm25_order() -> None:
    # Both scores reach the ceiling (a share of 1): the stronger match stays first, though
    # the weaker one is clearer and newer.
    strong = _scored("strong", 5.5, clarity=0.5, created=1)
    weak = _scored("weak", 4.3, clarity=1.0, created=9)
    for term_based in (False, True):
        fused = fuse([strong, weak], [], 10, 4.0, term_based=term_based)
        assert [(f.memory_id, f.score) for f in fused] == [("strong", 1.0), ("weak", 1.0)]


def test_memory_ids_are_compared_in_code_point_order() -> None:
    fused = fuse([], [_scored("Z"), _scored("é"), _scored("a"), _scored("_")], 10, 1.0)
    assert _ids(fused) == ["Z", "_", "a", "é"]
    assert _ids(fusion.ranked([_scored("é"), _scored("_"), _scored("Z")])) == ["Z", "_", "é"]


def test_the_fused_key_is_the_total_order() -> None:
    assert Fused("m", 0.5, 0.25, 7, (), 0.125).key() == (-0.5, -0.125, inf, -0.25, -7, "m")
    assert Fused("m", 0.5, 0.25, 7, ()).key() == (-0.5, 2.0, inf, -0.25, -7, "m")
    assert Fused("m", 0.5, 0.25, 7, (), None, 3).key() == (-0.5, 2.0, 3.0, -0.25, -7, "m")


# --- term-based embedders ------------------------------------------------------------------


def test_a_term_based_similarity_adds_nothing_and_keeps_the_lexical_order() -> None:
    lexical = [_scored("a", 4.0, created=1), _scored("b", 4.0, created=0), _scored("c", 1.0)]
    semantic = [_scored("c", 0.9), _scored("only-sem", 0.8), _scored("b", 0.7)]
    fused = fuse(lexical, semantic, 10, 4.0, term_based=True)
    # a and b tie lexically: the lexical tie-break (newer first) decides, not the cosine
    assert _ids(fused) == ["a", "b", "c", "only-sem"]
    by_id = {f.memory_id: f for f in fused}
    assert by_id["c"].signals == (RankSignal(LEX, 3, 1.0, 0.0625), RankSignal(SEM, 1, 0.9, 0.0))
    assert by_id["only-sem"].score == 0.0
    assert by_id["only-sem"].similarity == 0.8
    assert by_id["b"].similarity is None


def test_term_based_semantic_only_candidates_follow_by_similarity() -> None:
    semantic = [_scored("x", 0.3), _scored("y", 0.6), _scored("z", 0.45)]
    fused = fuse([_scored("lex", 0.01)], fusion.ranked(semantic), 10, 100.0, term_based=True)
    assert _ids(fused) == ["lex", "y", "z", "x"]


# --- rerank --------------------------------------------------------------------------------


def _three() -> list[Fused]:
    return fuse([_scored("a", 3.0), _scored("b", 2.0), _scored("c", 1.0)], [], 10, 4.0)


def test_rerank_adds_a_share_of_its_weight_by_rank_to_the_scored_candidates_only() -> None:
    fused = _three()
    # Shown two, it scored both: the first gains the weight, the second half of it.
    result = rerank(fused, {"c": 0.9, "b": 0.1}, 1.25, 2)
    by_id = {f.memory_id: f for f in result}
    assert by_id["a"] == fused[0]
    assert by_id["c"].score == 0.0625 + 1.25
    assert by_id["c"].signals[-1] == RankSignal(RR, 1, 0.9, 1.25)
    assert by_id["b"].score == 0.25 + 1.25 / 2
    assert by_id["b"].signals[-1] == RankSignal(RR, 2, 0.1, 0.625)
    assert _ids(result) == ["c", "b", "a"]


def test_the_shares_are_of_the_candidates_shown_not_of_those_scored() -> None:
    """Shown three, it scored two: ranks 1 and 2 of three gain 3/3 and 2/3 of the
    weight; rank 3 is unused."""
    result = rerank(_three(), {"c": 0.9, "b": 0.1}, 1.5, 3)
    by_id = {f.memory_id: f for f in result}
    assert by_id["c"].signals[-1] == RankSignal(RR, 1, 0.9, 1.5)
    assert by_id["b"].signals[-1] == RankSignal(RR, 2, 0.1, 1.0)


def test_rerank_breaks_score_ties_by_fused_position() -> None:
    fused = _three()
    result = rerank(fused, {"b": 0.5, "a": 0.5, "c": 0.5}, 1.0, 3)
    ranks = {f.memory_id: f.signals[-1].rank for f in result}
    assert ranks == {"a": 1, "b": 2, "c": 3}
    assert _ids(result) == ["a", "b", "c"]


def test_rerank_orders_by_score_descending_including_negative_scores() -> None:
    result = rerank(_three(), {"a": -3.0, "b": -1.0, "c": 2.0}, 1.0, 3)
    ranks = {f.memory_id: f.signals[-1].rank for f in result}
    assert ranks == {"c": 1, "b": 2, "a": 3}


def test_rerank_with_no_scores_or_weight_zero_keeps_the_order() -> None:
    fused = _three()
    assert rerank(fused, {}, 1.25, 3) == fused
    zero = rerank(fused, {"c": 9.0}, 0.0, 3)
    assert _ids(zero) == _ids(fused)
    assert zero[2].score == fused[2].score
    assert zero[2].signals[-1] == RankSignal(RR, 1, 9.0, 0.0)


def test_shown_candidates_stay_above_the_ones_not_shown() -> None:
    fused = fuse([_scored(f"m{i}", 10.0 - i) for i in range(6)], [], 10, 10.0)
    shown = {f.memory_id: float(i) for i, f in enumerate(fused[:3])}
    assert _ids(rerank(fused, shown, 0.01, 3)) == _ids(fused)
    assert _ids(rerank(fused, shown, 10.0, 3)) == ["m2", "m1", "m0", "m3", "m4", "m5"]


# --- properties against a brute-force model -------------------------------------------------

_FACTS = st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.integers(0, 3))


@st.composite
def _rankings(draw: st.DrawFn) -> tuple[list[Scored], list[Scored], int, float]:
    ids = draw(st.lists(st.sampled_from("abcdefghijkl"), unique=True, max_size=12))
    facts = {memory_id: draw(_FACTS) for memory_id in ids}

    def ranking(low: float, high: float) -> list[Scored]:
        chosen = draw(st.permutations(ids))[: draw(st.integers(0, len(ids)))]
        scores = [draw(st.sampled_from([low, high, (low + high) / 2])) for _ in chosen]
        return [Scored(i, s, facts[i][0], facts[i][1]) for i, s in zip(chosen, scores, strict=True)]

    ceiling = draw(st.sampled_from([0.0, 1.0, 2.5]))
    return ranking(0.5, 3.0), ranking(-0.5, 1.0), draw(st.integers(0, 14)), ceiling


def _brute_fuse(
    lexical: Sequence[Scored], semantic: Sequence[Scored], window: int, ceiling: float, term: bool
) -> list[tuple[str, float, tuple[RankSignal, ...]]]:
    found: dict[str, list[RankSignal]] = {}
    facts: dict[str, tuple[float, int]] = {}
    similarity: dict[str, float] = {}
    lexical_position: dict[str, int] = {}
    for position, candidate in enumerate(lexical[:window]):
        share = 0.0 if ceiling <= 0 else min(1.0, candidate.score / ceiling)
        facts[candidate.memory_id] = (candidate.clarity, candidate.created_at)
        lexical_position[candidate.memory_id] = position
        found.setdefault(candidate.memory_id, []).append(
            RankSignal(LEX, position + 1, candidate.score, share * share)
        )
    for position, candidate in enumerate(semantic[:window]):
        if not (term and candidate.memory_id in found):
            similarity[candidate.memory_id] = candidate.score
        facts[candidate.memory_id] = (candidate.clarity, candidate.created_at)
        added = 0.0 if term else max(0.0, candidate.score)
        found.setdefault(candidate.memory_id, []).append(
            RankSignal(SEM, position + 1, candidate.score, added)
        )
    rows = []
    for memory_id, signals in found.items():
        score = 0.0
        for signal in signals:
            score += signal.contribution
        rows.append((memory_id, score, tuple(signals)))

    def better(one: tuple[str, float, object], other: tuple[str, float, object]) -> bool:
        if one[1] != other[1]:
            return one[1] > other[1]
        s1, s2 = similarity.get(one[0], -9.0), similarity.get(other[0], -9.0)
        if s1 != s2:
            return s1 > s2
        p1, p2 = lexical_position.get(one[0], 99), lexical_position.get(other[0], 99)
        if p1 != p2:
            return p1 < p2
        a, b = facts[one[0]], facts[other[0]]
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
@given(_rankings(), st.booleans())
def test_fuse_matches_a_brute_force_model(
    case: tuple[list[Scored], list[Scored], int, float], term: bool
) -> None:
    lexical, semantic, window, ceiling = case
    fused = fuse(lexical, semantic, window, ceiling, term_based=term)
    assert [(f.memory_id, f.score, f.signals) for f in fused] == _brute_fuse(
        lexical, semantic, window, ceiling, term
    )
    for f in fused:
        source = next(
            c for c in (*lexical[:window], *semantic[:window]) if c.memory_id == f.memory_id
        )
        assert (f.clarity, f.created_at) == (source.clarity, source.created_at)


@settings(max_examples=300)
@given(_rankings(), st.data())
def test_rerank_matches_a_brute_force_model(
    case: tuple[list[Scored], list[Scored], int, float], data: st.DataObject
) -> None:
    lexical, semantic, window, ceiling = case
    fused = fuse(lexical, semantic, window, ceiling)
    chosen = data.draw(
        st.lists(st.sampled_from(_ids(fused)), unique=True) if fused else st.just([])
    )
    scores = {memory_id: float(data.draw(st.integers(-2, 2))) for memory_id in chosen}
    weight = data.draw(st.sampled_from([0.0, 1.0, 1.25]))
    shown = len(chosen) + data.draw(st.integers(0, 3))
    result = rerank(fused, scores, weight, shown)
    # reranker ranks: score descending, then fused position
    order = sorted(chosen, key=lambda m: (-scores[m], _ids(fused).index(m)))
    expected = []
    for f in fused:
        if f.memory_id in scores:
            rank = order.index(f.memory_id) + 1
            added = weight * (shown - rank + 1) / shown
            signal = RankSignal(RR, rank, scores[f.memory_id], added)
            expected.append(
                Fused(
                    f.memory_id,
                    f.score + added,
                    f.clarity,
                    f.created_at,
                    (*f.signals, signal),
                    f.similarity,
                    f.lexical_rank,
                )
            )
        else:
            expected.append(f)
    expected.sort(key=Fused.key)
    assert result == expected
    assert sorted(_ids(result)) == sorted(_ids(fused))
