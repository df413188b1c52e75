"""Spelling tolerance: which query words are corrected, and to what, without a database.

The corrections of a word are checked against a brute force written here: every string
over the word's alphabet at edit distance one, found by enumerating strings of the
neighbouring lengths and measuring each with a dynamic-programming distance."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.search.spelling import (
    MAX_INFLECTIONS,
    MIN_CORRECTABLE_CHARS,
    alphabet,
    correctable,
    correction_bound,
    corrections,
    inflections,
    variants,
)
from trueheart_core.domain.search.tokenize import MAX_TERM_CHARS, tokenize

LOWER = "abcdefghijklmnopqrstuvwxyz"


def distance(a: str, b: str) -> int:
    """Optimal string alignment distance (adjacent transpositions count one)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def brute_force(word: str, letters: str) -> set[str]:
    """Every string of length ``len(word) - 1`` to ``len(word) + 1`` over ``letters``
    and the word's own characters at distance exactly one from ``word``: the shorter
    and equal lengths measured by :func:`distance`, the longer ones by whether one
    deletion gives the word (the only way a longer string is one edit away)."""
    pool = sorted(set(letters) | set(word))
    found = set()
    for size in (len(word) - 1, len(word)):
        for chars in itertools.product(pool, repeat=size):
            candidate = "".join(chars)
            if distance(word, candidate) == 1:
                found.add(candidate)
    for chars in itertools.product(pool, repeat=len(word) + 1):
        candidate = "".join(chars)
        if any(candidate[:i] + candidate[i + 1 :] == word for i in range(len(candidate))):
            found.add(candidate)
    return found


# --- which words are corrected --------------------------------------------------------


@pytest.mark.parametrize(
    "term",
    ["tea", "recieve", "garedn", "café", "naïve", "москав", "σίσφοσ", "x\u0301yz", "한국어"],
)
def test_words_of_three_letters_or_more_are_correctable(term: str) -> None:
    assert MIN_CORRECTABLE_CHARS == 3
    assert correctable(term)
    assert corrections(term)


@pytest.mark.parametrize(
    "term",
    ["", "a", "to", "ox", "7890", "mp3", "v2", "2026", "東京", "京", "カタ", "ภาษ", "東京tower"],
)
def test_short_words_numbers_and_unspaced_scripts_are_not_correctable(term: str) -> None:
    assert not correctable(term)
    assert corrections(term) == []


def test_a_query_s_bigrams_are_never_correctable() -> None:
    for term in tokenize("東京に住んでいます 北京大学 ภาษาไทย"):
        assert not correctable(term), term


# --- what a word is corrected to --------------------------------------------------------


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("recieve", "receive"),  # swapped
        ("receve", "receive"),  # dropped
        ("receeive", "receive"),  # doubled
        ("reveive", "receive"),  # mistyped
        ("eceive", "receive"),  # the first letter dropped
        ("receiv", "receive"),  # the last one
        ("cafe", "café"),  # the accent left out
        ("café", "cafe"),  # or added
        ("naive", "naïve"),
        ("nguyen", "nguyễn"),  # Vietnamese, Latin Extended Additional
        ("pho", "phở"),
        ("muhammad", "muḥammad"),
        ("москав", "москва"),
        ("бльшая", "большая"),
    ],
)
def test_a_typo_is_corrected_to_the_word_meant(typo: str, meant: str) -> None:
    assert meant in corrections(typo)


def accented(letter: str) -> set[str]:
    """The lower-case letters of the Latin blocks (U+00C0 to U+024F, and Latin Extended
    Additional, U+1E00 to U+1EFF) that decompose into ``letter`` and marks."""
    return {
        char
        for char in map(chr, [*range(0xC0, 0x250), *range(0x1E00, 0x1F00)])
        if char.isalpha()
        and char.casefold() == char
        and unicodedata.normalize("NFD", char)[0] == letter
    }


