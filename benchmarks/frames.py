"""What a write costs the storage engine: WAL frames and CPU per call, on tmpfs.

Used by ``bench.py``. A store on ``/dev/shm`` (flushes cost next to nothing there)
holds a scope of 1,000 memories and the memories to seal and restore; each operation is
called in rotation with the others, and for every call the benchmark records how many
frames it appended to the write-ahead log (``mxFrame`` of the WAL index header in the
``-shm`` file, read before and after) and the CPU time of the process
(``time.process_time_ns``). A frame is one page image written at commit: the number of
pages the call dirtied.

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
from collections.abc import Callable
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


def wal_frames(shm: int) -> int:
    """``mxFrame`` of the WAL index read through ``shm``, a descriptor of the database's
    ``-shm`` file: the frames of its log that are committed.

    The descriptor stays open while the store is: closing any descriptor of a file drops
    every POSIX lock this process holds on it, SQLite's locks on the ``-shm`` file
    included."""
    header = os.pread(shm, 20, 0)
    return int.from_bytes(header[16:20], "little") if len(header) == 20 else 0


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
    try:
        with TrueHeart(SQLiteRepository(path), clock=clock) as th:
            s = Scope("bench", "owner", "frames")
            th.ingest_event(event(s, "src", 0))
            for k in range(SCOPE_MEMORIES):
                th.materialize_once(memory(s, f"m{k}", "src", k + 1))
            g = Scope("bench", "owner", "frames-govern")
            th.ingest_event(event(g, "src", 0))
            for k in range(2 * calls):
                th.materialize_once(memory(g, f"g{k}", "src", k + 1))
            for k in range(calls, 2 * calls):
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
                        command(g, GovernanceAction.RESTORE, EntityType.MEMORY, f"g{calls + i}")
                    )
                ),
            }
            shm = os.open(f"{path}-shm", os.O_RDONLY)  # the store in WAL mode has one by now
            frames: dict[str, list[int]] = {name: [] for name in operations}
            cpu: dict[str, list[int]] = {name: [] for name in operations}
            for i in range(calls):
                for name, prepare in operations.items():
                    call = prepare(i)
                    before = wal_frames(shm)
                    start = time.process_time_ns()
                    call()
                    cpu[name].append(time.process_time_ns() - start)
                    after = wal_frames(shm)
                    # A checkpoint that restarted the log: the call's frames are all there is.
                    frames[name].append(after - before if after >= before else after)
    finally:
        # Closed only once the store is: see wal_frames.
        if shm is not None:
            os.close(shm)
    return [
        WriteCost(
            name,
            int(statistics.median_low(frames[name])),
            statistics.median(cpu[name]) / 1000,
            calls,
        )
        for name in operations
    ]


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
