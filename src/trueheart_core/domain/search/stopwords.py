"""Function words that a query's lexical side leaves out (pure).

A question carries words that say how it is asked rather than what it is about ("what
did I", "where is the"). Memories are statements, so such words either match nearly
every memory (adding noise to a ranking and to its count of matches) or none of them
(and then they hide how well a memory matches the question's content). The lexical
side therefore drops the query words in :data:`STOP_WORDS` whenever the query holds
another word; a query made only of them is searched as it is. Memories are indexed
whole: only queries are affected.

The list is English only, short and closed: articles, pronouns, auxiliary and modal
verbs, question words, the most common prepositions and conjunctions, and the
fragments that the tokeniser cuts from English contractions (``don't`` gives ``don``
and ``t``). Chinese and Japanese queries need no list: their question words are
character bigrams that statements rarely hold (see :mod:`.ranking` for how an absent
term counts).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["STOP_WORDS", "content_words"]

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


def content_words(words: Mapping[int, str]) -> dict[int, str]:
    """The query's terms (by key) without its stop words, or all of them when every
    one is a stop word."""
    kept = {key: word for key, word in words.items() if word not in STOP_WORDS}
    return kept if kept else dict(words)
