"""Tokenisation rules of lexical search, tested without a database."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.search.tokenize import (
    MAX_TERM_CHARS,
    TOKENIZER_ID,
    term_counts,
    term_key,
    tokenize,
    unspaced,
)

# --- normalisation: NFKC, then case folding ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Straße", ["strasse"]),  # casefold, not lower(): ß -> ss
        ("STRASSE", ["strasse"]),
        ("\ufb01le", ["file"]),  # the ligature ﬁ
        ("\uff21\uff22\uff23\uff11\uff12\uff13", ["abc123"]),  # full-width letters and digits
        ("ǅungla", ["džungla"]),  # a title-case digraph
        ("Ⅻ", ["xii"]),  # a compatibility numeral
        ("ΣΊΣΥΦΟΣ", ["σίσυφοσ"]),  # final sigma folds to sigma
    ],
)
def test_text_is_normalised_with_nfkc_and_case_folded(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_forms_that_normalise_alike_give_the_same_terms() -> None:
    assert tokenize("Straße") == tokenize("STRASSE") == tokenize("strasse")
    assert tokenize("\ufb01nance") == tokenize("Finance")
    assert tokenize("\uff34\uff4f\uff4b\uff59\uff4f") == tokenize("tokyo")


# --- word boundaries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("hello world", ["hello", "world"]),
        ("hello_world", ["hello", "world"]),  # the underscore separates
        ("foo-bar,baz.qux;quux", ["foo", "bar", "baz", "qux", "quux"]),
        ("  tabs\tand\nnewlines\r\n", ["tabs", "and", "newlines"]),
        ("(parens) [brackets] {braces}", ["parens", "brackets", "braces"]),
        ("e-mail: ana@example.org", ["e", "mail", "ana", "example", "org"]),
        ("I \u2764 tea \U0001f375!", ["i", "tea"]),  # symbols and emoji separate
        ("no\u00a0break\u2003em", ["no", "break", "em"]),  # Unicode spaces separate
        ("zero\u200bwidth", ["zero", "width"]),  # a format character separates
        ("C# C++ C .NET", ["c", "c", "c", "net"]),  # symbols are never part of a word
        ("v2.1", ["v2", "1"]),
        ("(415) 555-0199", ["415", "555", "0199"]),
    ],
)
def test_punctuation_symbols_underscore_and_spaces_separate_words(
    text: str, terms: list[str]
) -> None:
    assert tokenize(text) == terms


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("a1b2 3.14", ["a1b2", "3", "14"]),
        ("v2.0", ["v2", "0"]),
        ("2026-08-13", ["2026", "08", "13"]),
        ("①②", ["12"]),  # circled digits are compatibility digits
        ("٣٤ apples", ["٣٤", "apples"]),  # Arabic-Indic digits are digits too
    ],
)
def test_digits_are_word_characters(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_repeats_are_kept_in_order_of_appearance() -> None:
    assert tokenize("b a b A") == ["b", "a", "b", "a"]


# --- combining marks ----------------------------------------------------------------------


def test_devanagari_word_with_combining_marks_stays_one_term() -> None:
    assert tokenize("हिन्दी") == ["हिन्दी"]
    assert tokenize("मैं हिन्दी बोलता हूँ") == ["मैं", "हिन्दी", "बोलता", "हूँ"]


def test_decomposed_accent_is_composed_by_nfkc() -> None:
    assert tokenize("cafe\u0301") == ["caf\u00e9"]
    assert tokenize("cafe\u0301") == tokenize("CAF\u00c9")


def test_mark_without_precomposed_form_stays_attached_to_its_word() -> None:
    assert tokenize("x\u0301yz w") == ["x\u0301yz", "w"]
    assert tokenize("q\u0323\u0307 r") == ["q\u0323\u0307", "r"]


def test_mark_after_a_separator_does_not_start_a_word() -> None:
    assert tokenize("\u0301abc") == ["abc"]
    assert tokenize("abc \u0301 def") == ["abc", "def"]


def test_korean_hangul_words_stay_words() -> None:
    assert tokenize("한국어 문장입니다") == ["한국어", "문장입니다"]
    # Jamo typed separately compose under NFKC into the same syllables.
    assert tokenize("\u1112\u1161\u11ab") == ["한"]


# --- scripts without spaces: bigrams ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("東京に住む", ["東京", "京に", "に住", "住む"]),  # Japanese: Han and Hiragana
        ("カタカナ", ["カタ", "タカ", "カナ"]),  # Katakana
        ("北京大学", ["北京", "京大", "大学"]),  # Chinese
        ("東", ["東"]),  # a single ideograph is a unigram
        ("東 京", ["東", "京"]),
        ("東京 京都", ["東京", "京都"]),
        ("abc東京x", ["abc", "東京", "x"]),  # mixed: the Latin parts stay words
        ("東京2026年", ["東京", "2026", "年"]),
        ("ภาษาไทย", ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]),  # Thai
        ("東京、大阪。", ["東京", "大阪"]),  # ideographic punctuation separates
    ],
)
def test_unspaced_scripts_become_overlapping_bigrams(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


@pytest.mark.parametrize("char", ["東", "か", "カ", "ภ", "\u3005"])
def test_unspaced_names_the_scripts_of_the_bigram_rule(char: str) -> None:
    assert unspaced(char)
    assert tokenize(char * 3) == [char * 2, char * 2]


@pytest.mark.parametrize("char", ["a", "é", "한", "д", "1", "\u0301", " "])
def test_other_characters_are_not_unspaced(char: str) -> None:
    assert not unspaced(char)
    assert tokenize("x" + char * 3) in (["x" + char * 3], ["x"])  # one word, or a separator


def test_half_width_katakana_is_normalised_before_bigrams() -> None:
    assert tokenize("\uff76\uff80\uff76\uff85") == tokenize("カタカナ")


def test_a_query_for_a_bigram_finds_the_longer_run() -> None:
    assert set(tokenize("東京")) <= set(tokenize("私は東京に住んでいます"))


# --- length -------------------------------------------------------------------------------


def test_terms_are_truncated_to_64_characters() -> None:
    assert MAX_TERM_CHARS == 64
    assert tokenize("x" * 70) == ["x" * 64]
    assert tokenize("x" * 64) == ["x" * 64]
    assert tokenize("\u00fc" * 100) == ["\u00fc" * 64]
    assert tokenize("word " + "y" * 65 + " end") == ["word", "y" * 64, "end"]


def test_truncated_terms_of_a_common_prefix_match() -> None:
    assert tokenize("a" * 64 + "b") == tokenize("a" * 64 + "c")


@pytest.mark.parametrize("text", ["", " ", "\t\n", "!!! ...", "_-_", "\u0301", "\U0001f600"])
def test_text_without_words_has_no_terms(text: str) -> None:
    assert tokenize(text) == []


# --- term keys ----------------------------------------------------------------------------


def test_term_key_is_a_signed_64_bit_integer() -> None:
    for term in ("a", "strasse", "東京", "x" * 64, "हिन्दी"):
        key = term_key(term)
        assert type(key) is int
        assert -(2**63) <= key < 2**63


def test_term_key_is_deterministic_and_documented() -> None:
    assert term_key("a") == term_key("a")
    # The stored key of a term: a change here invalidates every index on disk.
    assert term_key("a") == -1223026480944596596


def test_term_keys_differ_for_different_terms() -> None:
    terms = ["a", "b", "A", "ab", "ba", "東京", "京都", "strasse", "straße", "cafe", "café"]
    keys = {term_key(term) for term in terms}
    assert len(keys) == len(terms)


def test_some_term_keys_are_negative_and_some_positive() -> None:
    keys = [term_key(f"w{index}") for index in range(64)]
    assert min(keys) < 0 < max(keys)


def test_term_counts_gives_length_and_frequency_of_each_key() -> None:
    length, counts = term_counts("The cat, the CAT and the hat")
    assert length == 7
    assert counts == {
        term_key("the"): 3,
        term_key("cat"): 2,
        term_key("and"): 1,
        term_key("hat"): 1,
    }
    assert term_counts("") == (0, {})
    assert term_counts("...") == (0, {})


def test_term_counts_counts_bigrams() -> None:
    length, counts = term_counts("東京 東京都")
    assert length == 3
    assert counts == {term_key("東京"): 2, term_key("京都"): 1}


def test_tokenizer_identity_names_the_rules_only() -> None:
    # Stores shared by Pythons with different Unicode databases are not rebuilt in turn.
    assert TOKENIZER_ID == "th-lex-1"
    assert unicodedata.unidata_version not in TOKENIZER_ID


# --- properties ---------------------------------------------------------------------------

_SAMPLES = "aZé東京ภาษิ่한ﬁßǰΐİ_- .\u0301\u0323\u00a0\uff21\u3000"
_texts = st.one_of(
    st.text(max_size=200),
    st.text(st.sampled_from(_SAMPLES), max_size=60),
    st.text(
        st.characters(min_codepoint=0x0300, max_codepoint=0x036F) | st.sampled_from("aé東"),
        max_size=40,
    ),
)


@settings(max_examples=500, deadline=None)
@given(_texts)
def test_tokenize_terms_are_non_empty_bounded_and_whitespace_free(text: str) -> None:
    terms = tokenize(text)
    for term in terms:
        assert term
        assert len(term) <= MAX_TERM_CHARS
        assert not any(char.isspace() for char in term)


@settings(max_examples=500, deadline=None)
@given(_texts)
def test_tokenize_is_idempotent_under_nfkc(text: str) -> None:
    assert tokenize(unicodedata.normalize("NFKC", text)) == tokenize(text)


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_term_counts_agree_with_tokenize(text: str) -> None:
    terms = tokenize(text)
    length, counts = term_counts(text)
    assert length == len(terms)
    assert sum(counts.values()) == len(terms)
    assert set(counts) == {term_key(term) for term in terms}


def _by_the_general_rules(text: str) -> list[str]:
    """The terms of ``text`` by the rules' general path (NFKC, case folding, word runs,
    marks and unspaced scripts), without the shortcut for ASCII text."""
    from trueheart_core.domain.search import tokenize as rules

    folded = unicodedata.normalize("NFKC", text).casefold()
    terms: list[str] = []
    word = ""
    for match in rules._PIECE.finditer(folded):
        letters, other = match.groups()
        if letters is not None:
            word += letters
        elif other is not None and rules._is_mark(other) and word:
            word += other
        else:
            if word:
                terms.extend(rules._split_word(word))
            word = ""
    if word:
        terms.extend(rules._split_word(word))
    return terms


@settings(max_examples=2000)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_text_is_tokenized_as_the_general_rules_tokenize_it(text: str) -> None:
    assert tokenize(text) == _by_the_general_rules(text)


def test_a_long_ascii_word_keeps_its_first_64_characters_on_both_paths() -> None:
    text = "a" * 70 + " B" * 3
    assert tokenize(text) == _by_the_general_rules(text) == ["a" * 64, "b", "b", "b"]
