"""Latency of hybrid search and cost of the semantic sync, against lexical search alone
and a plain SQLite FTS5 floor.

Run from the project root::

    .venv/bin/python benchmarks/semantic_bench.py           # 1,000 and 10,000 memories
    .venv/bin/python benchmarks/semantic_bench.py --quick   # fewer samples and repetitions
    .venv/bin/python benchmarks/semantic_bench.py --sizes 1000,10000 --json results.json
    .venv/bin/python benchmarks/semantic_bench.py --profile # also cProfile sync and search

The texts, queries, stores and FTS5 floor are those of ``search_bench.py``: ``N``
memories in one scope, sentences over a Zipf-distributed vocabulary of 20,000 word forms
(one in 250 in Japanese), 400 queries of 2 or 3 mid-frequency words searched with
``budget_tokens=512, limit=20``. The embedder is ``HashingEmbedder(256)``: feature hashing
of the library's own terms, deterministic and without a model, so the figures are the
cost of the semantic path itself (scan, cosine, fusion, storage), not of a model.

**Sync.** Each store is built once through the public API without an embedder. Every
repetition copies it to a fresh file, opens a service on the copy with
``HashingEmbedder(256)`` and ``auto_index=False`` (not timed), and times one
``sync_semantic(scope, batch_size=64)``, which must leave every memory of the scope
indexed. For reference, the same texts go through ``HashingEmbedder.embed_documents`` in
the same batches of 64, timed alone: the difference is what reading, verifying, checking
and storing the vectors costs. Sizes and the two measurements are taken in rotation; the
garbage collector is paused during each timed call. Figures are medians.

**Search.** The first synced copy of each size is searched through a service configured
with ``HashingEmbedder(256)`` and the default semantic settings (scan cap 1,024,
minimum score 0.05): ``SearchQuery(...)`` is the hybrid search (BM25 fused by reciprocal
rank with an exact cosine scan of at most 1,024 vectors, newest first), and
``SearchQuery(..., semantic=False)`` the lexical ranking alone on the same service. The
hybrid search, the lexical search and the FTS5 floor are sampled in rotation, in slices of
20 consecutive calls, all walking the same sequence of queries; figures are the median
(p50) and the 95th percentile (nearest rank) of single calls, after warm-up calls, with
the garbage collector paused.

Before measuring, every query's lexical ``matched`` is checked against the floor's count
of matching rows, the Japanese queries against the memories that contain them, and every
hybrid capsule must report its scan (``scanned`` = min(N, 1,024), ``capped`` exactly when
N > 1,024) and match at least what the lexical search matches; the number of queries whose
scan hit the cap is reported. Every measured capsule is checked (at most ``limit`` items,
``used_tokens`` equal to the items' costs and within the budget; a semantic trace on
hybrid capsules only). A failed check stops the program with a message. The targets
printed at the end are information, not assertions: the exit status is 0 whether they are
met or not.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness import Clock, floor_connection, machine, report_targets, run_interleaved
from search_bench import (
    MEASURED,
    SEED,
    SLICE,
    Case,
    CheckFailed,
    Corpus,
    build_alone,
    build_floor,
    capsule_check,
    check_hit_shares,
    check_japanese,
    check_matches,
    copy_store,
    floor_call,
    floor_check,
    fts_match,
    p50_us,
    p95_us,
    parse_sizes,
    require_fts5,
    search_query,
)

from trueheart_core import HashingEmbedder, MemoryCapsule, SQLiteRepository, TrueHeart

T = TypeVar("T")

DEFAULT_SIZES = (1_000, 10_000)
DIMENSIONS = 256
SYNC_BATCH = 64
SCAN_CAP = 1_024  # the service's default semantic_scan_cap, checked against every trace

# Target, printed as information only (ratio of medians in the same run).
RATIO_SIZE = 10_000
RATIO_LIMIT = 3.0


@dataclass(frozen=True)
class Plan:
    """How many samples each search case takes, and how many syncs each size gets."""

    repeat: int
    warmup: int
    syncs: int


FULL = Plan(repeat=2_000, warmup=40, syncs=7)
QUICK = Plan(repeat=400, warmup=20, syncs=2)


def embedder() -> HashingEmbedder:
    return HashingEmbedder(DIMENSIONS)


def semantic_service(path: Path, *, auto_index: bool = True) -> TrueHeart:
    return TrueHeart(
        SQLiteRepository(path), clock=Clock(), embedder=embedder(), auto_index=auto_index
    )


def remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def timed(call: Callable[[], T]) -> tuple[int, T]:
    """The wall time of one call (garbage collector paused) and its result."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        result = call()
        return time.perf_counter_ns() - start, result
    finally:
        gc.enable()


