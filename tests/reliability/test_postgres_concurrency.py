"""Concurrency on PostgreSQL: several processes writing one store at once.

Every worker is a separate process (``multiprocessing`` with ``spawn``: nothing is
inherited but the arguments) with its own ``PostgresRepository`` on one database.

* Disjoint scopes: every write of every worker lands, and the store verifies clean.
* One scope, the same event and memory IDs replayed by every worker at once: each is
  stored exactly once, every worker gets the winner's receipt, and the only errors
  anyone sees are the ones the contract allows under contention (``RepositoryBusy``,
  which covers ``RepositoryConflict``), which the workers retry.
* A delete or forget racing a materialize of the same memory: the end state is one of
  the serial outcomes, and the memory is never active once its tombstone exists.
* Audit: every committed change has exactly one audit row, and nothing else has one.

The expected database is addressed through the public API, except for the row counts,
which are read with plain SQL from the adapter's tables (schema ``trueheart``).
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    MemoryStatus,
    RawEventDraft,
    RecallQuery,
    RepositoryBusy,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrueHeart,
    TrustLevel,
)

psycopg = pytest.importorskip("psycopg")

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCHEMA = "trueheart"
TENANT, OWNER = "tenant", "owner"
SPAWN = multiprocessing.get_context("spawn")
DEADLINE = 240.0  # seconds a group of workers may take before the test fails

T = TypeVar("T")
A = TypeVar("A")


# --- what the workers share ---------------------------------------------------------------


def scope(subject: str) -> Scope:
    return Scope(TENANT, OWNER, subject)


def event_draft(scope_: Scope, event_id: str, body: str) -> RawEventDraft:
    return RawEventDraft(
        event_id,
        scope_,
        SourceRef("src", "pg-mp", NOW, TrustLevel.CONFIRMED),
        body,
        RetentionPolicy(timedelta(days=1), timedelta(days=5), timedelta(days=9)),
    )


def memory_draft(scope_: Scope, memory_id: str, sources: tuple[str, ...]) -> MemoryDraft:
    return MemoryDraft(
        memory_id, scope_, "memory " + memory_id, sources, "fact", TrustLevel.OBSERVED, NOW
    )


def command(
    scope_: Scope, action: GovernanceAction, entity_type: EntityType, entity_id: str
) -> GovernanceCommand:
    return GovernanceCommand(scope_, action, entity_type, entity_id, NOW, "pg-mp")


def worker_stamp(worker: int) -> datetime:
    """The ingest clock of one worker: a receipt stamped with it names its writer."""
    return NOW + timedelta(microseconds=1 + worker)


class Retrying:
    """Calls that retry ``RepositoryBusy`` (the one error contention may raise: a lock
    wait past the lock timeout, or a ``RepositoryConflict`` the service's own bounded
    retries did not settle), counting the retries."""

    def __init__(self) -> None:
        self.busy = 0

    def __call__(self, fn: Callable[[A], T], argument: A) -> T:
        deadline = time.monotonic() + 60
        while True:
            try:
                return fn(argument)
            except RepositoryBusy as busy:
                # SQLite's "erasure checkpoint incomplete" reports a committed change: a
                # retry would misreport it. No other backend may raise it.
                if "erasure checkpoint incomplete" in str(busy) or time.monotonic() > deadline:
                    raise
                self.busy += 1
                time.sleep(0.002)


def open_service(url: str, worker: int) -> TrueHeart:
    from trueheart_core import PostgresRepository

    stamp = worker_stamp(worker)
    return TrueHeart(PostgresRepository(url, max_connections=2), clock=lambda: stamp)


def guarded(body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a worker's body; an exception becomes a report (its type and text), so that
    the parent sees every failure whatever its class, picklable or not."""
    try:
        return body()
    except BaseException as exc:
        import traceback

        return {
            "failed": f"{type(exc).__module__}.{type(exc).__name__}: {exc}",
            "trace": traceback.format_exc(),
        }


# --- workers (module level: spawn imports this module in each child) ------------------------

ITERATIONS = 20


def disjoint_worker(url: str, worker: int, start: Any) -> dict[str, Any]:
    """Write a scope of this worker's own: events, a batch, memories, seals, recalls."""

    def body() -> dict[str, Any]:
        retry = Retrying()
        own = scope(f"worker-{worker}")
        with open_service(url, worker) as service:
            start.wait(timeout=60)
            for i in range(ITERATIONS):
                retry(service.ingest_event, event_draft(own, f"e{i}", f"body e{i}"))
                batch = [event_draft(own, f"b{i}-{k}", f"batch {i} {k}") for k in range(3)]
                retry(service.ingest_events, batch)
                retry(service.materialize_once, memory_draft(own, f"m{i}", (f"e{i}", f"b{i}-0")))
                if i % 5 == 0:
                    seal = command(own, GovernanceAction.SEAL, EntityType.MEMORY, f"m{i}")
                    retry(service.govern, seal)
                retry(service.recall, RecallQuery(own, NOW, limit=100))
        return {"busy": retry.busy}

    return guarded(body)


