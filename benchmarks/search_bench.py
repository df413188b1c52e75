"""Latency benchmark of ``TrueHeart.search``, against a plain SQLite FTS5 floor.

Run from the project root::

    .venv/bin/python benchmarks/search_bench.py           # 1,000 / 10,000 / 100,000 memories
    .venv/bin/python benchmarks/search_bench.py --quick   # fewer samples, 1,000 / 10,000 only
    .venv/bin/python benchmarks/search_bench.py --sizes 1000,10000 --json results.json

Each store holds ``N`` memories in one scope. Their texts are sentences of 8 to 24 words
drawn from a Zipf-distributed vocabulary of 20,000 synthetic word forms (seeded, so every
run searches the same texts; the store of 1,000 holds the first 1,000 texts of the store of
10,000, and so on); one memory in 250 is a Japanese sentence instead, so the bigram path of
the tokenizer is exercised too. A further store holds the largest ``N`` memories of the
measured scope interleaved with as many memories spread over 1,000 other scopes, written
alternately, with the same vocabulary: it shows what the rest of a shared file costs a
scope. Memories cite shared source events (one event per 100 memories).

Queries are 2 or 3 distinct words drawn log-uniformly from the vocabulary ranks 50 to
2,000 (mid-frequency words; 400 distinct queries, seeded), searched with
``SearchQuery(scope, text, as_of, budget_tokens=512, limit=20)``.

The floor is an FTS5 table in a plain ``sqlite3`` database (same texts, autocommit,
``journal_mode=WAL``, ``synchronous=FULL``, as the library) queried with
``SELECT rowid, bm25(f) FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT 20``, where the MATCH
string ORs the quoted query words and, for a query word that no text of the store holds,
the words of the store one edit away from it, and for every query word its inflections
held by the store (what the library's spelling tolerance scores, computed here once from
the floor's texts), stop
words left out as the library leaves them out. The floor ranks the same
matches (before measuring, every query's ``matched`` count is checked against the floor's
count of matching rows) but reads no body, verifies nothing, packs nothing, and does not
have to find the corrections.

The stores are built through the public API (``ingest_events`` in batches, then one
``materialize_once`` per memory). When ``/dev/shm`` exists they are built there (fast
flushes) and the finished files are copied into a temporary directory, where every
measurement runs; everything is deleted afterwards. Each figure is the median (p50) and
the 95th percentile (nearest rank) of the wall time of single calls
(``time.perf_counter_ns``), after warm-up calls, with the garbage collector paused. Every
search and every floor is sampled in rotation, in slices of 20 consecutive calls, all
cases walking the same sequence of queries, so that a drift of the machine affects both
sides of a ratio alike.

Hybrid (semantic) search and the semantic sync are measured by ``semantic_bench.py``, on
the same stores and queries.

Every measured capsule is checked (at most ``limit`` items, ``used_tokens`` equal to the
items' costs and within the budget), most queries must return at least one item, and
Japanese queries must find exactly the Japanese memories that contain them; a failed check
stops the program with a message. The targets printed at the end are information, not
assertions: the exit status is 0 whether they are met or not.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
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
    MemoryCapsule,
    MemoryDraft,
    RawEventDraft,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.domain.search.spelling import corrections, inflections
from trueheart_core.domain.search.stopwords import STOP_WORDS
from trueheart_core.domain.search.tokenize import tokenize

AS_OF = BASE + timedelta(days=30)  # after every memory's creation, long before any deadline
SEED = 20260101

FULL_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
MIN_SIZE = 100
MAX_SIZE = 1_000_000

VOCABULARY = 20_000  # distinct word forms
ZIPF_EXPONENT = 1.0
WORDS_PER_MEMORY = (8, 24)
JAPANESE_EVERY = 250  # one memory in 250 is a Japanese sentence
MEMORIES_PER_EVENT = 100  # memories citing each source event
EVENT_BATCH = 100  # events per ingest_events call
OTHER_SCOPES = 1_000  # scopes sharing the file with the measured scope in the crowded store

QUERIES = 400  # distinct queries
QUERY_RANKS = (50, 2_000)  # vocabulary ranks of the query words
QUERY_WORDS = (2, 3)
BUDGET_TOKENS = 512
LIMIT = 20

SLICE = 20  # consecutive calls of one case before the rotation moves on
MIN_HIT_SHARE = 0.8  # share of measured calls that must return at least one item

# Targets, printed as information only (ratios of medians).
FLOOR_TARGET_SIZE = 100_000
FLOOR_LIMIT = 5.0
GROWTH_SIZES = (1_000, 10_000)
GROWTH_LIMIT = 3.0

KINDS = ("note", "preference", "fact", "episode")

# Japanese word forms for the sentences of the CJK path. None holds a letter that NFKC
# turns into ASCII, so the floor's tokenizer and the library's agree on every ASCII query.
JAPANESE_WORDS = (
    "東京",
    "大阪",
    "会議",
    "資料",
    "予定",
    "来週",
    "毎朝",
    "報告",
    "週末",
    "家族",
    "旅行",
    "映画",
    "音楽",
    "料理",
    "野菜",
    "電車",
    "仕事",
    "友達",
    "天気",
    "散歩",
    "読書",
    "写真",
    "病院",
    "学校",
    "図書館",
    "コーヒー",
    "メール",
    "プロジェクト",
    "スケジュール",
    "ミーティング",
    "カレンダー",
    "レポート",
    "チーム",
    "サンプル",
    "ノート",
    "さくら",
    "ひまわり",
    "おにぎり",
    "みそしる",
    "すき",
    "きらい",
    "たのしい",
    "いそがしい",
    "行く",
    "見る",
    "書く",
    "読む",
    "話す",
    "作る",
    "送る",
)
JAPANESE_PARTICLES = ("は", "が", "を", "に", "で", "と", "の", "へ", "も")
# Two-character words: each is exactly one bigram term, so the memories that match it are
# exactly those whose text contains it.
JAPANESE_CHECKS = ("会議", "東京", "天気", "写真")

ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "ch")
VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
CODAS = ("", "", "", "n", "r", "s", "l")


@dataclass(frozen=True)
class Plan:
    """How many samples each case takes."""

    repeat: int
    warmup: int


FULL = Plan(repeat=2_000, warmup=40)
QUICK = Plan(repeat=400, warmup=20)


# --- texts ------------------------------------------------------------------------------


def vocabulary(rng: random.Random) -> list[str]:
    """VOCABULARY distinct ASCII word forms, shorter forms first (they take the frequent
    Zipf ranks, as in natural language)."""
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < VOCABULARY:
        syllables = rng.choices((1, 2, 3, 4), weights=(2, 5, 4, 2))[0]
        word = "".join(
            rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(syllables)
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    words.sort(key=len)  # stable: the order of generation breaks ties
    return words


class Corpus:
    """Seeded sentence generator over a Zipf-distributed vocabulary."""

    def __init__(self, seed: int) -> None:
        self.words = vocabulary(random.Random(seed))
        weights = (1.0 / rank**ZIPF_EXPONENT for rank in range(1, VOCABULARY + 1))
        self.cumulative = list(itertools.accumulate(weights))

    def sentence(self, rng: random.Random) -> str:
        count = rng.randint(*WORDS_PER_MEMORY)
        words = rng.choices(self.words, cum_weights=self.cumulative, k=count)
        if count > 12:
            comma = rng.randrange(4, count - 4)
            words[comma] += ","
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def texts(self, seed: int, count: int) -> list[str]:
        """``count`` memory texts; every JAPANESE_EVERY-th one is Japanese."""
        rng = random.Random(seed)
        return [
            japanese_sentence(rng)
            if n % JAPANESE_EVERY == JAPANESE_EVERY // 2
            else self.sentence(rng)
            for n in range(count)
        ]

    def queries(self, seed: int) -> list[list[str]]:
        """QUERIES distinct queries of 2 or 3 distinct mid-frequency words."""
        rng = random.Random(seed)
        low, high = math.log(QUERY_RANKS[0]), math.log(QUERY_RANKS[1] + 1)
        found: list[list[str]] = []
        seen: set[tuple[str, ...]] = set()
        while len(found) < QUERIES:
            count = rng.choice(QUERY_WORDS)
            ranks: set[int] = set()
            while len(ranks) < count:
                ranks.add(min(QUERY_RANKS[1], int(math.exp(rng.uniform(low, high)))))
            words = [self.words[rank - 1] for rank in sorted(ranks)]
            rng.shuffle(words)
            if tuple(sorted(words)) not in seen:
                seen.add(tuple(sorted(words)))
                found.append(words)
        return found


def japanese_sentence(rng: random.Random) -> str:
    count = rng.randint(4, 8)
    parts = [
        rng.choice(JAPANESE_WORDS) + (rng.choice(JAPANESE_PARTICLES) if k < count - 1 else "")
        for k in range(count)
    ]
    if count > 5:
        parts[2] += "、"
    return "".join(parts) + "。"


def floor_vocabulary(conn: sqlite3.Connection) -> frozenset[str]:
    """The terms of the floor's texts, by the library's tokenizer (which agrees with
    FTS5's on every ASCII word of these texts)."""
    return frozenset(
        term for (body,) in conn.execute("SELECT body FROM f") for term in tokenize(body)
    )


def floor_words(words: Sequence[str], vocabulary: frozenset[str]) -> list[str]:
    """The words the library scores for a query: each query word that is not a stop
    word (all of them when every one is); the inflections of every such word, and for a
    word that no text holds, its corrections, that some text holds and that are not stop
    words (docs/search.md)."""
    content = [word for word in words if word not in STOP_WORDS] or list(words)
    found = list(content)
    for word in content:
        variants = corrections(word) if word not in vocabulary else inflections(word)
        found += [c for c in variants if c in vocabulary and c not in found and c not in STOP_WORDS]
    return found


def fts_match(words: Sequence[str]) -> str:
    """The FTS5 MATCH string that ORs the words, each quoted as an FTS5 string."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)


# --- stores -----------------------------------------------------------------------------


def scope(name: str) -> Scope:
    return Scope("bench-tenant", "bench-owner", name)


MEASURED = scope("measured")


def other_scope(n: int) -> Scope:
    return scope(f"other-{n:04d}")


def event_id(n: int) -> str:
    """The source event of the ``n``-th memory of a scope."""
    return f"e{n // MEMORIES_PER_EVENT:05d}"


def ingest_sources(th: TrueHeart, scope_: Scope, first: int, end: int) -> None:
    """Ingest the source events of memories ``first`` to ``end - 1`` of ``scope_`` that
    earlier memories did not need."""
    start = -(-first // MEMORIES_PER_EVENT)
    stop = -(-end // MEMORIES_PER_EVENT)
    drafts = [
        RawEventDraft(
            event_id=event_id(k * MEMORIES_PER_EVENT),
            scope=scope_,
            source=SourceRef("bench-source", "chat", BASE, TrustLevel.CONFIRMED),
            content=f"Synthetic conversation {k} of the benchmark.",
            retention=LONG,
        )
        for k in range(start, stop)
    ]
    for low in range(0, len(drafts), EVENT_BATCH):
        th.ingest_events(drafts[low : low + EVENT_BATCH])


def memory(scope_: Scope, memory_id: str, n: int, text: str) -> MemoryDraft:
    return MemoryDraft(
        memory_id=memory_id,
        scope=scope_,
        content=text,
        source_event_ids=(event_id(n),),
        kind=KINDS[n % len(KINDS)],
        trust=TrustLevel.OBSERVED,
        created_at=BASE + timedelta(seconds=n),
    )


class Progress:
    """Build progress on stderr, every 10,000 memories."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0
        self.started = time.perf_counter()

    def step(self) -> None:
        self.done += 1
        if self.done % 10_000 == 0 or self.done == self.total:
            elapsed = time.perf_counter() - self.started
            print(
                f"  {self.label}: {self.done:,} / {self.total:,} memories, {elapsed:.0f} s",
                file=sys.stderr,
                flush=True,
            )


def copy_store(source: Path, target: Path) -> None:
    for suffix in ("", "-wal"):  # the log is normally gone once the store is closed
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def build_alone(build: Path, work: Path, sizes: Sequence[int], texts: Sequence[str]) -> None:
    """One scope grown to each size in turn; a copy of the file is kept at each size."""
    path = build / "alone.db"
    clock = Clock()
    progress = Progress("one scope", max(sizes))
    done = 0
    for size in sorted(sizes):
        with TrueHeart(SQLiteRepository(path), clock=clock) as th:
            ingest_sources(th, MEASURED, done, size)
            for n in range(done, size):
                th.materialize_once(memory(MEASURED, f"m{n:07d}", n, texts[n]))
                progress.step()
        done = size
        copy_store(path, work / f"search-{size}.db")


def build_crowded(build: Path, work: Path, texts: Sequence[str], others: Sequence[str]) -> int:
    """The measured scope's memories written alternately with as many memories of other
    scopes (memory ``j`` of the others goes to scope ``j mod scopes``); returns the number
    of other scopes."""
    path = build / "crowded.db"
    scopes = min(OTHER_SCOPES, len(others))
    per_scope = -(-len(others) // scopes)
    progress = Progress("shared file", len(texts) + len(others))
    with TrueHeart(SQLiteRepository(path), clock=Clock()) as th:
        ingest_sources(th, MEASURED, 0, len(texts))
        for s in range(scopes):
            ingest_sources(th, other_scope(s), 0, per_scope)
        for n in range(max(len(texts), len(others))):
            if n < len(texts):
                th.materialize_once(memory(MEASURED, f"m{n:07d}", n, texts[n]))
                progress.step()
            if n < len(others):
                s, k = n % scopes, n // scopes
                th.materialize_once(memory(other_scope(s), f"o{n:07d}", k, others[n]))
                progress.step()
    copy_store(path, work / "search-crowded.db")
    return scopes


def require_fts5() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
    except sqlite3.OperationalError as error:
        raise SystemExit(
            f"this Python's sqlite3 (SQLite {sqlite3.sqlite_version}) has no FTS5 "
            f"({error}); the search floor needs it"
        ) from None
    finally:
        conn.close()


def build_floor(path: Path, texts: Sequence[str]) -> None:
    conn = floor_connection(path)
    try:
        conn.execute("CREATE VIRTUAL TABLE f USING fts5(body)")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO f (rowid, body) VALUES (?, ?)", enumerate(texts, 1))
        conn.execute("COMMIT")
    finally:
        conn.close()


def count_memories(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (memories,) = conn.execute("SELECT count(*) FROM memories").fetchone()
        (scopes,) = conn.execute("SELECT count(DISTINCT scope_id) FROM memories").fetchone()
        return {"memories": int(memories), "scopes": int(scopes)}
    finally:
        conn.close()


# --- measurement ------------------------------------------------------------------------


class CheckFailed(SystemExit):
    """A sanity check failed: the figures would not mean what they claim."""


@dataclass
class Case:
    """One measured operation, called with the queries in turn."""

    operation: str  # "search" or "floor"
    store: str
    calls: list[Callable[[], object]]
    check: Callable[[object], bool]  # checks the result; True if it holds an item
    repeat: int
    warmup: int
    samples: list[int] = field(default_factory=list)
    done: int = 0
    hits: int = 0
    measured: int = 0

    def run(self, count: int, *, record: bool) -> None:
        for _ in range(count):
            call = self.calls[self.done % len(self.calls)]
            self.done += 1
            start = time.perf_counter_ns()
            result = call()
            elapsed = time.perf_counter_ns() - start
            hit = self.check(result)
            if record:
                self.samples.append(elapsed)
                self.measured += 1
                self.hits += hit

    def hit_share(self) -> float:
        return self.hits / self.measured if self.measured else 0.0


def check_hit_shares(cases: Sequence[Case]) -> None:
    """Stop the program unless every case returned items for most of its calls."""
    for case in cases:
        if case.hit_share() < MIN_HIT_SHARE:
            raise CheckFailed(
                f"{case.operation} ({case.store}) returned items for only "
                f"{case.hit_share():.0%} of its calls (at least {MIN_HIT_SHARE:.0%} expected): "
                "the queries do not exercise the search"
            )


def p50_us(case: Case) -> float:
    return float(statistics.median(case.samples)) / 1000


def p95_us(case: Case) -> float:
    return percentile(sorted(case.samples), 0.95) / 1000


def capsule_check(store: str) -> Callable[[object], bool]:
    def check(result: object) -> bool:
        if not isinstance(result, MemoryCapsule):
            raise CheckFailed(f"search ({store}) returned {type(result).__name__}")
        spent = sum(item.tokens for item in result.items)
        if not (
            result.used_tokens == spent <= result.budget_tokens == BUDGET_TOKENS
            and len(result.items) <= LIMIT
            and len(result.items) <= result.considered <= result.matched
        ):
            raise CheckFailed(
                f"search ({store}): capsule breaks its budget or limit: used "
                f"{result.used_tokens} (items cost {spent}) of {result.budget_tokens} tokens, "
                f"{len(result.items)} items (limit {LIMIT}), {result.considered} considered, "
                f"{result.matched} matched"
            )
        return bool(result.items)

    return check


def floor_check(result: object) -> bool:
    if not isinstance(result, list) or len(result) > LIMIT:
        raise CheckFailed(f"the FTS5 floor returned {result!r:.80}")
    return bool(result)


def search_call(th: TrueHeart, query: SearchQuery) -> Callable[[], object]:
    return lambda: th.search(query)


def floor_call(conn: sqlite3.Connection, match: str) -> Callable[[], object]:
    sql = "SELECT rowid, bm25(f) FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT 20"
    return lambda: conn.execute(sql, (match,)).fetchall()


def search_query(text: str, *, semantic: bool = True) -> SearchQuery:
    """The measured query; ``semantic=False`` asks a service with an embedder for the
    lexical ranking alone (a service without one is lexical either way)."""
    return SearchQuery(
        MEASURED, text, AS_OF, budget_tokens=BUDGET_TOKENS, limit=LIMIT, semantic=semantic
    )


def check_matches(
    store: str,
    th: TrueHeart,
    conn: sqlite3.Connection,
    queries: Sequence[list[str]],
    *,
    semantic: bool = True,
) -> None:
    """Before measuring: every query matches as many memories as the floor has rows."""
    vocabulary = floor_vocabulary(conn)
    for words in queries:
        capsule = th.search(search_query(" ".join(words), semantic=semantic))
        sql = "SELECT count(*) FROM f WHERE f MATCH ?"
        (rows,) = conn.execute(sql, (fts_match(floor_words(words, vocabulary)),)).fetchone()
        if capsule.matched != rows:
            raise CheckFailed(
                f"search ({store}) matched {capsule.matched} memories for {' '.join(words)!r}, "
                f"the FTS5 floor {rows}: they do not answer the same question"
            )


def check_japanese(
    store: str, th: TrueHeart, texts: Sequence[str], *, semantic: bool = True
) -> None:
    """Japanese queries find exactly the Japanese memories containing the word."""
    for word in JAPANESE_CHECKS:
        expected = sum(word in text for text in texts)
        capsule = th.search(search_query(word, semantic=semantic))
        if capsule.matched != expected or (expected and not capsule.items):
            raise CheckFailed(
                f"search ({store}) for {word!r} matched {capsule.matched} memories with "
                f"{len(capsule.items)} items; {expected} memories contain it"
            )
        if any(word not in item.memory.content for item in capsule.items):
            raise CheckFailed(f"search ({store}) for {word!r} returned a memory without it")


# --- report -----------------------------------------------------------------------------


def parse_sizes(value: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(part.replace("_", "")) for part in value.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError("sizes: comma-separated whole numbers") from None
    if not sizes or not all(MIN_SIZE <= size <= MAX_SIZE for size in sizes):
        raise argparse.ArgumentTypeError(f"sizes: each from {MIN_SIZE:,} through {MAX_SIZE:,}")
    return sizes


@dataclass(frozen=True)
class Store:
    """A measured store: its label, the memories of the measured scope, its floor."""

    key: str
    label: str
    size: int
    path: Path
    floor: Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples; 1k and 10k only")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        metavar="N,N,...",
        help="memories in the measured scope (default 1000,10000,100000; quick 1000,10000)",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    sizes: tuple[int, ...] = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    require_fts5()
    started = time.perf_counter()
    info = machine()
    print(
        f"TrueHeart Core {info['trueheart_core']} (source {info['source_digest']}) | "
        f"Python {info['python']} | SQLite {info['sqlite']} | {info['nproc']} CPUs | "
        f"load {info['load_average_at_start']:.2f} | {'quick' if args.quick else 'full'}"
    )

    corpus = Corpus(SEED)
    largest = max(sizes)
    texts = corpus.texts(SEED + 1, largest)
    others = corpus.texts(SEED + 2, largest)
    queries = corpus.queries(SEED + 3)

    with tempfile.TemporaryDirectory(prefix="trueheart-search-bench-") as tmp:
        work = Path(tmp)
        shm = Path("/dev/shm")
        build_root = shm if shm.is_dir() and os.access(shm, os.W_OK) else work
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="trueheart-build-", dir=build_root) as btmp:
            build = Path(btmp)
            print(f"building stores in {build_root}", file=sys.stderr, flush=True)
            build_alone(build, work, sizes, texts)
            other_scopes = build_crowded(build, work, texts, others)
        for size in sizes:
            build_floor(work / f"fts-{size}.db", texts[:size])
        build_seconds = time.perf_counter() - t0

        stores = [
            Store(f"{size}", f"{size:,}", size, work / f"search-{size}.db", work / f"fts-{size}.db")
            for size in sizes
        ]
        stores.append(
            Store(
                "crowded",
                f"{largest:,} + {largest:,} in {other_scopes:,} other scopes",
                largest,
                work / "search-crowded.db",
                work / f"fts-{largest}.db",
            )
        )
        contents = {store.key: count_memories(store.path) for store in stores}
        files = {
            store.key: {
                "store_bytes": store.path.stat().st_size,
                "floor_bytes": store.floor.stat().st_size,
            }
            for store in stores
        }
        print(f"stores built in {build_seconds:.0f} s")
        for store in stores:
            print(
                f"  {store.label}: {contents[store.key]['memories']:,} memories in "
                f"{contents[store.key]['scopes']:,} scope(s), "
                f"{files[store.key]['store_bytes'] / 2**20:.1f} MiB "
                f"(FTS5 floor {files[store.key]['floor_bytes'] / 2**20:.1f} MiB)"
            )

        services: list[TrueHeart] = []
        connections: list[sqlite3.Connection] = []
        cases: list[Case] = []
        try:
            for store in stores:
                th = TrueHeart(SQLiteRepository(store.path), clock=Clock())
                services.append(th)
                conn = floor_connection(store.floor)
                connections.append(conn)
                check_matches(store.label, th, conn, queries)
                check_japanese(store.label, th, texts[: store.size])
                vocabulary = floor_vocabulary(conn)
                matches = [fts_match(floor_words(words, vocabulary)) for words in queries]
                cases.append(
                    Case(
                        "floor",
                        store.key,
                        [floor_call(conn, match) for match in matches],
                        floor_check,
                        plan.repeat,
                        plan.warmup,
                    )
                )
                cases.append(
                    Case(
                        "search",
                        store.key,
                        [search_call(th, search_query(" ".join(words))) for words in queries],
                        capsule_check(store.label),
                        plan.repeat,
                        plan.warmup,
                    )
                )
            print(
                f"{len(queries)} distinct queries checked against the floor; measuring "
                f"{plan.repeat:,} calls of each of {len(cases)} cases",
                file=sys.stderr,
                flush=True,
            )
            run_interleaved(cases, SLICE)
        finally:
            for th in services:
                th.close()
            for conn in connections:
                conn.close()

    check_hit_shares(cases)

    by_key = {(case.operation, case.store): case for case in cases}
    results: list[dict[str, Any]] = []
    for store in stores:
        search, floor = by_key[("search", store.key)], by_key[("floor", store.key)]
        results.append(
            {
                "store": store.label,
                "measured_scope_memories": store.size,
                "memories_in_file": contents[store.key]["memories"],
                "scopes_in_file": contents[store.key]["scopes"],
                **files[store.key],
                "search_p50_us": p50_us(search),
                "search_p95_us": p95_us(search),
                "floor_p50_us": p50_us(floor),
                "floor_p95_us": p95_us(floor),
                "ratio_p50": p50_us(search) / p50_us(floor),
                "samples": len(search.samples),
                "search_hit_share": search.hit_share(),
                "floor_hit_share": floor.hit_share(),
            }
        )
    print()
    header = (
        f"{'memories in the scope':<40} {'search p50':>10} {'p95':>9} "
        f"{'FTS5 p50':>9} {'p95':>8} {'ratio':>7} {'hits':>5}"
    )
    print(header + "\n" + "-" * len(header))
    for r in results:
        print(
            f"{r['store']:<40} {r['search_p50_us']:>10.1f} {r['search_p95_us']:>9.1f} "
            f"{r['floor_p50_us']:>9.1f} {r['floor_p95_us']:>8.1f} {r['ratio_p50']:>6.2f}x "
            f"{r['search_hit_share']:>5.0%}"
        )
    print(
        "times in µs; ratio = search p50 / FTS5 floor p50; hits = share of searches "
        "returning at least one item"
    )

    def search_p50(key: str) -> float:
        return p50_us(by_key[("search", key)])

    growth: dict[str, float] = {}
    for low, high in itertools.pairwise(sizes):
        growth[f"search {high:,} / {low:,}"] = search_p50(f"{high}") / search_p50(f"{low}")
        growth[f"floor {high:,} / {low:,}"] = p50_us(by_key[("floor", f"{high}")]) / p50_us(
            by_key[("floor", f"{low}")]
        )
    growth[f"search shared file / {largest:,} alone"] = search_p50("crowded") / search_p50(
        f"{largest}"
    )
    print("\ngrowth (ratios of p50)")
    for label, value in growth.items():
        print(f"  {label:<40} {value:.2f}x")

    targets: list[dict[str, Any]] = []
    if FLOOR_TARGET_SIZE in sizes:
        targets.append(
            {
                "target": f"{FLOOR_TARGET_SIZE // 1000}k within {FLOOR_LIMIT:g}x of the FTS5 floor",
                "value": search_p50(f"{FLOOR_TARGET_SIZE}")
                / p50_us(by_key[("floor", f"{FLOOR_TARGET_SIZE}")]),
                "limit": FLOOR_LIMIT,
            }
        )
    low, high = GROWTH_SIZES
    if low in sizes and high in sizes:
        targets.append(
            {
                "target": f"{high // 1000}k within {GROWTH_LIMIT:g}x of {low // 1000}k",
                "value": search_p50(f"{high}") / search_p50(f"{low}"),
                "limit": GROWTH_LIMIT,
            }
        )
    elapsed, load_at_end = report_targets(targets, started)

    if args.json is not None:
        payload = {
            "machine": info,
            "mode": "quick" if args.quick else "full",
            "sizes": list(sizes),
            "queries": len(queries),
            "budget_tokens": BUDGET_TOKENS,
            "limit": LIMIT,
            "build_seconds": build_seconds,
            "results": results,
            "growth": growth,
            "targets": targets,
            "run_seconds": elapsed,
            "load_average_at_end": load_at_end,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
