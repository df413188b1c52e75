"""The semantic scan finds exactly what comparing every eligible vector exactly finds:
the same candidates, with the same scores bit for bit, in the same order, over random
sets and sets built to defeat the estimates (ties, near-ties at the window's edge and at
the minimum, all-zero vectors, duplicates, sparse queries), whatever the chunking.

These run the zero-dependency scan (``TRUEHEART_SCAN=python``); the numpy scan is
compared with it in ``test_semantic_scan_numpy``."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from datetime import timedelta

import pytest
from conformance_builders import NOW, SCOPE, command, event, memory
from scan_builders import (
    AS_OF,
    Item,
    bits,
    query,
    random_unit,
    reference,
    scanned_by,
    store,
    store_claims,
    unit,
)

from trueheart_core import (
    ClaimStatus,
    GovernanceAction,
    HashingEmbedder,
    Scope,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.domain.semantic.vectors import checked_vector, pack, query_form, similarities
from trueheart_core.ports import Capability, Repository
from trueheart_core.service.records import scope_key
from trueheart_core.service.search import scan as scanning
from trueheart_core.service.search.accelerated import SWITCH

pytestmark = pytest.mark.requires(Capability.VECTORS)

DIMS = 16


@pytest.fixture(autouse=True)
def _zero_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SWITCH, "python")


@pytest.fixture(params=["default", "tiny"])
def chunking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The scan's own chunk sizes, or tiny ones: many chunks, many batches of exact
    comparisons, and undecided vectors decided in the middle of the scan."""
    if request.param == "tiny":
        monkeypatch.setattr(scanning, "CHUNK", 7)
        monkeypatch.setattr(scanning, "_UNDECIDED", 5)
        monkeypatch.setattr(scanning, "_BATCH", 3)
    yield request.param


def check(
    service: TrueHeart, repository: Repository, vector: list[float], **options: object
) -> None:
    """The scan equals the brute-force reference, and so does the search's trace."""
    keep = options.pop("keep", lambda memory_id: True)
    found = scanned_by(service, repository, vector, **options)  # type: ignore[arg-type]
    ref_options = {
        k: options[k] for k in ("minimum", "limit", "created_from", "created_until") if k in options
    }
    expected, eligible = reference(service, vector, keep=keep, **ref_options)  # type: ignore[arg-type]
    assert bits(found.candidates) == bits(expected)
    assert found.scanned == eligible and not found.capped and found.diagnostics == []
    assert set(found.facts) == {c.memory_id for c in expected}
    assert found.compared >= len(expected)


