"""The built-in diagnostic embedder (feature hashing of the library's own terms)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core import Embedder, HashingEmbedder
from trueheart_core.domain.search.tokenize import TOKENIZER_ID
from trueheart_core.domain.semantic.embedders import MAX_DIMENSIONS
from trueheart_core.errors import ValidationError

BOUNDS = "^dimensions: must be from 1 through 16384$"


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def _norm(vector: Sequence[float]) -> float:
    return math.sqrt(_dot(vector, vector))


@pytest.mark.parametrize(
    "dimensions", [0, -1, MAX_DIMENSIONS + 1, True, False, 8.0, 1.5, "8", None]
)
def test_dimensions_out_of_bounds_or_not_an_int_are_refused(dimensions: object) -> None:
    with pytest.raises(ValidationError, match=BOUNDS):
        HashingEmbedder(dimensions)  # type: ignore[arg-type]


@pytest.mark.parametrize("dimensions", [1, 2, 256, MAX_DIMENSIONS])
def test_dimensions_within_bounds_are_kept(dimensions: int) -> None:
    embedder = HashingEmbedder(dimensions)
    assert embedder.dimensions == dimensions
    assert len(embedder.embed_query("alpha beta")) == dimensions


def test_the_defaults_and_the_identity() -> None:
    embedder = HashingEmbedder()
    assert MAX_DIMENSIONS == 16_384
    assert embedder.dimensions == 256
    assert embedder.normalized is True
    assert embedder.identity == f"hashing-v1:{TOKENIZER_ID}" == "hashing-v1:th-lex-1"
    # the identity names the rules, not the instance (dimensions are snapshotted apart)
    assert HashingEmbedder(8).identity == embedder.identity
    assert repr(HashingEmbedder(8)) == "HashingEmbedder(dimensions=8)"


def test_it_satisfies_the_embedder_protocol() -> None:
    assert isinstance(HashingEmbedder(), Embedder)
    assert not isinstance(object(), Embedder)


@settings(max_examples=200)
@given(st.text(max_size=200), st.integers(1, 512))
def test_vectors_have_unit_length_or_are_all_zeros(text: str, dimensions: int) -> None:
    vector = HashingEmbedder(dimensions).embed_query(text)
    assert len(vector) == dimensions
    assert all(type(x) is float and math.isfinite(x) for x in vector)
    if any(vector):
        assert _norm(vector) == pytest.approx(1.0, abs=1e-12)
    else:
        assert vector == [0.0] * dimensions


@pytest.mark.parametrize("text", ["", "   ", "!!! --- ...", "\n\t"])
def test_text_without_terms_is_the_zero_vector(text: str) -> None:
    assert HashingEmbedder(16).embed_query(text) == [0.0] * 16
    assert HashingEmbedder(16).embed_documents([text]) == [[0.0] * 16]


def test_one_term_lands_in_one_signed_bucket() -> None:
    vector = HashingEmbedder(64).embed_query("marmalade")
    assert sorted(abs(x) for x in vector) == [0.0] * 63 + [1.0]
    # repeating the term or changing its case changes nothing after normalisation
    assert HashingEmbedder(64).embed_query("Marmalade MARMALADE marmalade") == vector


@settings(max_examples=100)
@given(st.text(max_size=100))
def test_vectors_are_deterministic_across_instances(text: str) -> None:
    assert HashingEmbedder(32).embed_query(text) == HashingEmbedder(32).embed_query(text)
    assert HashingEmbedder(32).embed_documents([text]) == HashingEmbedder(32).embed_documents(
        [text]
    )


def test_texts_sharing_words_are_more_similar_than_unrelated_ones() -> None:
    embedder = HashingEmbedder()
    base = embedder.embed_query("quick brown fox jumps")
    related = embedder.embed_query("Quick brown fox sleeps")
    unrelated = embedder.embed_query("quarterly revenue report shareholders")
    # three of four terms shared, none in a colliding bucket: 3 / (2 * 2)
    assert _dot(base, related) == pytest.approx(0.75)
    assert _dot(base, unrelated) == pytest.approx(0.0)
    assert _dot(base, base) == pytest.approx(1.0)


def test_embed_documents_keeps_order_and_length() -> None:
    embedder = HashingEmbedder(32)
    texts = ["alpha", "beta gamma", "", "alpha", "delta epsilon zeta"]
    vectors = embedder.embed_documents(texts)
    assert len(vectors) == len(texts)
    assert vectors == [embedder.embed_query(text) for text in texts]
    assert vectors[0] == vectors[3]
    assert vectors[0] != vectors[1]
    assert embedder.embed_documents(tuple(texts)) == vectors
    assert embedder.embed_documents([]) == []


def test_a_query_leaves_out_its_stop_words_when_it_holds_another_word() -> None:
    embedder = HashingEmbedder()
    question = embedder.embed_query("What is my blood type?")
    assert question == embedder.embed_query("blood type")
    # a memory that shares only "what", "is" and "my" with it is not similar to it (as a
    # document, the question would be: 0.55)
    (memory,) = embedder.embed_documents(["What my sister is: a nurse"])
    assert _dot(question, memory) == pytest.approx(0.0)
    assert _dot(embedder.embed_documents(["What is my blood type?"])[0], memory) > 0.5
    # documents keep every term, and a query of stop words only is embedded whole
    assert embedder.embed_query("what is it") == embedder.embed_documents(["what is it"])[0]
    assert embedder.embed_query("what is it") != [0.0] * embedder.dimensions


def test_a_query_keeps_the_stop_words_it_writes_as_names() -> None:
    embedder = HashingEmbedder()
    (us_visa, will_say) = embedder.embed_documents(["us visa", "will say"])
    assert embedder.embed_query("my US visa") == us_visa
    assert embedder.embed_query("my US visa") != embedder.embed_query("visa")
    assert embedder.embed_query("What did Will say?") == will_say
    # the same words as function words are left out
    assert embedder.embed_query("will us visa") == embedder.embed_query("visa")
    assert embedder.embed_query("Will it rain?") == embedder.embed_query("rain")
