"""Spelling tolerance for lexical search (pure): the words one typing error away.

A query word that no memory of the scope holds, as written or in another form
(:func:`inflections`), is most often misspelt: a letter
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
   unaccented form of it (``e`` by ``é`` or ``ễ``, ``é`` by ``e``, see :func:`variants`). The
   alphabet is the case-folded letters of the 128-code-point blocks that the word's own
   characters are in (:func:`alphabet`): ``a`` to ``z`` for an English word, the Latin-1
   letters too for ``café``, the Cyrillic block for a Russian word.
3. An English word (ASCII letters only) also has its *inflections* as corrections
   (:func:`inflections`): a question says "hiking" where the memory says "hiked", two or
   more edits apart. They are the word's *stems*, the words it may be an inflection of
   (one of the endings ``-s``, ``-es``, ``-d``, ``-ed``, ``-ing``, ``-er``, ``-ers``,
   ``-ies``, ``-ied`` taken off, putting back a ``y`` or an ``e`` and undoubling a
   doubled last consonant: ``stopped``, ``stop``); the word with one of the endings
   ``-s``, ``-es``, ``-d``, ``-ed``, ``-ing``, ``-er``, ``-ers`` added; and the forms of
   the word and of each stem (``-s``, ``-es``, ``-ed``, ``-ing``; ``-d`` and ``-ing``
   in place of a final ``e``; ``-ies`` and ``-ied`` in place of a final ``y``; a
   doubled last consonant after consonant, vowel, consonant: ``planned``). Each has at
   least :data:`MIN_CORRECTABLE_CHARS` letters; there are at most
   :data:`MAX_INFLECTIONS`. Irregular forms (``bought`` for ``buy``) are not made.
   The search scores the inflections of every query word, held or not, at
   ``ranking.INFLECTION_WEIGHT``, and the other corrections of a word the scope lacks
   at ``ranking.CORRECTION_WEIGHT``.
4. Corrections are truncated to ``MAX_TERM_CHARS`` like every term; the word itself is
   never one of them.

The number of look-ups is bounded by the word (:func:`correction_bound`): at most
``len(word) * (2 * len(alphabet) + 37) + len(alphabet)`` keys, plus
:data:`MAX_INFLECTIONS` for an English word (a Latin letter has at most 34 accented
forms), in practice some 500 for a seven-letter English word such as ``recieve``.
"""

from __future__ import annotations

import functools
import unicodedata

from trueheart_core.domain.search.tokenize import MAX_TERM_CHARS, unspaced

__all__ = [
    "MAX_CORRECTIONS_PER_QUERY",
    "MAX_INFLECTIONS",
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
# The Latin letters with a diacritic: Latin-1 through Latin Extended-B, and Latin
# Extended Additional (Vietnamese, and transliterations such as ``ḥ``).
_LATIN_RANGES = ((0xC0, 0x250), (0x1E00, 0x1F00))
_MAX_VARIANTS = 35
"""The most forms of one Latin letter, itself included (``o``)."""


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
    for char in (chr(code) for first, end in _LATIN_RANGES for code in range(first, end)):
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
    extra = MAX_INFLECTIONS if term.isascii() else 0
    return len(term) * (2 * letters + 2 + _MAX_VARIANTS) + letters + extra


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
    ("ed", "e"),
    ("ing", ""),
    ("ing", "e"),
    ("er", ""),
    ("er", "e"),
    ("ers", ""),
    ("ers", "e"),
    ("ies", "y"),
    ("ied", "y"),
)
# Endings after which a stem may have doubled its last consonant: "stopped" -> "stop".
_DOUBLING = ("ed", "ing", "er", "ers")
_VOWELS = frozenset("aeiou")
MAX_INFLECTIONS = 64
"""At most how many inflections :func:`inflections` gives for one word."""


def _stems(term: str) -> set[str]:
    """The words ``term`` may be an inflection of: an ending of ``_TAKEN`` taken off
    (with what it puts back), and a doubled last consonant undoubled; each of at least
    :data:`MIN_CORRECTABLE_CHARS` letters."""
    found = set()
    for ending, restored in _TAKEN:
        if not term.endswith(ending):
            continue
        stem = term[: -len(ending)]
        if len(stem + restored) >= MIN_CORRECTABLE_CHARS:
            found.add(stem + restored)
        doubled = ending in _DOUBLING and not restored and len(stem) > MIN_CORRECTABLE_CHARS
        if doubled and stem[-1] == stem[-2] and stem[-1] not in _VOWELS:
            found.add(stem[:-1])
    return found


def _forms(base: str) -> set[str]:
    """The forms of a base word that a verb or a noun takes: ``-s``, ``-es``, ``-ed``
    and ``-ing`` (after a final ``e``: ``-s``, ``-d``, and ``-ing`` in its place);
    ``-ies`` and ``-ied`` in place of a final ``y``; and the doubled last consonant
    before ``-ed`` and ``-ing`` of a word that ends consonant, vowel, consonant
    (``stop``: ``stopped``, ``stopping``)."""
    if base.endswith("e"):
        return {base + "s", base + "d", base[:-1] + "ing"}
    found = {base + ending for ending in ("s", "es", "ed", "ing")}
    if base.endswith("y"):
        found.update((base[:-1] + "ies", base[:-1] + "ied"))
    if _ends_consonant_vowel_consonant(base):
        found.update((base + base[-1] + "ed", base + base[-1] + "ing"))
    return found


def _ends_consonant_vowel_consonant(base: str) -> bool:
    """Whether a word of three letters or more ends consonant, vowel, consonant (the last
    not ``w``, ``x`` or ``y``), as those that double it before ``-ed`` and ``-ing`` do."""
    first, middle, last = base[-3], base[-2], base[-1]
    return last not in _VOWELS and last not in "wxy" and middle in _VOWELS and first not in _VOWELS


def inflections(term: str) -> list[str]:
    """The English inflections of an ASCII word of at least
    :data:`MIN_CORRECTABLE_CHARS` letters (see the module's rule 3), sorted; empty for
    any other term: the word with an ending of ``_ADDED`` added, the words it may be an
    inflection of (its stems), and the forms of the word and of its stems, so that
    ``hiking``, ``hikes`` and ``hiked`` are inflections of each other."""
    if len(term) < MIN_CORRECTABLE_CHARS or not (term.isascii() and term.isalpha()):
        return []
    stems = _stems(term)
    found = {term + ending for ending in _ADDED} | stems
    for base in (term, *stems):
        found.update(_forms(base))
    found.discard(term)
    return sorted(found)
