"""Function words that a query's lexical side leaves out (pure).

A question carries words that say how it is asked rather than what it is about ("what
did I", "where is the"). Memories are statements, so such words either match nearly
every memory (adding noise to a ranking and to its count of matches) or none of them
(and then they hide how well a memory matches the question's content). The lexical
side therefore drops the query words in :data:`STOP_WORDS` whenever the query holds
another word; a query made only of them is searched as it is. Memories are indexed
whole: only queries are affected.

A stop word the query writes as a name or an abbreviation is not left out
(:func:`named_stop_words`): "US" and "IT" in capitals in a query that is not all capitals, and
"Will", "May" or "Don" capitalised anywhere but at the start of a sentence, are searched
like any other word ("the US visa", "what did Will say", "the IT budget"). Case is
folded before terms are compared, so such a word still matches the same word in any
case in a memory.

The list is English only, short and closed: articles, pronouns, auxiliary and modal
verbs, question words, the most common prepositions and conjunctions, and the
fragments that the tokeniser cuts from English contractions (``don't`` gives ``don``
and ``t``). Chinese and Japanese queries need no list: their question words are
character bigrams that statements rarely hold (see :mod:`.ranking` for how an absent
term counts).

:data:`OPEN_WORDS` is a second, smaller list, used for one decision only: a question
whose words, once its time expression is left out, are all stop words or open words
("what did I do yesterday?", "what happened last week?", "what was I up to in
March?", "yesterday") asks about the period as a whole, not about a topic in it
(:func:`asks_only_when`). Open words are searched like any other word in every other
query.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping

__all__ = ["OPEN_WORDS", "STOP_WORDS", "asks_only_when", "content_words", "named_stop_words"]

_WORDS = """
    a an the
    i me my mine myself we us our ours you your yours he him his she her hers it its
    they them their theirs
    am is are was were be been being do does did done doing have has had having
    can could would should will shall may might must
    what when where which who whom whose why how
    that this these those there here
    of in on at to for from with by about as into onto than then so and or nor not no
    any some all
    s t d ll m re ve don didn doesn isn wasn aren weren haven hasn hadn wouldn
    couldn shouldn
"""

STOP_WORDS = frozenset(_WORDS.split())
"""The query words left out when the query holds another word (after NFKC and case
folding, as the tokeniser produces them)."""


_OPEN = """
    happen happens happened happening go goes going went gone get gets got getting up
    anything everything something stuff thing things else new
    tell show remind list give recap summary summarize summarise
    remember recall memory memories note notes
"""

OPEN_WORDS = frozenset(_OPEN.split())
"""Words that, with only stop words beside them, ask for everything in a period
("what happened", "what was I up to", "tell me about", "anything new"), as the
tokeniser produces them. They are not stop words: only :func:`asks_only_when` reads
them."""


_WORD = re.compile(r"[^\W_]+")
_SENTENCE_ENDS = frozenset(".!?:\u2026\n")
_GIVEN_NAMES = frozenset({"will", "may", "don"})
"""Stop words that are also given names: with a possessive (``Will's``) they are names
wherever they stand, since the verb or the contraction never takes one."""
_POSSESSIVE = re.compile(r"['\u2019]s(?![^\W_])")


def named_stop_words(text: str) -> frozenset[str]:
    """The stop words (case-folded, as the tokeniser gives them) that ``text`` writes as
    a name or an abbreviation, which are then not left out: a word of two letters or
    more written in capitals ("US", "IT") when the text holds a lower-case letter, or
    written with a capital and then lower case ("Will", "May") where a sentence does
    not begin (after the text's start or ``.``, ``!``, ``?``, ``:``, an ellipsis or a
    line break, quotes and brackets aside), or anywhere when it is one of the given
    names ``Will``, ``May`` and ``Don`` with a possessive ("Will's birthday?"). Single
    letters ("I", "A") never are."""
    text = unicodedata.normalize("NFKC", text)
    shouting = not any(char.islower() for char in text)
    kept: set[str] = set()
    sentence_start = True
    end = 0
    for match in _WORD.finditer(text):
        if any(char in _SENTENCE_ENDS for char in text[end : match.start()]):
            sentence_start = True
        end = match.end()
        word = match.group()
        opening, sentence_start = sentence_start, False
        folded = word.casefold()
        if len(word) < 2 or folded not in STOP_WORDS:
            continue
        if word.isupper():
            if not shouting:
                kept.add(folded)
        elif word[0].isupper() and word[1:].islower():
            possessive = folded in _GIVEN_NAMES and _POSSESSIVE.match(text, match.end())
            if not opening or possessive:
                kept.add(folded)
    return frozenset(kept)


def asks_only_when(words: Iterable[str], kept: Collection[str] = frozenset()) -> bool:
    """Whether a question's words (without its time expression, as the tokeniser gives
    them) name nothing but the question itself: every one is a stop word or an open
    word, or there are none. ``kept`` are stop words the question writes as names
    (:func:`named_stop_words`), which name something."""
    return all((word in STOP_WORDS and word not in kept) or word in OPEN_WORDS for word in words)


def content_words(words: Mapping[int, str], kept: Collection[str] = frozenset()) -> dict[int, str]:
    """The query's terms (by key) without its stop words, except those in ``kept`` (the
    stop words it writes as names, :func:`named_stop_words`), or all of them when every one is a
    stop word."""
    dropped = STOP_WORDS - set(kept)
    content = {key: word for key, word in words.items() if word not in dropped}
    return content if content else dict(words)
