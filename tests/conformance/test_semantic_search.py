"""Hybrid search: lexical and semantic rankings fused, the scan cap and the reranker."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta

import pytest
from conformance_builders import (
    NOW,
    SCOPE,
    CountingClock,
    check_capsule,
    claim,
    command,
    event,
    materialize_all,
    memory,
    msg,
    reference_ceiling,
)
from semantic_builders import ConceptEmbedder, ScriptedReranker

from trueheart_core import (
    ClaimStatus,
    GovernanceAction,
    HashingEmbedder,
    MemoryCapsule,
    ProviderError,
    RerankResult,
    SearchQuery,
    SignalSource,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.domain.semantic.vectors import checked_vector, pack, unpack
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.VECTORS)

LATER = NOW + timedelta(days=1)

CORPUS = {
    "mem-a": "prefers concise summaries",
    "mem-b": "likes brief replies and tea",
    "mem-c": "the weather was rainy",
    "mem-d": "answers should be short",
    "mem-e": "dark theme at night",
    "mem-f": "concise concise concise",
}


def hybrid(repository: Repository, **options: object) -> TrueHeart:
    options.setdefault("embedder", ConceptEmbedder())
    return TrueHeart(repository, clock=CountingClock(), **options)  # type: ignore[arg-type]


def find(service: TrueHeart, text: str, **fields: object) -> MemoryCapsule:
    capsule = service.search(SearchQuery(SCOPE, text, LATER, **fields))  # type: ignore[arg-type]
    check_capsule(capsule)
    return capsule


def ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def similarities(text: str, corpus: dict[str, str]) -> dict[str, float]:
    """Brute-force cosine similarities of the concept model, over float32 vectors as
    they are stored."""
    model = ConceptEmbedder()

    def stored(vector: list[float]) -> list[float]:
        return list(unpack(pack(checked_vector("v", vector, model.dimensions, True))))

    query = stored(model.embed_query(text))
    return {mid: cosine(query, stored(model.embed_query(c))) for mid, c in corpus.items()}


def expected_order(
    service: TrueHeart, text: str, corpus: dict[str, str]
) -> list[tuple[str, float]]:
    """Evidence fusion computed here: the squared share of the reference ceiling that
    each lexical score reaches, plus the cosine similarity."""
    lexical = service.search(SearchQuery(SCOPE, text, LATER, semantic=False))
    ceiling = reference_ceiling(text, list(corpus.values()))
    sims = similarities(text, corpus)
    fused: dict[str, float] = {}
    for entry in lexical.trace:
        share = min(1.0, entry.score / ceiling)
        fused[entry.memory_id] = share * share
    for mid, similarity in sims.items():
        if similarity >= 0.05:
            fused[mid] = fused.get(mid, 0.0) + similarity
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def test_a_paraphrase_without_shared_words_is_found(repository: Repository) -> None:
    service = hybrid(repository)
    materialize_all(service, CORPUS)
    assert ids(find(service, "terse responses", semantic=False)) == []
    capsule = find(service, "terse responses")
    assert set(ids(capsule)) == {"mem-a", "mem-b", "mem-d", "mem-f"}
    assert capsule.semantic is not None and capsule.semantic.matched == 4
    assert capsule.matched == 4


@pytest.mark.parametrize("text", ["concise answers", "brief tea", "rain", "night theme summaries"])
def test_the_fused_order_is_evidence_fusion(repository: Repository, text: str) -> None:
    service = hybrid(repository)
    materialize_all(service, CORPUS)
    capsule = find(service, text, budget_tokens=10_000)
    expected = expected_order(service, text, CORPUS)
    assert [e.memory_id for e in capsule.trace] == [mid for mid, _ in expected]
    for entry, (_, score) in zip(capsule.trace, expected, strict=True):
        assert math.isclose(entry.score, score, rel_tol=1e-6)
        assert entry.score == sum(s.contribution for s in entry.signals)
        for signal in entry.signals:
            if signal.source is SignalSource.SEMANTIC:
                assert signal.contribution == max(0.0, signal.score)
            else:
                assert signal.source is SignalSource.LEXICAL
                assert signal.contribution <= 1.0
    assert find(service, text, budget_tokens=10_000) == capsule


def test_the_trace_shows_each_ranking(repository: Repository) -> None:
    service = hybrid(repository)
    materialize_all(service, CORPUS)
    capsule = find(service, "concise")
    by_id = {e.memory_id: {s.source: s for s in e.signals} for e in capsule.trace}
    assert set(by_id["mem-a"]) == {SignalSource.LEXICAL, SignalSource.SEMANTIC}
    assert set(by_id["mem-d"]) == {SignalSource.SEMANTIC}  # "short": a paraphrase only
    assert by_id["mem-f"][SignalSource.LEXICAL].rank == 1
    assert by_id["mem-f"][SignalSource.SEMANTIC].score == pytest.approx(1.0)
    assert capsule.semantic is not None
    assert (capsule.semantic.embedder, capsule.semantic.fusion) == (
        "test-concepts-v1",
        "evidence-v1",
    )
    assert (capsule.semantic.reranker, capsule.semantic.reranked) == (None, 0)


def test_matched_counts_the_union_of_both_rankings(repository: Repository) -> None:
    service = hybrid(repository)
    materialize_all(service, {**CORPUS, "mem-g": "concise is a word", "mem-h": "nothing here"})
    lexical = find(service, "concise", semantic=False)
    capsule = find(service, "concise")
    assert lexical.matched == 3  # mem-a, mem-f, mem-g
    assert capsule.semantic is not None and capsule.semantic.matched == 5  # + mem-b, mem-d
    assert capsule.matched == 5


def test_the_minimum_score_drops_weak_matches(repository: Repository) -> None:
    service = hybrid(repository, minimum_semantic_score=0.9)
    materialize_all(service, CORPUS)
    capsule = find(service, "terse")
    assert capsule.semantic is not None
    assert capsule.semantic.scanned == 6 and capsule.semantic.matched == 1
    assert ids(capsule) == ["mem-f"]  # the only memory about brevity alone


def test_the_scan_cap_reads_the_newest_and_says_so(repository: Repository) -> None:
    service = hybrid(repository, semantic_scan_cap=2)
    service.ingest_event(event("evt-1"))
    for age, (mid, content) in enumerate(
        [("new", "brief note"), ("mid", "short note"), ("old", "terse note")]
    ):
        service.materialize_once(
            memory(mid, content=content, created_at=NOW - timedelta(hours=age))
        )
    capsule = find(service, "concise")
    assert capsule.semantic is not None
    assert (capsule.semantic.scanned, capsule.semantic.capped) == (2, True)
    assert capsule.semantic.diagnostics == ("semantic_scan_capped",)
    assert set(ids(capsule)) == {"new", "mid"}
    roomy = hybrid(repository, semantic_scan_cap=3)
    capsule = find(roomy, "concise")
    assert capsule.semantic is not None and not capsule.semantic.capped
    assert capsule.semantic.diagnostics == () and set(ids(capsule)) == {"new", "mid", "old"}


def test_filters_apply_to_the_semantic_side(repository: Repository) -> None:
    service = hybrid(repository)
    service.ingest_event(event("evt-1", trust=TrustLevel.CONFIRMED))
    service.materialize_once(memory("fact", content="brief", kind="fact"))
    service.materialize_once(memory("note", content="short", kind="note"))
    service.materialize_once(
        memory("sure", content="terse", trust=TrustLevel.CONFIRMED, kind="note")
    )
    service.materialize_once(memory("future", content="concise", created_at=LATER + timedelta(1)))
    service.materialize_once(memory("sealed", content="concise"))
    service.govern(command(GovernanceAction.SEAL, "sealed"))
    assert set(ids(find(service, "brief"))) == {"fact", "note", "sure"}
    assert ids(find(service, "brief", kinds=("fact",))) == ["fact"]
    assert ids(find(service, "brief", min_trust=TrustLevel.CONFIRMED)) == ["sure"]


def test_claims_follow_their_status_on_the_semantic_side(repository: Repository) -> None:
    service = hybrid(repository)
    service.ingest_event(event("evt-1"))
    service.materialize_claim(claim("old", value="dark"))
    service.materialize_claim(
        claim("new", value="night", created_at=NOW + timedelta(hours=1), supersedes="old")
    )
    assert ids(find(service, "theme", semantic=True)) == ["new"]  # lexical too: "theme"
    capsule = find(service, "night dark", claim_statuses=(ClaimStatus.SUPERSEDED,))
    assert ids(capsule) == ["old"]
    assert capsule.items[0].claim is not None
    assert capsule.items[0].claim.status is ClaimStatus.SUPERSEDED


def test_lexical_only_is_the_plain_search(repository: Repository) -> None:
    service = hybrid(repository)
    materialize_all(service, CORPUS)
    plain = TrueHeart(repository, clock=CountingClock())
    for text in ("concise", "tea rain", "short answers"):
        alone = find(service, text, semantic=False)
        assert alone.semantic is None
        assert alone == find(plain, text)


def test_the_budget_still_bounds_a_hybrid_capsule(repository: Repository) -> None:
    service = hybrid(repository)
    materialize_all(service, CORPUS)
    capsule = find(service, "concise answers", budget_tokens=9, limit=1)
    assert capsule.used_tokens <= 9 and len(capsule.items) <= 1


def test_a_failing_query_embedding_is_a_provider_error(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = hybrid(repository, embedder=embedder)
    materialize_all(service, CORPUS)
    embedder.fail_queries = True
    with pytest.raises(ProviderError, match=msg("provider error: the embedder failed")) as caught:
        find(service, "concise")
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert ids(find(service, "concise", semantic=False)) == ["mem-f", "mem-a"]


class _ArrayLike:
    """What numpy and torch answer with: no sequence, but values through ``tolist()``."""

    def __init__(self, values: object) -> None:
        self._values = values

    def tolist(self) -> object:
        return self._values


class _ArrayEmbedder(ConceptEmbedder):
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = super().embed_documents(texts)
        return _ArrayLike(vectors)  # type: ignore[return-value]

    def embed_query(self, text: str) -> list[float]:
        return _ArrayLike(super().embed_query(text))  # type: ignore[return-value]


def test_answers_given_as_arrays_count_as_the_lists_they_hold(repository: Repository) -> None:
    arrays, lists = hybrid(repository, embedder=_ArrayEmbedder()), ConceptEmbedder()
    materialize_all(arrays, CORPUS)
    assert arrays.semantic_status(SCOPE).complete
    reference = hybrid(repository, embedder=lists)
    for text in ("concise", "tea rain", "short answers"):
        assert find(arrays, text) == find(reference, text)


class _Unreadable(float):
    """A number whose conversion fails, as a host's own number type may."""

    def __float__(self) -> float:
        raise RuntimeError("cannot convert")