SHARED_EVENTS = 30


def replay_worker(url: str, worker: int, start: Any) -> dict[str, Any]:
    """Ingest and materialize the same IDs as every other worker, in the same order."""

    def body() -> dict[str, Any]:
        retry = Retrying()
        shared = scope("shared")
        stamps: dict[str, str] = {}
        memories: dict[str, str] = {}
        with open_service(url, worker) as service:
            for i in range(SHARED_EVENTS):
                start.wait(timeout=60)  # every ID is raced afresh, not just the first
                eid = f"e{i}"
                receipt = retry(service.ingest_event, event_draft(shared, eid, "b " + eid))
                stamps[eid] = receipt.ingested_at.isoformat()
                if i % 3 == 0:
                    # A batch that overlaps the single ingests of the other workers.
                    ids = [f"e{i}", f"e{i + 1}", f"e{i + 2}"]
                    batch = [event_draft(shared, e, "b " + e) for e in ids]
                    for got in retry(service.ingest_events, batch):
                        stamps[got.event_id] = got.ingested_at.isoformat()
                record = retry(service.materialize_once, memory_draft(shared, f"m{i}", (eid,)))
                memories[record.memory_id] = record.content
        return {"busy": retry.busy, "stamps": stamps, "memories": memories}

    return guarded(body)


RACES = 12


def race_worker(url: str, worker: int, role: str, start: Any) -> dict[str, Any]:
    """One side of each race, released together with the other side by a barrier.

    Race ``i`` has two targets: ``fresh-i`` (a memory materialized for the first time
    from ``src-i`` while ``src-i`` is deleted) and ``old-i`` (a stored memory replayed
    while it is forgotten). ``role`` is ``materialize`` or ``erase``; odd workers take
    the two targets in the other order, so that the races meet both ways round.
    """

    def body() -> dict[str, Any]:
        retry = Retrying()
        race = scope("race")
        outcomes: list[dict[str, Any]] = []
        with open_service(url, worker) as service:
            for i in range(RACES):
                start.wait(timeout=60)
                calls: list[tuple[str, Callable[[Any], object], object]]
                if role == "materialize":
                    calls = [
                        (
                            f"fresh-{i}",
                            service.materialize_once,
                            memory_draft(race, f"fresh-{i}", (f"src-{i}",)),
                        ),
                        (
                            f"old-{i}",
                            service.materialize_once,
                            memory_draft(race, f"old-{i}", (f"base-{i}",)),
                        ),
                    ]
                else:
                    delete = GovernanceAction.DELETE
                    forget = GovernanceAction.FORGET
                    calls = [
                        (
                            f"fresh-{i}",
                            service.govern,
                            command(race, delete, EntityType.RAW_EVENT, f"src-{i}"),
                        ),
                        (
                            f"old-{i}",
                            service.govern,
                            command(race, forget, EntityType.MEMORY, f"old-{i}"),
                        ),
                    ]
                if worker % 2:
                    calls.reverse()
                for target, call, argument in calls:
                    try:
                        result = retry(call, argument)
                    except EntityDeleted:
                        outcomes.append({"target": target, "outcome": "deleted"})
                        continue
                    affected = list(getattr(result, "affected_ids", ()))
                    outcomes.append({"target": target, "outcome": "ok", "affected": affected})
        return {"busy": retry.busy, "role": role, "outcomes": outcomes}

    return guarded(body)


# --- the parent's side --------------------------------------------------------------------


@pytest.fixture
def pg_url(postgres_cluster: Any) -> Iterator[str]:
    """A fresh database of the test cluster, dropped after the test."""
    url: str = postgres_cluster.create_database()
    yield url
    postgres_cluster.drop_database(url)


def run_workers(
    target: Callable[..., dict[str, Any]], arguments: list[tuple[Any, ...]]
) -> list[dict[str, Any]]:
    """Run one spawned process per argument tuple, all at once; their reports, in order.
    Any report of a failure fails the test with the worker's traceback."""
    with SPAWN.Pool(len(arguments)) as pool:
        pending = [pool.apply_async(target, args) for args in arguments]
        reports = [p.get(timeout=DEADLINE) for p in pending]
    for number, report in enumerate(reports):
        assert "failed" not in report, f"worker {number}: {report['failed']}\n{report['trace']}"
    return reports


