"""Property: hybrid search returns what a brute-force reading of the contract returns.

Stores are built through the public API with random memories over a small vocabulary
(concept words the test model groups, and others it ignores), random creation times,
some sealed, restored, forgotten or kept in another scope, projected by a small concept
model. For random queries, caps and minimum scores, the capsule's trace must be exactly
the evidence fusion (``domain.semantic.fusion``) computed here from:

* the lexical ranking, taken from the same service's lexical-only search (BM25 has its
  own properties in ``test_search_properties``), and
* a brute-force semantic ranking: cosine similarity of the concept model's vectors for
  every active memory of the scope created at or before ``as_of``, newest first, at most
  ``cap`` of them (all without a cap), kept when at least ``minimum``, ordered by
  similarity then the documented tie-breaks;

and ``matched`` must count the union of the memories that share a term with the query
and the best ``2 * limit`` semantic matches.
"""

from __future__ import annotations

import math
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.domain.search.tokenize import tokenize

BASE = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other-subject")
GROUPS = (("brief", "concise", "short"), ("answers", "replies"), ("tea", "coffee"))
WORDS = (*(w for g in GROUPS for w in g), "blue", "zebra")
FATES = ("active",) * 5 + ("sealed", "restored", "forgotten", "other")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=10), timedelta(days=1000))


class Concepts:
    identity = "property-concepts-v1"
    dimensions = len(GROUPS)
    normalized = True

    def vector(self, text: str) -> list[float]:
        terms = tokenize(text)
        raw = [float(sum(t in group for t in terms)) for group in GROUPS]
        norm = math.sqrt(sum(x * x for x in raw))
        return [x / norm for x in raw] if norm else raw

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


memories_strategy = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
        st.integers(min_value=0, max_value=6),  # hours after BASE
        st.sampled_from(FATES),
    ),
    min_size=1,
    max_size=10,
)