def test_a_number_that_cannot_be_read_is_the_embedder_s_failure(repository: Repository) -> None:
    embedder = ConceptEmbedder()
    service = hybrid(repository, embedder=embedder)
    materialize_all(service, CORPUS)

    def unreadable(text: str) -> list[float]:
        vector = ConceptEmbedder.embed_query(embedder, text)
        return [_Unreadable(vector[0]), *vector[1:]]

    embedder.embed_query = unreadable  # type: ignore[method-assign]
    with pytest.raises(ProviderError, match=msg("provider error: the embedder failed")) as caught:
        find(service, "concise")
    assert isinstance(caught.value.__cause__, RuntimeError)


# --- reranking ---------------------------------------------------------------------------


def test_the_reranker_sees_filtered_unique_candidates(repository: Repository) -> None:
    reranker = ScriptedReranker(score=lambda c: -float(len(c.content)))
    service = hybrid(repository, reranker=reranker, rerank_limit=3)
    materialize_all(service, CORPUS)
    service.govern(command(GovernanceAction.SEAL, "mem-b"))
    capsule = find(service, "concise answers", budget_tokens=10_000)
    ((query, shown),) = reranker.shown
    assert query == "concise answers"
    assert [c.fused_rank for c in shown] == [1, 2, 3]
    assert len({c.memory_id for c in shown}) == 3 and "mem-b" not in {c.memory_id for c in shown}
    assert all(c.content == CORPUS[c.memory_id] for c in shown)
    assert capsule.semantic is not None
    assert (capsule.semantic.reranker, capsule.semantic.reranker_weight) == (
        "test-reranker-v1",
        1.25,
    )
    assert capsule.semantic.reranked == 3
    reranked = {
        e.memory_id: s for e in capsule.trace for s in e.signals if s.source is SignalSource.RERANK
    }
    assert set(reranked) == {c.memory_id for c in shown}
    shortest = min(shown, key=lambda c: len(c.content)).memory_id
    assert reranked[shortest].rank == 1
    assert reranked[shortest].contribution == 1.25  # its first choice gains the whole weight