def spread_items(vectors: list[list[float]]) -> list[Item]:
    """Items with the given vectors, of varied ages and clarity."""
    return [
        Item(f"mem-{i:04d}", vector, hours=(i * 7) % 23, fading=i % 3 == 0)
        for i, vector in enumerate(vectors)
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_sets_match_the_reference(repository: Repository, chunking: str, seed: int) -> None:
    rng = random.Random(seed)
    service = store(repository, DIMS, spread_items([random_unit(rng, DIMS) for _ in range(160)]))
    for minimum, limit in [(0.05, 5), (-1.0, 3), (0.3, 20), (0.9, 5), (0.05, 100)]:
        check(service, repository, random_unit(rng, DIMS), minimum=minimum, limit=limit)


def test_duplicates_tie_and_their_tie_breaks_decide(repository: Repository, chunking: str) -> None:
    rng = random.Random(7)
    same = random_unit(rng, DIMS)
    vectors = [same] * 60 + [random_unit(rng, DIMS) for _ in range(40)]
    service = store(repository, DIMS, spread_items(vectors))
    check(service, repository, same, limit=5)
    check(service, repository, same, limit=40)
    check(service, repository, unit([-x for x in same]), minimum=-1.0, limit=5)
    check(service, repository, random_unit(rng, DIMS), minimum=-1.0, limit=5)


def test_near_ties_at_the_edge_of_the_window(repository: Repository, chunking: str) -> None:
    # Similarities with the query 0.5 + k * 1e-9: far closer than any sketch's bound.
    rng = random.Random(11)
    probe = random_unit(rng, DIMS)
    other = random_unit(rng, DIMS)
    side = unit(
        [
            o - p * math.fsum(a * b for a, b in zip(probe, other, strict=True))
            for o, p in zip(other, probe, strict=True)
        ]
    )
    vectors = []
    for k in range(80):
        cos = 0.5 + (k % 40 - 20) * 1e-9
        vectors.append(
            [cos * p + math.sqrt(1 - cos * cos) * s for p, s in zip(probe, side, strict=True)]
        )
    vectors += [random_unit(rng, DIMS) for _ in range(40)]
    rng.shuffle(vectors)
    service = store(repository, DIMS, spread_items(vectors))
    for limit in (3, 10, 20, 40):
        check(service, repository, probe, limit=limit)


def test_near_ties_at_the_minimum(repository: Repository, chunking: str) -> None:
    rng = random.Random(13)
    probe = random_unit(rng, DIMS)
    side = random_unit(rng, DIMS)
    along = math.fsum(a * b for a, b in zip(probe, side, strict=True))
    side = unit([s - along * p for s, p in zip(side, probe, strict=True)])
    minimum = 0.25
    vectors = []
    for k in range(-30, 30):
        cos = minimum + k * 3e-9
        vectors.append(
            [cos * p + math.sqrt(1 - cos * cos) * s for p, s in zip(probe, side, strict=True)]
        )
    service = store(repository, DIMS, spread_items(vectors))
    for limit in (5, 30, 100):
        check(service, repository, probe, minimum=minimum, limit=limit)
    # the minimum itself, exactly as a stored vector scores it
    form = query_form(checked_vector("embedder", probe, DIMS, False))
    exact = similarities(form, [pack(checked_vector("embedder", vectors[30], DIMS, False))])[0]
    check(service, repository, probe, minimum=exact, limit=100)
    check(service, repository, probe, minimum=math.nextafter(exact, 2.0), limit=100)


@pytest.mark.parametrize("minimum", [-1.0, 0.0, 0.05])
def test_all_zero_vectors_score_zero(repository: Repository, chunking: str, minimum: float) -> None:
    rng = random.Random(17)
    vectors = [[0.0] * DIMS] * 30 + [random_unit(rng, DIMS) for _ in range(30)]
    service = store(repository, DIMS, spread_items(vectors))
    check(service, repository, random_unit(rng, DIMS), minimum=minimum, limit=20)
    # An all-zero query is similar to nothing, whatever the minimum: nothing is scanned.
    found = scanned_by(service, repository, [0.0] * DIMS, minimum=minimum, limit=20)
    assert found.candidates == [] and found.scanned == 0 and found.diagnostics == []


def test_one_hot_and_tiny_components(repository: Repository, chunking: str) -> None:
    rng = random.Random(19)
    vectors = [[1.0 if j == i % DIMS else 0.0 for j in range(DIMS)] for i in range(40)]
    vectors += [unit([1.0] + [1e-30 * rng.random() for _ in range(DIMS - 1)]) for _ in range(20)]
    vectors += [
        unit([rng.choice((-1.0, 1.0)) * 10 ** rng.uniform(-12, 0) for _ in range(DIMS)])
        for _ in range(40)
    ]
    service = store(repository, DIMS, spread_items(vectors))
    for probe in (vectors[0], vectors[45], vectors[80], random_unit(rng, DIMS)):
        check(service, repository, probe, minimum=-1.0, limit=10)
        check(service, repository, probe, minimum=0.05, limit=10)


def test_sparse_queries_of_the_hashing_embedder(repository: Repository, chunking: str) -> None:
    rng = random.Random(23)
    words = [f"w{i}" for i in range(60)]
    model = HashingEmbedder(64)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(150)]
    texts += texts[:20]  # duplicates
    vectors = model.embed_documents(texts)
    service = store(repository, 64, spread_items([list(v) for v in vectors]))
    for probe_words in (["w1"], ["w2", "w3"], ["w4", "w5", "w6"], ["absent"]):
        probe = list(model.embed_query(" ".join(probe_words)))
        for minimum in (-1.0, 0.05, 0.2):
            check(service, repository, probe, minimum=minimum, limit=5)