# --- sync -------------------------------------------------------------------------------


@dataclass
class SyncSize:
    """The sync measurements of one size."""

    size: int
    source: Path
    batches: list[list[str]]
    sync_ns: list[int] = field(default_factory=list)
    embed_ns: list[int] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0

    def sync_once(self, target: Path) -> None:
        copy_store(self.source, target)
        with semantic_service(target, auto_index=False) as th:
            elapsed, status = timed(lambda: th.sync_semantic(MEASURED, batch_size=SYNC_BATCH))
        if not (status.complete and status.memories == status.indexed == self.size):
            raise CheckFailed(f"sync of {self.size:,} memories left the scope incomplete")
        self.sync_ns.append(elapsed)
        self.bytes_before = self.source.stat().st_size
        self.bytes_after = target.stat().st_size

    def embed_once(self) -> None:
        model = embedder()

        def run() -> int:
            return sum(len(model.embed_documents(batch)) for batch in self.batches)

        elapsed, count = timed(run)
        if count != self.size:
            raise CheckFailed(f"the embedder returned {count} vectors for {self.size} texts")
        self.embed_ns.append(elapsed)

    def result(self) -> dict[str, Any]:
        sync_ms = statistics.median(self.sync_ns) / 1e6
        embed_ms = statistics.median(self.embed_ns) / 1e6
        per = 1_000 / self.size
        return {
            "memories": self.size,
            "repetitions": len(self.sync_ns),
            "sync_ms": sync_ms,
            "sync_ms_min": min(self.sync_ns) / 1e6,
            "sync_ms_max": max(self.sync_ns) / 1e6,
            "sync_ms_per_1000": sync_ms * per,
            "embed_calls": len(self.batches),
            "embed_ms": embed_ms,
            "embed_ms_per_1000": embed_ms * per,
            "outside_embedder_share": (sync_ms - embed_ms) / sync_ms,
            "store_bytes_before": self.bytes_before,
            "store_bytes_after": self.bytes_after,
        }


def measure_syncs(work: Path, syncs: Sequence[SyncSize], repetitions: int) -> None:
    """Every size synced ``repetitions`` times on fresh copies, in rotation with the
    embedder alone; the first copy of each size is kept (``semantic-N.db``) for search."""
    for rep in range(repetitions):
        for sync in syncs:
            target = work / (f"semantic-{sync.size}.db" if rep == 0 else "sync.db")
            sync.sync_once(target)
            if rep > 0:
                remove_store(target)
            sync.embed_once()
        print(f"  sync repetition {rep + 1} / {repetitions} done", file=sys.stderr, flush=True)


# --- search -----------------------------------------------------------------------------


def scan_check(label: str, size: int, capsule: MemoryCapsule) -> None:
    trace = capsule.semantic
    if trace is None:
        raise CheckFailed(f"hybrid search ({label}) returned a capsule without a semantic trace")
    if trace.scanned != min(size, SCAN_CAP) or trace.capped != (size > SCAN_CAP):
        raise CheckFailed(
            f"hybrid search ({label}) scanned {trace.scanned} vectors (capped {trace.capped}) "
            f"in a scope of {size:,} with the cap {SCAN_CAP:,}"
        )


