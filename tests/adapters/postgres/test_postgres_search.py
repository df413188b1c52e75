"""The PostgreSQL search and vectors roles, white-box: BM25 sums that are the same bit
for bit however the rows lie, the window's ties, the integrity checks over tampered
index rows, and a vector generation that moves only when a vector row changes."""

from __future__ import annotations

import itertools
import math
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")

import postgres_configuration  # noqa: E402
from trueheart_core import PostgresRepository, TrueHeart  # noqa: E402
from trueheart_core.domain.search import ranking  # noqa: E402
from trueheart_core.domain.search.tokenize import term_key  # noqa: E402
from trueheart_core.ports import ScopeKey, SearchDocRow, VectorRow  # noqa: E402
from trueheart_core.service.records import scope_key, to_us  # noqa: E402

_CONFORMANCE = str(Path(__file__).resolve().parents[2] / "conformance")
if _CONFORMANCE not in sys.path:
    sys.path.insert(0, _CONFORMANCE)

from conformance_builders import NOW, SCOPE, materialize_all  # noqa: E402

_names = itertools.count(1)
_AS_OF = to_us(NOW)
KEY: ScopeKey = scope_key(SCOPE)
WORDS = [f"word{index}" for index in range(12)]


@pytest.fixture
def names(postgres_cluster: Any) -> Iterator[list[str]]:
    """Two schema names no other test uses, dropped after the test."""
    found = [f"th_pgsearch_{os.getpid()}_{next(_names)}" for _ in range(2)]
    try:
        yield found
    finally:
        for name in found:
            postgres_configuration.drop_schema(postgres_configuration.database_url(), name)


@pytest.fixture
def stores(names: list[str]) -> Iterator[list[PostgresRepository]]:
    """A store in each of ``names``, closed after the test."""
    url = postgres_configuration.database_url()
    opened = [PostgresRepository(url, schema=name, max_connections=2) for name in names]
    try:
        yield opened
    finally:
        for repo in opened:
            repo.close()


def _pg(schema: str) -> Any:
    conn = psycopg.connect(postgres_configuration.database_url(), autocommit=True)
    conn.execute(f'SET search_path = "{schema}"')
    return conn


def _contents(seed: int, count: int) -> dict[str, str]:
    rnd = random.Random(seed)
    return {
        f"mem-{index:03d}": " ".join(rnd.choice(WORDS) for _ in range(rnd.randrange(1, 14)))
        for index in range(count)
    }


def _scores(repo: PostgresRepository, weights: list[tuple[int, float]], window: int) -> Any:
    with repo.unit_of_work("search", write=False) as uow:
        docs, total = uow.search.statistics(KEY)
        average = ranking.average_length(docs, total)
        matched, found = uow.search.candidates(
            KEY, weights, ranking.BM25_K1, ranking.BM25_B, average, _AS_OF, [], None, window
        )
        entries = uow.search.docs_for(KEY, [c.memory_id for c in found])
        return matched, {c.memory_id: c.score for c in found}, entries, average


def _exact(doc: SearchDocRow, weights: dict[int, float], average: float) -> float:
    """The score as the documented sum of the terms' scores, rounded once."""
    return math.fsum(
        ranking.bm25_term(tf, doc.length, weights[term], ranking.BM25_K1, ranking.BM25_B, average)
        for term, tf in doc.terms
        if term in weights
    )


def test_scores_are_the_exact_sum_bit_for_bit_whatever_the_write_order(
    stores: list[PostgresRepository],
) -> None:
    contents = _contents(7, 60)
    materialize_all(TrueHeart(stores[0], clock=lambda: NOW), contents)
    materialize_all(TrueHeart(stores[1], clock=lambda: NOW), dict(reversed(contents.items())))
    weights = [(term_key(word), 0.5 + index / 3) for index, word in enumerate(WORDS)]
    first = _scores(stores[0], weights, 1000)
    second = _scores(stores[1], weights, 1000)
    matched, scores, entries, average = first
    assert matched == len(scores) == len(contents)
    assert scores == second[1]  # equal floats: the same bits
    assert scores == _scores(stores[0], weights, 1000)[1]
    by_key = dict(weights)
    for doc in entries:
        assert scores[str(doc.memory_id)] == _exact(doc, by_key, average)


def test_the_window_keeps_every_tie_at_its_edge(stores: list[PostgresRepository]) -> None:
    contents = {
        "a": "alpha gamma gamma gamma",
        "b": "alpha beta",
        "c": "alpha beta",
        "d": "gamma",
    }
    materialize_all(TrueHeart(stores[0], clock=lambda: NOW), contents)
    weights = [(term_key("alpha"), 1.0), (term_key("beta"), 1.0)]
    matched, scores, _, _ = _scores(stores[0], weights, 3)
    assert matched == 3
    assert set(scores) == {"a", "b", "c"}
    assert scores["b"] == scores["c"] > scores["a"]
    # A window of one holds both memories that share the best score.
    assert _scores(stores[0], weights, 1)[:2] == (3, {"b": scores["b"], "c": scores["c"]})


@pytest.mark.parametrize("whole_store", [False, True])
def test_tampered_index_rows_are_reported_and_rebuilt(
    stores: list[PostgresRepository], names: list[str], whole_store: bool
) -> None:
    service = TrueHeart(stores[0], clock=lambda: NOW)
    materialize_all(service, _contents(3, 20))
    scope = None if whole_store else SCOPE
    assert service.verify_integrity(scope).ok
    with _pg(names[0]) as pg:
        pg.execute("UPDATE search_terms SET df = df + 1 WHERE term = %s", (term_key("word1"),))
        pg.execute("DELETE FROM search_terms WHERE term = %s", (term_key("word2"),))
        pg.execute("UPDATE search_stats SET length = length + 1")
    found = {p.code for p in service.verify_integrity(scope).problems}
    assert {"term_count_mismatch", "posting_without_entry", "statistics_mismatch"} <= found
    assert service.rebuild_indexes().changed
    assert service.verify_integrity(scope).ok


def test_the_generation_moves_only_when_a_vector_row_changes(
    stores: list[PostgresRepository],
) -> None:
    service = TrueHeart(stores[0], clock=lambda: NOW)
    materialize_all(service, {"m1": "one", "m2": "two"})
    with stores[0].unit_of_work("index", write=True) as uow:
        vectors = uow.vectors
        assert vectors is not None and vectors.generation(KEY) == 0
        space = vectors.register_space("test-space", 1, False)
        vectors.put(VectorRow(KEY, "m1", space, "hash", b"\0\0\0\0", "digest"))
        moved = vectors.generation(KEY)
        assert moved > 0
        vectors.set_active(KEY, "m1", True)  # already active: nothing changes
        assert vectors.generation(KEY) == moved
        vectors.set_active(KEY, "m1", False)
        assert vectors.generation(KEY) > moved
        vectors.delete_of(KEY, "m2")  # no vector: nothing changes
        settled = vectors.generation(KEY)
        vectors.delete_of(KEY, "m1")
        assert vectors.generation(KEY) > settled
        assert vectors.generation(("tenant", "owner", "other")) == 0