def test_a_heavy_reranker_decides_the_order(repository: Repository) -> None:
    reranker = ScriptedReranker(score=lambda c: 1.0 if c.memory_id == "mem-d" else 0.0)
    service = hybrid(repository, reranker=reranker, reranker_weight=100.0)
    materialize_all(service, CORPUS)
    assert ids(find(service, "concise answers"))[0] == "mem-d"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda cs: [RerankResult("nope", 1.0)], "returned a score for an unknown candidate"),
        (
            lambda cs: [RerankResult(cs[0].memory_id, 1.0), RerankResult(cs[0].memory_id, 2.0)],
            "returned two scores for one candidate",
        ),
        (lambda cs: [RerankResult(cs[0].memory_id, float("nan"))], "must return finite scores"),
        (lambda cs: [RerankResult(cs[0].memory_id, float("inf"))], "must return finite scores"),
        (lambda cs: [RerankResult(cs[0].memory_id, True)], "must return finite scores"),
        (lambda cs: {"a": 1}, "must return a list or tuple of RerankResult"),
        (lambda cs: [(cs[0].memory_id, 1.0)], "must return a list or tuple of RerankResult"),
        (lambda cs: None, "must return a list or tuple of RerankResult"),
    ],
)
def test_reranker_contract_violations_are_refused(
    repository: Repository, answer: object, message: str
) -> None:
    reranker = ScriptedReranker()
    reranker.answer = answer  # type: ignore[assignment]
    service = hybrid(repository, reranker=reranker)
    materialize_all(service, CORPUS)
    with pytest.raises(ValidationError, match=msg(f"reranker: {message}")):
        find(service, "concise")


