"""Every SQL backend's answer pinned to the pure definition of each rule it evaluates.

The shared builders of ``adapters.sql.expressions`` write the SQL text of three rules
(the BM25 term, the clarity conditions of recall, a claim's status at ``as_of``). Each
``pin_*`` function below evaluates a builder's text on a real database, over a batch of
inputs stored in typed temporary tables and bound as the adapters bind them, and returns
the inputs whose answer differs from the pure function's. The functions take a DB-API
connection and the backend's :class:`Dialect` (placeholder style, double type) and use
only ``cursor().execute/executemany/fetchall`` and portable DDL, so a PostgreSQL run can
call them with a psycopg connection and ``POSTGRESQL``; here they run on an in-memory
SQLite database over inputs that hypothesis generates, edge values included.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.adapters.sql.expressions import (
    NOT_A_CLAIM,
    POSTGRESQL,
    SQLITE,
    Dialect,
    Fragment,
    Param,
    bm25_term,
    claim_status,
    fade_ratio,
    fading,
    fully_clear,
    supersedes_at,
)
from trueheart_core.domain import policy
from trueheart_core.domain.claims import ClaimStatus, status_of
from trueheart_core.domain.claims import supersedes_at as pure_supersedes_at
from trueheart_core.domain.model import MemoryStatus
from trueheart_core.domain.search import ranking

US_MIN = -62135596800 * 10**6  # 0001-01-01T00:00Z in microseconds since the epoch
US_MAX = 253402300799999999  # 9999-12-31T23:59:59.999999Z
INT64_MAX = 2**63 - 1
LONGEST_FADE = 2**62

# --- the pins: DB-API connection and dialect in, mismatching inputs out ---------------


@dataclass(frozen=True, slots=True)
class Bm25Row:
    tf: int
    length: int
    weight: float


@dataclass(frozen=True, slots=True)
class Bm25Query:
    """The parameters one search binds, and the posting rows it scores."""

    k1: float
    b: float
    average_length: float
    rows: tuple[Bm25Row, ...]


@dataclass(frozen=True, slots=True)
class Fade:
    clear_until: int
    recall_until: int


@dataclass(frozen=True, slots=True)
class Claim:
    valid_from: int | None
    valid_to: int | None
    supersedes: str | None


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """A memory row, with the claim row it carries (``None``: a plain memory)."""

    memory_id: str
    status: str
    created_at: int
    claim: Claim | None


def _run(conn: Any, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
    cursor = conn.cursor()
    try:
        cursor.execute(sql, list(params))
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []
    finally:
        cursor.close()


def _load(
    conn: Any, dialect: Dialect, table: str, ddl: str, rows: Sequence[tuple[Any, ...]]
) -> None:
    """A fresh temporary table ``table (ddl)`` holding ``rows``."""
    _run(conn, f"DROP TABLE IF EXISTS {table}")
    _run(conn, f"CREATE TEMPORARY TABLE {table} ({ddl})")
    if rows:
        marks = ", ".join(dialect.placeholder for _ in rows[0])
        cursor = conn.cursor()
        try:
            cursor.executemany(f"INSERT INTO {table} VALUES ({marks})", [list(r) for r in rows])
        finally:
            cursor.close()


def pin_bm25(conn: Any, dialect: Dialect, query: Bm25Query) -> list[tuple[Bm25Row, object]]:
    """Rows whose ``bm25_term`` in SQL is not bit for bit ``ranking.bm25_term``, with
    the SQL answer. ``tf`` and ``length`` are integer columns and ``weight`` a double
    column, as in the search statement; ``k1``, ``b`` and the mean length are bound."""
    _load(
        conn,
        dialect,
        "pin_bm25",
        "n BIGINT, tf BIGINT, length BIGINT, weight DOUBLE PRECISION",
        [(n, r.tf, r.length, r.weight) for n, r in enumerate(query.rows)],
    )
    term = bm25_term(
        dialect,
        "x.tf",
        "x.length",
        "x.weight",
        Param(query.k1),
        Param(query.b),
        Param(query.average_length),
    )
    answers = _run(conn, f"SELECT x.n, {term.sql} FROM pin_bm25 x ORDER BY x.n", term.params)
    wrong = []
    for (_, got), row in zip(answers, query.rows, strict=True):
        want = ranking.bm25_term(
            row.tf, row.length, row.weight, query.k1, query.b, query.average_length
        )
        if not (type(got) is float and got.hex() == want.hex()):
            wrong.append((row, got))
    return wrong


def pin_clarity(
    conn: Any, dialect: Dialect, as_of: int, rounding_shift: int, fades: Sequence[Fade]
) -> list[tuple[Fade, object]]:
    """Fades for which ``fully_clear`` or ``fading`` in SQL disagrees with
    ``policy.fully_clear`` at ``as_of``, with the SQL answers. The deadlines are integer
    columns; ``as_of`` and the shift are bound, as in recall."""
    _load(
        conn,
        dialect,
        "pin_fades",
        "n BIGINT, clear_until BIGINT, recall_until BIGINT",
        [(n, f.clear_until, f.recall_until) for n, f in enumerate(fades)],
    )
    operands = ("x.clear_until", "x.recall_until", Param(as_of), Param(rounding_shift))
    clear = fully_clear(dialect, *operands)
    fade = fading(dialect, *operands)
    answers = _run(
        conn,
        f"SELECT x.n, CASE WHEN {clear.sql} THEN 1 ELSE 0 END, "
        f"CASE WHEN {fade.sql} THEN 1 ELSE 0 END FROM pin_fades x ORDER BY x.n",
        [*clear.params, *fade.params],
    )
    wrong: list[tuple[Fade, object]] = []
    for (_, got_clear, got_fading), f in zip(answers, fades, strict=True):
        want = policy.fully_clear(f.clear_until, f.recall_until, as_of, rounding_shift)
        if (got_clear, got_fading) != (int(want), int(not want)):
            wrong.append((f, (got_clear, got_fading)))
    return wrong


def pin_fade_ratio(
    conn: Any, dialect: Dialect, as_of: int, fades: Sequence[Fade]
) -> list[tuple[Fade, object]]:
    """Fading memories (``clear_until < as_of < recall_until``, span below
    ``policy.EXACT_FLOAT_SPAN``) whose ``fade_ratio`` in SQL is not bit for bit
    ``policy.clarity_us``, with the SQL answer."""
    _load(
        conn,
        dialect,
        "pin_ratios",
        "n BIGINT, clear_until BIGINT, recall_until BIGINT",
        [(n, f.clear_until, f.recall_until) for n, f in enumerate(fades)],
    )
    ratio = fade_ratio(dialect, "x.clear_until", "x.recall_until", Param(as_of))
    answers = _run(conn, f"SELECT x.n, {ratio.sql} FROM pin_ratios x ORDER BY x.n", ratio.params)
    wrong = []
    for (_, got), f in zip(answers, fades, strict=True):
        want = policy.clarity_us(as_of, f.clear_until, f.recall_until)
        if not (type(got) is float and got.hex() == want.hex()):
            wrong.append((f, got))
    return wrong


def pin_claim_status(
    conn: Any, dialect: Dialect, as_of: int, memories: Sequence[StoredMemory]
) -> list[tuple[str, object, str]]:
    """Memories whose ``claim_status`` in SQL differs from the pure rule at ``as_of``
    (``claims.status_of``, with the superseders that ``claims.supersedes_at`` counts;
    a memory without a claim row gives ``NOT_A_CLAIM``), as (ID, SQL, pure). The
    statement has the search filter's shape: a memory outer-joined to its claim row,
    superseded when an ``EXISTS`` over the claims naming it finds one that counts."""
    _load(
        conn,
        dialect,
        "pin_memories",
        "memory_id TEXT, status TEXT, created_at BIGINT",
        [(m.memory_id, m.status, m.created_at) for m in memories],
    )
    _load(
        conn,
        dialect,
        "pin_claims",
        "claim_id TEXT, valid_from BIGINT, valid_to BIGINT, supersedes TEXT",
        [
            (m.memory_id, m.claim.valid_from, m.claim.valid_to, m.claim.supersedes)
            for m in memories
            if m.claim is not None
        ],
    )
    known = supersedes_at(dialect, "sm.status", "sm.created_at", Param(as_of))
    superseded = Fragment(
        "EXISTS (SELECT 1 FROM pin_claims s JOIN pin_memories sm ON sm.memory_id = s.claim_id"
        f" WHERE s.supersedes = c.claim_id AND {known.sql})",
        known.params,
    )
    status = claim_status(
        dialect, "c.claim_id", "c.valid_from", "c.valid_to", superseded, Param(as_of)
    )
    answers = dict(
        _run(
            conn,
            f"SELECT m.memory_id, {status.sql} FROM pin_memories m "
            "LEFT JOIN pin_claims c ON c.claim_id = m.memory_id",
            status.params,
        )
    )
    wrong = []
    for memory in memories:
        want = _pure_status(memory, memories, as_of)
        if answers.get(memory.memory_id) != want:
            wrong.append((memory.memory_id, answers.get(memory.memory_id), want))
    return wrong


def _pure_status(memory: StoredMemory, memories: Sequence[StoredMemory], as_of: int) -> str:
    claim = memory.claim
    if claim is None:
        return NOT_A_CLAIM
    superseded = any(
        other.claim is not None
        and other.claim.supersedes == memory.memory_id
        and pure_supersedes_at(MemoryStatus(other.status), other.created_at, as_of)
        for other in memories
    )
    return status_of(claim.valid_from, claim.valid_to, superseded, as_of).value


# --- inputs ------------------------------------------------------------------------------


@contextmanager
def _memory_db() -> Iterator[sqlite3.Connection]:
    """A fresh in-memory database for one hypothesis example (function-scoped fixtures
    are not reset between examples)."""
    connection = sqlite3.connect(":memory:")
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    with _memory_db() as connection:
        yield connection


times = st.one_of(
    st.integers(US_MIN, US_MAX),
    st.sampled_from([US_MIN, -1, 0, 1, US_MAX]),
)
fades = st.one_of(
    st.integers(0, LONGEST_FADE),
    st.integers(0, 2**20),
    st.sampled_from([0, 1, 2**53 - 1, 2**53, 2**54, 2**56, LONGEST_FADE]),
)
counts = st.one_of(st.integers(1, 64), st.integers(1, INT64_MAX), st.just(INT64_MAX))
lengths = st.one_of(
    st.integers(0, 4096), st.integers(0, INT64_MAX), st.sampled_from([0, 1, INT64_MAX])
)
weights = st.one_of(
    st.floats(min_value=1e-12, max_value=50.0),
    st.builds(lambda n, f: ranking.idf(n, min(f, n)), st.integers(1, 10**9), st.integers(1, 10**9)),
)


@st.composite
def bm25_queries(draw: st.DrawFn) -> Bm25Query:
    defaults = draw(st.booleans())
    k1 = ranking.BM25_K1 if defaults else draw(st.floats(0.0, 3.0))
    b = ranking.BM25_B if defaults else draw(st.floats(0.0, 1.0))
    average = draw(
        st.one_of(
            st.just(1.0),
            st.floats(1.0, 1e4),
            st.builds(ranking.average_length, st.integers(1, 10**6), st.integers(1, 10**12)),
            st.just(float(INT64_MAX)),
        )
    )
    rows = draw(st.lists(st.builds(Bm25Row, counts, lengths, weights), min_size=1, max_size=40))
    return Bm25Query(k1, b, average, tuple(rows))


@st.composite
def clarity_batches(draw: st.DrawFn) -> tuple[int, int, list[Fade]]:
    """``as_of``, a shift, and fades placed around ``as_of``: each boundary of the
    condition (``clear_until``, and the rounded edge past it) at, just before and just
    after ``as_of``, plus arbitrary ones."""
    as_of = draw(st.integers(US_MIN + LONGEST_FADE // 64, US_MAX))
    shift = draw(st.one_of(st.just(policy.CLARITY_ROUNDING_SHIFT), st.integers(0, 62)))
    found = []
    for _ in range(draw(st.integers(1, 30))):
        fade = draw(fades)
        edge = fade >> shift
        placement = draw(st.sampled_from(["clear", "edge", "free"]))
        if placement == "free":
            clear = draw(times)
        else:
            delta = draw(st.sampled_from([-1, 0, 1]))
            clear = as_of + delta - (edge if placement == "edge" else 0)
        clear = max(US_MIN, min(US_MAX, clear))
        found.append(Fade(clear, clear + fade))
    return as_of, shift, found


@st.composite
def ratio_batches(draw: st.DrawFn) -> tuple[int, list[Fade]]:
    """``as_of`` and fading memories around it, with spans up to just below 2**53."""
    as_of = draw(st.integers(US_MIN + 2**53, US_MAX - 2**53))
    found = []
    for _ in range(draw(st.integers(1, 30))):
        span = draw(
            st.one_of(
                st.integers(2, 10**6),
                st.integers(2, policy.EXACT_FLOAT_SPAN - 1),
                st.just(policy.EXACT_FLOAT_SPAN - 1),
            )
        )
        past = draw(st.one_of(st.integers(1, span - 1), st.sampled_from([1, span - 1])))
        clear = as_of - past
        found.append(Fade(clear, clear + span))
    return as_of, found


@st.composite
def claim_batches(draw: st.DrawFn) -> tuple[int, list[StoredMemory]]:
    """``as_of`` and a few memories, most of them claims: bounds absent, at, just
    before or just after ``as_of``; superseders active or sealed, created at, before or
    after ``as_of``; some naming a memory without a claim row or no memory at all."""
    as_of = draw(st.integers(US_MIN + 2, US_MAX - 2))
    near = st.one_of(st.sampled_from([as_of - 1, as_of, as_of + 1]), times)
    bound = st.one_of(st.none(), near)
    count = draw(st.integers(1, 8))
    ids = [f"m{i}" for i in range(count)]
    memories = []
    for memory_id in ids:
        claim = None
        if draw(st.integers(0, 4)):
            target = draw(st.one_of(st.none(), st.sampled_from([*ids, "absent"])))
            claim = Claim(draw(bound), draw(bound), None if target == memory_id else target)
        status = draw(st.sampled_from([s.value for s in MemoryStatus]))
        memories.append(StoredMemory(memory_id, status, draw(near), claim))
    return as_of, memories


# --- the pins on SQLite -------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(query=bm25_queries())
def test_bm25_term_in_sql_is_the_pure_term(query: Bm25Query) -> None:
    with _memory_db() as db:
        assert pin_bm25(db, SQLITE, query) == []


@settings(max_examples=400, deadline=None)
@given(batch=clarity_batches())
def test_clarity_conditions_in_sql_are_the_pure_condition(
    batch: tuple[int, int, list[Fade]],
) -> None:
    as_of, shift, found = batch
    with _memory_db() as db:
        assert pin_clarity(db, SQLITE, as_of, shift, found) == []


@settings(max_examples=300, deadline=None)
@given(batch=ratio_batches())
def test_fade_ratio_in_sql_is_the_pure_clarity(batch: tuple[int, list[Fade]]) -> None:
    as_of, found = batch
    with _memory_db() as db:
        assert pin_fade_ratio(db, SQLITE, as_of, found) == []


@settings(max_examples=400, deadline=None)
@given(batch=claim_batches())
def test_claim_status_in_sql_is_the_pure_status(batch: tuple[int, list[StoredMemory]]) -> None:
    as_of, memories = batch
    with _memory_db() as db:
        assert pin_claim_status(db, SQLITE, as_of, memories) == []


# --- fixed edges, so that each boundary is checked on every run ----------------------------


def test_bm25_edges(conn: sqlite3.Connection) -> None:
    rows = tuple(
        Bm25Row(tf, length, weight)
        for tf in (1, 2, INT64_MAX)
        for length in (0, 1, 7, INT64_MAX)
        for weight in (ranking.idf(1, 1), ranking.idf(10**6, 1), 1e-12)
    )
    for average in (1.0, 7.0, ranking.average_length(3, 10), float(INT64_MAX)):
        query = Bm25Query(ranking.BM25_K1, ranking.BM25_B, average, rows)
        assert pin_bm25(conn, SQLITE, query) == []
    assert pin_bm25(conn, SQLITE, Bm25Query(0.0, 0.0, 1.0, rows)) == []
    assert pin_bm25(conn, SQLITE, Bm25Query(2.0, 1.0, 3.5, rows)) == []


def test_clarity_edges(conn: sqlite3.Connection) -> None:
    shift = policy.CLARITY_ROUNDING_SHIFT
    as_of = 10**15
    edge_fades = (0, 1, 2**53, 1 << 56, LONGEST_FADE)
    found = [
        Fade(as_of + delta - (fade >> shift) * at_edge, as_of + delta + fade)
        for fade in edge_fades
        for delta in (-1, 0, 1)
        for at_edge in (0, 1)
    ]
    for s in (0, 1, shift, 62):
        assert pin_clarity(conn, SQLITE, as_of, s, found) == []
    # The fade of 2**56 rounds to 1.0 for four microseconds past clear_until, not five.
    clear = as_of - 4
    assert policy.fully_clear(clear, clear + (1 << 56), as_of, shift)
    assert policy.clarity_us(as_of, clear, clear + (1 << 56)) == 1.0
    assert not policy.fully_clear(clear - 1, clear - 1 + (1 << 56), as_of, shift)
    assert policy.clarity_us(as_of, clear - 1, clear - 1 + (1 << 56)) < 1.0


def test_fade_ratio_edges(conn: sqlite3.Connection) -> None:
    as_of = 0
    span = policy.EXACT_FLOAT_SPAN - 1
    found = [Fade(-1, 1), Fade(-1, 2), Fade(-(span - 1), 1), Fade(-1, span - 1), Fade(-3, 7)]
    assert pin_fade_ratio(conn, SQLITE, as_of, found) == []


def test_claim_status_edges_give_every_status(conn: sqlite3.Connection) -> None:
    t = 1_000
    active, sealed = MemoryStatus.ACTIVE.value, MemoryStatus.SEALED.value
    memories = [
        StoredMemory("plain", active, t, None),
        StoredMemory("open", active, t, Claim(None, None, None)),
        StoredMemory("ends-now", active, t, Claim(None, t, None)),
        StoredMemory("ends-next", active, t, Claim(None, t + 1, None)),
        StoredMemory("starts-now", active, t, Claim(t, None, None)),
        StoredMemory("starts-next", active, t, Claim(t + 1, None, None)),
        StoredMemory("closed-now", active, t, Claim(t - 5, t + 5, None)),
        StoredMemory("by-now", active, t, Claim(None, None, "closed-now")),
        StoredMemory("closed-later", active, t, Claim(None, None, None)),
        StoredMemory("by-later", active, t + 1, Claim(None, None, "closed-later")),
        StoredMemory("closed-sealed", active, t, Claim(None, None, None)),
        StoredMemory("by-sealed", sealed, t - 1, Claim(None, None, "closed-sealed")),
        StoredMemory("names-plain", active, t, Claim(None, None, "plain")),
        StoredMemory("names-absent", active, t, Claim(None, None, "absent")),
    ]
    assert pin_claim_status(conn, SQLITE, t, memories) == []
    got = {_pure_status(m, memories, t) for m in memories}
    assert got == {NOT_A_CLAIM, *(s.value for s in ClaimStatus)}
    statuses = {m.memory_id: _pure_status(m, memories, t) for m in memories}
    assert statuses["closed-now"] == ClaimStatus.SUPERSEDED.value
    assert statuses["closed-later"] == statuses["closed-sealed"] == ClaimStatus.CURRENT.value
    assert statuses["plain"] == NOT_A_CLAIM


# --- the text itself ----------------------------------------------------------------------


def _every_builder(dialect: Dialect) -> list[Fragment]:
    p = Param
    return [
        bm25_term(dialect, "t", "l", p(1.0), p(1.2), p(0.75), p(3.0)),
        fully_clear(dialect, "c", "r", p(1), p(54)),
        fading(dialect, "c", "r", p(1), p(54)),
        fade_ratio(dialect, "c", "r", p(1)),
        supersedes_at(dialect, "s", "c", p(1)),
        claim_status(dialect, "i", "f", "t", Fragment(f"x = {dialect.placeholder}", (9,)), p(1)),
    ]


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRESQL])
def test_text_is_portable_and_binds_in_placeholder_order(dialect: Dialect) -> None:
    for fragment in _every_builder(dialect):
        text = fragment.sql
        assert not re.search(r"\b(INDEXED|IFNULL|IIF|json_each|hex)\b", text, re.I), text
        if dialect is POSTGRESQL:
            assert "?" not in text
            assert text.count("%s") == len(fragment.params), text
            assert "%" not in text.replace("%s", ""), text
        else:
            assert text.count("?") == len(fragment.params), text
    term = bm25_term(dialect, "t", "l", "w", Param("k1"), Param("b"), Param("avg"))
    assert term.params == ("k1", "k1", "b", "b", "avg")
    assert f"CAST(t AS {dialect.double})" in term.sql
    status = claim_status(dialect, "i", "f", "t", Fragment("s", ("sup",)), Param("as_of"))
    assert status.params == ("sup", "as_of", "as_of")


def test_no_copy_of_a_rule_remains_in_the_sqlite_adapter() -> None:
    adapter = Path(__file__).resolve().parents[2] / "src/trueheart_core/adapters/sqlite"
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(adapter.glob("*.py")))
    for copy in (">> ?", "THEN 'superseded'", "THEN 'ended'", "(1.0 - ", "+ 1.0)", "AS REAL) /"):
        assert copy not in text, copy
