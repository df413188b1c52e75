"""What every role of a SQLite unit of work shares: the transaction's connection, the
scope IDs it has resolved, chunked scans, and the column lists and row builders of the
tables several roles read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.errors import RepositoryCorruption
from trueheart_core.ports import EventRow, MemoryRow, ScopeKey

CHUNK = 500
MEMO_LIMIT = 1 << 16
"""At most this many entries in a connection's memo (see ``Session.recall``)."""
EVENT_COLUMNS = (
    "{a}.event_id, {a}.source_id, {a}.source_type, {a}.source_occurred_at, {a}.trust, "
    "{a}.source_metadata, {a}.content_hash, {a}.ingested_at, {a}.raw_expires_at, "
    "{a}.clear_for, {a}.recall_for, {a}.status, {a}.metadata, {a}.digest, "
    "EXISTS (SELECT 1 FROM raw_bodies b WHERE b.rid = {a}.rid AND b.erased IS NOT 1)"
)
MEMORY_COLUMNS = (
    "{a}.memory_id, {a}.content, {a}.dependency_fingerprint, {a}.kind, {a}.trust, "
    "{a}.created_at, {a}.clear_until, {a}.recall_until, {a}.status, {a}.metadata, {a}.digest"
)
EVENT_E = EVENT_COLUMNS.format(a="e")
EVENT_X = EVENT_COLUMNS.format(a="x")
MEMORY_M = MEMORY_COLUMNS.format(a="m")
MEMORY_X = MEMORY_COLUMNS.format(a="x")
SCOPE_JOIN = "JOIN scopes s ON s.scope_id = {alias}.scope_id"
SCOPE_COLUMNS = "s.tenant_id, s.owner_id, s.subject_id"

_SCOPE_ID_KEYED = (
    "scopes",
    "audit_log",
    "write_buffer",
    "lineage",
    "tombstones",
    "search_docs",
    "search_stats",
    "extractions",
    "vector_generations",
)
"""Tables whose largest scope ID is one index probe (the ID leads their key or an index),
and the write buffer, which holds a few rows. Every scope that holds rows has audit rows,
which erasure keeps."""
_NEXT_SCOPE_ID = (
    "SELECT 1 + MAX("
    + ", ".join(f"IFNULL((SELECT MAX(scope_id) FROM {table}), 0)" for table in _SCOPE_ID_KEYED)
    + ")"
)

EVENT_STATUS: dict[str, int] = {"active": 0, "expired": 1}
"""A receipt's status as stored: 0 or 1, which SQLite stores in no bytes, so that expiry
changes it without changing the row's size."""
_STATUS_OF = {code: name for name, code in EVENT_STATUS.items()}


def stored_status(status: str) -> object:
    """The stored form of a receipt's status (an unknown one is stored as it is)."""
    return EVENT_STATUS.get(status, status)


def event_status(stored: object) -> Any:
    """A receipt's status as the port names it. A value that is not one of the stored
    codes is passed on (as text, marked) for the service's checks to refuse."""
    if type(stored) is int and stored in _STATUS_OF:
        return _STATUS_OF[stored]
    return None if stored is None else f"invalid:{stored!r}"


def blanked(column: str) -> str:
    """An assignment that overwrites ``column`` in place with a value of the same stored
    size holding none of its bytes: text becomes as many ``0`` characters as it has
    bytes, bytes become zero bytes; numbers and NULL stay (they carry no text, and a
    number written anew could change size)."""
    octets = f"length(CAST({column} AS BLOB))"
    return (
        f"{column} = CASE typeof({column}) "
        f"WHEN 'text' THEN substr(hex(zeroblob({octets})), 1, {octets}) "
        f"WHEN 'blob' THEN zeroblob(length({column})) ELSE {column} END"
    )


def holds_text(column: str) -> str:
    """A condition true when ``column`` holds what :func:`blanked` would overwrite: text
    other than ``0`` characters, or bytes other than zero bytes."""
    return (
        f"(typeof({column}) = 'text' AND {column} GLOB '*[^0]*') "
        f"OR (typeof({column}) = 'blob' AND {column} <> zeroblob(length({column})))"
    )


def event_row(scope: ScopeKey, r: Sequence[Any]) -> EventRow:
    (eid, sid, stype, occurred, trust, smeta, chash, ingested, expires, clear, recall) = r[:11]
    stored, metadata, digest, has_body = r[11:15]
    status = event_status(stored)
    return EventRow(
        scope,
        eid,
        sid,
        stype,
        occurred,
        trust,
        smeta,
        chash,
        ingested,
        expires,
        clear,
        recall,
        status,
        metadata,
        digest,
        bool(has_body),
    )


def memory_row(scope: ScopeKey, r: Sequence[Any]) -> MemoryRow:
    return MemoryRow(scope, *r)


def key_of(r: Sequence[Any]) -> ScopeKey:
    return (r[0], r[1], r[2])


