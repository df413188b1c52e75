"""Latency benchmark of every public operation of TrueHeart Core, against plain SQLite floors.

Run from the project root::

    .venv/bin/python benchmarks/bench.py            # full run (a few minutes)
    .venv/bin/python benchmarks/bench.py --quick    # fewer samples (well under a minute)
    .venv/bin/python benchmarks/bench.py --json results.json

Everything runs on file databases in a temporary directory, with the durability settings
of the library (``journal_mode=WAL``, ``synchronous=FULL``), and is deleted afterwards.
Each figure is the median and the 90th percentile of the wall time of single calls
(``time.perf_counter_ns``), after warm-up calls, with the garbage collector paused.
Mutating operations are measured on fresh targets: every timed call ingests a new event,
materializes a new memory, seals another memory, deletes another event, expires another
set of bodies. Operations that are compared with each other (each floor and the operations
measured against it) are sampled in rotation (reads in slices of 20 consecutive calls,
writes call by call), so that a drift of the machine (disk flush latency, other
processes) affects them alike.

The fixtures are built through the public API. When ``/dev/shm`` exists they are built
there (fast flushes) and the finished database file is then copied into the temporary
directory, where every measurement runs.

The targets printed at the end are information, not assertions: the exit status is 0
whether they are met or not.

Relevance search (``TrueHeart.search``) is measured by ``benchmarks/search_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from frames import CPU_TARGET_US, FRAME_TARGET, WriteCost, measure_writes, pages_floor
from harness import (
    BASE,
    LONG,
    Clock,
    floor_connection,
    machine,
    percentile,
    report_targets,
    run_interleaved,
)

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SIZES = (100, 1_000, 10_000)
BATCH = 100  # events per ingest_events call
DEPENDENTS = 100  # memories derived from each raw event deleted by govern
EXPIRE_SET = 100  # bodies made eligible for each expire_raw_content call
OPEN_ROWS = 10_000  # raw events in the store that SQLiteRepository opens

EVENT_BODY = (
    "Synthetic chat turn: the subject asked for a short weekly summary of open tasks, "
    "preferably as a bulleted list, delivered on Monday mornings before nine o'clock."
)  # 161 characters: a typical short raw body
MEMORY_BODY = "Prefers a short bulleted weekly summary of open tasks on Monday mornings at 9."
FLOOR_ROW_TEXT = "x" * 100

SHORT_RAW = RetentionPolicy(
    raw_ttl=timedelta(days=1), clear_for=timedelta(days=3650), recall_for=timedelta(days=7300)
)
RECALL_AS_OF = BASE + timedelta(days=2)  # every fixture memory is created and fully clear
FADING_AS_OF = BASE + timedelta(days=3660)  # every fixture memory is inside its fade window

# Reads are sampled in slices of this many consecutive calls, so that every read, the floor
# selects included, runs with warm CPU caches as a repeated query does; writes alternate
# call by call (their cost is dominated by the flush to disk).
READ_SLICE = 20

# Targets, printed as information only (ratios of medians).
SCALING_LIMIT = 1.5
INGEST_LIMIT = 2.5
MATERIALIZE_LIMIT = 4.0
RECALL_FLOOR_LIMIT = 40.0


@dataclass(frozen=True)
class Plan:
    """How many samples each kind of measurement takes."""

    commit_repeat: int  # committed single writes (floor insert, ingest, materialize, ...)
    batch_repeat: int  # ingest_events batches
    govern_repeat: int  # seal and restore
    erase_repeat: int  # delete with dependents, expiry of a set of bodies
    read_repeat: int  # recall, audit and the select floors
    fading_repeat: int  # recall over a scope whose memories all fade
    open_repeat: int
    warmup: int
    frames_repeat: int  # calls of each write on tmpfs whose frames and CPU are counted


FULL = Plan(
    commit_repeat=500,
    batch_repeat=120,
    govern_repeat=300,
    erase_repeat=60,
    read_repeat=2_000,
    fading_repeat=40,
    open_repeat=300,
    warmup=5,
    frames_repeat=200,
)
QUICK = Plan(
    commit_repeat=100,
    batch_repeat=25,
    govern_repeat=60,
    erase_repeat=12,
    read_repeat=300,
    fading_repeat=10,
    open_repeat=60,
    warmup=3,
    frames_repeat=40,
)


def scope(name: str) -> Scope:
    return Scope("bench-tenant", "bench-owner", name)


def event(scope_: Scope, event_id: str, n: int, retention: RetentionPolicy = LONG) -> RawEventDraft:
    return RawEventDraft(
        event_id=event_id,
        scope=scope_,
        source=SourceRef("bench-source", "chat", BASE + timedelta(seconds=n), TrustLevel.CONFIRMED),
        content=EVENT_BODY,
        retention=retention,
    )


def memory(scope_: Scope, memory_id: str, source_id: str, n: int) -> MemoryDraft:
    return MemoryDraft(
        memory_id=memory_id,
        scope=scope_,
        content=MEMORY_BODY,
        source_event_ids=(source_id,),
        kind="preference",
        trust=TrustLevel.OBSERVED,
        created_at=BASE + timedelta(seconds=n),
    )


def command(
    scope_: Scope, action: GovernanceAction, entity_type: EntityType, entity_id: str
) -> GovernanceCommand:
    return GovernanceCommand(scope_, action, entity_type, entity_id, BASE, "benchmark")


def ingest_many(th: TrueHeart, drafts: Sequence[RawEventDraft]) -> None:
    for start in range(0, len(drafts), BATCH):
        th.ingest_events(list(drafts[start : start + BATCH]))


# --- measurement ------------------------------------------------------------------------


@dataclass
class Case:
    """One measured operation: ``prepare(i)`` builds call ``i`` (outside the timing)."""

    operation: str
    size: str
    floor: str | None
    prepare: Callable[[int], Callable[[], object]]
    expect: Callable[[object], bool]
    repeat: int
    warmup: int
    samples: list[int] = field(default_factory=list)
    calls: int = 0

    def run(self, count: int, *, record: bool) -> None:
        for _ in range(count):
            call = self.prepare(self.calls)
            self.calls += 1
            start = time.perf_counter_ns()
            result = call()
            elapsed = time.perf_counter_ns() - start
            if not self.expect(result):
                raise SystemExit(f"unexpected result of {self.operation} ({self.size}): {result!r}")
            if record:
                self.samples.append(elapsed)


@dataclass(frozen=True)
class Result:
    operation: str
    size: str
    median_us: float
    p90_us: float
    samples: int
    floor: str | None
    ratio: float | None = None


def summarise(case: Case, divisor: int = 1, operation: str | None = None) -> Result:
    ordered = sorted(case.samples)
    return Result(
        operation=operation or case.operation,
        size=case.size,
        median_us=statistics.median(ordered) / 1000 / divisor,
        p90_us=percentile(ordered, 0.9) / 1000 / divisor,
        samples=len(ordered),
        floor=case.floor,
    )


def is_tuple_of(length: int) -> Callable[[object], bool]:
    return lambda result: isinstance(result, tuple) and len(result) == length


def equals(value: object) -> Callable[[object], bool]:
    return lambda result: result == value


def anything(result: object) -> bool:
    return True


# --- floors -----------------------------------------------------------------------------


def repeated(call: Callable[[], object]) -> Callable[[int], Callable[[], object]]:
    """``prepare`` for an operation whose every call is the same (reads, replays)."""
    return lambda i: call


def select_call(conn: sqlite3.Connection, sql: str) -> Callable[[], object]:
    return lambda: tuple(conn.execute(sql, ("floor-scope",)).fetchall())


def recall_call(th: TrueHeart, query: RecallQuery) -> Callable[[], object]:
    return lambda: th.recall(query)


def audit_call(th: TrueHeart, scope_: Scope, limit: int) -> Callable[[], object]:
    return lambda: th.audit(scope_, limit=limit)


def floor_insert_case(conn: sqlite3.Connection, plan: Plan) -> Case:
    conn.execute(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, "
        "created_at INTEGER NOT NULL, body TEXT NOT NULL)"
    )

    def prepare(i: int) -> Callable[[], object]:
        params = ("floor-scope", i, EVENT_BODY)

        def call() -> object:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO items (scope, created_at, body) VALUES (?, ?, ?)", params)
            conn.execute("COMMIT")
            return None

        return call

    return Case(
        "floor: committed insert", "1 row", None, prepare, anything, plan.commit_repeat, plan.warmup
    )


def floor_select_cases(conn: sqlite3.Connection, plan: Plan) -> list[Case]:
    conn.execute(
        "CREATE TABLE rows (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, "
        "created_at INTEGER NOT NULL, body TEXT NOT NULL)"
    )
    conn.execute("CREATE INDEX rows_recent ON rows (scope, created_at DESC, id)")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO rows (scope, created_at, body) VALUES (?, ?, ?)",
        (("floor-scope", n, FLOOR_ROW_TEXT) for n in range(10_000)),
    )
    conn.execute("COMMIT")
    cases = []
    for limit in (20, 100):
        sql = (
            "SELECT id, scope, created_at, body FROM rows WHERE scope = ? "
            f"ORDER BY created_at DESC, id LIMIT {limit}"
        )

        cases.append(
            Case(
                f"floor: indexed top-{limit} select",
                "10,000",
                None,
                repeated(select_call(conn, sql)),
                is_tuple_of(limit),
                plan.read_repeat,
                plan.warmup * 10,
            )
        )
    return cases


# --- fixtures ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fixture:
    """Names of what the main store holds (see :func:`build_store`)."""

    seal_ids: list[str]
    restore_ids: list[str]
    delete_ids: list[str]
    expire_batches: int


def build_store(path: Path, clock: Clock, plan: Plan) -> Fixture:
    """The main store: every scope the measurements read or change.

    * ``recall-N`` (N in SIZES): N memories, each derived from one of N / 100 events;
    * ``audit-N``: N ingested events, hence exactly N audit rows;
    * ``govern``: memories to seal, and memories already sealed to restore;
    * ``delete``: events with DEPENDENTS memories each;
    * ``expire``: sets of EXPIRE_SET events whose bodies become eligible one set at a time;
    * ``ingest``, ``batch``, ``materialize``: where new events and memories go.
    """
    n = 0  # a running counter that spreads creation and occurrence times

    with TrueHeart(SQLiteRepository(path), clock=clock) as th:
        for size in SIZES:
            s = scope(f"recall-{size}")
            sources = [f"e{k}" for k in range(max(1, size // DEPENDENTS))]
            ingest_many(th, [event(s, eid, k) for k, eid in enumerate(sources)])
            for k in range(size):
                n += 1
                th.materialize_once(memory(s, f"m{k}", sources[k // DEPENDENTS], n))
            s = scope(f"audit-{size}")
            ingest_many(th, [event(s, f"e{k}", k) for k in range(size)])

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
            for j in range(DEPENDENTS):
                n += 1
                th.materialize_once(memory(s, f"{eid}-m{j}", eid, n))

        s = scope("expire")
        batches = plan.warmup + plan.erase_repeat
        drafts = [
            event(s, f"x{b}-{j}", b * 3600, SHORT_RAW)
            for b in range(batches)
            for j in range(EXPIRE_SET)
        ]
        ingest_many(th, drafts)

        th.ingest_event(event(scope("ingest"), "replayed", 0))
        th.ingest_events([event(scope("batch"), "first", 0)])
        s = scope("materialize")
        th.ingest_event(event(s, "src", 0))
        th.materialize_once(memory(s, "replayed", "src", 0))
    return Fixture(seal_ids, restore_ids, delete_ids, batches)


def build_open_store(path: Path, clock: Clock) -> None:
    with TrueHeart(SQLiteRepository(path), clock=clock) as th:
        s = scope("open")
        ingest_many(th, [event(s, f"e{k}", k) for k in range(OPEN_ROWS)])


def count_rows(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = ("raw_events", "raw_bodies", "memories", "lineage", "tombstones", "audit")
        return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in tables}
    finally:
        conn.close()


# --- the measured operations ------------------------------------------------------------


def write_cases(th: TrueHeart, fixture: Fixture, plan: Plan) -> list[Case]:
    warm = plan.warmup
    s_ingest, s_batch, s_mat, s_gov = (
        scope("ingest"),
        scope("batch"),
        scope("materialize"),
        scope("govern"),
    )

    def ingest(i: int) -> Callable[[], object]:
        draft = event(s_ingest, f"new{i}", i)
        return lambda: th.ingest_event(draft)

    def ingest_batch(i: int) -> Callable[[], object]:
        drafts = [event(s_batch, f"b{i}-{j}", j) for j in range(BATCH)]
        return lambda: th.ingest_events(drafts)

    def materialize(i: int) -> Callable[[], object]:
        draft = memory(s_mat, f"new{i}", "src", i + 1)
        return lambda: th.materialize_once(draft)

    def seal(i: int) -> Callable[[], object]:
        cmd = command(s_gov, GovernanceAction.SEAL, EntityType.MEMORY, fixture.seal_ids[i])
        return lambda: th.govern(cmd)

    def restore(i: int) -> Callable[[], object]:
        cmd = command(s_gov, GovernanceAction.RESTORE, EntityType.MEMORY, fixture.restore_ids[i])
        return lambda: th.govern(cmd)

    replay_event = event(s_ingest, "replayed", 0)
    replay_memory = memory(s_mat, "replayed", "src", 0)
    one = is_tuple_of(BATCH)

    def affected(result: object) -> bool:
        return len(getattr(result, "affected_ids", ())) == 1

    return [
        Case("ingest_event", "new event", "insert", ingest, anything, plan.commit_repeat, warm),
        Case(
            "ingest_events",
            f"batch of {BATCH}",
            "insert",
            ingest_batch,
            one,
            plan.batch_repeat,
            warm,
        ),
        Case(
            "materialize_once",
            "new memory",
            "insert",
            materialize,
            anything,
            plan.commit_repeat,
            warm,
        ),
        Case("govern seal", "memory", "insert", seal, affected, plan.govern_repeat, warm),
        Case("govern restore", "memory", "insert", restore, affected, plan.govern_repeat, warm),
        Case(
            "ingest_event replay",
            "identical",
            "insert",
            repeated(lambda: th.ingest_event(replay_event)),
            anything,
            plan.commit_repeat,
            warm,
        ),
        Case(
            "materialize_once replay",
            "identical",
            "insert",
            repeated(lambda: th.materialize_once(replay_memory)),
            anything,
            plan.commit_repeat,
            warm,
        ),
    ]


def erase_cases(th: TrueHeart, fixture: Fixture, plan: Plan) -> list[Case]:
    s_del = scope("delete")

    def delete(i: int) -> Callable[[], object]:
        cmd = command(s_del, GovernanceAction.DELETE, EntityType.RAW_EVENT, fixture.delete_ids[i])
        return lambda: th.govern(cmd)

    def expire(i: int) -> Callable[[], object]:
        # Set i was ingested with occurred_at = BASE + i hours and a one-day raw TTL.
        as_of = BASE + timedelta(days=1, hours=i)
        return lambda: th.expire_raw_content(as_of=as_of)

    def expire_none(i: int) -> Callable[[], object]:
        return lambda: th.expire_raw_content(as_of=BASE)

    def cascaded(result: object) -> bool:
        return len(getattr(result, "affected_ids", ())) == DEPENDENTS + 1

    return [
        Case(
            "govern delete raw event",
            f"{DEPENDENTS} dependents",
            "insert",
            delete,
            cascaded,
            plan.erase_repeat,
            plan.warmup,
        ),
        Case(
            "expire_raw_content",
            f"{EXPIRE_SET} eligible",
            "insert",
            expire,
            equals(EXPIRE_SET),
            plan.erase_repeat,
            plan.warmup,
        ),
        Case(
            "expire_raw_content",
            "0 eligible",
            "insert",
            expire_none,
            equals(0),
            plan.erase_repeat,
            plan.warmup,
        ),
    ]


def read_cases(th: TrueHeart, plan: Plan) -> list[Case]:
    cases = []
    for size in SIZES:
        for limit in (20, 100):
            query = RecallQuery(scope(f"recall-{size}"), RECALL_AS_OF, limit)
            cases.append(
                Case(
                    f"recall limit {limit}",
                    f"{size:,}",
                    f"top{limit}",
                    repeated(recall_call(th, query)),
                    is_tuple_of(limit),
                    plan.read_repeat,
                    plan.warmup * 10,
                )
            )
    for size in SIZES:
        for limit in (20, 100):
            s = scope(f"audit-{size}")
            cases.append(
                Case(
                    f"audit limit {limit}",
                    f"{size:,}",
                    f"top{limit}",
                    repeated(audit_call(th, s, limit)),
                    is_tuple_of(min(limit, size)),
                    plan.read_repeat,
                    plan.warmup * 10,
                )
            )
    return cases


def fading_cases(th: TrueHeart, plan: Plan) -> list[Case]:
    cases = []
    for size in (SIZES[0], SIZES[-1]):
        query = RecallQuery(scope(f"recall-{size}"), FADING_AS_OF, 20)
        cases.append(
            Case(
                "recall limit 20, all fading",
                f"{size:,}",
                "top20",
                repeated(recall_call(th, query)),
                is_tuple_of(20),
                plan.fading_repeat,
                plan.warmup,
            )
        )
    return cases


def floor_open_case(path: Path, plan: Plan) -> Case:
    """The least comparable work of an open: a plain connection that reads the header
    pragmas and the whole catalog (what any check of the schema must read)."""
    opened: list[sqlite3.Connection] = []

    def prepare(i: int) -> Callable[[], object]:
        while opened:
            opened.pop().close()

        def call() -> object:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            opened.append(conn)
            conn.execute("PRAGMA application_id").fetchone()
            conn.execute("PRAGMA user_version").fetchone()
            return conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()

        return call

    return Case(
        "floor: connect, read catalog",
        f"{OPEN_ROWS:,} events",
        None,
        prepare,
        anything,
        plan.open_repeat,
        plan.warmup,
    )


def open_case(path: Path, plan: Plan) -> Case:
    opened: list[SQLiteRepository] = []

    def prepare(i: int) -> Callable[[], object]:
        while opened:
            opened.pop().close()

        def call() -> object:
            repository = SQLiteRepository(path)
            opened.append(repository)
            return repository

        return call

    return Case(
        "SQLiteRepository open",
        f"{OPEN_ROWS:,} events",
        "open",
        prepare,
        anything,
        plan.open_repeat,
        plan.warmup,
    )


def pages_floor_cases(
    conn: sqlite3.Connection, plan: Plan, costs: Sequence[WriteCost]
) -> list[Case]:
    """One page-matched floor per distinct frame count of the measured writes."""
    return [
        Case(
            "floor: committed pages",
            f"{pages} tables",
            None,
            pages_floor(conn, pages),
            anything,
            plan.commit_repeat,
            plan.warmup,
        )
        for pages in sorted({max(1, cost.frames) for cost in costs})
    ]


# --- report -----------------------------------------------------------------------------

_DISK_CASES = {
    "materialize_once": ("materialize_once", "new memory"),
    "ingest_event": ("ingest_event", "new event"),
    "govern seal": ("govern seal", "memory"),
    "govern restore": ("govern restore", "memory"),
}


def print_write_costs(
    costs: Sequence[WriteCost],
    by_name: dict[tuple[str, str], Case],
    page_floors: Sequence[Case],
    insert_floor: float,
) -> list[dict[str, Any]]:
    """The pages and CPU of each write on tmpfs next to their targets, and its wall time
    on disk against the one-row floor and against the floor that commits as many pages."""
    by_pages = {int(case.size.split()[0]): summarise(case).median_us for case in page_floors}
    print(
        f"\nwrites: WAL frames (median, and the share of calls over {FRAME_TARGET}) and CPU "
        f"per call on tmpfs (targets {FRAME_TARGET} frames, {CPU_TARGET_US:.0f} µs), wall time "
        "on disk against both floors"
    )
    header = (
        f"{'operation':<18} {'frames':>6} {'> ' + str(FRAME_TARGET):>5} {'CPU µs':>8} "
        f"{'in a row':>8} {'disk µs':>9} {'/1 row':>7} {'/N pages':>9}  N-page floor µs"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for cost in costs:
        wall = summarise(by_name[_DISK_CASES[cost.operation]]).median_us
        pages = max(1, cost.frames)
        floor = by_pages[pages]
        print(
            f"{cost.operation:<18} {cost.frames:>6} {cost.over_target:>5.0%} {cost.cpu_us:>8.1f} "
            f"{cost.cpu_in_a_row_us or 0.0:>8.1f} {wall:>9.1f} "
            f"{wall / insert_floor:>6.2f}x {wall / floor:>8.2f}x  {floor:.1f} ({pages} pages)"
        )
        rows.append(
            {
                **asdict(cost),
                "disk_median_us": wall,
                "ratio_insert_floor": wall / insert_floor,
                "pages_floor_us": floor,
                "ratio_pages_floor": wall / floor,
            }
        )
    for pages, floor in sorted(by_pages.items()):
        print(f"  floor: {pages} pages in one commit {floor:.1f} µs")
    for cost in costs:
        if cost.btrees is None or cost.one_page_each is None:
            continue
        extra = ", ".join(f"{name} {n:.2f}" for name, n in cost.extra_pages[:5])
        print(
            f"  {cost.operation}: {cost.btrees} b-trees a call; {cost.one_page_each:.0%} of "
            f"calls wrote one page of each; extra pages a call: {extra or 'none'}"
        )
    return rows


def with_ratio(result: Result, floors: dict[str, float]) -> Result:
    if result.floor is None:
        return result
    base = floors[result.floor]
    return Result(
        result.operation,
        result.size,
        result.median_us,
        result.p90_us,
        result.samples,
        result.floor,
        result.median_us / base,
    )


FLOOR_NAMES = {
    "insert": "committed insert",
    "top20": "top-20 select",
    "top100": "top-100 select",
    "open": "connect, read catalog",
}


def print_table(results: Sequence[Result]) -> None:
    header = (
        f"{'operation':<31} {'size':<15} {'median µs':>10} {'p90 µs':>10} "
        f"{'n':>5} {'ratio':>7}  floor"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}x"
        floor = "" if r.floor is None else FLOOR_NAMES[r.floor]
        print(
            f"{r.operation:<31} {r.size:<15} {r.median_us:>10.1f} {r.p90_us:>10.1f} "
            f"{r.samples:>5} {ratio:>7}  {floor}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples (under a minute)")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    info = machine()
    print(
        f"TrueHeart Core {info['trueheart_core']} (source {info['source_digest']}) | "
        f"Python {info['python']} | SQLite {info['sqlite']} | {info['nproc']} CPUs | "
        f"load {info['load_average_at_start']:.2f} | {'quick' if args.quick else 'full'}"
    )

    with tempfile.TemporaryDirectory(prefix="trueheart-bench-") as tmp:
        work = Path(tmp)
        shm = Path("/dev/shm")
        build_root = shm if shm.is_dir() and os.access(shm, os.W_OK) else work
        with tempfile.TemporaryDirectory(prefix="trueheart-build-", dir=build_root) as btmp:
            build = Path(btmp)
            clock = Clock()
            t0 = time.perf_counter()
            fixture = build_store(build / "main.db", clock, plan)
            build_open_store(build / "open.db", clock)
            for name in ("main.db", "open.db"):
                for suffix in ("", "-wal"):  # the log is normally gone once closed
                    if (build / f"{name}{suffix}").exists():
                        shutil.copyfile(build / f"{name}{suffix}", work / f"{name}{suffix}")
        rows = count_rows(work / "main.db")
        print(
            f"fixtures built in {time.perf_counter() - t0:.1f} s; main store rows: "
            + ", ".join(f"{k} {v:,}" for k, v in rows.items())
        )

        with tempfile.TemporaryDirectory(prefix="trueheart-frames-", dir=build_root) as ftmp:
            costs = measure_writes(Path(ftmp), Clock(), plan.frames_repeat, event, memory, command)
        floor_conn = floor_connection(work / "floor.db")
        th = TrueHeart(SQLiteRepository(work / "main.db"), clock=clock)
        try:
            reads = [*floor_select_cases(floor_conn, plan), *read_cases(th, plan)]
            run_interleaved(reads, READ_SLICE)
            fading = fading_cases(th, plan)
            run_interleaved(fading, 1)
            page_floors = pages_floor_cases(floor_conn, plan, costs)
            writes = [floor_insert_case(floor_conn, plan), *write_cases(th, fixture, plan)]
            run_interleaved([*writes, *page_floors], 1)
            erases = erase_cases(th, fixture, plan)
            run_interleaved(erases, 1)
        finally:
            th.close()
            floor_conn.close()
        floor_open = floor_open_case(work / "open.db", plan)
        opening = open_case(work / "open.db", plan)
        run_interleaved([floor_open, opening], 1)
        floor_open.prepare(-1)  # closes the last connection opened
        opening.prepare(-1)  # closes the last repository opened

    by_name = {(c.operation, c.size): c for c in [*reads, *fading, *writes, *erases, opening]}
    floors = {
        "insert": summarise(writes[0]).median_us,
        "top20": summarise(reads[0]).median_us,
        "top100": summarise(reads[1]).median_us,
        "open": summarise(floor_open).median_us,
    }
    ordered: list[Result] = [summarise(writes[0]), summarise(reads[0]), summarise(reads[1])]
    for case in writes[1:]:
        ordered.append(summarise(case))
        if case.operation == "ingest_events":
            ordered.append(summarise(case, BATCH, "ingest_events, per event"))
    for case in erases:
        ordered.append(summarise(case))
        if case.size == f"{EXPIRE_SET} eligible":
            ordered.append(summarise(case, EXPIRE_SET, "expire_raw_content, per body"))
    ordered.extend(summarise(case) for case in reads[2:])
    ordered.extend(summarise(case) for case in fading)
    ordered.append(summarise(floor_open))
    ordered.append(summarise(opening))
    results = [with_ratio(r, floors) for r in ordered]
    print()
    print_table(results)

    def median(operation: str, size: str) -> float:
        return summarise(by_name[(operation, size)]).median_us

    scaling = {
        f"{op} limit {limit}": median(f"{op} limit {limit}", "10,000")
        / median(f"{op} limit {limit}", "100")
        for op in ("recall", "audit")
        for limit in (20, 100)
    }
    print("\nscaling (median at 10,000 rows / median at 100 rows in the scope)")
    for label, value in scaling.items():
        print(f"  {label:<18} {value:.2f}x")

    targets: list[dict[str, Any]] = [
        {
            "target": f"{label} at 10,000 within {SCALING_LIMIT}x of 100",
            "value": value,
            "limit": SCALING_LIMIT,
        }
        for label, value in scaling.items()
    ]
    targets.append(
        {
            "target": f"ingest_event within {INGEST_LIMIT}x of the floor insert",
            "value": median("ingest_event", "new event") / floors["insert"],
            "limit": INGEST_LIMIT,
        }
    )
    targets.append(
        {
            "target": f"materialize_once within {MATERIALIZE_LIMIT}x of the floor insert",
            "value": median("materialize_once", "new memory") / floors["insert"],
            "limit": MATERIALIZE_LIMIT,
        }
    )
    targets.append(
        {
            "target": f"recall limit 20 at 10,000 within {RECALL_FLOOR_LIMIT}x of the floor "
            "top-20 select",
            "value": median("recall limit 20", "10,000") / floors["top20"],
            "limit": RECALL_FLOOR_LIMIT,
        }
    )
    page_costs = print_write_costs(costs, by_name, page_floors, floors["insert"])
    for cost in costs:
        targets.append(
            {
                "target": f"{cost.operation} at most {FRAME_TARGET} WAL frames per call",
                "value": cost.frames,
                "limit": FRAME_TARGET,
                "unit": " frames",
            }
        )
        targets.append(
            {
                "target": f"{cost.operation} at most {CPU_TARGET_US:.0f} µs CPU per call on tmpfs",
                "value": cost.cpu_us,
                "limit": CPU_TARGET_US,
                "unit": " µs",
            }
        )
        if cost.cpu_in_a_row_us is not None:
            targets.append(
                {
                    "target": f"{cost.operation} at most {CPU_TARGET_US:.0f} µs CPU per call on "
                    "tmpfs, calls in a row",
                    "value": cost.cpu_in_a_row_us,
                    "limit": CPU_TARGET_US,
                    "unit": " µs",
                }
            )
    elapsed, load_at_end = report_targets(targets, started)

    if args.json is not None:
        payload = {
            "machine": info,
            "mode": "quick" if args.quick else "full",
            "main_store_rows": rows,
            "floors_us": floors,
            "results": [asdict(r) for r in results],
            "scaling": scaling,
            "write_costs": page_costs,
            "targets": targets,
            "run_seconds": elapsed,
            "load_average_at_end": load_at_end,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