def hybrid_check(label: str, size: int) -> Callable[[object], bool]:
    base = capsule_check(f"{label}, hybrid")

    def check(result: object) -> bool:
        hit = base(result)
        assert isinstance(result, MemoryCapsule)
        scan_check(label, size, result)
        return hit

    return check


def lexical_check(label: str) -> Callable[[object], bool]:
    base = capsule_check(f"{label}, lexical")

    def check(result: object) -> bool:
        hit = base(result)
        if isinstance(result, MemoryCapsule) and result.semantic is not None:
            raise CheckFailed(f"lexical search ({label}) returned a semantic trace")
        return hit

    return check


def check_hybrid(
    label: str, size: int, th: TrueHeart, queries: Sequence[list[str]]
) -> dict[str, float]:
    """Before measuring: every hybrid capsule reports its scan and matches at least what
    the lexical search matches. Returns how many queries hit the cap, and the mean number
    of scanned vectors that reached the minimum score."""
    capped = 0
    semantic_matched = 0
    for words in queries:
        text = " ".join(words)
        lexical = th.search(search_query(text, semantic=False))
        hybrid = th.search(search_query(text))
        scan_check(label, size, hybrid)
        assert hybrid.semantic is not None
        if hybrid.matched < lexical.matched:
            raise CheckFailed(
                f"hybrid search ({label}) matched {hybrid.matched} memories for {text!r}, "
                f"fewer than the lexical search ({lexical.matched})"
            )
        capped += hybrid.semantic.capped
        semantic_matched += hybrid.semantic.matched
    return {"capped": capped, "semantic_matched_mean": semantic_matched / len(queries)}


def call(th: TrueHeart, text: str, *, semantic: bool) -> Callable[[], object]:
    query = search_query(text, semantic=semantic)
    return lambda: th.search(query)


def profiled(run: Callable[[], object]) -> pstats.Stats:
    """cProfile of one call (the profiler's own overhead inflates the parts that make
    many Python calls)."""
    profile = cProfile.Profile()
    profile.enable()
    run()
    profile.disable()
    return pstats.Stats(profile, stream=sys.stdout)


def profile_sync(sync: SyncSize, target: Path) -> pstats.Stats:
    """Where a sync spends its time: one more sync of a fresh copy, profiled."""
    copy_store(sync.source, target)
    try:
        with semantic_service(target, auto_index=False) as th:
            return profiled(lambda: th.sync_semantic(MEASURED, batch_size=SYNC_BATCH))
    finally:
        remove_store(target)


def profile_hybrid(th: TrueHeart, queries: Sequence[list[str]]) -> pstats.Stats:
    """Where a hybrid search spends its time: one search per query, profiled."""
    calls = [call(th, " ".join(words), semantic=True) for words in queries]
    return profiled(lambda: [search() for search in calls])


