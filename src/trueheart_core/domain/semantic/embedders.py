"""The embedder seam: the protocol a host's model implements, and a diagnostic built-in.

The library never calls a model on its own. A host that wants semantic recall passes an
object implementing :class:`Embedder` to the service; the service snapshots its identity,
dimensions and normalisation when it opens, registers that *space* in the store, and
refuses a store registered by another space (no silent mixing of vector spaces).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from trueheart_core.domain.search.stopwords import STOP_WORDS, named_stop_words
from trueheart_core.domain.search.tokenize import TOKENIZER_ID, tokenize
from trueheart_core.errors import ValidationError

__all__ = ["MAX_DIMENSIONS", "Embedder", "HashingEmbedder"]

MAX_DIMENSIONS = 16_384


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-length vectors.

    ``identity`` names the model and everything that changes its vectors (weights,
    revision, pooling, prefixes); two embedders with the same identity, dimensions and
    normalisation must produce interchangeable vectors. ``embed_documents`` receives the
    memories' contents in batches and returns one vector per text, in order;
    ``embed_query`` returns the vector of a search text. Vectors are sequences of
    ``dimensions`` finite floats; when ``normalized`` is true each has unit length (or is
    all zeros). Both methods must be deterministic for the library's guarantees about
    repair to hold; they may raise to report a failure.

    An embedder may also define ``term_based = True`` to say that its vectors only
    restate the library's own lexical terms (as :class:`HashingEmbedder` does): hybrid
    search then keeps the lexical order and uses the similarity only to add candidates
    after the lexical ones and to break ties (see ``domain.semantic.fusion``). Without
    the attribute an embedder is taken to add meaning.
    """

    @property
    def identity(self) -> str:
        """A short, stable name of the vector space, e.g. ``"hashing-v1:th-lex-1"``."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector."""
        ...

    @property
    def normalized(self) -> bool:
        """Whether every vector has unit length (or is all zeros)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector per text, in the order given."""
        ...

    def embed_query(self, text: str) -> Sequence[float]:
        """The vector of a search text."""
        ...


class HashingEmbedder:
    """Feature hashing of the library's own terms into ``dimensions`` signed buckets.

    Each term of the text (the tokenisation of lexical search: NFKC, casefold, CJK
    bigrams) adds ``+1`` or ``-1`` to one bucket chosen by a BLAKE2b hash of the term; the
    vector is then scaled to unit length. It is deterministic, needs no model and no
    dependency, and is **not semantic**: texts are similar only when they share words. It
    exists to test persistence, status and repair of vectors, and to measure the cost of
    the semantic path; it says nothing about the quality of a real model.

    It is ``term_based``: its similarity repeats the lexical evidence (and is worse at
    it: hashed buckets collide, and spelling tolerance is lexical only), so it takes no
    part in the fused score of a hybrid search. Measured, fusing it as a meaning-bearing
    embedder made hybrid search worse than lexical search alone on misspelt and
    time-referring questions (docs/search.md, "Retrieval quality").
    """

    __slots__ = ("_dimensions",)
    term_based = True

    def __init__(self, dimensions: int = 256) -> None:
        if (
            isinstance(dimensions, bool)
            or not isinstance(dimensions, int)
            or not 1 <= dimensions <= MAX_DIMENSIONS
        ):
            raise ValidationError("dimensions", f"must be from 1 through {MAX_DIMENSIONS}")
        self._dimensions = dimensions

    @property
    def identity(self) -> str:
        return f"hashing-v1:{TOKENIZER_ID}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def normalized(self) -> bool:
        return True

    def _vector(self, terms: Sequence[str]) -> list[float]:
        vector = [0.0] * self._dimensions
        for term in terms:
            digest = hashlib.blake2b(
                term.encode("utf-8"), digest_size=8, person=b"trueheart.hash"
            ).digest()
            value = int.from_bytes(digest, "big")
            vector[value % self._dimensions] += 1.0 if value >> 63 else -1.0
        norm = math.sqrt(math.fsum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(tokenize(text)) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """The query's terms without its English stop words when it holds another word,
        as lexical search takes a query (stop words written as names, such as "US" or
        "Will", are kept): a question that shares only "what", "is" and "my" with a
        memory is not similar to it."""
        terms = list(tokenize(text))
        kept = named_stop_words(text)
        content = [term for term in terms if term not in STOP_WORDS or term in kept]
        return self._vector(content or terms)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self._dimensions})"