def _f32(x: float) -> float:
    import struct

    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _cosine(query: list[float], doc: list[float]) -> float:
    # The store keeps unit vectors as float32, and so is the query compared.
    return math.fsum(_f32(q) * _f32(d) for q, d in zip(query, doc, strict=True))


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    memories=memories_strategy,
    query_words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    cap=st.one_of(st.none(), st.integers(min_value=1, max_value=16)),
    minimum=st.sampled_from([-1.0, 0.05, 0.5, 0.9]),
    hours=st.integers(min_value=0, max_value=7),
    limit=st.integers(min_value=1, max_value=6),
)
# Two matches capped at the lexical ceiling, equally similar: the BM25 order decides.
@example(
    memories=[(["brief"], 0, "active"), (["brief", "brief"], 0, "active")],
    query_words=["brief"],
    cap=None,
    minimum=-1.0,
    hours=0,
    limit=1,
)
def test_hybrid_search_is_evidence_fusion_of_the_references(
    memories: list[tuple[list[str], int, str]],
    query_words: list[str],
    cap: int | None,
    minimum: float,
    hours: int,
    limit: int,
) -> None:
    model = Concepts()
    with tempfile.TemporaryDirectory() as directory:
        repo = SQLiteRepository(str(Path(directory) / "store.db"))
        service = TrueHeart(
            repo,
            clock=lambda: BASE,
            embedder=model,
            semantic_scan_cap=cap,
            minimum_semantic_score=minimum,
        )
        with service:
            source = SourceRef("s", "t", BASE, TrustLevel.OBSERVED)
            # One event per memory: forgetting a memory tombstones its source set.
            service.ingest_events(
                [
                    RawEventDraft(
                        f"e{i:02d}", OTHER if fate == "other" else SCOPE, source, "b", RETENTION
                    )
                    for i, (_, _, fate) in enumerate(memories)
                ]
            )
            live: dict[str, tuple[str, datetime]] = {}
            for index, (words, hour, fate) in enumerate(memories):
                memory_id = f"m{index:02d}"
                content = " ".join(words)
                created = BASE + timedelta(hours=hour)
                scope = OTHER if fate == "other" else SCOPE
                service.materialize_once(
                    MemoryDraft(
                        memory_id,
                        scope,
                        content,
                        (f"e{index:02d}",),
                        "note",
                        TrustLevel.OBSERVED,
                        created,
                    )
                )
                actions = {
                    "sealed": [GovernanceAction.SEAL],
                    "restored": [GovernanceAction.SEAL, GovernanceAction.RESTORE],
                    "forgotten": [GovernanceAction.FORGET],
                }.get(fate, [])
                for action in actions:
                    service.govern(
                        GovernanceCommand(
                            SCOPE, action, EntityType.MEMORY, memory_id, BASE, "property"
                        )
                    )
                if fate in ("active", "restored"):
                    live[memory_id] = (content, created)

            as_of = BASE + timedelta(hours=hours)
            text = " ".join(query_words)
            window = 2 * limit
            lexical = service.search(
                SearchQuery(SCOPE, text, as_of, budget_tokens=100_000, limit=limit, semantic=False)
            )
            capsule = service.search(
                SearchQuery(SCOPE, text, as_of, budget_tokens=100_000, limit=limit)
            )

    eligible = {m: v for m, v in live.items() if v[1] <= as_of}
    # Newest first, then the latest written first (a higher index was written later).
    newest = sorted(eligible, key=lambda m: (-eligible[m][1].timestamp(), -int(m[1:])))
    scanned = newest[:cap] if cap is not None else newest
    query = model.vector(text)
    if not any(query):
        scanned = []  # an all-zero query is similar to nothing: no vector is read
    sims = {m: _cosine(query, model.vector(eligible[m][0])) for m in scanned}
    semantic = [m for m in scanned if sims[m] >= minimum]
    semantic.sort(key=lambda m: (-sims[m], -eligible[m][1].timestamp(), m))

    # The lexical ceiling: the idf of each distinct query word over the scope's
    # searchable memories (none of these words is a stop word or one edit from another).
    documents = [set(tokenize(content)) for content, _ in live.values()]

    def idf(word: str) -> float:
        df = sum(word in terms for terms in documents)
        return math.log(1.0 + (len(documents) - df + 0.5) / (df + 0.5))

    ceiling = math.fsum(idf(word) for word in sorted(set(query_words)))
    fused: dict[str, float] = {}
    for entry in lexical.trace[:window]:
        share = min(1.0, entry.score / ceiling)
        fused[entry.memory_id] = share * share
    for memory_id in semantic[:window]:
        fused[memory_id] = fused.get(memory_id, 0.0) + max(0.0, sims[memory_id])
    similarity = {m: sims[m] for m in semantic[:window]}
    # Ties: similarity, then the lexical rank (which keeps the BM25 order of matches
    # whose share is capped at 1), then age, then the ID (docs/semantic.md).
    lexical_rank = {e.memory_id: rank for rank, e in enumerate(lexical.trace[:window], start=1)}
    order = sorted(
        fused,
        key=lambda m: (
            -fused[m],
            -similarity.get(m, -2.0),
            lexical_rank.get(m, math.inf),
            -eligible[m][1].timestamp(),
            m,
        ),
    )[:window]

    assert [e.memory_id for e in capsule.trace] == order
    for entry in capsule.trace:
        assert math.isclose(entry.score, fused[entry.memory_id], rel_tol=1e-9, abs_tol=1e-12)
    query_terms = set(tokenize(text))
    lexical_set = {m for m in eligible if query_terms & set(tokenize(eligible[m][0]))}
    assert capsule.matched == len(lexical_set | set(semantic[:window]))
    assert capsule.semantic is not None
    assert capsule.semantic.scanned == len(scanned)
    # An all-zero query reads no vector, so no cap stops it.
    assert capsule.semantic.capped == (cap is not None and len(eligible) > cap and any(query))
    assert capsule.semantic.matched == len(semantic[:window])
