"""Spelling tolerance for lexical search (pure): the words one typing error away.

A query word that no memory of the scope holds is most often misspelt: a letter
dropped, doubled, swapped with its neighbour, mistyped, or typed without its accent.
Such a word is one edit away from the word that was meant, in the sense of the
Damerau-Levenshtein distance: one character deleted, inserted or replaced, or two
adjacent characters transposed. The search looks up every string that one edit makes of
the word (:func:`corrections`) among the scope's terms, and scores the ones it holds as
*corrections* of the query word, each worth less than the word itself
(``ranking.CORRECTION_WEIGHT``).

The index is not involved: the candidates are generated from the query alone and looked
up as ordinary term keys, so nothing more is stored, erased or verified than the terms of
``tokenize``. The rules:

1. A query term is *correctable* (:func:`correctable`) when it has at least
   :data:`MIN_CORRECTABLE_CHARS` characters and every character is a letter or a
   combining mark, none of a script written without spaces: numbers and codes
   (``7890``, ``mp3``), very short words (``to``, ``in``), and the bigrams of Chinese,
   Japanese or Thai are never corrected.
2. Its corrections are the distinct strings one edit away (:func:`corrections`): every
   deletion of one character; every transposition of two adjacent different
   characters; every insertion of a letter of the word's *alphabet*; and every
   replacement of a character by a letter of the alphabet or by an accented or
   unaccented form of it (``e`` by ``é``, ``é`` by ``e``, see :func:`variants`). The
   alphabet is the case-folded letters of the 128-code-point blocks that the word's own
   characters are in (:func:`alphabet`): ``a`` to ``z`` for an English word, the Latin-1
   letters too for ``café``, the Cyrillic block for a Russian word.
3. An English word (ASCII letters only) also has its *inflections* as corrections
   (:func:`inflections`): a question says "cook" where the memory says "cooked", and
   the two are two edits apart. They are the word with one of the endings ``-s``,
   ``-es``, ``-d``, ``-ed``, ``-ing``, ``-er``, ``-ers`` added (``-ies`` and ``-ied`` for
   a final ``y``, ``-ing`` in place of a final ``e``), and the word with one of those
   endings taken off (putting back the ``y`` or the ``e``), leaving at least
   :data:`MIN_CORRECTABLE_CHARS` letters.
4. Corrections are truncated to ``MAX_TERM_CHARS`` like every term; the word itself is
   never one of them.

The number of look-ups is bounded by the word: at most
``len(word) * (2 * len(alphabet) + 21) + len(alphabet)`` keys (a Latin letter has at
most 19 accented forms), in practice some 450 for a seven-letter English word such as
``recieve``.
"""

from __future__ import annotations

import functools
import unicodedata

from trueheart_core.domain.search.tokenize import MAX_TERM_CHARS, unspaced

__all__ = [
    "MAX_CORRECTIONS_PER_QUERY",
    "MIN_CORRECTABLE_CHARS",
    "alphabet",
    "correctable",
    "correction_bound",
    "corrections",
    "inflections",
    "variants",
]

MIN_CORRECTABLE_CHARS = 3
"""Shorter words are not corrected: one edit of a two-letter word is almost any other
two-letter word."""

MAX_CORRECTIONS_PER_QUERY = 32_768
"""The corrections one query looks up at most, over all its words: a word whose
corrections would go past it (counted by :func:`correction_bound`) is not corrected, so
that a long query of unusual words costs no more than a few ordinary ones."""

_BLOCK = 7  # a character's block is its code point >> _BLOCK
_LATIN_END = 0x250  # the Latin blocks (Basic Latin through Latin Extended-B)


def _folded_letter(char: str) -> bool:
    return char.isalpha() and char.casefold() == char


@functools.lru_cache(maxsize=64)
def _block_letters(block: int) -> frozenset[str]:
    """The letters of a 128-code-point block that case folding leaves unchanged."""
    first = block << _BLOCK
    return frozenset(c for c in map(chr, range(first, first + (1 << _BLOCK))) if _folded_letter(c))


def _base(char: str) -> str:
    return unicodedata.normalize("NFD", char)[0]


