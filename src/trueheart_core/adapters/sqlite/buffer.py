"""The write buffer: where a write's audit row and pending search row wait before they
join their clustered tables.

``audit_log`` is clustered by scope and claimed time, ``search_waiting`` by scope and
memory row ID: an insert lands inside a range that other scopes' rows follow, and SQLite
often rebalances the leaf it lands on with its neighbours, writing three or four pages
for one row (``benchmarks/append_pages.py`` measures it). ``write_buffer`` is a rowid
table that grows at its end, where an insert writes one page. A write appends its rows
there; the append that brings the buffer to :data:`BUFFER_BOUND` rows moves every
buffered row, sorted, into the clustered tables in the same transaction, so that the
rebalancing is paid once per batch.

Reads never see the difference: ``audit`` and ``search_pending`` are views of the
clustered table and the buffer's rows of that kind (see ``schema``), and a read of one
scope reads fewer than :data:`BUFFER_BOUND` buffered rows beside its own. The buffer holds
what those tables hold: body-free audit rows and integer postings.
"""

from __future__ import annotations

import sqlite3

from trueheart_core.adapters.sqlite.migrations import AUDIT_COLUMNS, PENDING_COLUMNS
from trueheart_core.adapters.sqlite.session import Session

BUFFER_BOUND = 32
"""How many rows the buffer may hold: the append that reaches this many moves them all
into the clustered tables."""
AUDIT_ROW = "(doc IS NULL OR audit_id IS NOT NULL OR digest IS NOT NULL)"
PENDING_ROW = "doc IS NOT NULL AND audit_id IS NULL AND digest IS NULL"
"""Which kind a buffered row is: a pending search row names a memory and has neither an
audit ID nor a digest (an audit row has both); every other row is an audit row. A row
damage gave a memory as well is an audit row, so that no statement that removes pending
rows removes it, and moving it drops the memory."""
_COUNT = "buffered rows"
"""The memo key of how many rows the buffer holds (see ``Session.recall``; -1: not
known)."""


def appended(session: Session) -> None:
    """Count a row this transaction has just appended to the buffer; at
    :data:`BUFFER_BOUND` rows, move them all. So the buffer never holds more, even inside
    a transaction that writes thousands of rows (an import, a batch), and a read of it
    costs at most that many rows."""
    rows = session.buffer_rows
    if rows is None:
        known = session.recall(_COUNT)
        if type(known) is int and known >= 0:
            rows = known + 1
        else:
            (rows,) = session.conn.execute("SELECT COUNT(*) FROM write_buffer").fetchone()
    else:
        rows += 1
    if rows >= BUFFER_BOUND:
        rows = drain(session.conn)
    session.buffer_rows = rows
    session.remember(_COUNT, rows)


def removed(session: Session, rows: int | None = None) -> None:
    """Note that a statement of this transaction removed ``rows`` buffered rows (None: a
    number not known, which has the buffer counted again at the next append)."""
    known = session.buffer_rows
    if known is None:
        remembered = session.recall(_COUNT)
        known = remembered if type(remembered) is int and remembered >= 0 else None
    left = None if known is None or rows is None or not 0 <= rows <= known else known - rows
    session.buffer_rows = left
    session.remember(_COUNT, -1 if left is None else left)


MOVABLE = (
    "SELECT jid FROM (SELECT jid, scope_id, doc, occurred_at, seq, audit, whole, "
    "ROW_NUMBER() OVER (PARTITION BY audit, scope_id, IIF(audit, occurred_at, doc), "
    "IIF(audit, seq, NULL) ORDER BY jid) AS n FROM (SELECT jid, scope_id, doc, occurred_at, "
    f"seq, {AUDIT_ROW} AS audit, typeof(scope_id) = 'integer' AND IIF({AUDIT_ROW}, "
    "typeof(occurred_at) = 'integer' AND typeof(seq) = 'integer', typeof(doc) = 'integer' "
    "AND change IS NOT NULL AND length IS NOT NULL AND postings IS NOT NULL) AS whole "
    "FROM write_buffer)) b WHERE n = 1 AND whole AND NOT IIF(audit, EXISTS (SELECT 1 "
    "FROM audit_log a WHERE a.scope_id = b.scope_id AND a.occurred_at = b.occurred_at "
    "AND a.seq = b.seq), EXISTS (SELECT 1 FROM search_waiting w WHERE w.scope_id = b.scope_id "
    "AND w.doc = b.doc))"
)
"""The row IDs of the buffered rows that can be moved into their tables: each with the
columns its table requires, and a key that neither the table nor an earlier buffered row
holds (one read of the buffer, and one key probe per row)."""


def drain(conn: sqlite3.Connection) -> int:
    """Move the buffered rows into their clustered tables, in key order (inside the
    caller's transaction), and return how many stay. A row that cannot be moved (see
    :data:`MOVABLE`: only damage makes one) stays where it is, for ``verify_integrity``
    to report, so that it refuses no write, in its scope or any other.

    Every row is moved at once under a savepoint; only when a table refuses a row (its
    key held, a column it requires missing) is the move undone and made again row by
    row. The refusal is the database's own check of the rows being moved, handled here
    and never passed on: it is not an error of the call."""
    conn.execute("SAVEPOINT buffer_move")
    try:
        _move(conn, AUDIT_ROW, PENDING_ROW, [])
        conn.execute("DELETE FROM write_buffer")
        refused = False
    except sqlite3.IntegrityError:
        refused = True  # handled below, outside this block: nothing chains to it
    if refused:
        conn.execute("ROLLBACK TO buffer_move")
        conn.execute("RELEASE buffer_move")
        return _move_movable(conn)
    conn.execute("RELEASE buffer_move")
    return 0


def _move(conn: sqlite3.Connection, audit: str, pending: str, params: list[int]) -> None:
    conn.execute(
        f"INSERT INTO audit_log ({AUDIT_COLUMNS}) SELECT {AUDIT_COLUMNS} FROM write_buffer "
        f"WHERE {audit} ORDER BY scope_id, occurred_at, seq",
        params,
    )
    conn.execute(
        f"INSERT INTO search_waiting ({PENDING_COLUMNS}) SELECT {PENDING_COLUMNS} "
        f"FROM write_buffer WHERE {pending} ORDER BY scope_id, doc",
        params,
    )


def _move_movable(conn: sqlite3.Connection) -> int:
    """Move only the rows :data:`MOVABLE` selects; return how many stay."""
    moved = [jid for (jid,) in conn.execute(MOVABLE)]
    chosen = f"jid IN ({','.join('?' * len(moved))})"
    _move(conn, f"{chosen} AND {AUDIT_ROW}", f"{chosen} AND {PENDING_ROW}", moved)
    conn.execute(f"DELETE FROM write_buffer WHERE {chosen}", moved)
    (left,) = conn.execute("SELECT COUNT(*) FROM write_buffer").fetchone()
    return int(left)
