"""Write throughput of ``ingest_event`` with N writers, on PostgreSQL and on SQLite (see
``postgres_bench.py``, which runs it and describes the measurement).

Writers are processes or threads. As processes (``multiprocessing`` with ``spawn``),
each imports this module and runs :func:`throughput_worker`, with a repository and a
scope of its own. As threads, they run in the benchmark's own process and share one
repository (on PostgreSQL, with a pool of N connections), as the request threads of one
host service would, each writing into a scope of its own.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import EVENT_BODY, event, scope
from harness import Clock
from postgres_server import create_floor_table, drop_schemas, postgres, rolled_back

from trueheart_core import RepositoryBusy, RepositoryConflict, SQLiteRepository, TrueHeart

WRITERS = (1, 4, 16)
MODES = ("processes", "threads")
"""How the writers run: each in a process of its own, or as threads of one process."""

Write = Callable[[int], object]


def _writer(
    backend: str, target: str, schema: str, worker: int
) -> tuple[Write, Callable[[], None]]:
    """This worker's write of its ``n``-th item, and how to close what it opened."""
    if backend == "floor":
        import psycopg  # only the PostgreSQL benchmarks need it

        conn = psycopg.connect(target, autocommit=True)
        sql = f'INSERT INTO "{schema}".items (scope, created_at, body) VALUES (%s, %s, %s)'
        name = f"writer-{worker}"
        return (lambda n: conn.execute(sql, (name, n, EVENT_BODY))), conn.close
    clock = Clock()
    if backend == "postgres":
        th = postgres(target, schema, clock=clock, max_connections=1)
    else:
        th = TrueHeart(SQLiteRepository(target), clock=clock)
    s = scope(f"writer-{uuid.uuid4().hex[:8]}-{worker}")
    return (lambda n: th.ingest_event(event(s, f"w{worker}-e{n}", n))), th.close


def _shared_writers(
    backend: str, target: str, schema: str, writers: int
) -> tuple[list[Write], Callable[[], None]]:
    """The writes of ``writers`` threads of this process, and how to close what they
    opened: one repository for all of them (on PostgreSQL with a pool of one connection
    per thread), each thread writing into a scope of its own; the floor's threads each
    have a connection of their own (a psycopg connection runs one statement at a time)."""
    if backend == "floor":
        pairs = [_writer(backend, target, schema, w) for w in range(writers)]

        def close_all() -> None:
            for _, close in pairs:
                close()

        return [write for write, _ in pairs], close_all
    clock = Clock()
    if backend == "postgres":
        th = postgres(target, schema, clock=clock, max_connections=writers)
    else:
        th = TrueHeart(SQLiteRepository(target), clock=clock)
    run = uuid.uuid4().hex[:8]

    def write_of(worker: int) -> Write:
        s = scope(f"writer-{run}-{worker}")
        return lambda n: th.ingest_event(event(s, f"w{worker}-e{n}", n))

    return [write_of(w) for w in range(writers)], th.close


def throughput_worker(
    backend: str, target: str, schema: str, worker: int, seconds: float, start: Any, done: Any
) -> dict[str, Any]:
    """Write new items (``ingest_event`` into this worker's own scope, or the floor's
    plain committed insert) for ``seconds`` after every writer is ready; the calls that
    returned, the ``RepositoryBusy`` errors (and of those the ``RepositoryConflict``
    ones) that reached the worker, the window's length and the CPU time it used."""
    write, close = _writer(backend, target, schema, worker)
    try:
        return _window(write, seconds, start, done)
    finally:
        close()


def _window(write: Write, seconds: float, start: Any, done: Any) -> dict[str, Any]:
    """One writer's window (see :func:`throughput_worker`); ``cpu`` is the CPU time of
    the whole process, which is the writer's own only when it runs in a process alone."""
    write(-1)
    start.wait(timeout=300)
    began = time.perf_counter()
    cpu_began = time.process_time()
    deadline = began + seconds
    calls = busy = conflicts = 0
    while time.perf_counter() < deadline:
        try:
            write(calls)
        except RepositoryConflict:
            conflicts += 1  # the service's own retries were not enough
            continue
        except RepositoryBusy:
            busy += 1
            continue
        calls += 1
    elapsed = time.perf_counter() - began
    cpu = time.process_time() - cpu_began
    # the server's sessions live on until the CPU time of the server has been read
    done.wait(timeout=300)
    done.wait(timeout=300)
    return {"calls": calls, "busy": busy, "conflicts": conflicts, "seconds": elapsed, "cpu": cpu}


