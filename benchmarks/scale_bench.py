"""Scope-local cost benchmark: operations on one small scope in stores of growing size.

Run from the project root::

    .venv/bin/python benchmarks/scale_bench.py            # 1,000 / 10,000 / 100,000
    .venv/bin/python benchmarks/scale_bench.py --quick    # 1,000 / 10,000, fewer samples
    .venv/bin/python benchmarks/scale_bench.py --json results.json
    .venv/bin/python benchmarks/scale_bench.py --sizes 1000,1000000 --repeat 5

Each store holds the given number of memories spread over 20 scopes (one source event per
ten memories, one claim per memory), plus the scopes that are measured: every timed call
works on a scope of 50 memories (five events, 50 claims) of its own, so what it costs
can only depend on the rest of the store through the store's size. Measured per store:
``stats(scope)``, ``verify_integrity(scope)``, ``erase_subject`` of a fresh 50-memory
scope (with the default ``rewrite=True``, and with ``rewrite=False``; both erase in place
on SQLite), the delete of a raw event with ten dependent memories (a governance
cascade), and a forget of one memory; and, for reference, a rewrite of the same file
(``VACUUM`` and a WAL checkpoint on a connection of its own), which is what ``compact()``
costs and what a subject erasure cost while it rewrote the file: its cost is the file's.
The stores are built once through the public API (on ``/dev/shm`` when it exists, then
copied to a temporary directory on the disk) and all stay open; the samples of the
stores are taken in rotation, call by call, so that a
drift of the machine affects every size alike. The figure of each operation and size is
the median wall time; the ratio is that median at the largest size divided by its median
at 1,000 memories, and the target is a ratio of at most 2 (the rewrite has none). Fresh
scopes are written between the timed calls, outside the timing. Targets are
information, not assertions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from harness import BASE, LONG, Clock, machine, report_targets, write_results

from trueheart_core import (
    ClaimDraft,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
SCOPES = 20
PER_EVENT = 10  # memories (and claims) derived from each source event
MEASURED = 50  # memories of each measured scope
CASCADE = 10  # memories derived from each deleted event
RATIO_LIMIT = 2.0
WORDS = tuple(
    " ".join(
        (
            "weekly summary tasks monday morning coffee project deadline invoice travel",
            "meeting budget garden recipe music reading hiking dentist birthday insurance",
            "holiday report keyboard window library station river mountain yellow quiet",
            "careful",
        )
    ).split()
)
OPERATIONS = ("stats", "verify", "erase", "erase_in_place", "cascade", "forget", "rewrite")
REFERENCES = {"rewrite": "erase"}  # a reference operation: the operation it is set beside


def scope(name: str) -> Scope:
    return Scope("bench-tenant", "bench-owner", name)


def text(n: int) -> str:
    words = [WORDS[(n * 7 + k * 13) % len(WORDS)] for k in range(12)]
    return f"Memory {n}: " + " ".join(words) + "."


def populate(th: TrueHeart, scope_: Scope, count: int, first: int = 0) -> None:
    """``count`` memories of ``scope_`` with their events and claims, ten per event, in
    one transaction per event."""
    source = SourceRef("bench-source", "chat", BASE, TrustLevel.CONFIRMED)
    for low in range(first, first + count, PER_EVENT):
        event_id = f"e{low:07d}"
        ids = range(low, min(low + PER_EVENT, first + count))
        th.ingest_derived(
            RawEventDraft(event_id, scope_, source, f"Conversation {low} of the benchmark.", LONG),
            memories=[
                MemoryDraft(
                    f"m{n:07d}",
                    scope_,
                    text(n),
                    (event_id,),
                    "fact",
                    TrustLevel.OBSERVED,
                    BASE + timedelta(seconds=n),
                )
                for n in ids
            ],
            claims=[
                ClaimDraft(
                    f"c{n:07d}",
                    scope_,
                    f"user:{n % 97}",
                    "prefers",
                    WORDS[n % len(WORDS)],
                    (event_id,),
                    TrustLevel.OBSERVED,
                    BASE + timedelta(seconds=n),
                )
                for n in ids
            ],
        )


def build(path: Path, size: int) -> None:
    started = time.perf_counter()
    with TrueHeart(SQLiteRepository(path), clock=Clock()) as th:
        per_scope = size // SCOPES
        for s in range(SCOPES):
            populate(th, scope(f"tenant-{s:02d}"), per_scope)
            print(
                f"  {size:,}: {(s + 1) * per_scope:,} memories, "
                f"{time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        populate(th, scope("measured"), MEASURED)


@dataclass
class Store:
    """One open store of the run, with its samples per operation."""

    size: int
    path: Path
    th: TrueHeart
    fresh: int = 0
    samples: dict[str, list[int]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})

    def next_scope(self) -> Scope:
        self.fresh += 1
        return scope(f"fresh-{self.fresh:05d}")

    def timed(self, operation: str, call: Callable[[], object]) -> None:
        started = time.perf_counter_ns()
        call()
        self.samples[operation].append(time.perf_counter_ns() - started)


def sample(store: Store, operation: str) -> None:
    th, measured = store.th, scope("measured")
    if operation == "stats":
        store.timed(operation, lambda: th.stats(measured))
    elif operation == "verify":
        store.timed(operation, lambda: th.verify_integrity(measured))
    elif operation in ("erase", "erase_in_place"):
        target = store.next_scope()
        populate(th, target, MEASURED)
        rewrite = operation == "erase"
        store.timed(operation, lambda: th.erase_subject(target, occurred_at=BASE, rewrite=rewrite))
    elif operation == "cascade":
        target = store.next_scope()
        populate(th, target, CASCADE)
        command = GovernanceCommand(
            target, GovernanceAction.DELETE, EntityType.RAW_EVENT, "e0000000", BASE, "bench"
        )
        store.timed(operation, lambda: th.govern(command))
    elif operation == "rewrite":
        # For reference: rewriting the same file (what compaction costs), on a
        # connection of its own, with nothing erased.
        def vacuum() -> None:
            conn = sqlite3.connect(store.path, isolation_level=None)
            try:
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()

        store.timed(operation, vacuum)
    else:
        target = store.next_scope()
        populate(th, target, 1)
        command = GovernanceCommand(
            target, GovernanceAction.FORGET, EntityType.MEMORY, "m0000000", BASE, "bench"
        )
        store.timed(operation, lambda: th.govern(command))


def _sizes(text: str) -> tuple[int, ...]:
    """``--sizes``: at least two ascending store sizes, each a multiple of ``SCOPES``."""
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("sizes are whole numbers") from None
    if len(sizes) < 2 or list(sizes) != sorted(set(sizes)) or sizes[0] < SCOPES:
        raise argparse.ArgumentTypeError("at least two ascending sizes of 20 or more")
    if any(size % SCOPES for size in sizes):
        raise argparse.ArgumentTypeError(f"each size is a multiple of {SCOPES}")
    return sizes


def median_ms(values: Sequence[int]) -> float:
    return statistics.median(values) / 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 memories only")
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="store sizes in memories, comma-separated, ascending (each a multiple of 20)",
    )
    parser.add_argument("--repeat", type=int, default=None, help="samples per operation")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    repeat = args.repeat if args.repeat is not None else (5 if args.quick else 11)
    started = time.perf_counter()
    info = machine()
    print(f"machine: {json.dumps(info)}")
    shm = Path("/dev/shm")
    with (
        tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as build_dir,
        tempfile.TemporaryDirectory() as work,
    ):
        stores: list[Store] = []
        try:
            for size in sizes:
                built = Path(build_dir) / f"store-{size}.db"
                build(built, size)
                target = Path(work) / built.name
                shutil.copyfile(built, target)
                built.unlink()
                stores.append(
                    Store(size, target, TrueHeart(SQLiteRepository(target), clock=Clock()))
                )
            print(f"stores built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            for store in stores:  # warm-up: one call of each operation
                for operation in OPERATIONS:
                    sample(store, operation)
                    store.samples[operation].clear()
            for _ in range(repeat):
                for operation in OPERATIONS:
                    for store in stores:
                        sample(store, operation)
            sizes_on_disk = {store.size: store.th.stats().database_bytes for store in stores}
        finally:
            for store in stores:
                store.th.close()
    print(f"\nmedian ms of {repeat} calls (a 50-memory scope; stores of 20 other scopes)")
    print(f"{'operation':<15}" + "".join(f"{size:>12,}" for size in sizes) + "    ratio")
    targets: list[dict[str, Any]] = []
    results: dict[str, dict[str, float]] = {}
    for operation in OPERATIONS:
        medians = [median_ms(store.samples[operation]) for store in stores]
        ratio = medians[-1] / medians[0]
        results[operation] = {str(s.size): m for s, m in zip(stores, medians, strict=True)}
        results[operation]["ratio"] = ratio
        print(f"{operation:<15}" + "".join(f"{m:>12.2f}" for m in medians) + f"   {ratio:6.2f}x")
        if operation in REFERENCES:
            continue
        targets.append(
            {
                "target": f"{operation} at {sizes[-1]:,} / at {sizes[0]:,} memories <= "
                f"{RATIO_LIMIT:g}x",
                "value": ratio,
                "limit": RATIO_LIMIT,
            }
        )
    for reference, bounded in REFERENCES.items():
        over = [
            median_ms(store.samples[bounded]) / median_ms(store.samples[reference])
            for store in stores
        ]
        print(
            f"{bounded} / {reference} of the file: "
            + ", ".join(f"{s.size:,}: {r:.2f}x" for s, r in zip(stores, over, strict=True))
        )
    print("file sizes: " + ", ".join(f"{k:,}: {v} bytes" for k, v in sizes_on_disk.items()))
    elapsed, load = report_targets(targets, started)
    write_results(args.json, info, repeat, targets, elapsed, load, medians_ms=results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
