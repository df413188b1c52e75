"""Agents SDK session benchmark: what one call of the session costs as its history grows.

Needs the ``openai-agents`` extra. Run from the project root::

    .venv/bin/python benchmarks/session_bench.py                 # 100 / 1,000 / 10,000 items
    .venv/bin/python benchmarks/session_bench.py --quick         # 100 / 1,000
    .venv/bin/python benchmarks/session_bench.py --json results.json

Each store holds one session of the given number of items in one scope, added through
``add_items`` on ``/dev/shm`` when it exists. The stores stay open in one process and are
sampled in rotation, call by call; each round adds one item, reads the latest ten and
pops one, so the history keeps its size. Measured per store, as the median wall time:

* ``add_items``: one item appended;
* ``get_items(10)``: the latest ten items;
* ``pop_item``: the latest item deleted (a governed delete of its event and memory);
* ``get_items()``: the whole history, sampled fewer times, for reference.

The targets are ratios of the largest history's figure over the smallest's for the three
calls that need only the latest items: at most 2x. Targets are information, not
assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from harness import Clock, machine, ratio_target, report_targets, write_results

from trueheart_core import Scope, SQLiteRepository, TrueHeart
from trueheart_core.integrations.openai_agents import TrueHeartSession

SIZES = (100, 1_000, 10_000)
QUICK_SIZES = (100, 1_000)
RATIO_LIMIT = 2.0
SCOPE = Scope("bench-tenant", "bench-owner", "session")
LATEST = ("add_items", "get_items(10)", "pop_item")
OPERATIONS = (*LATEST, "get_items()")
BATCH = 500


def _item(n: int) -> Any:
    return {"role": "user", "content": f"Turn {n}: what did we decide about the trip?"}


async def build(path: Path, size: int) -> tuple[TrueHeart, TrueHeartSession]:
    """A store holding one session of ``size`` items, open."""
    clock = Clock()
    th = TrueHeart(SQLiteRepository(path), clock=clock)
    session = TrueHeartSession("conversation", th, SCOPE, clock=clock)
    for low in range(0, size, BATCH):
        await session.add_items([_item(n) for n in range(low, min(low + BATCH, size))])
    return th, session


def calls(session: TrueHeartSession) -> dict[str, Callable[[], Awaitable[object]]]:
    """Each measured call on one session."""
    return {
        "add_items": lambda: session.add_items([_item(-1)]),
        "get_items(10)": lambda: session.get_items(limit=10),
        "pop_item": session.pop_item,
        "get_items()": session.get_items,
    }


async def measure(sizes: Sequence[int], repeat: int, started: float) -> dict[int, dict[str, float]]:
    whole_repeat = max(1, repeat // 7)
    samples: dict[int, dict[str, list[int]]] = {n: {op: [] for op in OPERATIONS} for n in sizes}
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as work:
        stores: dict[int, tuple[TrueHeart, TrueHeartSession]] = {}
        try:
            for size in sizes:
                stores[size] = await build(Path(work) / f"session-{size}.db", size)
                print(
                    f"  {size:,} items built, {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
            measured = {size: calls(session) for size, (_, session) in stores.items()}
            for size in sizes:  # warm-up
                for operation in LATEST:
                    await measured[size][operation]()
            for round_ in range(repeat):
                for operation in OPERATIONS:
                    if operation == "get_items()" and round_ >= whole_repeat:
                        continue
                    for size in sizes:
                        call = measured[size][operation]
                        t0 = time.perf_counter_ns()
                        await call()
                        samples[size][operation].append(time.perf_counter_ns() - t0)
        finally:
            for th, _ in stores.values():
                th.close()
    return {
        size: {op: statistics.median(samples[size][op]) / 1e6 for op in OPERATIONS}
        for size in sizes
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 items only")
    parser.add_argument("--repeat", type=int, default=None, help="samples per call")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    repeat = args.repeat if args.repeat is not None else (7 if args.quick else 35)
    started = time.perf_counter()
    info = machine()
    print(f"machine: {json.dumps(info)}")
    medians = asyncio.run(measure(sizes, repeat, started))
    print(f"\nmedian ms ({repeat} calls of each, {max(1, repeat // 7)} of get_items())")
    print(f"{'call':<15}" + "".join(f"{size:>12,}" for size in sizes))
    for operation in OPERATIONS:
        print(
            f"{operation:<15}" + "".join(f"{medians[size][operation]:>9.2f} ms" for size in sizes)
        )
    low, high = sizes[0], sizes[-1]
    targets = [
        ratio_target(
            f"{operation} time at {high:,} / at {low:,} items <= {RATIO_LIMIT:g}x",
            medians[high][operation] / medians[low][operation],
            RATIO_LIMIT,
        )
        for operation in LATEST
    ]
    elapsed, load = report_targets(targets, started)
    figures = {str(size): medians[size] for size in sizes}
    write_results(args.json, info, repeat, targets, elapsed, load, medians_ms=figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