def test_a_partial_reranker_answer_is_accepted(repository: Repository) -> None:
    reranker = ScriptedReranker()
    reranker.answer = lambda cs: [RerankResult(cs[-1].memory_id, 5)]
    service = hybrid(repository, reranker=reranker)
    materialize_all(service, CORPUS)
    capsule = find(service, "concise")
    scored = [e for e in capsule.trace if any(s.source is SignalSource.RERANK for s in e.signals)]
    assert len(scored) == 1


class _Unequal(str):
    """An identity whose comparison raises."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparison")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("no comparison")

    __hash__ = str.__hash__


def test_a_reranker_whose_identity_changes_is_refused_however_it_compares(
    repository: Repository,
) -> None:
    reranker = ScriptedReranker()
    service = hybrid(repository, reranker=reranker)
    materialize_all(service, CORPUS)
    # Compared as the text it holds: the same text is the same identity.
    reranker._identity = _Unequal("test-reranker-v1")
    assert ids(find(service, "concise"))
    for changed in (_Unequal("another-reranker"), 7, "another-reranker"):
        reranker._identity = changed  # type: ignore[assignment]
        with pytest.raises(
            ValidationError, match=msg("reranker: its identity changed since the service opened")
        ):
            find(service, "concise")


def test_an_all_zero_query_finds_no_semantic_match_whatever_the_minimum(
    repository: Repository,
) -> None:
    class Silent(ConceptEmbedder):
        def embed_query(self, text: str) -> list[float]:
            return [0.0] * self.dimensions

    for minimum in (0.0, -1.0):
        service = hybrid(repository, embedder=Silent(), minimum_semantic_score=minimum)
        if not service.list_memories(SCOPE).items:
            materialize_all(service, CORPUS)
        capsule = find(service, "weather")
        assert capsule.semantic is not None and capsule.semantic.matched == 0
        assert ids(capsule) == ["mem-c"]  # the lexical match alone


def test_a_failing_reranker_is_a_provider_error(repository: Repository) -> None:
    def boom(candidates: object) -> object:
        raise RuntimeError("down")

    reranker = ScriptedReranker()
    reranker.answer = boom  # type: ignore[assignment]
    service = hybrid(repository, reranker=reranker)
    materialize_all(service, CORPUS)
    with pytest.raises(ProviderError, match=msg("provider error: the reranker failed")):
        find(service, "concise")


def test_an_answer_whose_reading_fails_is_the_reranker_failing(repository: Repository) -> None:
    failure = RuntimeError("the host's answer")

    class Exploding(RerankResult):
        def __getattribute__(self, name: str) -> object:
            if name == "memory_id":
                raise failure
            return super().__getattribute__(name)

    reranker = ScriptedReranker()
    reranker.answer = lambda candidates: [Exploding(candidates[0].memory_id, 1.0)]  # type: ignore[assignment, index]
    service = hybrid(repository, reranker=reranker)
    materialize_all(service, CORPUS)
    with pytest.raises(ProviderError, match=msg("provider error: the reranker failed")) as caught:
        find(service, "concise")
    assert caught.value.__cause__ is failure
    assert service.verify_integrity().ok


@pytest.mark.parametrize(
    "text",
    [
        "alpha",
        "alpha beta gamma",
        "delta epsilon zeta eta theta",
        " ".join(f"word{i}" for i in range(40)),  # most components set: the full dot product
    ],
)
def test_semantic_scores_are_the_cosine_of_the_stored_vectors(
    repository: Repository, text: str
) -> None:
    embedder = HashingEmbedder(64)
    service = hybrid(repository, embedder=embedder, minimum_semantic_score=-1.0)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    contents = {
        f"mem-{i:02d}": " ".join(words[(i * k) % 8] for k in range(1, 4)) + f" word{i}"
        for i in range(30)
    }
    materialize_all(service, contents)
    stored = {
        mid: unpack(pack(checked_vector("e", embedder.embed_query(c), 64, True)))
        for mid, c in contents.items()
    }
    query = unpack(pack(checked_vector("e", embedder.embed_query(text), 64, True)))
    capsule = find(service, text, budget_tokens=10_000, limit=100)
    assert capsule.semantic is not None and capsule.semantic.scanned == 30
    seen = 0
    for entry in capsule.trace:
        for signal in entry.signals:
            if signal.source is SignalSource.SEMANTIC:
                expected = math.fsum(
                    q * d for q, d in zip(query, stored[entry.memory_id], strict=True)
                )
                assert signal.score == expected
                seen += 1
    assert seen == 30


def test_a_term_based_embedder_keeps_the_lexical_order(repository: Repository) -> None:
    # Both matches of "kyoto ryokan" reach the lexical ceiling (their shares are capped at
    # 1); the one holding both words stays first, though the other is newer.
    service = hybrid(repository, embedder=HashingEmbedder(256))
    service.ingest_event(event("evt-1"))
    contents = {"booked": "booked a ryokan in kyoto", "loves": "loves kyoto"}
    contents |= {f"r{i}": f"compared ryokan option {i} for the spring tour" for i in range(10)}
    contents |= {f"x{i}": f"team meeting notes for week {i} and the budget" for i in range(28)}
    for n, (memory_id, content) in enumerate(contents.items()):
        created = NOW + timedelta(seconds=100 if memory_id == "loves" else n)
        service.materialize_once(memory(memory_id, content=content, created_at=created))
    lexical = find(service, "kyoto ryokan", semantic=False)
    assert ids(lexical)[:2] == ["booked", "loves"]
    capsule = find(service, "kyoto ryokan")
    assert capsule.semantic is not None
    assert [e.score for e in capsule.trace[:2]] == [1.0, 1.0]
    assert ids(capsule)[: len(lexical.items)] == ids(lexical)