def _accented() -> dict[str, frozenset[str]]:
    forms: dict[str, set[str]] = {}
    for char in map(chr, range(0xC0, _LATIN_END)):
        base = _base(char)
        if base != char and base.isascii() and _folded_letter(char):
            forms.setdefault(base, {base}).add(char)
    return {base: frozenset(group) for base, group in forms.items()}


_ACCENTED = _accented()


def alphabet(term: str) -> frozenset[str]:
    """The letters an insertion or a replacement may bring into ``term``: the case-folded
    letters of the 128-code-point blocks of its characters."""
    return frozenset().union(*(_block_letters(ord(char) >> _BLOCK) for char in set(term)))


def variants(char: str) -> frozenset[str]:
    """The accented and unaccented forms of a Latin letter (``e``: ``e``, ``é``, ``è``,
    ``ê``, ``ë``, ``ē``, ...; ``é``: the same), case-folded; empty for any other
    character."""
    return _ACCENTED.get(_base(char), frozenset())


def _letter(char: str) -> bool:
    if char.isascii():
        return char.isalpha()
    category = unicodedata.category(char)
    return category.startswith(("L", "M"))


def correctable(term: str) -> bool:
    """Whether a query term is corrected when the scope does not hold it: at least
    :data:`MIN_CORRECTABLE_CHARS` characters, all letters or combining marks, none of
    a script written without spaces (whose terms are bigrams, see ``tokenize``)."""
    return (
        len(term) >= MIN_CORRECTABLE_CHARS
        and all(map(_letter, term))
        and not any(map(unspaced, term))
    )


def correction_bound(term: str) -> int:
    """At most how many corrections :func:`corrections` gives for ``term`` (0 when it is
    not correctable), computed without making them."""
    if not correctable(term):
        return 0
    letters = len(alphabet(term))
    return len(term) * (2 * letters + 21) + letters


def corrections(term: str) -> list[str]:
    """Every distinct string one edit away from ``term`` under the module's rules,
    truncated to ``MAX_TERM_CHARS``, without ``term`` itself, sorted; empty when ``term``
    is not :func:`correctable`."""
    if not correctable(term):
        return []
    letters = sorted(alphabet(term))
    size = len(term)
    found: set[str] = set()
    for index, char in enumerate(term):
        head, tail = term[:index], term[index + 1 :]
        found.add(head + tail)  # deletion
        if index + 1 < size and char != term[index + 1]:
            found.add(head + term[index + 1] + char + term[index + 2 :])  # transposition
        found.update([head + other + tail for other in letters])  # replacement
        found.update([head + other + tail for other in variants(char)])
    for index in range(size + 1):
        head, tail = term[:index], term[index:]
        found.update([head + other + tail for other in letters])  # insertion
    found.update(inflections(term))
    found = {candidate[:MAX_TERM_CHARS] for candidate in found}
    found.discard(term)
    found.discard("")
    return sorted(found)


_ADDED = ("s", "es", "d", "ed", "ing", "er", "ers")
# Endings taken off, each with what is put back: "cooked" -> "cook", "baked" -> "bake".
_TAKEN = (
    ("s", ""),
    ("es", ""),
    ("d", ""),
    ("ed", ""),
    ("ing", ""),
    ("ing", "e"),
    ("er", ""),
    ("ers", ""),
    ("ies", "y"),
    ("ied", "y"),
)


def inflections(term: str) -> list[str]:
    """The English inflections of an ASCII word of at least
    :data:`MIN_CORRECTABLE_CHARS` letters (see the module's rule 3), sorted; empty for
    any other term."""
    if len(term) < MIN_CORRECTABLE_CHARS or not (term.isascii() and term.isalpha()):
        return []
    found = {term + ending for ending in _ADDED}
    if term.endswith("y"):
        found.update((term[:-1] + "ies", term[:-1] + "ied"))
    if term.endswith("e"):
        found.add(term[:-1] + "ing")
    for ending, restored in _TAKEN:
        stem = term[: -len(ending)] + restored
        if term.endswith(ending) and len(stem) >= MIN_CORRECTABLE_CHARS:
            found.add(stem)
    found.discard(term)
    return sorted(found)