def test_the_corrections_of_a_word_are_exactly_the_strings_one_edit_away() -> None:
    for word in ("tea", "abb"):  # "abb": repeated letters, an edit-free transposition
        # Besides a to z, a replacement may put an accented form of a letter in its place.
        accents = {
            word[:i] + other + word[i + 1 :]
            for i, char in enumerate(word)
            for other in accented(char)
        }
        expected = brute_force(word, LOWER) | accents | set(inflections(word))
        assert set(corrections(word)) == expected, word
        assert "teà" in corrections("tea") and "tàe" not in corrections("tea")


def test_an_accented_word_is_corrected_within_latin_1_and_its_letters_variants() -> None:
    word = "été"
    letters = alphabet(word)
    assert set(LOWER) < letters and "é" in letters and "ß" not in letters
    found = set(corrections(word))
    assert {"éte", "eté", "étée", "éét", "tété", "étè"} <= found
    assert "ete" not in found  # two edits
    # Replacing é by a form of e from outside Latin-1 is a correction too ...
    assert {"ēté", "étě"} <= found
    # ... but inserting one is not: insertions take letters of the word's blocks only.
    assert "ētét" not in found and "étēé" not in found
    assert all(distance(word, other) == 1 for other in found)


def test_corrections_are_sorted_distinct_and_never_the_word() -> None:
    for word in ("recieve", "aaaa", "café", "москва"):
        found = corrections(word)
        assert found == sorted(set(found))
        assert word not in found
        assert all(distance(word, other) == 1 or other in inflections(word) for other in found)


def test_transposing_equal_letters_is_no_edit() -> None:
    assert "aab" in corrections("aaab")  # a deletion
    assert corrections("aaa").count("aaa") == 0


def test_corrections_are_truncated_like_terms() -> None:
    (word,) = tokenize("y" * 70)
    assert len(word) == MAX_TERM_CHARS
    found = corrections(word)
    assert found and all(len(other) <= MAX_TERM_CHARS for other in found)
    assert word not in found


def test_the_number_of_corrections_is_bounded_by_the_word() -> None:
    for word in ("recieve", "bicyle", "refirgerator", "café", "москав"):
        size = len(alphabet(word))
        bound = len(word) * (2 * size + 37) + size + (MAX_INFLECTIONS if word.isascii() else 0)
        assert len(corrections(word)) <= correction_bound(word) == bound, word
    assert max(len(variants(char)) for char in LOWER) == 35  # o
    assert 450 < len(corrections("recieve")) < 550


# --- alphabets and accents --------------------------------------------------------------


def test_an_english_word_s_alphabet_is_a_to_z() -> None:
    assert alphabet("recieve") == frozenset(LOWER)


def test_alphabets_are_the_folded_letters_of_the_word_s_blocks() -> None:
    latin_1 = alphabet("é") - frozenset(LOWER)
    assert "é" in latin_1 and "ÿ" in latin_1 and "þ" in latin_1
    assert "ß" not in latin_1 and "É" not in latin_1 and "µ" not in latin_1
    cyrillic = alphabet("москва")
    assert {"\u0430", "\u044f", "\u0451"} <= cyrillic and not cyrillic & set(LOWER)  # a, ya, yo
    assert all(char.casefold() == char and char.isalpha() for char in cyrillic)
    assert "\u03b1" in alphabet("σίσυφοσ")  # alpha


def test_variants_are_the_accented_and_plain_forms_of_a_latin_letter() -> None:
    assert {"e", "é", "è", "ê", "ë"} <= variants("e") == variants("é")
    assert {"c", "ç"} <= variants("c")
    assert variants("q") == frozenset() and variants("п") == frozenset()
    # Latin Extended Additional too: Vietnamese, and transliterations.
    assert {"ễ", "ệ", "ẹ"} <= variants("e") and "ở" in variants("o") and "ḥ" in variants("h")
    for group in (variants("a"), variants("o"), variants("n")):
        bases = {unicodedata.normalize("NFD", char)[0] for char in group}
        assert len(bases) == 1