# --- report -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples and repetitions")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after measuring, profile a sync and one hybrid search per query (largest size)",
    )
    parser.add_argument(
        "--sizes", type=parse_sizes, metavar="N,N,...", help="memories (default 1000,10000)"
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    sizes: tuple[int, ...] = args.sizes or DEFAULT_SIZES
    require_fts5()
    started = time.perf_counter()
    info = machine()
    print(
        f"TrueHeart Core {info['trueheart_core']} (source {info['source_digest']}) | "
        f"Python {info['python']} | SQLite {info['sqlite']} | {info['nproc']} CPUs | "
        f"load {info['load_average_at_start']:.2f} | {'quick' if args.quick else 'full'}"
    )
    corpus = Corpus(SEED)
    texts = corpus.texts(SEED + 1, max(sizes))
    queries = corpus.queries(SEED + 3)

    with tempfile.TemporaryDirectory(prefix="trueheart-semantic-bench-") as tmp:
        work = Path(tmp)
        shm = Path("/dev/shm")
        build_root = shm if shm.is_dir() and os.access(shm, os.W_OK) else work
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="trueheart-build-", dir=build_root) as btmp:
            print(f"building stores in {build_root}", file=sys.stderr, flush=True)
            build_alone(Path(btmp), work, sizes, texts)
        for size in sizes:
            build_floor(work / f"fts-{size}.db", texts[:size])
        build_seconds = time.perf_counter() - t0
        print(f"stores built in {build_seconds:.0f} s")

        syncs = [
            SyncSize(
                size,
                work / f"search-{size}.db",
                [texts[low : min(size, low + SYNC_BATCH)] for low in range(0, size, SYNC_BATCH)],
            )
            for size in sizes
        ]
        print(f"syncing {plan.syncs} fresh copies of each store", file=sys.stderr, flush=True)
        measure_syncs(work, syncs, plan.syncs)

        services: list[TrueHeart] = []
        connections: list[sqlite3.Connection] = []
        cases: list[Case] = []
        scans: dict[int, dict[str, float]] = {}
        profiles: list[tuple[str, pstats.Stats]] = []
        if args.profile:
            profiles.append(
                (f"one sync of {max(sizes):,} memories", profile_sync(syncs[-1], work / "p.db"))
            )
        try:
            for size in sizes:
                label = f"{size:,}"
                th = semantic_service(work / f"semantic-{size}.db")
                services.append(th)
                conn = floor_connection(work / f"fts-{size}.db")
                connections.append(conn)
                check_matches(label, th, conn, queries, semantic=False)
                check_japanese(label, th, texts[:size], semantic=False)
                scans[size] = check_hybrid(label, size, th, queries)
                texts_of = [" ".join(words) for words in queries]
                cases += [
                    Case(
                        "floor",
                        f"{size}",
                        [floor_call(conn, fts_match(words)) for words in queries],
                        floor_check,
                        plan.repeat,
                        plan.warmup,
                    ),
                    Case(
                        "lexical",
                        f"{size}",
                        [call(th, text, semantic=False) for text in texts_of],
                        lexical_check(label),
                        plan.repeat,
                        plan.warmup,
                    ),
                    Case(
                        "hybrid",
                        f"{size}",
                        [call(th, text, semantic=True) for text in texts_of],
                        hybrid_check(label, size),
                        plan.repeat,
                        plan.warmup,
                    ),
                ]
            print(
                f"{len(queries)} distinct queries checked; measuring {plan.repeat:,} calls "
                f"of each of {len(cases)} cases",
                file=sys.stderr,
                flush=True,
            )
            run_interleaved(cases, SLICE)
            if args.profile:
                stats = profile_hybrid(services[-1], queries)
                profiles.append((f"{len(queries)} hybrid searches at {max(sizes):,}", stats))
        finally:
            for th in services:
                th.close()
            for conn in connections:
                conn.close()

    check_hit_shares(cases)
    status = report(args, info, sizes, plan, queries, build_seconds, syncs, cases, scans, started)
    for label, stats in profiles:
        print(f"\ncProfile of {label}")
        stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(30)
    return status