class Session:
    """One transaction's connection and scope IDs, shared by the roles of its unit.

    ``known`` is the repository's cache of committed scope IDs; ``new`` holds the scopes
    this transaction created, merged into ``known`` on commit. ``scratch`` is the
    repository's dictionary for data the service derives from the store (see
    ``UnitOfWork.scratch``).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        known: dict[ScopeKey, int],
        scratch: dict[object, object] | None = None,
    ) -> None:
        self.conn = conn
        self.known = known
        self.scratch: dict[object, object] = {} if scratch is None else scratch
        # What the connection's own committed writes left in the store, for the writes
        # that would otherwise read it again (a term's ID, the search tokenizer, a
        # scope's pending row counts): see :meth:`recall`.
        self.memo: dict[object, object] = {}
        # The ``PRAGMA data_version`` the memo was last found valid at (None: never).
        self.data_version: object = None
        self.begin()

    def begin(self) -> None:
        """Forget everything learnt about the previous transaction (a new one starts)."""
        self.staged: dict[object, object] = {}
        self.new: dict[ScopeKey, int] = {}
        # Scopes a thorough look-up found in no row of ``scopes``: that look-up reads the
        # whole table, so it is made once per transaction.
        self.absent: set[ScopeKey] = set()
        # ``(scope ID, memory ID, row ID)`` of the memory row this transaction inserted
        # last, until the search index takes it: the entry a new memory gets needs its row
        # ID, which the insert already knows.
        self.fresh: tuple[int, str, int] | None = None
        # ``(scope ID, memory ID, row ID, sources)`` of the live memory row ``get`` read
        # last (governance reads a row, then its edges, changes it and its search entry:
        # one read serves them all). A live row keeps its row ID and sources; any write
        # that removes or adds memory rows empties the slot.
        self.recent: tuple[int, str, int, object] | None = None
        # How many rows the write buffer holds, as this transaction last counted them
        # (None: not counted yet; see ``buffer``).
        self.buffer_rows: int | None = None

    def recall(self, key: object) -> object:
        """What :meth:`remember` kept under ``key`` (None: nothing).

        The memo is valid while no other connection has committed (the repository
        compares ``PRAGMA data_version`` at the start of every unit and calls
        :meth:`forget` when it moved), and every statement of this connection that could
        make an entry wrong forgets the whole memo. Entries remembered in a transaction
        count only once it commits."""
        found = self.staged.get(key)
        return self.memo.get(key) if found is None else found

    def remember(self, key: object, value: object) -> None:
        """Keep ``value`` under ``key`` for this transaction (see :meth:`recall`). A
        transaction that has learnt :data:`MEMO_LIMIT` entries (a rebuild, an import)
        starts the memo afresh: every entry can be read again from the store, and the
        memo stays bounded however much one transaction writes."""
        if len(self.staged) >= MEMO_LIMIT:
            self.forget()
        self.staged[key] = value

    def forget(self) -> None:
        """Drop the memo: a statement is about to change what it holds in a way no
        entry follows (an erasure, a rebuild)."""
        self.memo.clear()
        self.staged.clear()

    def committed(self) -> None:
        """The transaction committed: its scopes and remembered entries now hold."""
        self.known.update(self.new)
        if len(self.memo) + len(self.staged) > MEMO_LIMIT:
            self.memo.clear()
        if len(self.staged) <= MEMO_LIMIT:
            self.memo.update(self.staged)
        self.staged = {}

    def scope_id(self, scope: ScopeKey, *, thorough: bool = False) -> int | None:
        """The scope's row ID, found by its unique index and checked against the row the
        index names (a damaged index must not lead one scope's call into another's
        rows). ``thorough`` also reads the table itself when the index has no entry, for
        subject erasure, which must not take a lost index entry for an empty scope (it
        looks the scope up first, so the tombstones and audit row it then writes use the
        ID found). Elsewhere a missing scope only ends in ``EntityNotFound`` or an empty
        answer, and the lookup stays one index probe."""
        found = self.known.get(scope) or self.new.get(scope)
        if found is not None:
            return found
        if scope in self.absent:
            return None
        row = self.conn.execute(
            "SELECT scope_id FROM scopes WHERE tenant_id = ? AND owner_id = ? AND subject_id = ?",
            scope,
        ).fetchone()
        if row is None and thorough:
            row = self.conn.execute(
                "SELECT scope_id FROM scopes NOT INDEXED "
                "WHERE tenant_id = ? AND owner_id = ? AND subject_id = ?",
                scope,
            ).fetchone()
            if row is None:
                self.absent.add(scope)
        if row is None:
            return None
        sid = row[0]
        stored = self.conn.execute(
            "SELECT tenant_id, owner_id, subject_id FROM scopes WHERE scope_id = ?", (sid,)
        ).fetchone()
        if type(sid) is not int or stored is None or tuple(stored) != tuple(scope):
            raise RepositoryCorruption("invalid scope record")
        # Committed scope rows never change, so their IDs can be remembered at once.
        self.known[scope] = sid
        return sid

    def ensure_scope(self, scope: ScopeKey) -> int:
        """The scope's row ID, its row added if it has none. A new ID is above every
        scope ID that rows of the store hold, not only those of ``scopes``: were a
        scope's row lost to damage, its rows must never be taken for a new scope's."""
        found = self.scope_id(scope)
        if found is not None:
            return found
        (sid,) = self.conn.execute(_NEXT_SCOPE_ID).fetchone()
        self.conn.execute(
            "INSERT INTO scopes (scope_id, tenant_id, owner_id, subject_id) VALUES (?, ?, ?, ?)",
            (sid, *scope),
        )
        self.new[scope] = int(sid)
        return int(sid)

    def scan(
        self,
        sql: str,
        scope: ScopeKey | None,
        order: str,
        *,
        live: bool = True,
        listing: str | None = None,
    ) -> Iterator[Sequence[Any]]:
        """Rows of ``sql`` (selecting a scope key first) in chunks by rowid-like ``order``;
        ``live`` leaves erased rows out (for the tables that keep them).

        A table whose scope index does not end in ``order`` gives, for a scope, a
        ``listing``: a statement of the scope's ``order`` values in order, through an
        index of the scope (``?`` the scope). It is read once, a chunk at a time, and
        each chunk's rows are then probed by ``order``; without it, each chunk would
        walk the scope again from its start to find the rows past the last one."""
        alive = " AND x.erased IS NOT 1" if live else ""
        where, params = alive, list[Any]()
        if scope is not None:
            sid = self.scope_id(scope, thorough=True)
            if sid is None:
                return
            if listing is not None:
                yield from self._listed(sql, order, listing, sid, alive)
                return
            where, params = f"{alive} AND x.scope_id = ?", [sid]
        last: Any = None
        while True:
            bound = "" if last is None else f" AND x.{order} > ?"
            rows = self.conn.execute(
                f"{sql} WHERE 1 = 1{where}{bound} ORDER BY x.{order} LIMIT {CHUNK}",
                [*params, *([] if last is None else [last])],
            ).fetchall()
            for row in rows:
                yield row[1:]
            if len(rows) < CHUNK:
                return
            last = rows[-1][0]

    def _listed(
        self, sql: str, order: str, listing: str, sid: int, alive: str
    ) -> Iterator[Sequence[Any]]:
        """:meth:`scan` of one scope through its ``listing``, a chunk of keys at a time."""
        keys = self.conn.execute(listing, (sid,))
        while chunk := [key for (key,) in keys.fetchmany(CHUNK)]:
            marks = ",".join("?" * len(chunk))
            # The unary + keeps the scope's index out of the probes: with it, the
            # planner would walk the scope for every chunk instead of probing keys.
            yield from (
                row[1:]
                for row in self.conn.execute(
                    f"{sql} WHERE x.{order} IN ({marks}){alive} AND +x.scope_id = ? "
                    f"ORDER BY x.{order}",
                    [*chunk, sid],
                ).fetchall()
            )

    def take_fresh(self, sid: int, memory_id: str) -> int | None:
        """The row ID of this memory if it is the row this transaction inserted last and
        nothing has taken it since (the slot is emptied either way)."""
        found, self.fresh = self.fresh, None
        if found is not None and found[0] == sid and found[1] == memory_id:
            return found[2]
        return None

    def memory_rid(self, sid: int | None, memory_id: str) -> int | None:
        recent = self.recent
        if recent is not None and recent[0] == sid and recent[1] == memory_id:
            return recent[2]
        row = self.conn.execute(
            "SELECT rid FROM memories WHERE memory_id = ? AND scope_id = ? AND erased IS NOT 1",
            (memory_id, sid),
        ).fetchone()
        return None if row is None else int(row[0])

    def in_chunks(
        self,
        sql: str,
        head: Sequence[Any],
        values: Sequence[Any],
        tail: Sequence[Any] = (),
    ) -> list[Any]:
        """Rows of ``sql`` (whose ``{marks}`` takes the values, between the parameters
        ``head`` and ``tail``) for every chunk of values."""
        rows: list[Any] = []
        for start in range(0, len(values), CHUNK):
            chunk = list(values[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            rows.extend(self.conn.execute(sql.format(marks=marks), [*head, *chunk, *tail]))
        return rows


class Role:
    """The base of each role of a SQLite unit of work: the session's connection and its
    scope and chunking helpers, bound once."""

    def __init__(self, session: Session) -> None:
        self._conn = session.conn
        self._scope_id = session.scope_id
        self._ensure_scope = session.ensure_scope
        self._scan = session.scan
        self._memory_rid = session.memory_rid
        self._in_chunks = session.in_chunks
        self._session = session
