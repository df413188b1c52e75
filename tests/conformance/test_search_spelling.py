"""search: spelling tolerance. A query word that no memory of the scope holds is
corrected to the scope's words one edit away (a letter dropped, doubled, swapped,
mistyped or without its accent), each worth half the word; a word the scope holds, as
written or in another form, is never corrected. Every query word, held or not, also
finds the other English forms of itself (``hiked`` for ``hiking``), each worth at most
0.8 of the word."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    CountingClock,
    assert_bm25_reference,
    bm25_reference,
    check_capsule,
    command,
    event,
    materialize_all,
    memory,
)
from semantic_builders import ConceptEmbedder

from trueheart_core import GovernanceAction, MemoryCapsule, SearchQuery, TrueHeart
from trueheart_core.domain.search.spelling import (
    MAX_CORRECTIONS_PER_QUERY,
    correctable,
    correction_bound,
    corrections,
)
from trueheart_core.domain.search.tokenize import term_key
from trueheart_core.ports import Capability, Repository
from trueheart_core.service.search import lexical

CORPUS = {
    "mem-parcel": "the courier will receive the parcel on monday",
    "mem-garden": "planted tomatoes in the garden",
    "mem-recipe": "a recipe for lemon cake",
    "mem-bike": "the bicycle needs a new chain",
}


def _search(service: TrueHeart, text: str, **fields: Any) -> MemoryCapsule:
    fields.setdefault("as_of", NOW)
    capsule = service.search(SearchQuery(fields.pop("scope", SCOPE), text, **fields))
    check_capsule(capsule)
    return capsule


def _ids(capsule: MemoryCapsule) -> list[str]:
    return [item.memory.memory_id for item in capsule.items]


@pytest.mark.parametrize(
    ("text", "memory_id"),
    [
        ("recieve", "mem-parcel"),  # two letters swapped
        ("receve", "mem-parcel"),  # a letter dropped
        ("receeive", "mem-parcel"),  # a letter doubled
        ("reveive", "mem-parcel"),  # a letter mistyped
        ("RECIEVE", "mem-parcel"),  # and the case lost too
        ("Garedn", "mem-garden"),
        ("tomatos", "mem-garden"),
        ("bicyle", "mem-bike"),
        ("bicyccle", "mem-bike"),
    ],
)
def test_a_misspelt_word_finds_its_memory(service: TrueHeart, text: str, memory_id: str) -> None:
    materialize_all(service, CORPUS)
    capsule = _search(service, text)
    assert _ids(capsule)[:1] == [memory_id]
    assert_bm25_reference(capsule, text, CORPUS)


def test_a_correction_is_worth_half_the_word(service: TrueHeart) -> None:
    materialize_all(service, CORPUS)
    exact = _search(service, "receive").items[0]
    typo = _search(service, "recieve").items[0]
    assert typo.memory.memory_id == exact.memory.memory_id == "mem-parcel"
    # The weight is halved before the same arithmetic: the score is exactly half.
    assert typo.score == exact.score / 2


def test_misspelt_and_exact_words_combine(service: TrueHeart) -> None:
    contents = {
        "mem-both": "receive the parcel",
        "mem-parcel": "the parcel is heavy",
        "mem-receive": "receive guests at noon",
        "mem-other": "nothing to see here",
    }
    materialize_all(service, contents)
    capsule = _search(service, "recieve parcel")
    assert _ids(capsule) == ["mem-both", "mem-parcel", "mem-receive"]
    assert_bm25_reference(capsule, "recieve parcel", contents)
    for query in ("Parcle", "the recieve parcle nothing", "gusets at non", "heavvy parcel"):
        assert_bm25_reference(_search(service, query, limit=100), query, contents)


def test_a_correction_that_is_a_query_word_counts_once(service: TrueHeart) -> None:
    materialize_all(service, CORPUS)
    # "recieve" is corrected to "receive", which the query also says: one term, once.
    both = _search(service, "receive recieve")
    assert [item.score for item in both.items] == [_search(service, "receive").items[0].score]
    assert_bm25_reference(both, "receive recieve", CORPUS)


def test_an_exact_match_outranks_memories_that_only_match_corrections(
    service: TrueHeart,
) -> None:
    contents = {"mem-tea": "green tea", "mem-ten": "ten green bottles", "mem-sea": "the sea"}
    materialize_all(service, contents)
    # Every query word is held: plain BM25 over the words, corrections play no part.
    capsule = _search(service, "tea")
    assert _ids(capsule) == ["mem-tea"]
    assert capsule.matched == 1
    assert capsule.items[0].score == bm25_reference("tea", list(contents.values()), "green tea")
    both = _search(service, "green tea")
    assert _ids(both) == ["mem-tea", "mem-ten"]
    assert both.items[0].score > both.items[1].score
    # Once no memory holds "tea", its corrections ("ten", "sea") are found at half weight.
    service.govern(command(GovernanceAction.FORGET, "mem-tea"))
    remaining = {k: v for k, v in contents.items() if k != "mem-tea"}
    after = _search(service, "tea")
    assert sorted(_ids(after)) == ["mem-sea", "mem-ten"]
    assert_bm25_reference(after, "tea", remaining)


def test_a_word_the_scope_holds_is_not_corrected(service: TrueHeart) -> None:
    contents = {"mem-typo": "please recieve this", "mem-right": "please receive this"}
    materialize_all(service, contents)
    capsule = _search(service, "recieve")
    assert _ids(capsule) == ["mem-typo"]
    assert capsule.matched == 1
    assert _ids(_search(service, "receive")) == ["mem-right"]
    # A third spelling is corrected to both.
    assert sorted(_ids(_search(service, "receve"))) == ["mem-right", "mem-typo"]


def test_a_word_the_scope_holds_in_another_form_is_not_corrected(service: TrueHeart) -> None:
    """``cook`` where the memories say "cooked": the word is taken as meant, found by its
    forms, and not corrected to ``book`` (a rarer word one edit away, whose half weight
    would outweigh the common form's)."""
    contents = {f"mem-cook-{n}": f"cooked dinner number {n}" for n in range(5)}
    contents |= {"mem-book": "lent sam my book", "mem-bike": "fixed the bike chain"}
    contents |= {f"mem-other-{n}": f"went swimming at the lake, lap {n}" for n in range(20)}
    materialize_all(service, contents)
    for text in ("cook", "What did I cook?"):
        capsule = _search(service, text, limit=100)
        assert sorted(_ids(capsule)) == [f"mem-cook-{n}" for n in range(5)]
        assert_bm25_reference(capsule, text, contents)
    # A word held in no form at all is still corrected.
    assert _ids(_search(service, "bok")) == ["mem-book"]


def test_corrections_are_the_scope_s_own(service: TrueHeart) -> None:
    materialize_all(service, CORPUS)
    materialize_all(service, {"mem-elsewhere": "two recipes and a gardener"}, scope=OTHER_SCOPE)
    # "recipes" is held only by the other scope: here it is corrected, to "recipe".
    here = _search(service, "recipes")
    assert _ids(here) == ["mem-recipe"]
    assert_bm25_reference(here, "recipes", CORPUS)
    # And the other way round: corrections never reach into another scope.
    there = _search(service, "recipe", scope=OTHER_SCOPE)
    assert _ids(there) == ["mem-elsewhere"]
    # "gardener" is held only there; here it is an inflection of "garden" (-er).
    assert _search(service, "gardener", scope=OTHER_SCOPE).matched == 1
    assert _ids(_search(service, "gardener")) == ["mem-garden"]
    # Two edits from "garden" and no inflection of it: nothing.
    assert _search(service, "gxrdxn").matched == 0


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("an ox", "ax"),  # two letters: too short to correct
        ("door code 7890", "7891"),  # numbers are not corrected
        ("the mp3 file", "mp4"),  # nor words with digits
        ("東京に住む", "東亰"),  # nor the bigrams of scripts without spaces
        ("京都で泊まる", "京者"),
    ],
)
def test_short_words_numbers_and_unspaced_scripts_are_not_corrected(
    service: TrueHeart, stored: str, query: str
) -> None:
    materialize_all(service, {"mem-1": stored})
    assert _search(service, query).matched == 0


