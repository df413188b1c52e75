"""Latency of every operation of ``bench.py``, and search, on PostgreSQL against plain
psycopg floors; then write throughput with 1, 4 and 16 writers on PostgreSQL and on SQLite,
run as processes and as threads of one process.

Run from the project root::

    .venv/bin/python benchmarks/postgres_bench.py --url postgresql://user@host/db
    .venv/bin/python benchmarks/postgres_bench.py --quick         # under a minute
    .venv/bin/python benchmarks/postgres_bench.py --json results.json

The server is ``--url``, else ``TRUEHEART_TEST_POSTGRES_URL``, else a throwaway cluster
started for the run (``tests/postgres_cluster.py``) with the server's durable defaults:
every commit is flushed (``fsync`` and ``synchronous_commit`` on), unlike the test
cluster. On a named server everything goes into schemas made for the run
(``trueheart_bench_*`` for the store, ``trueheart_floor_*`` for the floors), dropped at
the end; nothing else is touched.

Latency. The fixtures are built through the public API, and the store's tables are
analyzed then (as autovacuum does on its own schedule), so the plans of the reads do not
depend on whether autovacuum has run yet. Each figure is the median and the 90th
percentile of the wall time of single calls after warm-up calls, with the garbage
collector paused, exactly as in ``bench.py``, whose operations and fixtures this
reuses. The floors do the least comparable work on one plain psycopg connection in
autocommit mode: one committed one-row ``INSERT`` (for every write), one indexed
``SELECT`` of one row, of 20 and of 100 rows (for the reads), a connection that reads
the schema's catalog (for the open). They
are sampled in rotation with the operations measured against them
(``harness.run_interleaved``). The WAL-frame counts of ``bench.py`` are SQLite's and
have no counterpart here. ``--quick`` is a smoke run: fewer samples, smaller scopes
(100 and 500 rows) and 10 memories with each deleted event instead of 100.

Throughput (``postgres_throughput.py``). N processes (``multiprocessing`` with
``spawn``), each with its own repository and scope, start together and call
``ingest_event`` with new events for a fixed window (6 s; 1.5 s with ``--quick``); the
figure is the calls that returned, per second of that window, summed over the
processes. Each backend's window runs ``--rounds`` times (3; 1 with ``--quick``) for
each number of writers, in rotation (the floor, PostgreSQL, SQLite; then starting one
later each round), because this machine's speed drifts within a run: the tables give
the median of the rounds, and the ratio PostgreSQL / SQLite of each round, whose two
windows ran next to each other. The same runs on one
SQLite file (WAL, the library's settings) on the same machine, in the run's temporary
directory, and as the floor with plain psycopg connections in autocommit mode, each
making the floor's committed one-row ``INSERT`` into a table of a schema made for the
run: the most single-row writes per second this server and machine take. A call that
fails with ``RepositoryBusy`` (or ``RepositoryConflict``, once the service's own
retries of a conflict are spent) is counted and made again; the server's count of
rolled-back transactions during the run shows the conflicts the service retried (plus
one per writer, counted as its repository closes). Each writer also reports the CPU
time it used in the window, and where the server runs on this machine the run reads
the CPU time of the server's processes (its postmaster and the postmaster's children,
not another server's) before and after the window (``/proc``): CPU per returned call
shows what bounds the throughput when writers and server share the machine's cores. The
machine's busy time in the window, less the writers' and the server's, is the share of
the CPUs that other processes took meanwhile (another workload on a shared machine).

Then the same windows again with the writers as N threads of the benchmark's own process
(``--writers-as``): the threads share one repository (on PostgreSQL with a pool of N
connections; on SQLite one file) and each writes into a scope of its own, as the request
threads of one host service would; the floor's threads each have a connection of their
own. Their CPU time is the process's over the window.

The figures are information: the exit status is 0 whatever they are.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import (
    BATCH,
    DEPENDENTS,
    EVENT_BODY,
    EXPIRE_SET,
    FADING_AS_OF,
    FLOOR_ROW_TEXT,
    FULL,
    MEMORY_BODY,
    READ_SLICE,
    RECALL_AS_OF,
    SHORT_RAW,
    Case,
    Fixture,
    Plan,
    Result,
    anything,
    command,
    erase_cases,
    event,
    ingest_many,
    is_tuple_of,
    memory,
    repeated,
    scope,
    summarise,
    write_cases,
)
from harness import machine, run_interleaved
from postgres_server import analyze_schema, drop_schemas, postgres, server, server_settings
from postgres_throughput import MODES, throughput

from trueheart_core import (
    EntityType,
    GovernanceAction,
    MemoryDraft,
    RecallQuery,
    Scope,
    SearchQuery,
    TrueHeart,
)

try:
    import psycopg
except ImportError:  # pragma: no cover - reported at start
    psycopg = None  # type: ignore[assignment]

FULL_SIZES = (100, 1_000, 10_000)
QUICK_SIZES = (100, 500)
QUICK_PLAN = Plan(
    commit_repeat=40,
    batch_repeat=8,
    govern_repeat=30,
    erase_repeat=5,
    read_repeat=40,
    fading_repeat=5,
    open_repeat=15,
    warmup=2,
    frames_repeat=0,
)
"""``--quick``: a smoke run (every PostgreSQL write is a few milliseconds, so the
samples of ``bench.QUICK`` would take minutes)."""
FULL_SEARCH = 1_000  # memories in the search scope
QUICK_SEARCH = 200
QUICK_DEPENDENTS = 10  # memories of each raw event deleted (bench.py: DEPENDENTS)
TOPICS = 50  # distinct topic words in the search scope: a topic query matches 1 in 50
FULL_SECONDS = 6.0  # the throughput window of each run
QUICK_SECONDS = 1.5
FULL_ROUNDS = 3  # the windows of each backend and number of writers, in rotation
QUICK_ROUNDS = 1

FLOOR_NAMES = {
    "insert": "committed insert",
    "row": "one-row select",
    "top20": "top-20 select",
    "top100": "top-100 select",
    "open": "connect, read catalog",
}


# --- fixtures -------------------------------------------------------------------------------

TOPIC_WORDS = tuple(
    a + b + c
    for a in ("ka", "lo", "mi", "nu", "pe")
    for b in ("ri", "so", "ta", "ve", "zo")
    for c in ("dan", "mex")
)[:TOPICS]


def search_memory(memory_id: str, source_id: str, k: int) -> MemoryDraft:
    base = memory(scope("search"), memory_id, source_id, k)
    return MemoryDraft(
        base.memory_id,
        base.scope,
        f"{MEMORY_BODY} Topic {TOPIC_WORDS[k % TOPICS]}.",
        base.source_event_ids,
        base.kind,
        base.trust,
        base.created_at,
    )


@dataclass(frozen=True)
class Shape:
    """The sizes of the fixtures: the scopes read at each size, the memories of the
    search scope, and the memories of each raw event that is deleted."""

    sizes: tuple[int, ...]
    searched: int
    dependents: int


def build_store(th: TrueHeart, plan: Plan, shape: Shape) -> Fixture:
    """The scopes of ``bench.build_store`` (for ``shape.sizes``, with
    ``shape.dependents`` memories of each event to delete), and ``search``: memories
    that share the body of every other memory and differ in one topic word."""
    sizes = shape.sizes
    n = 0
    for size in sizes:
        s = scope(f"recall-{size}")
        sources = [f"e{k}" for k in range(max(1, size // DEPENDENTS))]
        ingest_many(th, [event(s, eid, k) for k, eid in enumerate(sources)])
        for k in range(size):
            n += 1
            th.materialize_once(memory(s, f"m{k}", sources[k // DEPENDENTS], n))
        s = scope(f"audit-{size}")
        ingest_many(th, [event(s, f"e{k}", k) for k in range(size)])

    s = scope("search")
    th.ingest_event(event(s, "src", 0))
    for k in range(shape.searched):
        th.materialize_once(search_memory(f"s{k}", "src", k))

    s = scope("govern")
    th.ingest_event(event(s, "src", 0))
    targets = plan.warmup + plan.govern_repeat
    seal_ids = [f"seal{k}" for k in range(targets)]
    restore_ids = [f"restore{k}" for k in range(targets)]
    for memory_id in seal_ids + restore_ids:
        n += 1
        th.materialize_once(memory(s, memory_id, "src", n))
    for memory_id in restore_ids:
        th.govern(command(s, GovernanceAction.SEAL, EntityType.MEMORY, memory_id))

    s = scope("delete")
    targets = plan.warmup + plan.erase_repeat
    delete_ids = [f"d{k}" for k in range(targets)]
    ingest_many(th, [event(s, eid, k) for k, eid in enumerate(delete_ids)])
    for eid in delete_ids:
        for j in range(shape.dependents):
            n += 1
            th.materialize_once(memory(s, f"{eid}-m{j}", eid, n))

    s = scope("expire")
    batches = plan.warmup + plan.erase_repeat
    ingest_many(
        th,
        [
            event(s, f"x{b}-{j}", b * 3600, SHORT_RAW)
            for b in range(batches)
            for j in range(EXPIRE_SET)
        ],
    )

    th.ingest_event(event(scope("ingest"), "replayed", 0))
    th.ingest_events([event(scope("batch"), "first", 0)])
    s = scope("materialize")
    th.ingest_event(event(s, "src", 0))
    th.materialize_once(memory(s, "replayed", "src", 0))
    return Fixture(seal_ids, restore_ids, delete_ids, batches)


def count_rows(url: str, schema: str) -> dict[str, int]:
    assert psycopg is not None
    tables = ("raw_events", "raw_bodies", "memories", "lineage", "tombstones", "audit")
    with psycopg.connect(url, autocommit=True) as conn:
        counted = {}
        for t in tables:
            row = conn.execute(f'SELECT count(*) FROM "{schema}".{t}').fetchone()
            counted[t] = int(row[0]) if row else 0
    return counted


# --- floors -------------------------------------------------------------------------------


def floor_cases(conn: Any, schema: str, plan: Plan) -> tuple[Case, list[Case]]:
    """The committed one-row insert, and the indexed selects of 1, 20 and 100 rows from a
    table of 10,000 (the shape of ``bench.py``'s floors)."""
    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(
        f'CREATE TABLE "{schema}".items (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, '
        "scope TEXT NOT NULL, created_at BIGINT NOT NULL, body TEXT NOT NULL)"
    )
    conn.execute(
        f'CREATE TABLE "{schema}".rows (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, '
        "scope TEXT NOT NULL, created_at BIGINT NOT NULL, body TEXT NOT NULL)"
    )
    conn.execute(f'CREATE INDEX rows_recent ON "{schema}".rows (scope, created_at DESC, id)')
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(
            f'INSERT INTO "{schema}".rows (scope, created_at, body) VALUES (%s, %s, %s)',
            [("floor-scope", n, FLOOR_ROW_TEXT) for n in range(10_000)],
        )
    conn.execute(f'ANALYZE "{schema}".rows')
    insert_sql = f'INSERT INTO "{schema}".items (scope, created_at, body) VALUES (%s, %s, %s)'

    def insert(i: int) -> Callable[[], object]:
        params = ("floor-scope", i, EVENT_BODY)
        return lambda: conn.execute(insert_sql, params)

    inserted = Case(
        "floor: committed insert", "1 row", None, insert, anything, plan.commit_repeat, plan.warmup
    )
    selects = []
    for label, limit in (("one-row", 1), ("top-20", 20), ("top-100", 100)):
        sql = (
            f'SELECT id, scope, created_at, body FROM "{schema}".rows WHERE scope = %s '
            f"ORDER BY created_at DESC, id LIMIT {limit}"
        )
        if limit == 1:
            sql = f'SELECT id, scope, created_at, body FROM "{schema}".rows WHERE id = %s'

        def select(sql: str = sql, limit: int = limit) -> object:
            key: object = 5_000 if limit == 1 else "floor-scope"
            return tuple(conn.execute(sql, (key,)).fetchall())

        selects.append(
            Case(
                f"floor: indexed {label} select",
                "10,000",
                None,
                repeated(select),
                is_tuple_of(limit),
                plan.read_repeat,
                plan.warmup * 10,
            )
        )
    return inserted, selects


def list_page(th: TrueHeart, s: Scope, limit: int) -> object:
    return th.list_memories(s, limit=limit).items


def search_items(th: TrueHeart, query: SearchQuery) -> object:
    return th.search(query).items


def cascaded(count: int, result: object) -> bool:
    return len(getattr(result, "affected_ids", ())) == count


def nonempty(result: object) -> bool:
    return isinstance(result, tuple) and len(result) > 0


# --- reads ------------------------------------------------------------------------------


def read_cases(th: TrueHeart, plan: Plan, sizes: Sequence[int], searched: int) -> list[Case]:
    """Recall, list and audit at each size, with limits 20 and 100, and search."""
    cases = []

    def add(name: str, size: str, floor: str, call: Callable[[], object], n: int) -> None:
        expect = is_tuple_of(n) if n else nonempty
        warm = plan.warmup * 10
        cases.append(Case(name, size, floor, repeated(call), expect, plan.read_repeat, warm))

    for size in sizes:
        for limit in (20, 100):
            s = scope(f"recall-{size}")
            query = RecallQuery(s, RECALL_AS_OF, limit)
            add(
                f"recall limit {limit}",
                f"{size:,}",
                f"top{limit}",
                functools.partial(th.recall, query),
                limit,
            )
    for size in sizes:
        for limit in (20, 100):
            page = functools.partial(list_page, th, scope(f"recall-{size}"), limit)
            add(f"list_memories limit {limit}", f"{size:,}", f"top{limit}", page, limit)
    for size in sizes:
        for limit in (20, 100):
            audit = functools.partial(th.audit, scope(f"audit-{size}"), limit=limit)
            add(f"audit limit {limit}", f"{size:,}", f"top{limit}", audit, min(limit, size))
    s = scope("search")
    for label, text, n in (
        (f"1 in {TOPICS} match", f"{TOPIC_WORDS[7]}", 0),
        ("all match", "weekly summary", 0),
    ):
        found = SearchQuery(s, text, RECALL_AS_OF, budget_tokens=4096, limit=20, semantic=False)
        search = functools.partial(search_items, th, found)
        add(f"search, {label}", f"{searched:,}", "top20", search, n)
    return cases


def fading_cases(th: TrueHeart, plan: Plan, sizes: Sequence[int]) -> list[Case]:
    cases = []
    for size in (sizes[0], sizes[-1]):
        query = RecallQuery(scope(f"recall-{size}"), FADING_AS_OF, 20)
        cases.append(
            Case(
                "recall limit 20, all fading",
                f"{size:,}",
                "top20",
                repeated(functools.partial(th.recall, query)),
                is_tuple_of(20),
                plan.fading_repeat,
                plan.warmup,
            )
        )
    return cases


def open_cases(url: str, schema: str, plan: Plan) -> tuple[list[Case], Callable[[], None]]:
    """Opening a repository (and its first read), against a plain connection that reads
    the catalog of the schema's tables."""
    from trueheart_core import PostgresRepository

    assert psycopg is not None
    opened: list[Any] = []

    def closing() -> None:
        while opened:
            opened.pop().close()

    def floor(i: int) -> Callable[[], object]:
        closing()

        def call() -> object:
            assert psycopg is not None
            conn = psycopg.connect(url, autocommit=True)
            opened.append(conn)
            return conn.execute(
                "SELECT c.relname, a.attname, a.atttypid FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "JOIN pg_attribute a ON a.attrelid = c.oid "
                "WHERE n.nspname = %s AND a.attnum > 0",
                (schema,),
            ).fetchall()

        return call

    def repository(i: int) -> Callable[[], object]:
        closing()

        def call() -> object:
            repo = PostgresRepository(url, schema=schema, max_connections=1)
            opened.append(repo)
            return TrueHeart(repo).audit(scope("audit-100"), limit=1)

        return call

    cases = [
        Case("floor: connect, read catalog", "schema", None, floor, anything, plan.open_repeat, 3),
        Case(
            "PostgresRepository open, audit",
            "schema",
            "open",
            repository,
            is_tuple_of(1),
            plan.open_repeat,
            3,
        ),
    ]
    return cases, closing


# --- report -----------------------------------------------------------------------------


def with_ratio(result: Result, floors: dict[str, float]) -> Result:
    if result.floor is None:
        return result
    return Result(
        result.operation,
        result.size,
        result.median_us,
        result.p90_us,
        result.samples,
        result.floor,
        result.median_us / floors[result.floor],
    )


def print_table(results: Sequence[Result]) -> None:
    header = (
        f"{'operation':<33} {'size':<15} {'median µs':>10} {'p90 µs':>10} "
        f"{'n':>5} {'ratio':>7}  floor"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}x"
        floor = "" if r.floor is None else FLOOR_NAMES[r.floor]
        print(
            f"{r.operation:<33} {r.size:<15} {r.median_us:>10.1f} {r.p90_us:>10.1f} "
            f"{r.samples:>5} {ratio:>7}  {floor}"
        )


def latency(url: str, plan: Plan, shape: Shape, run: str) -> dict[str, Any]:
    """Build the fixtures, measure every operation against its floor, print the table."""
    sizes = shape.sizes
    assert psycopg is not None
    store, floor_schema = f"trueheart_bench_{run}", f"trueheart_floor_{run}"
    try:
        t0 = time.perf_counter()
        builder = postgres(url, store)
        try:
            fixture = build_store(builder, plan, shape)
        finally:
            builder.close()
        rows = count_rows(url, store)
        analyze_schema(url, store)
        print(
            f"fixtures built in {time.perf_counter() - t0:.1f} s; store rows: "
            + ", ".join(f"{k} {v:,}" for k, v in rows.items())
        )
        conn = psycopg.connect(url, autocommit=True)
        th = postgres(url, store)
        try:
            inserted, selects = floor_cases(conn, floor_schema, plan)
            reads = [*selects, *read_cases(th, plan, shape.sizes, shape.searched)]
            run_interleaved(reads, READ_SLICE)
            fading = fading_cases(th, plan, shape.sizes)
            run_interleaved(fading, 1)
            writes = [inserted, *write_cases(th, fixture, plan)]
            run_interleaved(writes, 1)
            erases = erase_cases(th, fixture, plan)
            # bench.py's delete case expects DEPENDENTS memories with each event.
            erases[0].size = f"{shape.dependents} dependents"
            erases[0].expect = functools.partial(cascaded, shape.dependents + 1)
            run_interleaved(erases, 1)
        finally:
            th.close()
            conn.close()
        opening, close_opened = open_cases(url, store, plan)
        try:
            run_interleaved(opening, 1)
        finally:
            close_opened()
    finally:
        drop_schemas(url, [store, floor_schema])

    floors = {
        "insert": summarise(inserted).median_us,
        "row": summarise(selects[0]).median_us,
        "top20": summarise(selects[1]).median_us,
        "top100": summarise(selects[2]).median_us,
        "open": summarise(opening[0]).median_us,
    }
    ordered: list[Result] = [summarise(inserted), *(summarise(c) for c in selects)]
    for case in writes[1:]:
        ordered.append(summarise(case))
        if case.operation == "ingest_events":
            ordered.append(summarise(case, BATCH, "ingest_events, per event"))
    for case in erases:
        ordered.append(summarise(case))
        if case.size == f"{EXPIRE_SET} eligible":
            ordered.append(summarise(case, EXPIRE_SET, "expire_raw_content, per body"))
    ordered.extend(summarise(case) for case in reads[len(selects) :])
    ordered.extend(summarise(case) for case in fading)
    ordered.extend(summarise(case) for case in opening)
    results = [with_ratio(r, floors) for r in ordered]
    print()
    print_table(results)
    if len(sizes) > 1:
        print(f"\nscaling (median at {sizes[-1]:,} rows / median at {sizes[0]:,} rows)")
        for r in results:
            if r.size == f"{sizes[-1]:,}" and r.operation[:6] in {"recall", "list_m", "audit "}:
                small = next(
                    x for x in results if x.operation == r.operation and x.size == f"{sizes[0]:,}"
                )
                print(f"  {r.operation:<33} {r.median_us / small.median_us:.2f}x")
    return {"store_rows": rows, "floors_us": floors, "results": [asdict(r) for r in results]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--url", help="the PostgreSQL server (default: a throwaway cluster)")
    parser.add_argument("--quick", action="store_true", help="fewer samples (under a minute)")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    parser.add_argument("--skip-latency", action="store_true", help="throughput only")
    parser.add_argument("--skip-throughput", action="store_true", help="latency only")
    parser.add_argument(
        "--rounds",
        type=int,
        metavar="N",
        help=f"throughput windows of each backend, in rotation (default {FULL_ROUNDS}, "
        f"--quick {QUICK_ROUNDS})",
    )
    parser.add_argument(
        "--writers-as",
        choices=("processes", "threads", "both"),
        default="both",
        help="run the throughput's writers as processes, as threads of one process, or "
        "both, one after the other (default both)",
    )
    args = parser.parse_args(argv)
    if psycopg is None:
        raise SystemExit("psycopg is not installed (pip install 'trueheart-core[postgres]')")
    plan = QUICK_PLAN if args.quick else FULL
    shape = (
        Shape(QUICK_SIZES, QUICK_SEARCH, QUICK_DEPENDENTS)
        if args.quick
        else Shape(FULL_SIZES, FULL_SEARCH, DEPENDENTS)
    )
    seconds = QUICK_SECONDS if args.quick else FULL_SECONDS
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else FULL_ROUNDS)
    started = time.perf_counter()
    info = machine()
    run = uuid.uuid4().hex[:10]
    named = args.url or os.environ.get("TRUEHEART_TEST_POSTGRES_URL")
    payload: dict[str, Any] = {"machine": info, "mode": "quick" if args.quick else "full"}
    with server(named) as url, tempfile.TemporaryDirectory(prefix="trueheart-pgbench-") as tmp:
        settings = server_settings(url)
        payload["server"] = settings
        print(
            f"TrueHeart Core {info['trueheart_core']} (source {info['source_digest']}) | "
            f"Python {info['python']} | PostgreSQL {settings.get('server_version')} "
            f"(fsync {settings.get('fsync')}, synchronous_commit "
            f"{settings.get('synchronous_commit')}) | SQLite {info['sqlite']} | "
            f"{info['nproc']} CPUs | load {info['load_average_at_start']:.2f} | "
            f"{'quick' if args.quick else 'full'} | "
            f"{'named server' if named else 'throwaway durable cluster'}"
        )
        if not args.skip_latency:
            payload["latency"] = latency(url, plan, shape, run)
        if not args.skip_throughput:
            modes = MODES if args.writers_as == "both" else (args.writers_as,)
            rows = throughput(url, Path(tmp), seconds, run, rounds, modes)
            payload["throughput"] = [
                {
                    **asdict(r),
                    "per_second": r.per_second,
                    "cpu_per_call": r.cpu_per_call,
                    "others_share": r.others_share,
                }
                for r in rows
            ]
    elapsed = time.perf_counter() - started
    load = os.getloadavg()[0]
    print(f"\ntotal run time {elapsed:.0f} s; 1-minute load average at the end {load:.2f}")
    payload["run_seconds"] = elapsed
    if args.json is not None:
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