@dataclass(frozen=True)
class Throughput:
    """One run: the calls that returned in the window, the ``RepositoryBusy`` errors
    that reached the writers (``conflicts``: those that were ``RepositoryConflict``,
    after the service's own retries), and (PostgreSQL) the transactions the server
    rolled back meanwhile: mostly the conflicts the service ran again on its own.
    ``client_waits`` (on the server): the share of the server's sessions that were
    waiting for their client, the mean over samples taken through the window.
    ``mode``: the writers ran as processes or as threads (see :data:`MODES`); as threads,
    ``client_cpu`` is the CPU time of the benchmark's process, whose thread that samples
    the server's sessions adds a few small queries a second to the writers'."""

    backend: str
    writers: int
    round: int
    calls: int
    busy: int
    conflicts: int
    seconds: float
    rollbacks: int | None
    client_cpu: float
    server_cpu: float | None
    machine_cpu: float | None
    client_waits: float | None = None
    mode: str = "processes"

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds

    @property
    def others_share(self) -> float | None:
        """The share of the machine's CPUs that other processes (neither the writers nor
        the server) used during the window: another workload on a shared machine."""
        if self.machine_cpu is None:
            return None
        others = self.machine_cpu - self.client_cpu - (self.server_cpu or 0.0)
        return max(others, 0.0) / (self.seconds * (os.cpu_count() or 1))

    @property
    def cpu_per_call(self) -> tuple[float, float | None]:
        """CPU seconds per returned call: the writers', and the local server's."""
        server = None if self.server_cpu is None else self.server_cpu / self.calls
        return self.client_cpu / self.calls, server


def postmaster(url: str) -> int | None:
    """The process ID of the server's postmaster, when the server runs on this machine
    (the parent of a backend of ours that ``/proc`` shows), else None."""
    import psycopg  # only the PostgreSQL benchmarks need it

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        if row is None:
            return None
        try:
            text = Path(f"/proc/{int(row[0])}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            return None  # a server on another machine, or a system without /proc
    if not text[text.find("(") + 1 : text.rfind(")")].startswith("postgres"):
        return None
    return int(text[text.rfind(")") + 2 :].split()[1])


def machine_cpu() -> float | None:
    """CPU seconds the whole machine has been busy so far (every CPU, from
    ``/proc/stat``), or None without ``/proc``."""
    try:
        fields = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[1:9])
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return (user + nice + system + irq + softirq + steal) / tick