def test_unspaced_scripts_are_found_as_before(service: TrueHeart) -> None:
    contents = {"mem-ja": "ユーザーは東京に住んでいます", "mem-zh": "用户住在北京市海淀区"}
    materialize_all(service, contents)
    assert _ids(_search(service, "東京に住む")) == ["mem-ja"]
    assert _ids(_search(service, "海淀区的用户")) == ["mem-zh"]
    assert _search(service, "大阪").matched == 0


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("un café noir", "cafe"),  # an accent left out
        ("a cafe on the corner", "café"),  # an accent added
        ("na\u00efve question", "naive"),
        ("Москва большая", "москав"),  # Cyrillic: letters swapped
        ("Москва большая", "бльшая"),  # and a letter dropped
        ("σίσυφοσ", "σίσφοσ"),
        ("dinner with Nguyễn", "nguyen"),  # Latin Extended Additional: Vietnamese
        ("the phở place", "pho"),
        ("trip to Việt Nam", "viet"),
        ("a letter from Muḥammad", "muhammad"),  # and transliterations
    ],
)
def test_accents_and_other_alphabets_are_corrected(
    service: TrueHeart, stored: str, query: str
) -> None:
    materialize_all(service, {"mem-1": stored, "mem-2": "something else entirely"})
    assert _ids(_search(service, query)) == ["mem-1"]