def test_the_cap_keeps_the_newest(repository: Repository, chunking: str) -> None:
    rng = random.Random(29)
    items = [Item(f"mem-{i:04d}", random_unit(rng, DIMS), hours=i % 50) for i in range(120)]
    service = store(repository, DIMS, items)
    probe = random_unit(rng, DIMS)
    # newest first, then the latest written first
    newest = sorted(range(120), key=lambda i: (-(i % 50), -i))
    for cap in (1, 10, 64, 119):
        kept = {f"mem-{i:04d}" for i in newest[:cap]}
        found = scanned_by(service, repository, probe, minimum=-1.0, limit=5, cap=cap)
        expected, _ = reference(service, probe, minimum=-1.0, limit=5, keep=kept.__contains__)
        assert bits(found.candidates) == bits(expected)
        assert (found.scanned, found.capped, found.diagnostics) == (
            cap,
            True,
            ["semantic_scan_capped"],
        )
    found = scanned_by(service, repository, probe, minimum=-1.0, cap=120)
    assert (found.scanned, found.capped) == (120, False)


def test_the_created_range(repository: Repository, chunking: str) -> None:
    rng = random.Random(31)
    items = [Item(f"mem-{i:04d}", random_unit(rng, DIMS), hours=i % 24) for i in range(100)]
    service = store(repository, DIMS, items)
    probe = random_unit(rng, DIMS)
    for start, end in [(0, 24), (5, 6), (5, 5), (None, 12), (12, None), (23, 30)]:
        created_from = None if start is None else NOW + timedelta(hours=start)
        created_until = None if end is None else NOW + timedelta(hours=end)
        check(
            service,
            repository,
            probe,
            minimum=-1.0,
            limit=5,
            created_from=created_from,
            created_until=created_until,
        )


def test_kinds_trust_and_status_filters(repository: Repository, chunking: str) -> None:
    rng = random.Random(37)
    items = [
        Item(
            f"mem-{i:04d}",
            random_unit(rng, DIMS),
            hours=i % 10,
            kind=("fact", "note", "preference")[i % 3],
            trust=(TrustLevel.OBSERVED, TrustLevel.CONFIRMED)[i % 2],
        )
        for i in range(90)
    ]
    service = store(repository, DIMS, items)
    # sealed and forgotten memories leave the scan
    service.govern(command(GovernanceAction.SEAL, "mem-0001"))
    service.govern(command(GovernanceAction.FORGET, "mem-0002"))
    probe = random_unit(rng, DIMS)
    kinds = {item.memory_id: item.kind for item in items}
    trusts = {item.memory_id: item.trust for item in items}
    check(service, repository, probe, minimum=-1.0, limit=10)
    check(
        service,
        repository,
        probe,
        minimum=-1.0,
        limit=10,
        kinds=("fact", "preference"),
        keep=lambda m: kinds[m] in ("fact", "preference"),
    )
    check(
        service,
        repository,
        probe,
        minimum=-1.0,
        limit=10,
        min_trust=TrustLevel.CONFIRMED,
        keep=lambda m: trusts[m] >= TrustLevel.CONFIRMED,
    )


def test_claims_follow_their_status(repository: Repository, chunking: str) -> None:
    rng = random.Random(41)
    probe = random_unit(rng, DIMS)
    service = store(repository, DIMS, spread_items([random_unit(rng, DIMS) for _ in range(20)]))
    store_claims(service, probe, random_unit(rng, DIMS))
    current = scanned_by(service, repository, probe, minimum=-1.0, limit=20)
    ids = [c.memory_id for c in current.candidates]
    assert "claim-new" in ids and "claim-old" not in ids
    superseded = scanned_by(
        service,
        repository,
        probe,
        minimum=-1.0,
        limit=20,
        claim_statuses=(ClaimStatus.SUPERSEDED,),
    )
    assert superseded.candidates[0].memory_id == "claim-old"
    assert "claim-new" not in {c.memory_id for c in superseded.candidates}
    assert superseded.candidates[0].score == pytest.approx(1.0)


