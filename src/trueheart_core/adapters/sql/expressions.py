"""SQL expression builders for the rules that statements must evaluate.

Three of the library's rules reach SQL, because a backend applies them to rows it has
not loaded (to rank postings or to filter an index walk that stops at ``LIMIT``):

- the BM25 score of one query term in one memory (``ranking.bm25_term``), which search
  sums per memory;
- clarity in recall: the exact condition for a clarity of 1.0 (``policy.fully_clear``),
  its complement, and the fade ratio that orders fading memories
  (``policy.clarity_us``);
- a claim's status at a valid time (``claims.status_of``) and which superseding claims
  count for it (``claims.supersedes_at``).

Each builder here mirrors one of those pure functions and nothing else; the tests in
``tests/unit/test_sql_expressions.py`` evaluate every builder's text on a real database
over generated inputs and compare it with the pure function, so that every backend's
answer is pinned to the one definition. The text uses only what SQLite and PostgreSQL
both accept: arithmetic, ``>>`` on integers, comparisons, ``CASE``, ``IS [NOT] NULL``
and ``CAST`` to the dialect's double type. Index hints, joins, ``EXISTS`` sources and the
way a backend passes a list stay in that backend's modules.

Operands: a builder takes each input as a ``str`` (SQL text used as given, such as the
column ``"m.clear_until"``), a :class:`Param` (a value bound as a parameter) or a
:class:`Fragment` (SQL text with parameters of its own, such as another builder's
result). It returns a :class:`Fragment` whose ``params`` follow the order of their
placeholders in its text; an input that the rule uses twice is bound twice.

This module imports nothing of ours (an adapter depends on the ports only), so the
literals it writes (``'active'``, the claim statuses) are spelt here once and checked
against the domain's values by the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter

__all__ = [
    "NOT_A_CLAIM",
    "POSTGRESQL",
    "SQLITE",
    "Dialect",
    "Fragment",
    "Operand",
    "Param",
    "bm25_term",
    "claim_status",
    "created_in",
    "fade_ratio",
    "fading",
    "fully_clear",
    "supersedes_at",
    "time_order",
]

NOT_A_CLAIM = "memory"
"""What :func:`claim_status` gives for a memory without a claim row (a plain memory)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """What the shared text needs to know of a backend: how its driver writes a
    positional parameter (``?`` for ``sqlite3``, ``%s`` for psycopg) and the name of its
    IEEE double type for ``CAST``. The text holds no ``%``, so a ``%s`` driver needs no
    escaping."""

    placeholder: str
    double: str


SQLITE = Dialect("?", "REAL")
POSTGRESQL = Dialect("%s", "DOUBLE PRECISION")


@dataclass(frozen=True, slots=True)
class Param:
    """A value bound as a parameter wherever the rule uses it."""

    value: object


@dataclass(frozen=True, slots=True)
class Fragment:
    """SQL text and its parameters, in the order of their placeholders."""

    sql: str
    params: tuple[object, ...] = ()


Operand = str | Param | Fragment
"""SQL text used as given, a bound value, or SQL text with parameters."""


class _Template:
    """A rule's SQL text with named operand slots, parsed once at import.

    ``{double}`` is the dialect's double type; every other slot is an operand."""

    __slots__ = ("_parts",)

    def __init__(self, text: str) -> None:
        self._parts = tuple((literal, field) for literal, field, _, _ in Formatter().parse(text))

    def render(self, dialect: Dialect, operands: dict[str, Operand]) -> Fragment:
        text: list[str] = []
        params: list[object] = []
        for literal, field in self._parts:
            text.append(literal)
            if field is None:
                continue
            if field == "double":
                text.append(dialect.double)
                continue
            operand = operands[field]
            if isinstance(operand, Param):
                text.append(dialect.placeholder)
                params.append(operand.value)
            elif isinstance(operand, Fragment):
                text.append(operand.sql)
                params.extend(operand.params)
            else:
                text.append(operand)
        return Fragment("".join(text), tuple(params))


# --- BM25 -------------------------------------------------------------------------------

_BM25_TERM = _Template(
    "{weight} * (CAST({tf} AS {double}) * ({k1} + 1.0)) "
    "/ (CAST({tf} AS {double}) + {k1} * (1.0 - {b} + {b} * CAST({length} AS {double}) "
    "/ {average_length}))"
)


def bm25_term(
    dialect: Dialect,
    tf: Operand,
    length: Operand,
    weight: Operand,
    k1: Operand,
    b: Operand,
    average_length: Operand,
) -> Fragment:
    """The BM25 score of one query term in one memory, ``ranking.bm25_term``:
    ``weight * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * length / average_length))``,
    evaluated in the same order.

    ``tf`` and ``length`` are integers and are cast to the double type, so every
    operation is a double operation on every backend (PostgreSQL divides integers as
    integers); ``weight``, ``k1``, ``b`` and ``average_length`` are doubles."""
    return _BM25_TERM.render(
        dialect,
        {
            "tf": tf,
            "length": length,
            "weight": weight,
            "k1": k1,
            "b": b,
            "average_length": average_length,
        },
    )


# --- clarity ----------------------------------------------------------------------------

