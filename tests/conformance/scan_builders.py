"""Stores of chosen vectors and the brute-force reference of the semantic scan: every
eligible vector compared exactly, ranked by the documented order, the best ``window``
kept."""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from conformance_builders import NOW, SCOPE, claim, event, memory

from trueheart_core import MemoryStatus, SearchQuery, TrueHeart, TrustLevel
from trueheart_core.domain import policy
from trueheart_core.domain.semantic import fusion
from trueheart_core.domain.semantic.vectors import checked_vector, pack, query_form, similarities
from trueheart_core.ports import Repository
from trueheart_core.service.records import to_us
from trueheart_core.service.search.scan import Scan, scan
from trueheart_core.service.semantic import snapshot

AS_OF = NOW + timedelta(days=40)
"""Searched at: memories of events kept clear for 30 days fade, those of 60 days not."""


class TableEmbedder:
    """The vector of a text is the one the table gives it, else the one ``words`` gives
    its first word found there, else all zeros."""

    def __init__(self, dimensions: int, table: dict[str, list[float]]) -> None:
        self._dimensions = dimensions
        self.table = table
        self.words: dict[str, list[float]] = {}

    @property
    def identity(self) -> str:
        return f"test-table-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def normalized(self) -> bool:
        return False

    def vector(self, text: str) -> list[float]:
        if text in self.table:
            return self.table[text]
        for word in text.split():
            if word in self.words:
                return self.words[word]
        return [0.0] * self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


@dataclass(frozen=True)
class Item:
    """A memory to store: its vector and what its tie-breaks depend on."""

    memory_id: str
    vector: list[float]
    hours: int = 0  # created this many hours after NOW
    fading: bool = False  # its event keeps it clear for 30 days (else 60)
    kind: str = "note"
    trust: TrustLevel = TrustLevel.OBSERVED


def unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


def random_unit(rng: random.Random, dimensions: int) -> list[float]:
    return unit([rng.gauss(0.0, 1.0) for _ in range(dimensions)])


def store(repository: Repository, dimensions: int, items: Sequence[Item]) -> TrueHeart:
    """A service whose scope holds ``items``, each with its own content and vector."""
    table = {f"content of {item.memory_id}": item.vector for item in items}
    service = TrueHeart(
        repository, clock=lambda: NOW, embedder=TableEmbedder(dimensions, table), auto_index=True
    )
    confirmed = TrustLevel.CONFIRMED
    service.ingest_events(
        [
            event("evt-fading", trust=confirmed, clear_for=timedelta(days=30)),
            event("evt-clear", trust=confirmed, clear_for=timedelta(days=60)),
        ]
    )
    for start in range(0, len(items), 500):
        batch = items[start : start + 500]
        service.ingest_derived(
            event(f"evt-batch-{start}"),
            memories=[
                memory(
                    item.memory_id,
                    ("evt-fading" if item.fading else "evt-clear",),
                    content=f"content of {item.memory_id}",
                    kind=item.kind,
                    trust=item.trust,
                    created_at=NOW + timedelta(hours=item.hours),
                )
                for item in batch
            ],
        )
    assert service.semantic_status(SCOPE).complete
    return service


def store_claims(service: TrueHeart, old: list[float], new: list[float]) -> None:
    """Two claims, ``claim-old`` (value tea) superseded by ``claim-new`` (value coffee),
    with these vectors."""
    embedder = service_embedder(service)
    embedder.words.update({"tea": old, "coffee": new})
    service.materialize_claim(claim("claim-old", ("evt-clear",), subject="user", value="tea"))
    service.materialize_claim(
        claim(
            "claim-new",
            ("evt-clear",),
            subject="user",
            value="coffee",
            supersedes="claim-old",
            created_at=NOW + timedelta(hours=1),
        )
    )


def service_embedder(service: TrueHeart) -> TableEmbedder:
    embedder = service._semantic.embedder  # type: ignore[union-attr]
    assert isinstance(embedder, TableEmbedder)
    return embedder


def query(limit: int = 5, **fields: object) -> SearchQuery:
    # No stored content shares a word with it: the fused order is the semantic one.
    return SearchQuery(SCOPE, "zzprobe", AS_OF, limit=limit, **fields)  # type: ignore[arg-type]


def scanned_by(
    service: TrueHeart,
    repository: Repository,
    vector: list[float],
    *,
    minimum: float = 0.05,
    limit: int = 5,
    cap: int | None = None,
    created_from: datetime | None = None,
    created_until: datetime | None = None,
    **fields: object,
) -> Scan:
    """The scan of the service's scope, called directly in a reading unit of work."""
    embedder = service_embedder(service)
    checked = checked_vector("embedder", vector, embedder.dimensions, embedder.normalized)
    with repository.unit_of_work("search", write=False) as uow:
        return scan(
            uow,
            query(limit, **fields),
            snapshot(embedder),
            cap,
            minimum,
            checked,
            2 * limit,
            None if created_from is None else to_us(created_from),
            None if created_until is None else to_us(created_until),
        )


def reference(
    service: TrueHeart,
    vector: list[float],
    *,
    minimum: float = 0.05,
    limit: int = 5,
    keep: Callable[[str], bool] = lambda memory_id: True,
    created_from: datetime | None = None,
    created_until: datetime | None = None,
) -> tuple[list[fusion.Scored], int]:
    """Brute force: every active, eligible memory of the scope compared exactly; the
    best ``2 * limit`` at or above the minimum, and how many were eligible."""
    embedder = service_embedder(service)
    form = query_form(checked_vector("embedder", vector, embedder.dimensions, False))
    as_of = to_us(AS_OF)
    found = []
    eligible = 0
    page = service.list_memories(SCOPE, limit=100, status=MemoryStatus.ACTIVE)
    records = list(page.items)
    while page.next_cursor is not None:
        page = service.list_memories(
            SCOPE, limit=100, status=MemoryStatus.ACTIVE, cursor=page.next_cursor
        )
        records += page.items
    for record in records:
        created = to_us(record.created_at)
        if not keep(record.memory_id) or created > as_of or to_us(record.recall_until) <= as_of:
            continue
        if created_from is not None and record.created_at < created_from:
            continue
        if created_until is not None and record.created_at >= created_until:
            continue
        eligible += 1
        raw = embedder.vector(record.content)
        stored = pack(checked_vector("embedder", raw, embedder.dimensions, False))
        (score,) = similarities(form, [stored])
        if score >= minimum:
            clarity = policy.clarity_us(
                as_of, to_us(record.clear_until), to_us(record.recall_until)
            )
            found.append(fusion.Scored(record.memory_id, score, clarity, created))
    return fusion.ranked(found)[: 2 * limit], eligible


def bits(candidates: Sequence[fusion.Scored]) -> list[tuple[str, bytes, float, int]]:
    """Candidates with their scores as bytes: equal lists are equal bit for bit."""
    return [(c.memory_id, struct.pack("<d", c.score), c.clarity, c.created_at) for c in candidates]
