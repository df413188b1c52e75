"""What a write costs the storage engine: WAL frames and CPU per call, on tmpfs.

Used by ``bench.py``. A store on ``/dev/shm`` (flushes cost next to nothing there)
holds a scope of 1,000 memories and the memories to seal and restore; each operation is
called in rotation with the others, and for every call the benchmark records how many
frames it appended to the write-ahead log (``mxFrame`` of the WAL index header in the
``-shm`` file, read before and after) and the CPU time of the process
(``time.process_time_ns``). A frame is one page image written at commit: the number of
pages the call dirtied.

Called in rotation, one call of each operation after the other, a write finds the
processor's caches filled by three other operations; called many times in a row, as a
loop that only materialises memories does, it finds its own code and pages there and
spends less. A third phase measures that: blocks of :data:`RUN` calls of one operation,
the operations taking turns block by block (so that a drift of the machine's speed
touches them alike), reporting the median CPU per call.

As many rounds again follow the timed ones, untimed: after each call they read the page
number of each frame it appended (from the frame headers in the ``-wal`` file) and name
the b-tree that owns the page (SQLite's ``dbstat`` table, where the ``sqlite3`` module
has it). Every b-tree a write changes costs at least one page. The extra pages are the
leaves SQLite rebalanced with their neighbours and their parent, when an insert found its
leaf full; the second leaf of an index entry that moves (seal and restore move a memory's
entry from one status to another); and the database header (page 1), which changes
whenever the file gains a page.

The page-matched floors (``pages_floor_case``) commit one row into each of N small tables
of a plain SQLite file in one transaction: N pages, the same number as the operation
appends, so that the ratio against it measures the library's own work, whatever the
disk's flush time does during the run.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import Clock

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    Scope,
    SQLiteRepository,
    TrueHeart,
)

FRAME_TARGET = 8
"""WAL frames a single-memory write should append at most (information only)."""
CPU_TARGET_US = 150.0
"""CPU a single-memory write should take at most on tmpfs, in µs (information only)."""
SCOPE_MEMORIES = 1_000
RUN = 32
"""Calls of one operation in a row in the third phase (see the module's docstring)."""
HEADER_PAGE = "sqlite_schema"
"""``dbstat``'s name for page 1, the database header (and the schema's root)."""
HEADER_LABEL = "header (page 1)"

EventOf = Callable[[Scope, str, int], RawEventDraft]
MemoryOf = Callable[[Scope, str, str, int], MemoryDraft]
CommandOf = Callable[[Scope, GovernanceAction, EntityType, str], GovernanceCommand]


@dataclass(frozen=True)
class WriteCost:
    """The medians of one operation's calls on tmpfs."""

    operation: str
    frames: int
    cpu_us: float
    calls: int
    over_target: float = 0.0
    """Share of calls that appended more than :data:`FRAME_TARGET` frames (the median
    hides how often a b-tree's leaf is rebalanced, which writes three or four pages)."""
    cpu_in_a_row_us: float | None = None
    """Median CPU per call in blocks of :data:`RUN` calls of this operation in a row."""
    btrees: int | None = None
    """Median number of distinct b-trees whose pages a call wrote (page 1 not counted)."""
    one_page_each: float | None = None
    """Share of calls that wrote exactly one page of each b-tree they changed."""
    extra_pages: tuple[tuple[str, float], ...] = ()
    """Pages beyond one per b-tree, per call on average, by b-tree, the largest first."""


def wal_frames(shm: int) -> int:
    """``mxFrame`` of the WAL index read through ``shm``, a descriptor of the database's
    ``-shm`` file: the frames of its log that are committed.

    The descriptor stays open while the store is: closing any descriptor of a file drops
    every POSIX lock this process holds on it, SQLite's locks on the ``-shm`` file
    included."""
    header = os.pread(shm, 20, 0)
    return int.from_bytes(header[16:20], "little") if len(header) == 20 else 0


def frame_pages(wal: int, first: int, last: int) -> list[int]:
    """The page numbers of frames ``first + 1`` to ``last`` of the log read through
    ``wal``, a descriptor of the ``-wal`` file (32-byte log header, then for each frame a
    24-byte header that starts with the page number, and the page)."""
    page_size = int.from_bytes(os.pread(wal, 4, 8), "big")
    return [
        int.from_bytes(os.pread(wal, 4, 32 + k * (24 + page_size)), "big")
        for k in range(first, last)
    ]


def page_owners(spy: sqlite3.Connection) -> dict[int, str] | None:
    """Each page of the database and the b-tree that owns it, read through ``spy``, or
    None where this ``sqlite3`` has no ``dbstat`` table."""
    try:
        return dict(spy.execute("SELECT pageno, name FROM dbstat").fetchall())
    except sqlite3.OperationalError:
        return None


def attribute(cost: WriteCost, calls: Sequence[list[str]]) -> WriteCost:
    """``cost`` with what its calls' pages say (the owner of each page each call wrote):
    b-trees per call, the share of calls that wrote one page per b-tree, and the extra
    pages by b-tree."""
    if not calls:
        return cost
    btrees: list[int] = []
    clean = 0
    extra: Counter[str] = Counter()
    for owners in calls:
        names = Counter(owners)
        trees = [name for name in names if name != HEADER_PAGE]
        btrees.append(len(trees))
        clean += len(owners) == len(trees)
        extra[HEADER_LABEL] += names[HEADER_PAGE]
        for name in trees:
            extra[name] += names[name] - 1
    return WriteCost(
        cost.operation,
        cost.frames,
        cost.cpu_us,
        cost.calls,
        cost.over_target,
        cost.cpu_in_a_row_us,
        int(statistics.median_low(btrees)),
        clean / len(calls),
        tuple((name, n / len(calls)) for name, n in extra.most_common() if n > 0),
    )


def measure_writes(
    root: Path,
    clock: Clock,
    calls: int,
    event: EventOf,
    memory: MemoryOf,
    command: CommandOf,
) -> list[WriteCost]:
    """Frames and CPU per call of materialize_once, ingest_event, seal and restore."""
    path = root / "frames.db"
    shm: int | None = None
    wal: int | None = None
    spy: sqlite3.Connection | None = None
    try:
        with TrueHeart(SQLiteRepository(path), clock=clock) as th:
            s = Scope("bench", "owner", "frames")
            th.ingest_event(event(s, "src", 0))
            for k in range(SCOPE_MEMORIES):
                th.materialize_once(memory(s, f"m{k}", "src", k + 1))
            g = Scope("bench", "owner", "frames-govern")
            th.ingest_event(event(g, "src", 0))
            # Rounds 0 to calls - 1 are timed; as many more name each page they write, and
            # as many again are timed in blocks of calls in a row.
            rounds = 3 * calls
            for k in range(2 * rounds):
                th.materialize_once(memory(g, f"g{k}", "src", k + 1))
            for k in range(rounds, 2 * rounds):
                th.govern(command(g, GovernanceAction.SEAL, EntityType.MEMORY, f"g{k}"))
            base = SCOPE_MEMORIES + 10
            operations: dict[str, Callable[[int], Callable[[], object]]] = {
                "materialize_once": lambda i: (
                    lambda: th.materialize_once(memory(s, f"new{i}", "src", base + i))
                ),
                "ingest_event": lambda i: lambda: th.ingest_event(event(s, f"ev{i}", i + 5)),
                "govern seal": lambda i: (
                    lambda: th.govern(command(g, GovernanceAction.SEAL, EntityType.MEMORY, f"g{i}"))
                ),
                "govern restore": lambda i: (
                    lambda: th.govern(
                        command(g, GovernanceAction.RESTORE, EntityType.MEMORY, f"g{rounds + i}")
                    )
                ),
            }
            shm = os.open(f"{path}-shm", os.O_RDONLY)  # the store in WAL mode has one by now
            wal = os.open(f"{path}-wal", os.O_RDONLY)
            spy = sqlite3.connect(path)
            frames: dict[str, list[int]] = {name: [] for name in operations}
            cpu: dict[str, list[int]] = {name: [] for name in operations}
            named: dict[str, list[list[str]]] = {name: [] for name in operations}
            for i in range(2 * calls):
                timed = i < calls
                for name, prepare in operations.items():
                    call = prepare(i)
                    before = wal_frames(shm)
                    start = time.process_time_ns()
                    call()
                    spent = time.process_time_ns() - start
                    after = wal_frames(shm)
                    # A checkpoint that restarted the log: the call's frames are all there is.
                    first = before if after >= before else 0
                    if timed:
                        cpu[name].append(spent)
                        frames[name].append(after - first)
                    else:
                        # Named at once: a page the search index frees is soon reused.
                        owners = page_owners(spy)
                        if owners is not None:
                            named[name].append(
                                [owners.get(page, "?") for page in frame_pages(wal, first, after)]
                            )
            in_a_row = _in_a_row(operations, range(2 * calls, rounds))
    finally:
        if spy is not None:
            spy.close()
        # Closed only once the store is: see wal_frames.
        for fd in (shm, wal):
            if fd is not None:
                os.close(fd)
    return [
        attribute(
            WriteCost(
                name,
                int(statistics.median_low(frames[name])),
                statistics.median(cpu[name]) / 1000,
                calls,
                sum(n > FRAME_TARGET for n in frames[name]) / len(frames[name]),
                in_a_row[name],
            ),
            named[name],
        )
        for name in operations
    ]


def _in_a_row(
    operations: dict[str, Callable[[int], Callable[[], object]]], indexes: range
) -> dict[str, float]:
    """The median CPU per call, in µs, of each operation called :data:`RUN` times in a
    row (with the call indexes ``indexes``), the operations taking turns by block and
    the first of each turn alternating."""
    cpu: dict[str, list[int]] = {name: [] for name in operations}
    names = list(operations)
    for number, start in enumerate(range(indexes.start, indexes.stop, RUN)):
        block = range(start, min(start + RUN, indexes.stop))
        for name in names if number % 2 == 0 else reversed(names):
            for i in block:
                call = operations[name](i)
                begun = time.process_time_ns()
                call()
                cpu[name].append(time.process_time_ns() - begun)
    return {name: statistics.median(spent) / 1000 for name, spent in cpu.items()}


def pages_floor(conn: sqlite3.Connection, pages: int) -> Callable[[int], Callable[[], object]]:
    """``prepare`` of the floor that commits one row into each of ``pages`` tables."""
    tables = [f"pages{pages}_{k}" for k in range(pages)]
    for table in tables:
        conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")

    def prepare(i: int) -> Callable[[], object]:
        def call() -> object:
            conn.execute("BEGIN IMMEDIATE")
            for table in tables:
                conn.execute(f"INSERT INTO {table} (v) VALUES (?)", (i,))
            conn.execute("COMMIT")
            return None

        return call

    return prepare