def test_a_forgotten_memory_is_not_found_by_a_misspelling(service: TrueHeart) -> None:
    secret = "zqxjvortex"
    materialize_all(service, {"mem-secret": f"the {secret} code", "mem-other": "other notes"})
    assert _ids(_search(service, "zqxjvotrex")) == ["mem-secret"]
    service.govern(command(GovernanceAction.FORGET, "mem-secret"))
    for text in (secret, "zqxjvotrex", "zqxjvortexx", "zqxjvrtex"):
        assert _search(service, text).matched == 0
    service.ingest_event(event("evt-2"))
    service.materialize_once(memory("mem-sealed", ("evt-2",), content=f"{secret} again"))
    service.govern(command(GovernanceAction.SEAL, "mem-sealed"))
    assert _search(service, "zqxjvotrex").matched == 0


def test_a_misspelt_search_is_deterministic(service: TrueHeart) -> None:
    materialize_all(service, CORPUS)
    first = _search(service, "the recieve bicyle garedn", budget_tokens=30)
    assert first.matched == 3
    assert _search(service, "the recieve bicyle garedn", budget_tokens=30) == first


@pytest.mark.requires(Capability.VECTORS)
def test_hybrid_matched_counts_a_correction_match_once(repository: Repository) -> None:
    service = TrueHeart(repository, clock=CountingClock(), embedder=ConceptEmbedder())
    materialize_all(
        service,
        {
            "mem-a": "prefers concise summaries",
            "mem-b": "likes brief replies and tea",
            "mem-d": "answers should be short",
            "mem-f": "concise concise concise",
        },
    )
    query = SearchQuery(SCOPE, "conicse replies", NOW, semantic=False)
    lexical = service.search(query)
    assert sorted(_ids(lexical)) == ["mem-a", "mem-b", "mem-f"]  # "concise" and "replies"
    fused = service.search(SearchQuery(SCOPE, "conicse replies", NOW))
    assert fused.semantic is not None and fused.semantic.matched == 3  # a, b, d: "replies"
    assert fused.matched == len(fused.trace) == 4


def test_the_index_answers_the_frequencies_of_hundreds_of_keys(
    repository: Repository, service: TrueHeart
) -> None:
    materialize_all(service, {**CORPUS, "mem-more": "the parcel and the chain"})
    held = {"the": 4, "parcel": 2, "chain": 2, "receive": 1, "garden": 1}
    # What a misspelt search asks: every correction of three words, far more than one
    # statement's worth, nearly all held by no memory, one of them asked twice.
    keys = [term_key(c) for word in ("recieve", "parcle", "chian") for c in corrections(word)]
    keys += [term_key(word) for word in held] + [term_key("the")]
    assert len(keys) > 1000
    scope = (SCOPE.tenant_id, SCOPE.owner_id, SCOPE.subject_id)
    with repository.unit_of_work("read", write=False) as uow:
        found = uow.search.term_frequencies(scope, keys)
        other = (OTHER_SCOPE.tenant_id, OTHER_SCOPE.owner_id, OTHER_SCOPE.subject_id)
        assert uow.search.term_frequencies(other, keys) == {}
    assert found == {term_key(word): df for word, df in held.items()}


def _many_blocks(count: int) -> str:
    """A word of one lower-case letter from each of ``count`` Unicode blocks: its
    corrections may bring in the letters of every one of them."""
    letters = []
    for block in range(0x1000 >> 7):
        for code in range(block << 7, (block + 1) << 7):
            char = chr(code)
            if char.isalpha() and char.casefold() == char and correctable("ab" + char):
                letters.append(char)
                break
        if len(letters) == count:
            return "".join(letters)
    raise AssertionError("too few blocks")


