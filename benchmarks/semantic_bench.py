"""Latency of hybrid search and cost of the semantic sync, against lexical search alone
and a plain SQLite FTS5 floor; and the whole-scope semantic scan of 384-dimensional
vectors against the former scan, numpy brute force and a plain read of the vectors.

Run from the project root::

    .venv/bin/python benchmarks/semantic_bench.py           # 1,000 and 10,000 memories
    .venv/bin/python benchmarks/semantic_bench.py --quick   # fewer samples and repetitions
    .venv/bin/python benchmarks/semantic_bench.py --sizes 1000,10000 --json results.json
    .venv/bin/python benchmarks/semantic_bench.py --parts dense --sizes 1000,10000,100000
    .venv/bin/python benchmarks/semantic_bench.py --profile # also cProfile sync and search

Two parts, both by default (``--parts hashing,dense``), at every size of ``--sizes``.

**The hashing part.** The texts, queries, stores and FTS5 floor are those of
``search_bench.py``: ``N`` memories in one scope, sentences over a Zipf-distributed
vocabulary of 20,000 word forms (one in 250 in Japanese), 400 queries of 2 or 3
mid-frequency words searched with ``budget_tokens=512, limit=20``. The embedder is
``HashingEmbedder(256)``: feature hashing of the library's own terms, deterministic and
without a model, so the figures are the cost of the semantic path itself (scan, cosine,
fusion, storage), not of a model.

*Sync.* Each store is built once through the public API without an embedder. Every
repetition copies it to a fresh file, opens a service on the copy with
``HashingEmbedder(256)`` and ``auto_index=False`` (not timed), and times one
``sync_semantic(scope, batch_size=64)``, which must leave every memory of the scope
indexed. For reference, the same texts go through ``HashingEmbedder.embed_documents`` in
the same batches of 64, timed alone: the difference is what reading, verifying, checking
and storing the vectors costs. Sizes and the two measurements are taken in rotation; the
garbage collector is paused during each timed call. Figures are medians.

*Search.* The first synced copy of each size is searched through a service configured
with ``HashingEmbedder(256)`` and the default semantic settings (no scan cap, minimum
score 0.05): ``SearchQuery(...)`` is the hybrid search (BM25 fused with the best
candidates of every eligible vector), and ``SearchQuery(..., semantic=False)`` the
lexical ranking alone on the same service. The hybrid search, the lexical search and the
FTS5 floor are sampled in rotation, in slices of 20 consecutive calls, all walking the
same sequence of queries; figures are the median (p50) and the 95th percentile (nearest
rank) of single calls, after warm-up calls, with the garbage collector paused.

Before measuring, every query's lexical ``matched`` is checked against the floor's count
of matching rows, the Japanese queries against the memories that contain them, and every
hybrid capsule must report its scan (``scanned`` = N, not capped) and match at least
what the lexical search matches. Every measured capsule is checked (at most ``limit``
items, ``used_tokens`` equal to the items' costs and within the budget; a semantic trace
on hybrid capsules only).

**The dense part.** One scope of ``N`` memories whose vectors are random unit vectors of
384 components (``UnitEmbedder``: a Gaussian seeded by each text's digest, no model),
written through ``ingest_derived`` in batches of 1,000 projected by ``auto_index``; the
smaller stores hold the first memories of the larger ones. 40 query vectors are random
too; 20 more queries are planted near-duplicates of random memories (the memory's vector
plus noise, a cosine of about 0.98). Measured, each in rotation with what it is compared
with, in the same process:

* the former scan (every eligible vector's bytes read with the former scan's statement,
  without its cap, and scored with ``math.fsum``) against the zero-dependency scan (the
  service's ``scan`` with ``TRUEHEART_SCAN=python``), per vector;
* a whole hybrid search (``limit=20``; numpy's scan when numpy is installed) against
  floor (a), numpy scoring the same vectors already in memory and ranking the window;
* the first hybrid search of a service just opened (which reads the scope's copy when
  numpy is installed) against floor (b), a plain connection just opened reading the
  vector bytes of the scope; opening is timed in neither.

Before measuring, both scans must give the same candidates for every query, every
planted near-duplicate must be the first semantic candidate and in the capsule (with
and without numpy), and the number of vectors compared exactly and the tracemalloc peak
of one zero-dependency search are recorded. Without numpy, floor (a) and the numpy
figures are left out.

A failed check stops the program with a message. The targets printed at the end are
information, not assertions: the exit status is 0 whether they are met or not.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import hashlib
import importlib
import json
import math
import os
import pstats
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

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
from search_bench import (
    AS_OF,
    BUDGET_TOKENS,
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
    scope,
    search_query,
)

from trueheart_core import (
    HashingEmbedder,
    MemoryCapsule,
    MemoryDraft,
    RawEventDraft,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.domain.semantic.vectors import query_form, similarities
from trueheart_core.service.records import to_us
from trueheart_core.service.search import accelerated
from trueheart_core.service.search.scan import Scan, scan
from trueheart_core.service.semantic import snapshot

T = TypeVar("T")

DEFAULT_SIZES = (1_000, 10_000)
DIMENSIONS = 256
SYNC_BATCH = 64
SCAN_CAP = None  # the service's default semantic_scan_cap (every vector), checked on traces

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
    if trace.scan_cap != SCAN_CAP or trace.scanned != size or trace.capped:
        raise CheckFailed(
            f"hybrid search ({label}) scanned {trace.scanned} vectors (capped {trace.capped}) "
            f"in a scope of {size:,} without a cap"
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


# --- the whole-scope scan: 384-dimensional vectors ------------------------------------

DENSE_DIMENSIONS = 384
DENSE_SCOPE = scope("dense")
DENSE_BATCH = 1_000  # memories per ingest_derived call: one embed_documents call each
DENSE_QUERIES = 40  # random query vectors per size
PLANTED = 20  # near-duplicates planted per size
NEAR_NOISE = 0.2  # a planted query is its memory's vector plus this much noise
DENSE_LIMIT = 20
DENSE_WORDS = tuple(f"topic{i:03d}" for i in range(200))
MINIMUM_SCORE = 0.05  # the service's default minimum_semantic_score

# Targets, printed as information only (ratios of medians in the same run).
SCAN_SPEEDUP_SIZES = (10_000, 100_000)
SCAN_SPEEDUP = 3.0  # the zero-dependency scan at least this much faster per vector
ACCELERATED_SIZE = 100_000
ACCELERATED_LIMIT = 3.0  # hybrid search with numpy within this of numpy brute force
FIRST_SIZES = (10_000, 100_000)  # below, a search's fixed costs outweigh the reading
FIRST_LIMIT = 2.0  # the first query after opening within this of reading the vectors


class UnitEmbedder:
    """Random unit vectors of 384 components, deterministic (a Gaussian seeded by the
    text's BLAKE2b digest), without a model. A query text registered with :meth:`plant`
    gets a near-duplicate of a document's vector instead (its vector plus noise)."""

    identity = "bench-unit-384"
    dimensions = DENSE_DIMENSIONS
    normalized = True

    def __init__(self) -> None:
        self.planted: dict[str, str] = {}
        self._queries: dict[str, list[float]] = {}

    @staticmethod
    def vector(text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")
        rng = random.Random(seed)
        raw = [rng.gauss(0.0, 1.0) for _ in range(DENSE_DIMENSIONS)]
        norm = math.sqrt(math.fsum(x * x for x in raw))
        return [x / norm for x in raw]

    def plant(self, query: str, document: str) -> None:
        self.planted[query] = document

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        found = self._queries.get(text)
        if found is None:
            if text in self.planted:
                base = self.vector(self.planted[text])
                noise = self.vector("noise " + text)
                raw = [b + NEAR_NOISE * n for b, n in zip(base, noise, strict=True)]
                norm = math.sqrt(math.fsum(x * x for x in raw))
                found = [x / norm for x in raw]
            else:
                found = self.vector(text)
            self._queries[text] = found
        return found


def dense_text(n: int) -> str:
    return f"memory {n} about {DENSE_WORDS[n % len(DENSE_WORDS)]}"


def build_dense(build: Path, work: Path, sizes: Sequence[int]) -> None:
    """One scope of 384-dimensional vectors grown to each size in turn, through
    ``ingest_derived`` batches projected by ``auto_index``; a copy at each size."""
    path = build / "dense.db"
    done = 0
    source = SourceRef("bench-source", "chat", BASE, TrustLevel.CONFIRMED)
    with TrueHeart(SQLiteRepository(path), clock=Clock(), embedder=UnitEmbedder()) as th:
        for size in sorted(sizes):
            for low in range(done, size, DENSE_BATCH):
                high = min(size, low + DENSE_BATCH)
                event = f"d{low:07d}"
                th.ingest_derived(
                    RawEventDraft(event, DENSE_SCOPE, source, f"batch {low}", LONG),
                    memories=[
                        MemoryDraft(
                            f"d{n:07d}",
                            DENSE_SCOPE,
                            dense_text(n),
                            (event,),
                            "note",
                            TrustLevel.OBSERVED,
                            BASE + timedelta(seconds=n),
                        )
                        for n in range(low, high)
                    ],
                )
            done = size
            status = th.semantic_status(DENSE_SCOPE)
            if not (status.complete and status.indexed == size):
                raise CheckFailed(f"the dense store of {size:,} is not fully projected")
            copy_store(path, work / f"dense-{size}.db")
            print(f"  dense store of {size:,} built", file=sys.stderr, flush=True)


def numpy_or_none() -> Any:
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


@contextlib.contextmanager
def zero_dependency() -> Iterator[None]:
    """The zero-dependency scan, whatever is installed."""
    before = os.environ.get(accelerated.SWITCH)
    os.environ[accelerated.SWITCH] = "python"
    try:
        yield
    finally:
        if before is None:
            del os.environ[accelerated.SWITCH]
        else:
            os.environ[accelerated.SWITCH] = before


def dense_query(text: str) -> SearchQuery:
    return SearchQuery(DENSE_SCOPE, text, AS_OF, budget_tokens=BUDGET_TOKENS, limit=DENSE_LIMIT)


@dataclass
class DenseSize:
    """The stores, queries and measurements of one size of the dense part."""

    size: int
    path: Path
    embedder: UnitEmbedder
    texts: list[str]
    planted: dict[str, str]  # query text -> the memory it must find
    vectors: Any = None  # numpy matrix of the scope's vectors (floor a), or None
    figures: dict[str, Any] = field(default_factory=dict)


def old_scan(conn: sqlite3.Connection, vector: list[float]) -> list[float]:
    """What the scan cost before sketches: every eligible vector of the scope read and
    scored with ``math.fsum`` (the query of the former scan, without its cap)."""
    blobs = [
        blob
        for (blob,) in conn.execute(
            "SELECT v.vector FROM vectors v INDEXED BY vectors_scan "
            "WHERE v.scope_id = (SELECT scope_id FROM scopes WHERE subject_id = ?) "
            "AND v.active = 1 AND v.created_at <= ? AND v.recall_until > ? "
            "ORDER BY v.created_at DESC, v.vid DESC",
            (DENSE_SCOPE.subject_id, to_us(AS_OF), to_us(AS_OF)),
        )
    ]
    return similarities(query_form(vector), blobs)


def read_floor(conn: sqlite3.Connection) -> int:
    """Floor (b): a plain connection reads the vector bytes of the scope."""
    data = b"".join(
        blob
        for (blob,) in conn.execute(
            "SELECT vector FROM vectors WHERE scope_id = "
            "(SELECT scope_id FROM scopes WHERE subject_id = ?)",
            (DENSE_SCOPE.subject_id,),
        )
    )
    return len(data)


def load_matrix(np: Any, path: Path) -> Any:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        data = b"".join(blob for (blob,) in conn.execute("SELECT vector FROM vectors"))
    finally:
        conn.close()
    return np.frombuffer(data, dtype="<f4").reshape(-1, DENSE_DIMENSIONS)


def brute_force(np: Any, matrix: Any, vector: list[float]) -> Any:
    """Floor (a): numpy scores every vector in memory and ranks the best window."""
    scores = matrix @ np.asarray(vector, dtype=np.float32)
    window = 2 * DENSE_LIMIT
    best = np.argpartition(-scores, window)[:window]
    return best[np.argsort(-scores[best], kind="stable")]


def direct_scan(embedder: UnitEmbedder, repository: SQLiteRepository, text: str) -> Scan:
    """The service's semantic scan of the dense scope, in a reading unit of work, with
    the service's default minimum score."""
    with repository.unit_of_work("search", write=False) as uow:
        return scan(
            uow,
            dense_query(text),
            snapshot(embedder),
            None,
            MINIMUM_SCORE,
            embedder.embed_query(text),
            2 * DENSE_LIMIT,
        )


def dense_checks(np: Any, item: DenseSize, th: TrueHeart, repository: SQLiteRepository) -> None:
    """Before measuring: both scans give the same answer, every planted near-duplicate
    is the first semantic candidate of the hybrid capsule, and what is compared
    exactly; the peak memory of one zero-dependency search."""
    compared: dict[str, list[int]] = {"python": [], "numpy": []}
    for text in [*item.texts, *item.planted]:
        with zero_dependency():
            plain = direct_scan(item.embedder, repository, text)
        compared["python"].append(plain.compared)
        if plain.scanned != item.size:
            raise CheckFailed(f"the scan of {item.size:,} considered {plain.scanned:,} vectors")
        if np is not None:
            fast = direct_scan(item.embedder, repository, text)
            compared["numpy"].append(fast.compared)
            if (fast.candidates, fast.scanned) != (plain.candidates, plain.scanned):
                raise CheckFailed(f"the numpy scan of {item.size:,} differs for {text!r}")
    found = 0
    for text, memory_id in item.planted.items():
        for mode in ("python", "numpy") if np is not None else ("python",):
            with contextlib.ExitStack() as stack:
                if mode == "python":
                    stack.enter_context(zero_dependency())
                capsule = th.search(dense_query(text))
            first = next(
                (
                    entry.memory_id
                    for entry in capsule.trace
                    for signal in entry.signals
                    if signal.source.value == "semantic" and signal.rank == 1
                ),
                None,
            )
            found += first == memory_id and memory_id in {i.memory.memory_id for i in capsule.items}
    runs = len(item.planted) * (2 if np is not None else 1)
    if found != runs:
        raise CheckFailed(f"a planted near-duplicate was missed at {item.size:,}")
    item.figures["planted_found_share"] = found / runs
    for mode, counts in compared.items():
        if counts:
            item.figures[f"compared_{mode}_mean"] = statistics.fmean(counts)
            item.figures[f"compared_{mode}_max"] = max(counts)
    with zero_dependency():
        th.search(dense_query(item.texts[0]))  # warm
        gc.collect()
        tracemalloc.start()
        th.search(dense_query(item.texts[1]))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    item.figures["zero_dependency_peak_kib"] = peak / 1024
    item.figures["vectors_mib"] = item.size * DENSE_DIMENSIONS * 4 / 2**20


@dataclass
class AfterOpening:
    """A case timed from just after a fresh open: ``open()`` (not timed) gives the call
    to time and what to close afterwards."""

    operation: str
    open: Callable[[], tuple[Callable[[], object], Callable[[], object]]]
    repeat: int
    warmup: int = 1
    samples: list[int] = field(default_factory=list)

    def run(self, count: int, *, record: bool) -> None:
        for _ in range(count):
            first, close = self.open()
            try:
                start = time.perf_counter_ns()
                first()
                elapsed = time.perf_counter_ns() - start
            finally:
                close()
            if record:
                self.samples.append(elapsed)


def first_query_cases(item: DenseSize, repeat: int) -> list[AfterOpening]:
    """A new service's first hybrid search (numpy's copy of the scope is read then, when
    numpy is installed), and floor (b): a new plain connection reading the vector bytes
    of the scope. Opening is not timed in either."""

    def service() -> tuple[Callable[[], object], Callable[[], object]]:
        th = TrueHeart(SQLiteRepository(item.path), clock=Clock(), embedder=item.embedder)
        return bound(th.search, dense_query(item.texts[0])), th.close

    def connection() -> tuple[Callable[[], object], Callable[[], object]]:
        conn = sqlite3.connect(f"file:{item.path}?mode=ro", uri=True)
        return bound(read_floor, conn), conn.close

    return [AfterOpening("first", service, repeat), AfterOpening("read", connection, repeat)]


def median_us(case: Case | AfterOpening) -> float:
    return float(statistics.median(case.samples)) / 1000


def p95(case: Case | AfterOpening) -> float:
    return percentile(sorted(case.samples), 0.95) / 1000


def bound(function: Callable[..., object], *args: object) -> Callable[[], object]:
    """``function(*args)`` as a call without arguments."""
    return lambda: function(*args)


def any_result(_: object) -> bool:
    return True


def measure_dense(np: Any, item: DenseSize, plan: Plan) -> None:
    repository = SQLiteRepository(item.path)
    with TrueHeart(repository, clock=Clock(), embedder=item.embedder) as th:
        dense_checks(np, item, th, repository)
        conn = floor_connection(item.path)
        vectors = [item.embedder.embed_query(text) for text in item.texts]
        slow = max(3, min(plan.syncs * 7, 300_000 // item.size))
        fast = plan.repeat // 10

        def zero_dep(text: str) -> object:
            with zero_dependency():
                return direct_scan(item.embedder, repository, text)

        label = f"{item.size}"
        # Three rotations, each of cases of a like cost, so that a heavy call does not
        # leave the next one of a light case a cold machine.
        per_vector = [
            Case("old", label, [bound(old_scan, conn, v) for v in vectors], any_result, slow, 1),
            Case("scan", label, [bound(zero_dep, t) for t in item.texts], any_result, slow, 1),
        ]
        searches = [
            Case(
                "hybrid",
                label,
                [bound(th.search, dense_query(t)) for t in item.texts],
                any_result,
                fast,
                5,
            )
        ]
        if np is not None:
            matrix = load_matrix(np, item.path)
            calls = [bound(brute_force, np, matrix, v) for v in vectors]
            searches.append(Case("brute", label, calls, any_result, fast, 5))
        run_interleaved(per_vector, 1)
        run_interleaved(searches, SLICE)
        conn.close()
    cases = [*per_vector, *searches]
    first_cases = first_query_cases(item, max(3, plan.syncs))
    run_interleaved(first_cases, 1)
    by_name: dict[str, Case | AfterOpening] = {c.operation: c for c in cases}
    by_name.update((c.operation, c) for c in first_cases)
    n = item.size
    item.figures.update(
        {
            "memories": n,
            "numpy": np is not None,
            "old_us_per_vector": median_us(by_name["old"]) / n,
            "scan_us_per_vector": median_us(by_name["scan"]) / n,
            "scan_speedup": median_us(by_name["old"]) / median_us(by_name["scan"]),
            "hybrid_p50_ms": median_us(by_name["hybrid"]) / 1000,
            "hybrid_p95_ms": p95(by_name["hybrid"]) / 1000,
            "scan_p50_ms": median_us(by_name["scan"]) / 1000,
            "old_p50_ms": median_us(by_name["old"]) / 1000,
            "first_p50_ms": median_us(by_name["first"]) / 1000,
            "read_p50_ms": median_us(by_name["read"]) / 1000,
            "first_over_read": median_us(by_name["first"]) / median_us(by_name["read"]),
            "samples_slow": len(by_name["scan"].samples),
            "samples_fast": len(by_name["hybrid"].samples),
        }
    )
    if "brute" in by_name:
        item.figures["brute_p50_ms"] = median_us(by_name["brute"]) / 1000
        item.figures["hybrid_over_brute"] = median_us(by_name["hybrid"]) / median_us(
            by_name["brute"]
        )


def dense_part(work: Path, build_root: Path, sizes: Sequence[int], plan: Plan) -> list[DenseSize]:
    np = numpy_or_none()
    with tempfile.TemporaryDirectory(prefix="trueheart-dense-", dir=build_root) as btmp:
        build_dense(Path(btmp), work, sizes)
    rng = random.Random(SEED + 7)
    items = []
    for size in sizes:
        embedder = UnitEmbedder()
        planted = {}
        for k in range(PLANTED):
            target = rng.randrange(size)
            text = f"near {DENSE_WORDS[k]} {k}"
            embedder.plant(text, dense_text(target))
            planted[text] = f"d{target:07d}"
        texts = [f"{rng.choice(DENSE_WORDS)} question {k}" for k in range(DENSE_QUERIES)]
        item = DenseSize(size, work / f"dense-{size}.db", embedder, texts, planted)
        print(f"measuring the dense scope of {size:,}", file=sys.stderr, flush=True)
        measure_dense(np, item, plan)
        items.append(item)
    return items


def report_dense(items: Sequence[DenseSize]) -> list[dict[str, Any]]:
    numpy_run = any(item.figures["numpy"] for item in items)
    print(
        f"\nwhole-scope semantic scan, {DENSE_DIMENSIONS} dimensions, random unit vectors, "
        f"limit {DENSE_LIMIT} (window {2 * DENSE_LIMIT}); numpy "
        + ("installed" if numpy_run else "not installed")
    )
    header = (
        f"{'memories':>9} {'old µs/vec':>11} {'new µs/vec':>11} {'speedup':>8} "
        f"{'hybrid ms':>10} {'brute ms':>9} {'hyb/brute':>10} {'first ms':>9} "
        f"{'read ms':>8} {'first/read':>11}"
    )
    print(header + "\n" + "-" * len(header))
    for item in items:
        f = item.figures
        print(
            f"{f['memories']:>9,} {f['old_us_per_vector']:>11.2f} "
            f"{f['scan_us_per_vector']:>11.2f} {f['scan_speedup']:>7.2f}x "
            f"{f['hybrid_p50_ms']:>10.2f} {f.get('brute_p50_ms', math.nan):>9.2f} "
            f"{f.get('hybrid_over_brute', math.nan):>9.2f}x {f['first_p50_ms']:>9.1f} "
            f"{f['read_p50_ms']:>8.1f} {f['first_over_read']:>10.2f}x"
        )
    print(
        "old = every vector read and scored with math.fsum (the former scan, uncapped); "
        "new = the zero-dependency scan (sketches, exact rescoring); hybrid = a whole "
        "search (numpy's scan when installed); brute = numpy scoring the vectors already "
        "in memory and ranking the window; first = a new service's first search "
        "(reads the scope's copy); read = a new plain connection reading the vector bytes"
    )
    header = (
        f"{'memories':>9} {'compared (zero-dep)':>20} {'compared (numpy)':>17} "
        f"{'planted found':>14} {'peak KiB':>9} {'vectors MiB':>12}"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for item in items:
        f = item.figures
        numpy_compared = (
            f"{f['compared_numpy_mean']:.1f} (max {f['compared_numpy_max']})"
            if "compared_numpy_mean" in f
            else "-"
        )
        print(
            f"{f['memories']:>9,} "
            f"{f['compared_python_mean']:>10.1f} (max {f['compared_python_max']:>4}) "
            f"{numpy_compared:>17} {f['planted_found_share']:>13.0%} "
            f"{f['zero_dependency_peak_kib']:>9.0f} {f['vectors_mib']:>12.1f}"
        )
    print(
        "compared = vectors read in full and compared exactly per query (mean); planted = "
        "near-duplicates found first; peak = tracemalloc peak of one zero-dependency search"
    )
    return [item.figures for item in items]


def dense_targets(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []
    for r in results:
        if r["memories"] in SCAN_SPEEDUP_SIZES:
            targets.append(
                {
                    "target": f"zero-dependency scan at {r['memories']:,}: time per vector "
                    f"within 1/{SCAN_SPEEDUP:g} of the old scan's (new / old)",
                    "value": 1 / r["scan_speedup"],
                    "limit": 1 / SCAN_SPEEDUP,
                }
            )
        if r["memories"] == ACCELERATED_SIZE and "hybrid_over_brute" in r:
            targets.append(
                {
                    "target": f"hybrid search with numpy at {ACCELERATED_SIZE:,} within "
                    f"{ACCELERATED_LIMIT:g}x of numpy brute force",
                    "value": r["hybrid_over_brute"],
                    "limit": ACCELERATED_LIMIT,
                }
            )
        if r["memories"] in FIRST_SIZES:
            targets.append(
                {
                    "target": f"first query at {r['memories']:,} within {FIRST_LIMIT:g}x of "
                    "reading the vectors",
                    "value": r["first_over_read"],
                    "limit": FIRST_LIMIT,
                }
            )
    return targets


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
    parser.add_argument(
        "--parts",
        type=parse_parts,
        metavar="PART,...",
        default=PARTS,
        help="hashing (sync and search with HashingEmbedder), dense (the whole-scope scan "
        "of 384-dimensional vectors); default both",
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
        f"load {info['load_average_at_start']:.2f} | {'quick' if args.quick else 'full'} | "
        f"numpy {'installed' if numpy_or_none() is not None else 'not installed'} | "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
    )
    payload: dict[str, Any] = {
        "machine": info,
        "mode": "quick" if args.quick else "full",
        "sizes": list(sizes),
        "parts": list(args.parts),
        "numpy": numpy_or_none() is not None,
    }
    targets: list[dict[str, Any]] = []
    profiles: list[tuple[str, pstats.Stats]] = []
    with tempfile.TemporaryDirectory(prefix="trueheart-semantic-bench-") as tmp:
        work = Path(tmp)
        shm = Path("/dev/shm")
        build_root = shm if shm.is_dir() and os.access(shm, os.W_OK) else work
        if "hashing" in args.parts:
            part, found = hashing_part(args, plan, sizes, work, build_root, profiles)
            payload["hashing"] = part
            targets += found
        if "dense" in args.parts:
            t0 = time.perf_counter()
            items = dense_part(work, build_root, sizes, plan)
            results = report_dense(items)
            payload["dense"] = {"seconds": time.perf_counter() - t0, "sizes": results}
            targets += dense_targets(results)
    elapsed, load_at_end = report_targets(targets, started)
    if args.json is not None:
        payload.update(
            {"targets": targets, "run_seconds": elapsed, "load_average_at_end": load_at_end}
        )
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    for label, stats in profiles:
        print(f"\ncProfile of {label}")
        stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(30)
    return 0


PARTS = ("hashing", "dense")


def parse_parts(value: str) -> tuple[str, ...]:
    parts = tuple(part.strip() for part in value.split(",") if part.strip())
    if not parts or set(parts) - set(PARTS):
        raise argparse.ArgumentTypeError(f"parts: a comma-separated choice of {', '.join(PARTS)}")
    return parts


def hashing_part(
    args: argparse.Namespace,
    plan: Plan,
    sizes: Sequence[int],
    work: Path,
    build_root: Path,
    profiles: list[tuple[str, pstats.Stats]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The sync and the search with ``HashingEmbedder(256)`` against lexical search and
    the FTS5 floor; returns the figures and the targets."""
    corpus = Corpus(SEED)
    texts = corpus.texts(SEED + 1, max(sizes))
    queries = corpus.queries(SEED + 3)
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
    return report(sizes, plan, queries, build_seconds, syncs, cases, scans)


def report(
    sizes: Sequence[int],
    plan: Plan,
    queries: Sequence[list[str]],
    build_seconds: float,
    syncs: Sequence[SyncSize],
    cases: Sequence[Case],
    scans: dict[int, dict[str, float]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
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
    print("\nsearch, the whole scope scanned (no scan cap)")
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
    part = {
        "queries": len(queries),
        "embedder": f"HashingEmbedder({DIMENSIONS})",
        "scan_cap": SCAN_CAP,
        "sync_batch_size": SYNC_BATCH,
        "build_seconds": build_seconds,
        "sync": sync_results,
        "search": results,
    }
    return part, targets


if __name__ == "__main__":
    sys.exit(main())