def counts(url: str, sql: str, params: tuple[Any, ...] = ()) -> Counter[tuple[Any, ...]]:
    """Rows of a ``GROUP BY`` query ending in ``count(*)``: the count of each group."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(sql, params).fetchall()
    return Counter(
        {
            tuple(
                bytes(v).decode() if isinstance(v, bytes | memoryview) else v for v in row[:-1]
            ): int(row[-1])
            for row in rows
        }
    )


def audit_counts(url: str, subject: str) -> Counter[tuple[Any, ...]]:
    """``(action, entity_id) -> number of audit rows`` of one scope."""
    return counts(
        url,
        f"SELECT action, entity_id, count(*) FROM {SCHEMA}.audit "
        "WHERE tenant_id = %s AND owner_id = %s AND subject_id = %s GROUP BY 1, 2",
        (TENANT.encode(), OWNER.encode(), subject.encode()),
    )


def parent_service(url: str) -> TrueHeart:
    from trueheart_core import PostgresRepository

    return TrueHeart(PostgresRepository(url), clock=lambda: NOW + timedelta(days=365))


@pytest.mark.slow
def test_processes_writing_disjoint_scopes_lose_nothing(pg_url: str) -> None:
    processes = 4
    parent_service(pg_url).close()  # the schema exists before the workers start
    with SPAWN.Manager() as manager:
        barrier = manager.Barrier(processes)
        reports = run_workers(disjoint_worker, [(pg_url, w, barrier) for w in range(processes)])
    assert all(isinstance(r["busy"], int) for r in reports)

    sealed = {f"m{i}" for i in range(ITERATIONS) if i % 5 == 0}
    with parent_service(pg_url) as service:
        assert service.verify_integrity().ok
        for worker in range(processes):
            own = scope(f"worker-{worker}")
            for i in range(ITERATIONS):
                for event_id in (f"e{i}", *(f"b{i}-{k}" for k in range(3))):
                    # Stamped by the worker's clock: stored by the worker, once.
                    receipt = service.get_receipt(own, event_id)
                    assert receipt.ingested_at == worker_stamp(worker)
            recalled = service.recall(RecallQuery(own, NOW, limit=100))
            assert sorted(item.memory.memory_id for item in recalled) == sorted(
                f"m{i}" for i in range(ITERATIONS) if f"m{i}" not in sealed
            )
            assert all(item.memory.status is MemoryStatus.ACTIVE for item in recalled)
            for memory_id in sealed:
                assert service.get_memory(own, memory_id).status is MemoryStatus.SEALED
            # One audit row per committed change, and no other.
            audit = audit_counts(pg_url, f"worker-{worker}")
            expected = Counter(
                {("ingest", f"e{i}"): 1 for i in range(ITERATIONS)}
                | {("ingest", f"b{i}-{k}"): 1 for i in range(ITERATIONS) for k in range(3)}
                | {("materialize", f"m{i}"): 1 for i in range(ITERATIONS)}
                | {("seal", m): 1 for m in sealed}
            )
            assert audit == expected


@pytest.mark.slow
def test_processes_replaying_the_same_ids_store_each_once(pg_url: str) -> None:
    processes = 6
    parent_service(pg_url).close()
    with SPAWN.Manager() as manager:
        barrier = manager.Barrier(processes)
        reports = run_workers(replay_worker, [(pg_url, w, barrier) for w in range(processes)])

    stamps = {worker_stamp(w).isoformat() for w in range(processes)}
    for i in range(SHARED_EVENTS):
        seen = {report["stamps"][f"e{i}"] for report in reports}
        # Every worker got the same (the winner's) receipt.
        assert len(seen) == 1, f"e{i} was answered with different receipts: {seen}"
        assert seen <= stamps
        contents = {report["memories"][f"m{i}"] for report in reports}
        assert contents == {f"memory m{i}"}

    key = (TENANT.encode(), OWNER.encode(), b"shared")
    where = "WHERE tenant_id = %s AND owner_id = %s AND subject_id = %s"
    events = counts(
        pg_url, f"SELECT event_id, count(*) FROM {SCHEMA}.raw_events {where} GROUP BY 1", key
    )
    assert events == Counter({(f"e{i}",): 1 for i in range(SHARED_EVENTS)})
    bodies = counts(
        pg_url, f"SELECT event_id, count(*) FROM {SCHEMA}.raw_bodies {where} GROUP BY 1", key
    )
    assert bodies == events
    memories = counts(
        pg_url, f"SELECT memory_id, count(*) FROM {SCHEMA}.memories {where} GROUP BY 1", key
    )
    assert memories == Counter({(f"m{i}",): 1 for i in range(SHARED_EVENTS)})
    lineage = counts(
        pg_url,
        f"SELECT memory_id, event_id, count(*) FROM {SCHEMA}.lineage {where} GROUP BY 1, 2",
        key,
    )
    assert lineage == Counter({(f"m{i}", f"e{i}"): 1 for i in range(SHARED_EVENTS)})
    # A replay is not a change: one ingest and one materialize row per ID, whoever won.
    assert audit_counts(pg_url, "shared") == Counter(
        {("ingest", f"e{i}"): 1 for i in range(SHARED_EVENTS)}
        | {("materialize", f"m{i}"): 1 for i in range(SHARED_EVENTS)}
    )
    with parent_service(pg_url) as service:
        assert service.verify_integrity().ok
        shared = scope("shared")
        for i in range(SHARED_EVENTS):
            receipt = service.get_receipt(shared, f"e{i}")
            assert receipt.ingested_at.isoformat() == reports[0]["stamps"][f"e{i}"]
            assert receipt.content_available


@pytest.mark.slow
def test_erasure_racing_materialize_ends_in_a_serial_outcome(pg_url: str) -> None:
    pairs = 2  # two materializers and two erasers meet at every race
    race = scope("race")
    with parent_service(pg_url) as service:
        for i in range(RACES):
            service.ingest_events(
                [event_draft(race, f"src-{i}", "source"), event_draft(race, f"base-{i}", "base")]
            )
            service.materialize_once(memory_draft(race, f"old-{i}", (f"base-{i}",)))
    arguments = [(pg_url, w, "materialize" if w < pairs else "erase") for w in range(2 * pairs)]
    with SPAWN.Manager() as manager:
        barrier = manager.Barrier(len(arguments))
        reports = run_workers(race_worker, [(*args, barrier) for args in arguments])

    by_target: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for report in reports:
        for outcome in report["outcomes"]:
            by_target.setdefault(outcome["target"], {}).setdefault(report["role"], []).append(
                outcome
            )
    audit = audit_counts(pg_url, "race")
    with parent_service(pg_url) as service:
        assert service.verify_integrity().ok
        for i in range(RACES):
            # fresh-i: materialized from src-i while src-i is deleted.
            fresh = by_target[f"fresh-{i}"]
            erased = [o for o in fresh["erase"] if o["outcome"] == "ok"]
            assert len(erased) == 1, f"src-{i} was deleted {len(erased)} times"
            assert all(o["outcome"] in {"ok", "deleted"} for o in fresh["erase"])
            made = [o for o in fresh["materialize"] if o["outcome"] == "ok"]
            assert all(o["outcome"] in {"ok", "deleted"} for o in fresh["materialize"])
            if made:
                # Materialized first: the delete took the memory with its source.
                assert erased[0]["affected"] == sorted([f"fresh-{i}", f"src-{i}"])
                with pytest.raises(EntityDeleted):
                    service.get_memory(race, f"fresh-{i}")
            else:
                # Deleted first: the memory never existed.
                assert erased[0]["affected"] == [f"src-{i}"]
                assert audit[("materialize", f"fresh-{i}")] == 0
            assert audit[("materialize", f"fresh-{i}")] == (1 if made else 0)
            assert audit[("delete", f"src-{i}")] == 1
            with pytest.raises(EntityDeleted):
                service.get_receipt(race, f"src-{i}")

            # old-i: a stored memory replayed while it is forgotten.
            old = by_target[f"old-{i}"]
            forgotten = [o for o in old["erase"] if o["outcome"] == "ok"]
            assert len(forgotten) == 1, f"old-{i} was forgotten {len(forgotten)} times"
            assert forgotten[0]["affected"] == [f"old-{i}"]
            assert all(o["outcome"] in {"ok", "deleted"} for o in old["erase"])
            assert all(o["outcome"] in {"ok", "deleted"} for o in old["materialize"])
            with pytest.raises(EntityDeleted):
                service.get_memory(race, f"old-{i}")
            assert audit[("forget", f"old-{i}")] == 1
            assert audit[("materialize", f"old-{i}")] == 1  # the original; replays add none
        # Nothing tombstoned is active: recall sees none of the raced memories.
        recalled = service.recall(RecallQuery(race, NOW, limit=100))
        assert recalled == ()
        # No audit row names anything but the setup and the committed changes.
        assert sum(audit.values()) == (
            2 * RACES  # setup ingests
            + RACES  # setup materializes
            + sum(audit[("materialize", f"fresh-{i}")] for i in range(RACES))
            + 2 * RACES  # one delete and one forget per race
        )