_FULLY_CLEAR = _Template(
    "{clear_until} + (({recall_until} - {clear_until}) >> {rounding_shift}) >= {as_of}"
)
_FADING = _Template(
    "{clear_until} + (({recall_until} - {clear_until}) >> {rounding_shift}) < {as_of}"
)
_FADE_RATIO = _Template(
    "CAST({recall_until} - {as_of} AS {double}) / ({recall_until} - {clear_until})"
)


def fully_clear(
    dialect: Dialect,
    clear_until: Operand,
    recall_until: Operand,
    as_of: Operand,
    rounding_shift: Operand,
) -> Fragment:
    """Whether a memory's clarity at ``as_of`` is exactly 1.0, ``policy.fully_clear``:
    ``clear_until + ((recall_until - clear_until) >> rounding_shift) >= as_of``, in
    64-bit integers (microseconds; the shift is at most 62, the service passes
    ``policy.CLARITY_ROUNDING_SHIFT``)."""
    return _FULLY_CLEAR.render(
        dialect, _clarity_operands(clear_until, recall_until, as_of, rounding_shift)
    )


def fading(
    dialect: Dialect,
    clear_until: Operand,
    recall_until: Operand,
    as_of: Operand,
    rounding_shift: Operand,
) -> Fragment:
    """The complement of :func:`fully_clear` (``not policy.fully_clear(...)``), written
    as the one comparison ``<`` rather than a ``NOT``."""
    return _FADING.render(
        dialect, _clarity_operands(clear_until, recall_until, as_of, rounding_shift)
    )


def fade_ratio(
    dialect: Dialect, clear_until: Operand, recall_until: Operand, as_of: Operand
) -> Fragment:
    """The clarity of a fading memory, ``policy.clarity_us`` past ``clear_until``:
    ``(recall_until - as_of) / (recall_until - clear_until)`` in double precision.

    Equal to Python's correctly rounded integer division while both differences are
    below ``policy.EXACT_FLOAT_SPAN`` (they convert to double exactly); a backend orders
    only such fades by it and leaves longer ones to the service."""
    return _FADE_RATIO.render(
        dialect, {"clear_until": clear_until, "recall_until": recall_until, "as_of": as_of}
    )


def _clarity_operands(
    clear_until: Operand, recall_until: Operand, as_of: Operand, rounding_shift: Operand
) -> dict[str, Operand]:
    return {
        "clear_until": clear_until,
        "recall_until": recall_until,
        "as_of": as_of,
        "rounding_shift": rounding_shift,
    }


# --- claims -----------------------------------------------------------------------------

_SUPERSEDES_AT = _Template("{status} = 'active' AND {created_at} <= {known_at}")
_CLAIM_STATUS = _Template(
    f"CASE WHEN {{claim_id}} IS NULL THEN '{NOT_A_CLAIM}' "
    "WHEN {superseded} THEN 'superseded' "
    "WHEN {valid_to} IS NOT NULL AND {valid_to} <= {as_of} THEN 'ended' "
    "WHEN {valid_from} IS NOT NULL AND {as_of} < {valid_from} THEN 'not_yet_valid' "
    "ELSE 'current' END"
)


def supersedes_at(
    dialect: Dialect, status: Operand, created_at: Operand, known_at: Operand
) -> Fragment:
    """Whether a superseding claim counts at transaction time ``known_at``,
    ``claims.supersedes_at``: its memory is active and was created at or before
    ``known_at`` (its own recall deadline does not reopen the claim it closed)."""
    return _SUPERSEDES_AT.render(
        dialect, {"status": status, "created_at": created_at, "known_at": known_at}
    )


def claim_status(
    dialect: Dialect,
    claim_id: Operand,
    valid_from: Operand,
    valid_to: Operand,
    superseded: Operand,
    as_of: Operand,
) -> Fragment:
    """A claim's status at valid time ``as_of``, ``claims.status_of``, as its text
    value: ``'superseded'`` when the boolean ``superseded`` holds (typically an
    ``EXISTS`` over the superseding claims that :func:`supersedes_at` counts), else
    ``'ended'`` when ``valid_to <= as_of``, else ``'not_yet_valid'`` when
    ``as_of < valid_from``, else ``'current'``. ``claim_id`` is the claim row's key
    from an outer join: a memory without a claim row gives :data:`NOT_A_CLAIM`.
    Times are integer microseconds; a missing bound is ``NULL``."""
    return _CLAIM_STATUS.render(
        dialect,
        {
            "claim_id": claim_id,
            "valid_from": valid_from,
            "valid_to": valid_to,
            "superseded": superseded,
            "as_of": as_of,
        },
    )


def created_in(period: tuple[int | None, int | None], dialect: Dialect) -> Fragment:
    """`` AND`` conditions that hold ``x.created_at`` to ``[start, end)`` (a missing end
    is no bound on that side)."""
    start, end = period
    sql, params = "", []
    if start is not None:
        sql += f" AND x.created_at >= {dialect.placeholder}"
        params.append(start)
    if end is not None:
        sql += f" AND x.created_at < {dialect.placeholder}"
        params.append(end)
    return Fragment(sql, tuple(params))


def time_order(newest: bool) -> str:
    """The order of a question about a period: ``created_at`` descending, then
    ``memory_id`` ascending, or (``newest`` false) its exact reverse."""
    return "x.created_at DESC, x.memory_id ASC" if newest else "x.created_at, x.memory_id DESC"