def test_the_search_reports_the_candidates(repository: Repository) -> None:
    rng = random.Random(43)
    service = store(repository, DIMS, spread_items([random_unit(rng, DIMS) for _ in range(120)]))
    probe = random_unit(rng, DIMS)
    service_embedder = service._semantic.embedder  # type: ignore[union-attr]
    service_embedder.table["zzprobe"] = probe  # type: ignore[attr-defined]
    expected, eligible = reference(service, probe, limit=6)
    capsule = service.search(query(6, budget_tokens=100_000))
    assert capsule.semantic is not None
    assert (capsule.semantic.scanned, capsule.semantic.scan_cap) == (eligible, None)
    assert capsule.semantic.matched == len(expected) == 12
    assert capsule.matched == 12
    signals = [
        (e.memory_id, s.rank, s.score)
        for e in capsule.trace
        for s in e.signals
        if s.source.value == "semantic"
    ]
    assert (
        signals
        == [(c.memory_id, rank, c.score) for rank, c in enumerate(expected, start=1)][
            : len(signals)
        ]
    )
    assert [e.memory_id for e in capsule.trace] == [c.memory_id for c in expected][
        : len(capsule.trace)
    ]
    assert capsule.as_of == AS_OF


def _generation(repository: Repository, scope: Scope = SCOPE) -> int:
    with repository.unit_of_work("search", write=False) as uow:
        assert uow.vectors is not None
        return uow.vectors.generation(scope_key(scope))


def test_every_change_of_a_scopes_vectors_moves_its_generation(repository: Repository) -> None:
    other = Scope(SCOPE.tenant_id, SCOPE.owner_id, "someone-else")
    assert _generation(repository) == _generation(repository, other) == 0
    rng = random.Random(47)
    service = store(repository, DIMS, spread_items([random_unit(rng, DIMS) for _ in range(5)]))
    service.ingest_event(event("evt-other", scope=other))
    service.materialize_once(memory("mem-other", ("evt-other",), scope=other, content="x"))
    seen = [_generation(repository)]
    elsewhere = _generation(repository, other)
    for change in (
        lambda: service.govern(command(GovernanceAction.SEAL, "mem-0001")),
        lambda: service.govern(command(GovernanceAction.RESTORE, "mem-0001")),
        lambda: service.govern(command(GovernanceAction.FORGET, "mem-0002")),
        lambda: service.govern(command(GovernanceAction.DELETE, "mem-0003")),
        lambda: service.materialize_once(
            memory("mem-late", ("evt-clear",), content="content of mem-late")
        ),
    ):
        change()
        seen.append(_generation(repository))
    assert len(set(seen)) == len(seen)
    assert _generation(repository, other) == elsewhere
    service.erase_subject(SCOPE, occurred_at=NOW)
    assert _generation(repository) not in seen


def test_the_scratch_is_emptied_by_an_erasure_and_at_close(repository: Repository) -> None:
    rng = random.Random(53)
    service = store(repository, DIMS, spread_items([random_unit(rng, DIMS) for _ in range(5)]))
    with repository.unit_of_work("search", write=False) as uow:
        assert uow.vectors is not None
        scratch = uow.scratch()
    scratch["marker"] = 1
    service.govern(command(GovernanceAction.SEAL, "mem-0001"))
    assert scratch["marker"] == 1  # not an erasure (the seal may have added its own)
    service.govern(command(GovernanceAction.FORGET, "mem-0001"))
    assert scratch == {}
    scratch["marker"] = 1
    repository.close()
    assert scratch == {}
