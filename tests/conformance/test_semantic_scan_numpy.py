"""With numpy, the semantic scan gives exactly what the zero-dependency scan gives (the
same candidates, scores bit for bit, order, counts and capsules), and its copy of a
scope's vectors follows every change: writes, seals, restores and erasures through this
repository or another one on the same store.

Skipped without numpy, unless ``TRUEHEART_REQUIRE_NUMPY=1`` (then a missing numpy
fails)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest
from conformance_builders import NOW, SCOPE, command, event, memory
from scan_builders import (
    Item,
    bits,
    query,
    random_unit,
    scanned_by,
    service_embedder,
    store,
    store_claims,
    unit,
)

from trueheart_core import GovernanceAction, HashingEmbedder, SearchQuery, TrueHeart, TrustLevel
from trueheart_core.ports import Capability, Repository
from trueheart_core.service.search import accelerated
from trueheart_core.service.search.scan import Scan

if os.environ.get("TRUEHEART_REQUIRE_NUMPY") == "1":
    import numpy  # noqa: F401  (a missing numpy fails the run here)
else:
    pytest.importorskip("numpy")

pytestmark = pytest.mark.requires(Capability.VECTORS)

DIMS = 24


@pytest.fixture(autouse=True)
def _accelerated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(accelerated.SWITCH, raising=False)
    monkeypatch.delenv(accelerated.BUDGET, raising=False)
    assert accelerated.enabled()


def copies(repository: Repository) -> dict[object, object]:
    """The accelerator's entries in the repository's scratch dictionary (other parts of
    the service keep entries of their own there)."""
    with repository.unit_of_work("search", write=False) as uow:
        assert uow.vectors is not None
        return {
            name: held
            for name, held in uow.scratch().items()
            if isinstance(name, tuple) and name[:1] == ("semantic vectors",)
        }


def both(
    monkeypatch: pytest.MonkeyPatch,
    service: TrueHeart,
    repository: Repository,
    vector: list[float],
    **options: object,
) -> Scan:
    """The scan with numpy and without; they must be identical."""
    monkeypatch.setenv(accelerated.SWITCH, "python")
    plain = scanned_by(service, repository, vector, **options)  # type: ignore[arg-type]
    monkeypatch.delenv(accelerated.SWITCH)
    fast = scanned_by(service, repository, vector, **options)  # type: ignore[arg-type]
    assert bits(fast.candidates) == bits(plain.candidates)
    assert (fast.scanned, fast.capped, fast.diagnostics) == (
        plain.scanned,
        plain.capped,
        plain.diagnostics,
    )
    assert fast.facts == plain.facts
    return fast


def spread(vectors: list[list[float]]) -> list[Item]:
    return [
        Item(
            f"mem-{i:04d}",
            vector,
            hours=(i * 5) % 19,
            fading=i % 4 == 0,
            kind=("fact", "note")[i % 2],
            trust=(TrustLevel.OBSERVED, TrustLevel.CONFIRMED)[i % 3 == 0],
        )
        for i, vector in enumerate(vectors)
    ]


def test_random_and_adversarial_sets_give_the_same_answer(
    repository: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    probe = random_unit(rng, DIMS)
    vectors = [random_unit(rng, DIMS) for _ in range(150)]
    vectors += [probe] * 30  # duplicates of the query
    vectors += [[0.0] * DIMS] * 10
    vectors += [unit([p + 1e-9 * rng.random() for p in probe]) for _ in range(30)]  # near ties
    service = store(repository, DIMS, spread(vectors))
    store_claims(service, probe, random_unit(rng, DIMS))
    for minimum in (-1.0, 0.05, 0.5, 0.999999):
        for limit in (1, 5, 40, 100):
            both(monkeypatch, service, repository, probe, minimum=minimum, limit=limit)
    for _ in range(5):
        both(monkeypatch, service, repository, random_unit(rng, DIMS), minimum=-1.0, limit=7)
    both(monkeypatch, service, repository, [0.0] * DIMS, minimum=-1.0, limit=7)
    both(monkeypatch, service, repository, probe, minimum=-1.0, kinds=("fact",))
    both(monkeypatch, service, repository, probe, minimum=-1.0, min_trust=TrustLevel.CONFIRMED)
    both(
        monkeypatch,
        service,
        repository,
        probe,
        minimum=-1.0,
        created_from=NOW + timedelta(hours=3),
        created_until=NOW + timedelta(hours=9),
    )
    assert copies(repository)  # the accelerator answered


def test_a_sparse_query_gives_the_same_answer(
    repository: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    model = HashingEmbedder(64)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(120)]
    service = store(repository, 64, spread([list(v) for v in model.embed_documents(texts)]))
    for text in ("w1", "w2 w3", "w4 w5 w6", "absent"):
        for minimum in (-1.0, 0.05, 0.3):
            both(monkeypatch, service, repository, list(model.embed_query(text)), minimum=minimum)


def test_searches_give_the_same_capsules(
    repository: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    service = store(repository, DIMS, spread([random_unit(rng, DIMS) for _ in range(200)]))
    embedder = service_embedder(service)
    for k in range(5):
        embedder.table["zzprobe"] = random_unit(rng, DIMS)
        monkeypatch.setenv(accelerated.SWITCH, "python")
        plain = service.search(query(3 + k, budget_tokens=100_000))
        monkeypatch.delenv(accelerated.SWITCH)
        assert service.search(query(3 + k, budget_tokens=100_000)) == plain


def _found(service: TrueHeart, repository: Repository, probe: list[float]) -> list[str]:
    return [c.memory_id for c in scanned_by(service, repository, probe, minimum=0.9).candidates]


def test_the_copy_follows_every_change(repository: Repository) -> None:
    rng = random.Random(11)
    probe = random_unit(rng, DIMS)
    service = store(repository, DIMS, spread([random_unit(rng, DIMS) for _ in range(50)]))
    embedder = service_embedder(service)
    assert _found(service, repository, probe) == []
    (name,) = copies(repository)
    embedder.table["content of mem-new"] = probe
    service.ingest_event(event("evt-new", trust=TrustLevel.CONFIRMED))
    service.materialize_once(memory("mem-new", ("evt-new",), content="content of mem-new"))
    assert _found(service, repository, probe) == ["mem-new"]
    service.govern(command(GovernanceAction.SEAL, "mem-new"))
    assert _found(service, repository, probe) == []
    service.govern(command(GovernanceAction.RESTORE, "mem-new"))
    assert _found(service, repository, probe) == ["mem-new"]
    assert name in copies(repository)
    service.govern(command(GovernanceAction.FORGET, "mem-new"))
    assert copies(repository) == {}  # an erasure drops every copy at once
    assert _found(service, repository, probe) == []
    assert name in copies(repository)


@pytest.mark.requires(Capability.PERSISTENT)
def test_the_copy_follows_changes_made_through_another_repository(
    repository: Repository, reopen: Callable[..., Repository]
) -> None:
    rng = random.Random(13)
    probe = random_unit(rng, DIMS)
    service = store(repository, DIMS, spread([random_unit(rng, DIMS) for _ in range(50)]))
    embedder = service_embedder(service)
    assert _found(service, repository, probe) == []
    other = TrueHeart(reopen(), clock=lambda: NOW, embedder=embedder)
    embedder.table["content of mem-new"] = probe
    other.ingest_event(event("evt-new", trust=TrustLevel.CONFIRMED))
    other.materialize_once(memory("mem-new", ("evt-new",), content="content of mem-new"))
    assert _found(service, repository, probe) == ["mem-new"]
    other.govern(command(GovernanceAction.FORGET, "mem-new"))
    assert _found(service, repository, probe) == []


def test_a_copy_over_the_budget_is_not_kept(
    repository: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(17)
    probe = random_unit(rng, DIMS)
    service = store(repository, DIMS, spread([random_unit(rng, DIMS) for _ in range(60)]))
    monkeypatch.setenv(accelerated.BUDGET, "0")
    found = both(monkeypatch, service, repository, probe, minimum=-1.0)
    assert found.scanned == 60
    assert not any(type(held).__name__ == "_Copy" for held in copies(repository).values())
    monkeypatch.delenv(accelerated.BUDGET)
    both(monkeypatch, service, repository, probe, minimum=-1.0)
    assert any(type(held).__name__ == "_Copy" for held in copies(repository).values())


class _NumpyEmbedder(HashingEmbedder):
    """The built-in embedder answering as numpy-based models do: float32 arrays."""

    def embed_documents(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.asarray(super().embed_documents(texts), dtype=np.float32)

    def embed_query(self, text: str) -> Any:
        import numpy as np

        return np.asarray(super().embed_query(text), dtype=np.float32)


def test_an_embedder_answering_with_numpy_arrays_is_served(repository: Repository) -> None:
    arrays = TrueHeart(repository, clock=lambda: NOW, embedder=_NumpyEmbedder(DIMS))
    arrays.ingest_event(event("evt-1"))
    for n, text in enumerate(["green tea in the morning", "short answers", "tea with lemon"]):
        arrays.materialize_once(memory(f"mem-{n}", content=text))
    assert arrays.semantic_status(SCOPE).complete
    lists = TrueHeart(repository, clock=lambda: NOW, embedder=HashingEmbedder(DIMS))
    ask = SearchQuery(SCOPE, "morning tea", NOW + timedelta(seconds=1))
    found = arrays.search(ask)
    assert [i.memory.memory_id for i in found.items][:1] == ["mem-0"]
    assert found == lists.search(ask)
