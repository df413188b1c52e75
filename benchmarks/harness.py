"""What the benchmark programs share: the clock and retention of their fixtures, floor
connections, percentiles and the description of the machine a run happened on."""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import platform
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from trueheart_core import RetentionPolicy, __version__

BASE = datetime(2026, 1, 1, tzinfo=UTC)
LONG = RetentionPolicy(
    raw_ttl=timedelta(days=3650), clear_for=timedelta(days=3650), recall_for=timedelta(days=7300)
)
"""The retention of the benchmarks' events: nothing expires or fades during a run."""


class Clock:
    """A deterministic ingest clock: one second later at every call."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> datetime:
        self.ticks += 1
        return BASE + timedelta(seconds=self.ticks)


def floor_connection(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection with the library's durability settings."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def percentile(sorted_ns: Sequence[int], fraction: float) -> float:
    """Nearest-rank percentile."""
    rank = max(1, math.ceil(fraction * len(sorted_ns)))
    return float(sorted_ns[rank - 1])


def source_digest() -> str:
    """SHA-256 (first 12 hex digits) of the library's source files, to tell runs apart."""
    import trueheart_core

    root = Path(trueheart_core.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def machine() -> dict[str, Any]:
    """The machine, versions and load a run started with."""
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "trueheart_core": __version__,
        "source_digest": source_digest(),
        "load_average_at_start": os.getloadavg()[0],
    }


class Sampled(Protocol):
    """A measured case: how many warm-up and recorded calls it wants, and how to run them."""

    @property
    def repeat(self) -> int: ...

    @property
    def warmup(self) -> int: ...

    def run(self, count: int, *, record: bool) -> None: ...


def run_interleaved(cases: Sequence[Sampled], slice_size: int) -> None:
    """Warm every case up, then take the samples in rotating slices: in each round every
    case takes about ``slice_size`` consecutive samples (its share of ``repeat``), so that
    all cases see the same machine conditions over the run."""
    rounds = max(1, min(case.repeat for case in cases) // slice_size)
    gc.collect()
    gc.disable()
    try:
        for case in cases:
            case.run(case.warmup, record=False)
        for r in range(rounds):
            for case in cases:
                share = case.repeat * (r + 1) // rounds - case.repeat * r // rounds
                case.run(share, record=True)
    finally:
        gc.enable()


def report_targets(targets: list[dict[str, Any]], started: float) -> tuple[float, float]:
    """Print each target (information, not an assertion), marking it ``met``, with its
    ``unit`` (default ``x``, a ratio), then the
    run time and the load average; returns ``(elapsed seconds, load at the end)``."""
    print("\ntargets (information, not assertions)")
    for t in targets:
        t["met"] = t["value"] <= t["limit"]
        unit = t.get("unit", "x")
        print(f"  {'PASS' if t['met'] else 'MISS'}  {t['target']}: {t['value']:.2f}{unit}")
    if not targets:
        print("  none measured (the targets need other sizes)")
    elapsed = time.perf_counter() - started
    load_at_end = os.getloadavg()[0]
    print(f"\ntotal run time {elapsed:.0f} s; 1-minute load average at the end {load_at_end:.2f}")
    return elapsed, load_at_end


def ratio_target(target: str, value: float, limit: float) -> dict[str, Any]:
    """A target for :func:`report_targets`: ``value`` (a ratio) at most ``limit``."""
    return {"target": target, "value": value, "limit": limit}


def write_results(
    path: Path | None,
    info: dict[str, Any],
    repeat: int,
    targets: list[dict[str, Any]],
    elapsed: float,
    load: float,
    **figures: Any,
) -> None:
    """Write a run as JSON to ``path`` (the ``--json`` option; ``None``: nothing): the
    machine, the samples per call, the ``figures`` under their names, the targets, the
    run time and the load at the end."""
    if path is None:
        return
    payload = {
        "machine": info,
        "repeat": repeat,
        **figures,
        "targets": targets,
        "elapsed_s": elapsed,
        "load_average_at_end": load,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