def server_cpu(server: int) -> float:
    """CPU seconds used so far by the server whose postmaster is ``server``: its own
    and its child processes' (user and system time, from ``/proc``), so that another
    server on the machine does not count."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # the process ended meanwhile
        fields = text[text.rfind(")") + 2 :].split()
        if int(stat.parent.name) == server or int(fields[1]) == server:
            total += int(fields[11]) + int(fields[12])
    return total / tick


class ClientWaits:
    """Samples, on a thread of its own and a connection of its own, how many of the
    server's other sessions on the database are waiting for their client (the wait event
    ``ClientRead``: the server has answered and nothing new has arrived), every
    ``every`` seconds while the block runs. ``share`` is then the mean of the sampled
    shares; a share near 1 says the writers, not the server, set the rate. Nothing is
    sampled without a URL (SQLite). The samples are a few small queries a second."""

    def __init__(self, url: str | None, every: float = 0.05) -> None:
        self._url = url
        self._every = every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shares: list[float] = []

    @property
    def share(self) -> float | None:
        return statistics.mean(self._shares) if self._shares else None

    def __enter__(self) -> ClientWaits:
        if self._url is not None:
            self._thread = threading.Thread(target=self._sample, args=(self._url,))
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _sample(self, url: str) -> None:
        import psycopg  # only the PostgreSQL benchmarks need it

        with psycopg.connect(url, autocommit=True) as conn:
            while not self._stop.wait(self._every):
                row = conn.execute(
                    "SELECT count(*) FILTER (WHERE wait_event = 'ClientRead'), count(*) "
                    "FROM pg_stat_activity WHERE datname = current_database() "
                    "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).fetchone()
                if row is not None and row[1]:
                    self._shares.append(row[0] / row[1])


def measure_throughput(
    backend: str,
    target: str,
    schema: str,
    writers: int,
    seconds: float,
    server: int | None,
    round_: int = 0,
    mode: str = "processes",
) -> Throughput:
    """One window of ``writers`` writers of ``backend``, run as ``mode`` says."""
    before = rolled_back(target) if backend != "sqlite" else None
    local = server if backend != "sqlite" else None
    spans: dict[str, float | None] = {}

    def window(start: Any, done: Any) -> None:
        # this thread waits at both barriers too, to read the CPU times around the window
        start.wait(timeout=300)
        server_before = None if local is None else server_cpu(local)
        machine_before, process_before = machine_cpu(), time.process_time()
        with ClientWaits(target if backend != "sqlite" else None) as waits:
            done.wait(timeout=600)
        server_after = None if local is None else server_cpu(local)
        machine_after, process_after = machine_cpu(), time.process_time()
        done.wait(timeout=300)
        spans["server"] = (
            None if server_before is None or server_after is None else server_after - server_before
        )
        spans["machine"] = (
            None
            if machine_before is None or machine_after is None
            else machine_after - machine_before
        )
        spans["process"] = process_after - process_before
        spans["waits"] = waits.share

    if mode == "threads":
        reports = _thread_window(backend, target, schema, writers, seconds, window)
        client_cpu = spans["process"] or 0.0
    else:
        reports = _process_window(backend, target, schema, writers, seconds, window)
        client_cpu = sum(float(r["cpu"]) for r in reports)
    if before is not None:
        time.sleep(0.5)  # the writers' sessions report their counts as they end
    return Throughput(
        backend,
        writers,
        round_,
        sum(int(r["calls"]) for r in reports),
        sum(int(r["busy"]) for r in reports),
        sum(int(r["conflicts"]) for r in reports),
        max(float(r["seconds"]) for r in reports),
        None if before is None else rolled_back(target) - before,
        client_cpu,
        spans["server"],
        spans["machine"],
        spans["waits"],
        mode,
    )


def _process_window(
    backend: str,
    target: str,
    schema: str,
    writers: int,
    seconds: float,
    window: Callable[[Any, Any], None],
) -> list[dict[str, Any]]:
    """The reports of ``writers`` writer processes, each in :func:`throughput_worker`."""
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start, done = manager.Barrier(writers + 1), manager.Barrier(writers + 1)
        with context.Pool(writers) as pool:
            pending = [
                pool.apply_async(
                    throughput_worker, (backend, target, schema, w, seconds, start, done)
                )
                for w in range(writers)
            ]
            window(start, done)
            return [p.get(timeout=600) for p in pending]


def _thread_window(
    backend: str,
    target: str,
    schema: str,
    writers: int,
    seconds: float,
    window: Callable[[Any, Any], None],
) -> list[dict[str, Any]]:
    """The reports of ``writers`` writer threads of this process (see
    :func:`_shared_writers`)."""
    writes, close = _shared_writers(backend, target, schema, writers)
    start, done = threading.Barrier(writers + 1), threading.Barrier(writers + 1)
    reports: list[dict[str, Any]] = [{} for _ in range(writers)]
    failures: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            reports[worker] = _window(writes[worker], seconds, start, done)
        except BaseException as error:  # the window cannot go on: release the others
            failures.append(error)
            start.abort()
            done.abort()

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    try:
        for thread in threads:
            thread.start()
        try:
            window(start, done)
        finally:
            for thread in threads:
                thread.join()
    finally:
        close()
    if failures:
        raise failures[0]
    return reports


def _micros(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1e6:.0f}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def print_throughput(rows: Sequence[Throughput], mode: str = "processes") -> None:
    """The medians over the rounds of each backend and number of writers, with the
    ratio PostgreSQL / SQLite of every round (its two windows, run next to each other),
    for the windows whose writers ran as ``mode`` says."""
    rows = [r for r in rows if r.mode == mode]
    if not rows:
        return
    writers_are = (
        "N writer processes, each with its own repository"
        if mode == "processes"
        else "N writer threads of one process sharing one repository"
    )

    def runs(backend: str, writers: int) -> list[Throughput]:
        found = [r for r in rows if r.writers == writers and r.backend == backend]
        return sorted(found, key=lambda r: r.round)

    def rate(backend: str, writers: int) -> float:
        return statistics.median([r.per_second for r in runs(backend, writers)])

    rounds = max(r.round for r in rows) + 1
    print(
        f"\nwrite throughput: calls/s, summed over {writers_are}, own scopes; "
        f"the median of {rounds} round(s)"
    )
    header = (
        f"{'writers':>7} {'floor/s':>8} {'PostgreSQL/s':>13} {'SQLite/s':>9} {'PG/floor':>9} "
        f"{'PG/SQLite':>10}  {'PG/SQLite by round':<22} PG rollbacks  "
        "conflict / busy errors: PG, SQLite"
    )
    print(header)
    print("-" * len(header))
    for writers in sorted({r.writers for r in rows}):
        floor, pg, lite = (rate(b, writers) for b in ("floor", "postgres", "sqlite"))
        pgs, lites = runs("postgres", writers), runs("sqlite", writers)
        by_round = " ".join(
            f"{p.per_second / q.per_second:.2f}" for p, q in zip(pgs, lites, strict=True)
        )
        rollbacks = sum(r.rollbacks or 0 for r in pgs)
        print(
            f"{writers:>7} {floor:>8.0f} {pg:>13.0f} {lite:>9.0f} {pg / floor:>8.2f}x "
            f"{pg / lite:>9.2f}x  {by_round:<22} {rollbacks:>12}  "
            f"{sum(r.conflicts for r in pgs)} / {sum(r.busy for r in pgs)}, "
            f"{sum(r.conflicts for r in lites)} / {sum(r.busy for r in lites)}"
        )
    print(
        f"\nCPU per returned call, µs: the writer {mode}', and the local PostgreSQL "
        "server's (median of the rounds)"
    )
    header = (
        f"{'writers':>7} {'floor writers':>14} {'floor server':>13} {'PG writers':>11} "
        f"{'PG server':>10} {'SQLite':>7}"
    )
    print(header)
    print("-" * len(header))

    def cpu(backend: str, writers: int, which: int) -> float | None:
        values = [r.cpu_per_call[which] for r in runs(backend, writers)]
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    for writers in sorted({r.writers for r in rows}):
        print(
            f"{writers:>7} {_micros(cpu('floor', writers, 0)):>14} "
            f"{_micros(cpu('floor', writers, 1)):>13} {_micros(cpu('postgres', writers, 0)):>11} "
            f"{_micros(cpu('postgres', writers, 1)):>10} {_micros(cpu('sqlite', writers, 0)):>7}"
        )
    print(
        "\nthe share of the server's sessions waiting for their client (mean over the "
        "window; median of the rounds)"
    )
    header = f"{'writers':>7} {'floor':>6} {'PG':>6}"
    print(header)
    print("-" * len(header))
    for writers in sorted({r.writers for r in rows}):
        shares = []
        for backend in ("floor", "postgres"):
            known = [s for r in runs(backend, writers) if (s := r.client_waits) is not None]
            shares.append(_percent(statistics.median(known) if known else None))
        print(f"{writers:>7} " + " ".join(f"{share:>6}" for share in shares))
    print("\nthe largest share of the machine's CPUs that other processes used in a window")
    header = f"{'writers':>7} {'floor':>6} {'PG':>6} {'SQLite':>6}"
    print(header)
    print("-" * len(header))
    for writers in sorted({r.writers for r in rows}):
        shares = []
        for backend in ("floor", "postgres", "sqlite"):
            known = [s for r in runs(backend, writers) if (s := r.others_share) is not None]
            shares.append(_percent(max(known) if known else None))
        print(f"{writers:>7} " + " ".join(f"{share:>6}" for share in shares))


def throughput(
    url: str,
    work: Path,
    seconds: float,
    run: str,
    rounds: int = 1,
    modes: Sequence[str] = MODES,
) -> list[Throughput]:
    """Every window (each of ``WRITERS``, on the floor and on each backend, ``rounds``
    times, with the writers run as each of ``modes``), printed as tables. The windows of
    one number of writers run in rotation: round after round, each backend once,
    starting one backend later each round, so a slow spell of the machine falls on every
    backend in turn."""
    store, floor = f"trueheart_tp_{run}", f"trueheart_tpfloor_{run}"
    postgres(url, store).close()  # the schemas exist before the writers start
    create_floor_table(url, floor)
    lite = str(work / "throughput.db")
    TrueHeart(SQLiteRepository(lite)).close()
    runs = (("floor", url, floor), ("postgres", url, store), ("sqlite", lite, ""))
    server = postmaster(url)
    rows = []
    try:
        for mode in modes:
            for writers in WRITERS:
                for round_ in range(rounds):
                    shift = round_ % len(runs)
                    for backend, target, schema in runs[shift:] + runs[:shift]:
                        rows.append(
                            measure_throughput(
                                backend, target, schema, writers, seconds, server, round_, mode
                            )
                        )
    finally:
        drop_schemas(url, [store, floor])
    for mode in modes:
        print_throughput(rows, mode)
    return rows
