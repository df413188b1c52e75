"""Claims benchmark: what one page of ``claims()`` costs as a scope's claims grow.

Run from the project root::

    .venv/bin/python benchmarks/claims_bench.py            # 1,000 / 10,000 / 100,000 claims
    .venv/bin/python benchmarks/claims_bench.py --quick    # 1,000 / 10,000
    .venv/bin/python benchmarks/claims_bench.py --json results.json

Each store holds one scope of the given number of claims (ten per source event, 50 per
subject, all with the predicate ``prefers`` and a value that differs between claims of a
subject, so that every subject is one conflict). The stores are built through the
public API on ``/dev/shm`` when it exists, stay open in one process, and are sampled in
rotation, call by call. Measured per store, as the median wall time of the calls:

* ``subject page``: the first page (``limit=100``) of one subject and predicate: its 50
  claims, whatever the scope holds;
* ``first page``: the first page (``limit=100``) of the whole scope;
* ``later page``: the page after it, through its cursor;
* ``unpaged``: ``claims()`` without a limit (every claim of the scope in one answer),
  sampled fewer times, for reference.

Beside each time, the peak of the memory Python allocated during one call of the same
kind (``tracemalloc``, measured outside the timed calls). The targets are ratios of the
largest store's figure over the 1,000-claim store's: the subject page's time, and the
memory of each paged call, at most 2x. Targets are information, not assertions.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

from harness import (
    BASE,
    LONG,
    Clock,
    machine,
    ratio_target,
    report_targets,
    write_results,
)

from trueheart_core import (
    ClaimDraft,
    ClaimQuery,
    RawEventDraft,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
PER_EVENT = 10
PER_SUBJECT = 50
PAGE = 100
RATIO_LIMIT = 2.0
SCOPE = Scope("bench-tenant", "bench-owner", "claims")
AS_OF = BASE + timedelta(days=400)
PAGED = ("subject page", "first page", "later page")
OPERATIONS = (*PAGED, "unpaged")


def build(path: Path, size: int) -> TrueHeart:
    """A store of ``size`` claims in :data:`SCOPE`, open."""
    th = TrueHeart(SQLiteRepository(path), clock=Clock())
    source = SourceRef("bench-source", "chat", BASE, TrustLevel.CONFIRMED)
    for low in range(0, size, PER_EVENT):
        event_id = f"e{low:07d}"
        th.ingest_derived(
            RawEventDraft(event_id, SCOPE, source, f"Conversation {low}.", LONG),
            claims=[
                ClaimDraft(
                    f"c{n:07d}",
                    SCOPE,
                    f"user:{n // PER_SUBJECT:05d}",
                    "prefers",
                    f"choice {n}",
                    (event_id,),
                    TrustLevel.OBSERVED,
                    BASE + timedelta(seconds=n),
                )
                for n in range(low, min(low + PER_EVENT, size))
            ],
        )
    return th


def calls(th: TrueHeart) -> dict[str, Callable[[], object]]:
    """Each measured call on one store."""
    paged = ClaimQuery(SCOPE, AS_OF, limit=PAGE)
    first = th.claims(paged)
    assert len(first.claims) == PAGE and first.next_cursor is not None
    later = dataclasses.replace(paged, cursor=first.next_cursor)
    subject = dataclasses.replace(paged, subject="user:00007", predicate="prefers")
    assert len(th.claims(subject).claims) == PER_SUBJECT
    return {
        "subject page": lambda: th.claims(subject),
        "first page": lambda: th.claims(paged),
        "later page": lambda: th.claims(later),
        "unpaged": lambda: th.claims(ClaimQuery(SCOPE, AS_OF)),
    }


def peak_kib(call: Callable[[], object]) -> float:
    """The peak of Python's allocations during one call, in KiB."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 claims only")
    parser.add_argument("--repeat", type=int, default=None, help="samples per paged call")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    repeat = args.repeat if args.repeat is not None else (5 if args.quick else 21)
    unpaged_repeat = max(1, repeat // 7)
    started = time.perf_counter()
    info = machine()
    print(f"machine: {json.dumps(info)}")
    shm = Path("/dev/shm")
    samples: dict[int, dict[str, list[int]]] = {n: {op: [] for op in OPERATIONS} for n in sizes}
    peaks: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as work:
        stores: dict[int, TrueHeart] = {}
        try:
            for size in sizes:
                stores[size] = build(Path(work) / f"claims-{size}.db", size)
                print(
                    f"  {size:,} claims built, {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
            measured = {size: calls(th) for size, th in stores.items()}
            for size in sizes:  # warm-up, then the memory of one call of each kind
                for operation in OPERATIONS:
                    measured[size][operation]()
                peaks[size] = {op: peak_kib(measured[size][op]) for op in OPERATIONS}
            for round_ in range(repeat):
                for operation in OPERATIONS:
                    if operation == "unpaged" and round_ >= unpaged_repeat:
                        continue
                    for size in sizes:
                        call = measured[size][operation]
                        t0 = time.perf_counter_ns()
                        call()
                        samples[size][operation].append(time.perf_counter_ns() - t0)
        finally:
            for th in stores.values():
                th.close()
    medians = {
        size: {op: statistics.median(samples[size][op]) / 1e6 for op in OPERATIONS}
        for size in sizes
    }
    print(f"\nmedian ms ({repeat} calls of each page, {unpaged_repeat} unpaged) / peak KiB")
    print(f"{'call':<14}" + "".join(f"{size:>22,}" for size in sizes))
    for operation in OPERATIONS:
        print(
            f"{operation:<14}"
            + "".join(
                f"{medians[size][operation]:>11.2f} ms {peaks[size][operation]:>6.0f} KiB"
                for size in sizes
            )
        )
    low, high = sizes[0], sizes[-1]
    targets = [
        ratio_target(
            f"subject page time at {high:,} / at {low:,} claims <= {RATIO_LIMIT:g}x",
            medians[high]["subject page"] / medians[low]["subject page"],
            RATIO_LIMIT,
        )
    ]
    targets += [
        ratio_target(
            f"{operation} memory at {high:,} / at {low:,} claims <= {RATIO_LIMIT:g}x",
            peaks[high][operation] / peaks[low][operation],
            RATIO_LIMIT,
        )
        for operation in PAGED
    ]
    elapsed, load = report_targets(targets, started)
    write_results(
        args.json,
        info,
        repeat,
        targets,
        elapsed,
        load,
        medians_ms={str(s): m for s, m in medians.items()},
        peaks_kib={str(s): p for s, p in peaks.items()},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
