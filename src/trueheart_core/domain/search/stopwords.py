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

:data:`OPEN_WORDS` is a second, smaller list, used for one decision only: a question
whose words, once its time expression is left out, are all stop words or open words
("what did I do yesterday?", "what happened last week?", "what was I up to in
March?", "yesterday") asks about the period as a whole, not about a topic in it
(:func:`asks_only_when`). Open words are searched like any other word in every other
query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["OPEN_WORDS", "STOP_WORDS", "asks_only_when", "content_words"]

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


def asks_only_when(words: Iterable[str]) -> bool:
    """Whether a question's words (without its time expression, as the tokeniser gives
    them) name nothing but the question itself: every one is a stop word or an open
    word, or there are none."""
    return all(word in STOP_WORDS or word in OPEN_WORDS for word in words)


def content_words(words: Mapping[int, str]) -> dict[int, str]:
    """The query's terms (by key) without its stop words, or all of them when every
    one is a stop word."""
    kept = {key: word for key, word in words.items() if word not in STOP_WORDS}
    return kept if kept else dict(words)