def test_a_query_looks_up_a_bounded_number_of_corrections(
    service: TrueHeart, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word whose corrections would go past the query's budget is not corrected, and
    the words after it still are."""
    materialize_all(service, CORPUS)
    huge = _many_blocks(30)
    assert correction_bound(huge) > MAX_CORRECTIONS_PER_QUERY
    assert correction_bound("recieve") <= MAX_CORRECTIONS_PER_QUERY
    corrected: list[str] = []

    def counting(term: str) -> list[str]:
        corrected.append(term)
        return corrections(term)

    monkeypatch.setattr(lexical, "corrections", counting)
    capsule = _search(service, f"{huge} recieve")
    assert corrected == ["recieve"]
    assert _ids(capsule)[:1] == ["mem-parcel"]


INFLECTED = {
    "mem-hiked": "hiked mount tam with sam",
    "mem-cooking": "cooking a green curry",
    "mem-stopped": "stopped at the pharmacy on the way home",
    "mem-planned": "planned the lisbon trip",
    "mem-carried": "carried the boxes upstairs",
}


@pytest.mark.parametrize(
    ("text", "memory_id"),
    [
        ("where did i go hiking", "mem-hiked"),  # a form of the same stem
        ("hikes", "mem-hiked"),
        ("what was i cooked", "mem-cooking"),
        ("where did i stop", "mem-stopped"),  # a doubled consonant
        ("stopping", "mem-stopped"),
        ("what did i plan", "mem-planned"),
        ("plans", "mem-planned"),
        ("who carries the boxes", "mem-carried"),  # y and ie
    ],
)
def test_a_word_finds_the_other_forms_of_its_stem(
    service: TrueHeart, text: str, memory_id: str
) -> None:
    materialize_all(service, INFLECTED)
    capsule = _search(service, text, limit=100)
    assert _ids(capsule)[:1] == [memory_id]
    assert_bm25_reference(capsule, text, INFLECTED)


def test_a_word_the_scope_holds_does_not_hide_its_other_forms(service: TrueHeart) -> None:
    # Memories of one length, so that only the weights order them.
    contents = {
        "mem-app": "a hike planner app",
        "mem-hiked": "hiked the dipsea trail",
        "mem-hiking": "new hiking boots today",
        "mem-other": "bought a new lamp",
    }
    materialize_all(service, contents)
    capsule = _search(service, "hike", limit=100)
    # The memory that says the word ranks first; the other forms follow.
    assert _ids(capsule)[0] == "mem-app"
    assert sorted(_ids(capsule)) == ["mem-app", "mem-hiked", "mem-hiking"]
    assert capsule.matched == 3
    assert_bm25_reference(capsule, "hike", contents)


def test_a_form_is_worth_at_most_four_fifths_of_the_word(service: TrueHeart) -> None:
    # "hiked" is rarer than "hike" here, so its own idf is higher: the weight of a form
    # is capped at 0.8 times the word's, never more.
    contents = {
        "mem-1": "hike",
        "mem-2": "hike",
        "mem-3": "hike",
        "mem-4": "hiked",
        "mem-5": "lamp",
        "mem-6": "desk",
    }
    materialize_all(service, contents)
    capsule = _search(service, "hike", limit=100)
    scores = {item.memory.memory_id: item.score for item in capsule.items}
    # One-word memories of one length: the scores are the weights times one factor.
    assert scores["mem-4"] == pytest.approx(0.8 * scores["mem-1"], rel=1e-12)
    assert _ids(capsule)[-1] == "mem-4"
    assert_bm25_reference(capsule, "hike", contents)


def test_a_question_about_a_period_finds_the_other_form_said_in_it(service: TrueHeart) -> None:
    """A memory of another time that says the question's word does not hide the one of
    the period that says another form of it."""
    service.ingest_event(event("evt-1"))
    yesterday = NOW - timedelta(days=1)
    service.materialize_once(
        memory(
            "mem-app", ("evt-1",), content="a hike planner app", created_at=NOW - timedelta(days=90)
        )
    )
    service.materialize_once(
        memory("mem-hiked", ("evt-1",), content="hiked the ridge trail", created_at=yesterday)
    )
    capsule = _search(service, "Where did I hike yesterday?")
    assert _ids(capsule) == ["mem-hiked"]
    assert capsule.time is not None and capsule.time.filtered


def test_a_form_of_one_word_that_corrects_another_counts_at_its_better_weight(
    service: TrueHeart,
) -> None:
    """``cooks`` is a form of the common ``cook`` (capped at 0.8 of its low weight) and a
    correction of ``cookz``, which no memory says (half its own, higher, weight)."""
    contents = {f"mem-{n}": f"cook dinner number {n}" for n in range(10)}
    contents["mem-rare"] = "she cooks on sundays"
    materialize_all(service, contents)
    capsule = _search(service, "cook cookz", limit=100)
    assert _ids(capsule)[0] == "mem-rare"
    assert_bm25_reference(capsule, "cook cookz", contents)
