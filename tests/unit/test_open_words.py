"""Which questions ask about a period alone: only stop words and open words beside the
time expression; which stop words a query writes as names; and the documented list of
open words is the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trueheart_core.domain.search.stopwords import (
    OPEN_WORDS,
    STOP_WORDS,
    asks_only_when,
    content_words,
    named_stop_words,
)
from trueheart_core.domain.search.tokenize import tokenize

DOCS = Path(__file__).resolve().parents[2] / "docs" / "search.md"


@pytest.mark.parametrize(
    "rest", ["", "What did I do ?", "what happened ?", "What was I up to ?", "anything new ?"]
)
def test_only_stop_words_and_open_words_ask_about_the_period_alone(rest: str) -> None:
    assert asks_only_when(tokenize(rest))


@pytest.mark.parametrize("rest", ["what did I eat ?", "where did I go hiking ?", "Kyoto"])
def test_any_other_word_names_something(rest: str) -> None:
    assert not asks_only_when(tokenize(rest))


def test_open_words_are_not_stop_words_and_are_documented() -> None:
    assert not OPEN_WORDS & STOP_WORDS
    text = DOCS.read_text(encoding="utf-8")
    listed = re.search(r"ask for everything in a period:\n(.*?)\*\. They count", text, re.S)
    assert listed is not None
    words = {word.strip("* \n") for word in listed.group(1).split(",")}
    assert words == OPEN_WORDS


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("What did Will say about the US visa?", {"will", "us"}),
        ("the IT budget in May", {"it", "may"}),
        ("I met Don. Don said hi", {"don"}),
        ("We saw Will in the hall", {"will"}),
        ("What Did Will Do", {"did", "will", "do"}),
        # A given name with a possessive is a name where a sentence begins too.
        ("Will's birthday?", {"will"}),
        ("May\u2019s phone number", {"may"}),
        ("When is Don's party? Will's is later", {"don", "will"}),
    ],
)
def test_stop_words_written_as_names_are_kept(text: str, names: set[str]) -> None:
    assert named_stop_words(text) == names
    assert not asks_only_when(tokenize(text), named_stop_words(text))


@pytest.mark.parametrize(
    "text",
    [
        "Will I need an umbrella?",
        "WHAT DID I DO",  # all capitals: no word stands out
        '"Will you come?" she asked. May I?',
        "Question: Will it rain",
        "Is it done?\nWill it be?",
        "I did it… Will it last",
        "A day in the life",  # single letters never are names
        "the us open",
        "It's late. Will it rain?",  # a contraction, not a possessive
        "Will'st thou",
    ],
)
def test_function_words_and_sentence_openings_are_not_names(text: str) -> None:
    assert named_stop_words(text) == frozenset()


def test_content_words_keep_only_the_named_stop_words() -> None:
    words = {1: "what", 2: "did", 3: "will", 4: "say"}
    assert content_words(words) == {4: "say"}
    assert content_words(words, {"will"}) == {3: "will", 4: "say"}
    assert content_words({1: "will", 2: "it"}) == {1: "will", 2: "it"}