def report(
    args: argparse.Namespace,
    info: dict[str, Any],
    sizes: Sequence[int],
    plan: Plan,
    queries: Sequence[list[str]],
    build_seconds: float,
    syncs: Sequence[SyncSize],
    cases: Sequence[Case],
    scans: dict[int, dict[str, float]],
    started: float,
) -> int:
    sync_results = [sync.result() for sync in syncs]
    print(
        f"\nsemantic sync, HashingEmbedder({DIMENSIONS}), batch_size {SYNC_BATCH}, "
        f"median of {plan.syncs} fresh copies"
    )
    header = (
        f"{'memories':>9} {'sync ms':>9} {'per 1,000':>10} {'embed ms':>9} {'per 1,000':>10} "
        f"{'outside':>8} {'MiB before':>11} {'after':>7}"
    )
    print(header + "\n" + "-" * len(header))
    for r in sync_results:
        print(
            f"{r['memories']:>9,} {r['sync_ms']:>9.1f} {r['sync_ms_per_1000']:>10.1f} "
            f"{r['embed_ms']:>9.1f} {r['embed_ms_per_1000']:>10.1f} "
            f"{r['outside_embedder_share']:>8.0%} {r['store_bytes_before'] / 2**20:>11.1f} "
            f"{r['store_bytes_after'] / 2**20:>7.1f}"
        )
    print(
        "embed = the same embed_documents calls alone; outside = share of the sync spent "
        "outside the embedder (reading, verifying, checking, storing)"
    )

    by_key = {(case.operation, case.store): case for case in cases}
    results: list[dict[str, Any]] = []
    for size in sizes:
        hybrid, lexical, floor = (by_key[(op, f"{size}")] for op in ("hybrid", "lexical", "floor"))
        results.append(
            {
                "memories": size,
                "hybrid_p50_us": p50_us(hybrid),
                "hybrid_p95_us": p95_us(hybrid),
                "lexical_p50_us": p50_us(lexical),
                "lexical_p95_us": p95_us(lexical),
                "floor_p50_us": p50_us(floor),
                "floor_p95_us": p95_us(floor),
                "hybrid_over_lexical_p50": p50_us(hybrid) / p50_us(lexical),
                "hybrid_over_floor_p50": p50_us(hybrid) / p50_us(floor),
                "lexical_over_floor_p50": p50_us(lexical) / p50_us(floor),
                "queries_capped": int(scans[size]["capped"]),
                "semantic_matched_mean": scans[size]["semantic_matched_mean"],
                "samples": len(hybrid.samples),
                "hybrid_hit_share": hybrid.hit_share(),
                "lexical_hit_share": lexical.hit_share(),
            }
        )
    print(f"\nsearch, scan cap {SCAN_CAP:,}")
    header = (
        f"{'memories':>9} {'hybrid p50':>11} {'p95':>8} {'lexical p50':>12} {'p95':>8} "
        f"{'FTS5 p50':>9} {'p95':>8} {'hyb/lex':>8} {'hyb/FTS5':>9} {'capped':>8}"
    )
    print(header + "\n" + "-" * len(header))
    for r in results:
        print(
            f"{r['memories']:>9,} {r['hybrid_p50_us']:>11.1f} {r['hybrid_p95_us']:>8.1f} "
            f"{r['lexical_p50_us']:>12.1f} {r['lexical_p95_us']:>8.1f} "
            f"{r['floor_p50_us']:>9.1f} {r['floor_p95_us']:>8.1f} "
            f"{r['hybrid_over_lexical_p50']:>7.2f}x {r['hybrid_over_floor_p50']:>8.2f}x "
            f"{r['queries_capped']:>4} / {len(queries)}"
        )
    print(
        "times in µs; ratios of p50; capped = queries whose scan reached the cap (semantic.capped)"
    )

    targets: list[dict[str, Any]] = []
    for r in results:
        if r["memories"] == RATIO_SIZE:
            targets.append(
                {
                    "target": f"hybrid at {RATIO_SIZE:,} within {RATIO_LIMIT:g}x of lexical alone",
                    "value": r["hybrid_over_lexical_p50"],
                    "limit": RATIO_LIMIT,
                }
            )
    elapsed, load_at_end = report_targets(targets, started)

    if args.json is not None:
        payload = {
            "machine": info,
            "mode": "quick" if args.quick else "full",
            "sizes": list(sizes),
            "queries": len(queries),
            "embedder": f"HashingEmbedder({DIMENSIONS})",
            "scan_cap": SCAN_CAP,
            "sync_batch_size": SYNC_BATCH,
            "build_seconds": build_seconds,
            "sync": sync_results,
            "search": results,
            "targets": targets,
            "run_seconds": elapsed,
            "load_average_at_end": load_at_end,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