@settings(max_examples=60, deadline=None)
@given(st.text(st.sampled_from("abcéиж"), min_size=3, max_size=7))
def test_every_correction_is_one_edit_away(word: str) -> None:
    found = corrections(word)
    assert found
    assert all(distance(word, other) == 1 or other in inflections(word) for other in found)
    # Every deletion and every adjacent transposition is there, whatever the script.
    for index in range(len(word)):
        assert word[:index] + word[index + 1 :] in found
        if index + 1 < len(word) and word[index] != word[index + 1]:
            swapped = word[:index] + word[index + 1] + word[index] + word[index + 2 :]
            assert swapped in found


# --- inflections ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("cook", {"cooks", "cookes", "cookd", "cooked", "cooking", "cooker", "cookers"}),
        ("cooked", {"cook", "cooke"}),  # -ed and -d taken off
        ("baking", {"bak", "bake"}),  # -ing taken off, with and without the final e
        ("bake", {"baking", "baked", "bakes"}),
        ("city", {"cities", "citied"}),
        ("stories", {"story", "storie", "stori"}),
        ("tea", {"teas", "teaed"}),
    ],
)
def test_inflections_add_and_take_off_the_english_endings(word: str, expected: set[str]) -> None:
    found = inflections(word)
    assert expected <= set(found)
    assert found == sorted(set(found)) and word not in found


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        # Forms of one stem are inflections of each other, whichever the query says.
        ("hiking", {"hike", "hiked", "hikes"}),
        ("hiked", {"hike", "hiking", "hikes"}),
        ("hikes", {"hike", "hiked", "hiking"}),
        ("cooking", {"cook", "cooked", "cooks"}),
        ("cooked", {"cook", "cooking", "cooks"}),
        ("carried", {"carry", "carries", "carrying"}),
        # A doubled last consonant, undone and made.
        ("stopped", {"stop", "stopping", "stops"}),
        ("stop", {"stopped", "stopping"}),
        ("planning", {"plan", "planned", "plans"}),
        ("plans", {"plan", "planned", "planning"}),
        ("running", {"run", "runs"}),
        ("travelled", {"travel", "travelling", "traveled", "traveling"}),
        ("used", {"use", "uses", "using"}),
    ],
)
def test_the_forms_of_a_word_s_stem_are_inflections_of_it(word: str, expected: set[str]) -> None:
    found = inflections(word)
    assert expected <= set(found), expected - set(found)


def test_a_consonant_is_doubled_only_after_a_single_vowel() -> None:
    assert "stopped" in inflections("stop") and "cookked" not in inflections("cook")
    assert "fixxed" not in inflections("fix") and "playyed" not in inflections("play")
    assert "rainned" not in inflections("rain")


def test_no_word_has_more_inflections_than_the_bound() -> None:
    # Words built of the endings the rules take off, stacked, have the most stems.
    endings = ["s", "es", "d", "ed", "ing", "er", "ers", "ies", "ied", "y", "e"]
    heads = ["stopp", "bak", "carr", "hik", "plann", "aaa", "xyz"]
    for head in heads:
        for first in endings:
            for second in endings:
                word = head + first + second
                assert len(inflections(word)) <= MAX_INFLECTIONS, word


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("abdeginrsy"), min_size=3, max_size=12))
def test_inflections_never_pass_the_bound(word: str) -> None:
    found = inflections(word)
    assert len(found) <= MAX_INFLECTIONS
    assert word not in found and all(len(other) >= 3 for other in found)


def test_only_ascii_words_of_three_letters_or_more_have_inflections() -> None:
    assert inflections("ox") == []
    assert inflections("café") == []
    assert inflections("mp3") == []
    assert inflections("東京") == []
    # taking an ending off never leaves fewer than three letters
    assert "be" not in inflections("bees") and "bee" in inflections("bees")


def test_inflections_are_among_the_corrections() -> None:
    assert set(inflections("recipe")) <= set(corrections("recipe"))
    assert "cooked" in corrections("cook") and "cooking" in corrections("cook")
