"""Write throughput of ``ingest_event`` with N writer processes, on PostgreSQL and on
SQLite (see ``postgres_bench.py``, which runs it and describes the measurement).

The writers are ``multiprocessing`` processes started with ``spawn``: each imports this
module and runs :func:`throughput_worker`, with a repository and a scope of its own.
"""

from __future__ import annotations

import multiprocessing
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import event, scope
from harness import Clock
from postgres_server import drop_schemas, postgres, rolled_back

from trueheart_core import RepositoryBusy, RepositoryConflict, SQLiteRepository, TrueHeart

WRITERS = (1, 4, 16)


def throughput_worker(
    backend: str, target: str, schema: str, worker: int, seconds: float, start: Any
) -> dict[str, Any]:
    """Ingest new events into this worker's own scope for ``seconds`` after every
    writer is ready; the calls that returned, the ``RepositoryBusy`` errors (and of those
    the ``RepositoryConflict`` ones) that reached the worker, and the window's length."""
    clock = Clock()
    if backend == "postgres":
        th = postgres(target, schema, clock=clock, max_connections=1)
    else:
        th = TrueHeart(SQLiteRepository(target), clock=clock)
    s = scope(f"writer-{uuid.uuid4().hex[:8]}-{worker}")
    with th:
        th.ingest_event(event(s, "warm", 0))
        start.wait(timeout=300)
        began = time.perf_counter()
        deadline = began + seconds
        calls = busy = conflicts = 0
        while time.perf_counter() < deadline:
            draft = event(s, f"w{worker}-e{calls}", calls)
            try:
                th.ingest_event(draft)
            except RepositoryConflict:
                conflicts += 1  # the service's own retries were not enough
                continue
            except RepositoryBusy:
                busy += 1
                continue
            calls += 1
        elapsed = time.perf_counter() - began
    return {"calls": calls, "busy": busy, "conflicts": conflicts, "seconds": elapsed}


@dataclass(frozen=True)
class Throughput:
    """One run: the calls that returned in the window, the ``RepositoryBusy`` errors
    that reached the writers (``conflicts``: those that were ``RepositoryConflict``,
    after the service's own retries), and (PostgreSQL) the transactions the server
    rolled back meanwhile: mostly the conflicts the service ran again on its own."""

    backend: str
    writers: int
    calls: int
    busy: int
    conflicts: int
    seconds: float
    rollbacks: int | None

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds


def measure_throughput(
    backend: str, target: str, schema: str, writers: int, seconds: float
) -> Throughput:
    before = rolled_back(target) if backend == "postgres" else None
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(writers)
        with context.Pool(writers) as pool:
            pending = [
                pool.apply_async(throughput_worker, (backend, target, schema, w, seconds, barrier))
                for w in range(writers)
            ]
            reports = [p.get(timeout=600) for p in pending]
    if before is not None:
        time.sleep(0.5)  # the writers' sessions report their counts as they end
    return Throughput(
        backend,
        writers,
        sum(int(r["calls"]) for r in reports),
        sum(int(r["busy"]) for r in reports),
        sum(int(r["conflicts"]) for r in reports),
        max(float(r["seconds"]) for r in reports),
        None if before is None else rolled_back(target) - before,
    )


def print_throughput(rows: Sequence[Throughput]) -> None:
    print("\nwrite throughput: ingest_event calls/s, summed over N writer processes, own scopes")
    header = (
        f"{'writers':>7} {'PostgreSQL/s':>13} {'SQLite/s':>10} {'PG/SQLite':>10}"
        "  PG rollbacks  conflict / busy errors: PG, SQLite"
    )
    print(header)
    print("-" * len(header))
    for writers in sorted({r.writers for r in rows}):
        pg = next(r for r in rows if r.writers == writers and r.backend == "postgres")
        lite = next(r for r in rows if r.writers == writers and r.backend == "sqlite")
        print(
            f"{writers:>7} {pg.per_second:>13.0f} {lite.per_second:>10.0f} "
            f"{pg.per_second / lite.per_second:>9.2f}x  {pg.rollbacks:>12}  "
            f"{pg.conflicts} / {pg.busy}, {lite.conflicts} / {lite.busy}"
        )


def throughput(url: str, work: Path, seconds: float, run: str) -> list[Throughput]:
    """Every run (each of ``WRITERS`` on each backend), printed as a table."""
    store = f"trueheart_tp_{run}"
    postgres(url, store).close()  # the schema exists before the writers start
    TrueHeart(SQLiteRepository(work / "throughput.db")).close()
    rows = []
    try:
        for writers in WRITERS:
            for backend, target in (("postgres", url), ("sqlite", str(work / "throughput.db"))):
                rows.append(measure_throughput(backend, target, store, writers, seconds))
    finally:
        drop_schemas(url, [store])
    print_throughput(rows)
    return rows
