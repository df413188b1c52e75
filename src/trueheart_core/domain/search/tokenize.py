"""Unicode-aware tokenisation for lexical search (pure).

The same function tokenises stored memories and queries, so a query finds a memory
exactly when they share terms under these rules:

1. The text is normalised with NFKC, then case-folded (``str.casefold``), so full-width
   and half-width forms, ligatures, compatibility characters and case all match.
2. A *word* is a maximal run of letters and digits (Unicode categories ``L*`` and
   ``N*``); combining marks (``M*``) stay attached to the word they follow. Everything
   else (spaces, punctuation, symbols, the underscore) separates words.
3. Scripts written without spaces between words (Han, Hiragana, Katakana, Thai, Lao,
   Khmer, Myanmar) cannot be split into words without a dictionary. Inside a word, each
   run of such characters becomes its overlapping character bigrams (a run of one
   character is kept as a unigram); the other parts of the word stay words. ``東京に住む``
   yields ``東京``, ``京に``, ``に住``, ``住む``, so a query for ``東京`` finds it.
4. A term longer than 64 characters keeps its first 64 characters.

Terms are stored only as 64-bit keyed hashes (:func:`term_key`): the index never holds
a word of a body in clear text.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

__all__ = [
    "MAX_TERM_CHARS",
    "TOKENIZER_ID",
    "term_counts",
    "term_key",
    "tokenize",
    "unspaced",
]

MAX_TERM_CHARS = 64
TOKENIZER_ID = "th-lex-1"
"""Identity of these rules. A store's index records the identity it was built with; an
index built under other rules is rebuilt. The Unicode database of the running Python is
deliberately not part of it: processes on different Pythons may share a store without
rebuilding it in turn, at the price that text with characters one database knows and the
other does not can be tokenised differently (``verify_integrity`` then reports the
memories concerned as ``index_entry_mismatch``; ``rebuild_search_index`` realigns them)."""

# Runs of letters and digits (``\w`` without the underscore), or one other character.
_PIECE = re.compile(r"([^\W_]+)|(.)", re.DOTALL)

_NO_SPACE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA9E0, 0xA9FF),  # Myanmar extended-B
    (0xAA60, 0xAA7F),  # Myanmar extended-A
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x16FE0, 0x16FFF),  # ideographic symbols
    (0x1B000, 0x1B16F),  # kana supplement and extensions
    (0x20000, 0x323AF),  # CJK extensions B through H
)


def unspaced(char: str) -> bool:
    """Whether ``char`` is of a script written without spaces (rule 3): its runs become
    bigrams."""
    point = ord(char)
    if point < 0x0E00:
        return False
    return any(low <= point <= high for low, high in _NO_SPACE_RANGES)


def _split_word(word: str) -> Iterable[str]:
    """A word's terms: its spaced-script parts whole, its unspaced runs as bigrams."""
    if word.isascii():
        yield word[:MAX_TERM_CHARS]
        return
    start = 0
    length = len(word)
    while start < length:
        run_unspaced = unspaced(word[start])
        end = start + 1
        while end < length and (unspaced(word[end]) == run_unspaced or _is_mark(word[end])):
            end += 1
        part = word[start:end]
        if not run_unspaced:
            yield part[:MAX_TERM_CHARS]
        elif len(part) == 1:
            yield part
        else:
            for index in range(len(part) - 1):
                yield part[index : index + 2]
        start = end


def _is_mark(char: str) -> bool:
    return not char.isascii() and unicodedata.category(char).startswith("M")


# ASCII text: NFKC changes nothing and case folding is lower-casing, every letter or
# digit is a word character and nothing is of an unspaced script or a combining mark, so
# the rules reduce to runs of ASCII letters and digits.
_ASCII_WORD = re.compile(r"[0-9a-z]+")


def tokenize(text: str) -> list[str]:
    """The terms of ``text`` in order of appearance, repeats included."""
    if text.isascii():
        return [word[:MAX_TERM_CHARS] for word in _ASCII_WORD.findall(text.lower())]
    folded = unicodedata.normalize("NFKC", text).casefold()
    terms: list[str] = []
    word = ""
    for match in _PIECE.finditer(folded):
        letters, other = match.groups()
        if letters is not None:
            word += letters
        elif other is not None and _is_mark(other) and word:
            word += other  # a combining mark continues the current word
        else:
            if word:
                terms.extend(_split_word(word))
            word = ""
    if word:
        terms.extend(_split_word(word))
    return terms


_TERM_HASH = hashlib.blake2b(digest_size=8, person=b"trueheart.term")


@functools.lru_cache(maxsize=1 << 16)
def term_key(term: str) -> int:
    """The stored key of a term: a signed 64-bit BLAKE2b hash of its UTF-8 bytes.

    Computed from a copy of one prepared hash object (the parameters set once), which
    is cheaper than a new object per term: a query's corrections are hashed by the
    hundred. The keys of recent terms are kept (a vocabulary repeats itself); the cache
    holds hashes of terms of this process's own texts, in its own memory only."""
    digest = _TERM_HASH.copy()
    digest.update(term.encode("utf-8"))
    return int.from_bytes(digest.digest(), "big", signed=True)


def term_counts(text: str) -> tuple[int, dict[int, int]]:
    """The length of ``text`` in terms and the frequency of each term key."""
    terms = tokenize(text)
    return len(terms), dict(Counter(map(term_key, terms)))
