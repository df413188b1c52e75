"""Which questions ask about a period alone: only stop words and open words beside the
time expression; and the documented list of open words is the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trueheart_core.domain.search.stopwords import OPEN_WORDS, STOP_WORDS, asks_only_when
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
