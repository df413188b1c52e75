"""What every role of a PostgreSQL unit of work shares: the transaction's connection,
the encoding of caller text, scope conditions, streamed scans, and the column lists and
row builders of the tables several roles read."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg

from trueheart_core.adapters.postgres.wire import Refused, Result, Statement, round_trip
from trueheart_core.errors import RepositoryCorruption, RepositoryReadOnly
from trueheart_core.ports import EventRow, MemoryRow, ScopeKey

CHUNK = 500
"""How many rows a streamed scan fetches at a time, and how many values one ``= ANY``
list holds."""

KEY = "tenant_id, owner_id, subject_id"


def scoped(alias: str = "") -> str:
    """The condition that selects the exact scope, with three ``%s`` parameters (see
    :meth:`Session.key`): ``tenant_id = %s AND owner_id = %s AND subject_id = %s``."""
    a = f"{alias}." if alias else ""
    return f"{a}tenant_id = %s AND {a}owner_id = %s AND {a}subject_id = %s"


TERMS_BY_KEY = (
    "SELECT q.term, h.df FROM unnest(CAST(%s AS BIGINT[])) AS q(term) CROSS JOIN LATERAL ("
    f"SELECT t.df FROM search_terms t WHERE {scoped('t')} AND t.term = q.term LIMIT 1) h"
)
"""``(term, df)`` of each term key of a list (the first parameter) that the scope (the
next three) holds: one probe of the primary key per key, whatever the planner knows of
the table. (``term = ANY(%s)`` is planned as a filter over the whole scope's terms
while the table has no statistics, as in a new store: its cost is then the scope's
terms times the list's.)"""


def same_scope(left: str, right: str) -> str:
    """The join condition of two aliases of rows of the same scope."""
    columns = ("tenant_id", "owner_id", "subject_id")
    return " AND ".join(f"{left}.{c} = {right}.{c}" for c in columns)


def enc(value: str | bytes) -> bytes:
    """Caller text as stored (UTF-8 bytes in a ``BYTEA`` column; see ``schema``). A
    value read back from a damaged row as bytes (see :func:`dec`) goes back as those
    bytes, so that a statement about that row names it."""
    if isinstance(value, bytes):
        return value
    return value.encode("utf-8")


def enc_opt(value: str | None) -> bytes | None:
    return None if value is None else value.encode("utf-8")


def dec(value: object) -> Any:
    """Stored caller text back as ``str``. Anything else (a tampered value, bytes that
    are not UTF-8) is returned as it is, for the service's checks to refuse."""
    if isinstance(value, bytes | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw
    return value


def key_of(r: Sequence[Any]) -> ScopeKey:
    """The scope of a row whose first three columns are its stored scope IDs."""
    return (dec(r[0]), dec(r[1]), dec(r[2]))


EVENT_COLUMNS = (
    "{a}.event_id, {a}.source_id, {a}.source_type, {a}.source_occurred_at, {a}.trust, "
    "{a}.source_metadata, {a}.content_hash, {a}.ingested_at, {a}.raw_expires_at, "
    "{a}.clear_for, {a}.recall_for, {a}.status, {a}.metadata, {a}.digest, "
    "EXISTS (SELECT 1 FROM raw_bodies b WHERE b.tenant_id = {a}.tenant_id "
    "AND b.owner_id = {a}.owner_id AND b.subject_id = {a}.subject_id "
    "AND b.event_id = {a}.event_id)"
)
MEMORY_COLUMNS = (
    "{a}.memory_id, {a}.content, {a}.dependency_fingerprint, {a}.kind, {a}.trust, "
    "{a}.created_at, {a}.clear_until, {a}.recall_until, {a}.status, {a}.metadata, {a}.digest"
)
EVENT_E = EVENT_COLUMNS.format(a="e")
MEMORY_M = MEMORY_COLUMNS.format(a="m")


def event_row(scope: ScopeKey, r: Sequence[Any]) -> EventRow:
    """An :class:`EventRow` from the columns of ``EVENT_COLUMNS``."""
    return EventRow(
        scope,
        dec(r[0]),
        dec(r[1]),
        dec(r[2]),
        r[3],
        r[4],
        r[5],
        r[6],
        r[7],
        r[8],
        r[9],
        r[10],
        r[11],
        r[12],
        r[13],
        bool(r[14]),
    )


def memory_row(scope: ScopeKey, r: Sequence[Any]) -> MemoryRow:
    """A :class:`MemoryRow` from the columns of ``MEMORY_COLUMNS``."""
    return MemoryRow(
        scope, dec(r[0]), dec(r[1]), r[2], dec(r[3]), r[4], r[5], r[6], r[7], r[8], r[9], r[10]
    )


OWNS_THE_TABLES = (
    "SELECT bool_and(pg_has_role(c.relowner, 'USAGE')) FROM pg_class c "
    "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
)
"""Whether the connection's role owns every table of the store's schema (true), as
``VACUUM FULL`` needs."""

_cursor_names = itertools.count(1)


def lock_key(*parts: bytes) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (UTF-8: a store's schema name,
    and a scope's three IDs): a keyed hash, so that keys of different stores or scopes
    meet only by a 2**-64 chance, which makes two writers wait for each other, no more.

    The parts are joined by a zero byte, and a zero byte within a part is written as
    ``00 FF`` (a byte UTF-8 never holds), so that different parts never join alike
    (``"a\\0b", "c"`` and ``"a", "b\\0c"`` would); parts without one join as they
    always have, so every version computes the same key for them."""
    joined = b"\x00".join(part.replace(b"\x00", b"\x00\xff") for part in parts)
    digest = hashlib.blake2b(joined, digest_size=8, person=b"trueheart-lock")
    return int.from_bytes(digest.digest(), "big", signed=True)


_Then = Callable[[Result], None]
"""What is done with a queued statement's result after its round trip."""

_UNREAD = object()
"""The tokenizer of a unit whose first round trip has not returned yet."""


ROWS_DISAGREE = "stored rows and their indexes disagree"
"""What a statement that changed another number of rows than expected means: the rows
the service read and the stored ones disagree (see :meth:`Session.write`)."""


class _Deferred(Statement):
    """A statement queued for the unit's next round trip; what is done with its result
    (``then``; ``check``: it may fail the unit, so it runs before ``COMMIT`` is sent),
    and the ``RepositoryCorruption`` message of a statement that checks itself."""

    __slots__ = ("check", "refusal", "then")

    def __init__(
        self,
        sql: str,
        params: Sequence[Any],
        then: _Then | None = None,
        *,
        check: bool = False,
        refusal: str | None = None,
    ) -> None:
        super().__init__(sql, params, then is not None, checked=refusal is not None)
        self.then = then
        self.check = check
        self.refusal = refusal


_LOCK = "SELECT pg_advisory_xact_lock"


def _lone_lock(item: Statement) -> bool:
    """Whether ``item`` is a queued advisory lock and nothing more (one key, no result
    read, no check)."""
    return (
        isinstance(item, _Deferred)
        and item.then is None
        and not item.check
        and item.refusal is None
        and item.sql.startswith(_LOCK)
        and len(item.params) == 1
    )


def _coalesced(queue: list[Statement]) -> tuple[list[Statement], list[int]]:
    """The statements to send for ``queue``, and for each of its statements the index of
    the one that carries it: consecutive lone locks go as one statement, which takes
    them in the same order (the server evaluates a select list from left to right), so
    that a write whose locks are the store's and its scope's costs one statement less."""
    sent: list[Statement] = []
    owners: list[int] = []
    calls: list[str] = []  # the lock calls of the statement at the end of ``sent``
    for item in queue:
        if not _lone_lock(item):
            calls = []
            sent.append(item)
        elif not calls:
            calls = [item.sql.removeprefix("SELECT ")]
            sent.append(item)
        else:
            calls.append(item.sql.removeprefix("SELECT "))
            params = (*sent[-1].params, *item.params)
            sent[-1] = Statement("SELECT " + ", ".join(calls), params, False)
        owners.append(len(sent) - 1)
    return sent, owners


def _starts_transaction(item: _Deferred) -> bool:
    """Whether a queued statement is the transaction's ``BEGIN``, or a check that only a
    unit that commits later can act on."""
    return item.check or item.sql.startswith("BEGIN")


class Session:
    """One transaction's connection, shared by the roles of its unit.

    ``scratch`` is the repository's dictionary for data the service derives from the
    store (see ``UnitOfWork.scratch``).

    A writing unit runs at ``READ COMMITTED`` and holds, until it ends, an exclusive
    advisory lock on every scope it touches, taken by :meth:`key` before the first
    statement that reads or writes the scope: writers of one scope run one after the
    other, and every statement of one sees all that the writers before it committed;
    writers of different scopes run at once. ``store_lock`` is the key of the store's own
    lock, which the repository takes shared for such units and exclusive for those that
    change many scopes at once (expiry, index rebuilds, import, compaction).

    Round trips. A statement whose result nobody reads yet (the start of the
    transaction, a lock, an insert, an update whose row count is checked) is queued
    with :meth:`defer` or :meth:`write`; the queue goes to the server, in order and in
    one pipeline (see ``wire``), with the next statement whose result is read
    (:meth:`one`, :meth:`all`, :meth:`execute`, :meth:`stream`), or with ``COMMIT``.
    The server runs pipelined statements one after another, each with a snapshot taken
    when it starts, so a lock queued before a read is granted before the read begins;
    after a statement fails, it runs none of the rest of the pipeline, ``COMMIT``
    included. So a queued statement's error is raised by the round trip that carries
    it, and the unit rolls back with nothing committed; a row-count check is made by the
    statement itself, on the server, for the same reason. A unit whose only change is
    one statement may commit in the round trip that carries it (:meth:`one_and_commit`):
    one round trip in all.
    """

    def __init__(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        scratch: dict[object, object],
        *,
        write: bool,
        store: str,
        store_oid: int,
        known: set[ScopeKey] | None = None,
        erasing: bool = False,
    ) -> None:
        self.conn = conn
        # The OID of the store's ``meta`` table when the repository opened it: a
        # statement that commits without the unit's own checks (see
        # :meth:`one_and_commit`) stores nothing in another store made under its name.
        self.store_oid = store_oid
        # Whether the unit is an erasing one (the repository rewrites after its commit).
        self.erasing = erasing
        # The repository's scopes whose row is committed; this unit's join on commit.
        self.known: set[ScopeKey] = set() if known is None else known
        self._tokenizer: object = _UNREAD
        self.scratch = scratch
        self.writing = write
        self.store = store.encode("utf-8")
        self.store_lock = lock_key(b"store", self.store)
        self.locked: set[ScopeKey] = set()
        self.ensured: set[ScopeKey] = set()
        self.rewrite_requested = False
        self.touched_tables: set[str] = set()
        # Whether any statement of the unit has gone to the server (the transaction is
        # open there), and the statements queued for the next round trip.
        self.sent = False
        self._queue: list[_Deferred] = []
        self._opening = 0
        # The statements of the transaction's start, for a unit that begins again after
        # committing early (see :meth:`one_and_commit`); whether it has committed.
        self._start: list[_Deferred] = []
        self.committed = False
        # The server-side cursors of the unit's reads still open (see :meth:`stream`).
        self._cursors: set[psycopg.ServerCursor[tuple[Any, ...]]] = set()

    @property
    def tokenizer(self) -> object:
        """The search index's tokenizer, read with the schema version when the unit's
        first round trip ran (see the repository)."""
        if self._tokenizer is _UNREAD:
            self.flush()
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, value: object) -> None:
        self._tokenizer = value

    def read_tokenizer(self, value: object) -> None:
        """The tokenizer the unit's start read (unless the unit has set one since)."""
        if self._tokenizer is _UNREAD:
            self._tokenizer = value

    def key(self, scope: ScopeKey) -> tuple[bytes, bytes, bytes]:
        """The scope's three IDs as the parameters of :func:`scoped`; in a writing unit,
        first the scope's lock (once per unit), queued: the statement that takes it runs
        before the statement these parameters are for."""
        ids = (enc(scope[0]), enc(scope[1]), enc(scope[2]))
        if self.writing and scope not in self.locked:
            self.defer("SELECT pg_advisory_xact_lock(%s)", (lock_key(b"scope", self.store, *ids),))
            self.locked.add(scope)
        return ids

    def owe_rewrite(self, tables: Iterable[str]) -> None:
        """Record in the store, in this (erasing) transaction, that ``tables`` are owed a
        rewrite once no snapshot older than this transaction is left (the repository
        runs it after the commit, or a later erasing call of any process does)."""
        self.write(
            "UPDATE meta SET rewrite_tables = ARRAY(SELECT DISTINCT t "
            "FROM unnest(rewrite_tables || %s::text[]) AS t ORDER BY t), "
            "rewrite_xid = GREATEST(rewrite_xid, pg_current_xact_id()) WHERE singleton = 1",
            (sorted(tables),),
            rows=1,
        )
        self.rewrite_requested = True

    def require_owner(self) -> None:
        """Fail with ``RepositoryReadOnly`` unless this connection's role may rewrite
        every table of the store (``VACUUM FULL`` needs the owner's role; for any other
        role the server skips the table with a mere warning, which would leave an
        erasure's rows in place while the call reported success)."""
        row = self.one(OWNS_THE_TABLES)
        if row is None or row[0] is not True:
            raise RepositoryReadOnly("rewriting the store's tables needs the role that owns them")

    def lock_store(self) -> None:
        """Take the store's lock exclusively (for a change of the whole store made in a
        unit that began with it shared: it waits for every other writer to finish)."""
        self.defer("SELECT pg_advisory_xact_lock(%s)", (self.store_lock,))

    def opening(
        self,
        sql: str,
        params: Sequence[Any] = (),
        then: _Then | None = None,
        *,
        check: bool = False,
    ) -> None:
        """Queue a statement of the transaction's start (see :meth:`defer`): a unit that
        sends nothing else sends none of them."""
        self.defer(sql, params, then, check=check)
        self._opening = len(self._queue)
        self._start.append(self._queue[-1])

    def defer(
        self,
        sql: str,
        params: Sequence[Any] = (),
        then: _Then | None = None,
        *,
        check: bool = False,
    ) -> None:
        """Queue one statement for the unit's next round trip; ``then`` is called with
        its result once that round trip has returned. With ``check`` (``then`` may fail
        the unit), ``COMMIT`` waits for a round trip of its own after it."""
        self._queue.append(_Deferred(sql, params, then, check=check))

    def write(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        rows: int | None = None,
        refusal: str | None = None,
    ) -> None:
        """Queue a statement that changes rows (see :meth:`defer`).

        With ``rows``, the statement (an ``INSERT``, ``UPDATE`` or ``DELETE`` without
        ``RETURNING``) must change exactly that many rows: it is sent as a statement
        that divides by zero otherwise, which fails the unit with
        ``RepositoryCorruption`` (:data:`ROWS_DISAGREE`). With ``refusal``, ``sql``
        divides by zero itself when what it checks does not hold, and the unit fails with
        ``RepositoryCorruption(refusal)``."""
        if rows is not None:
            sql = (
                f"WITH checked_rows AS ({sql} RETURNING 1) "
                "SELECT 1 / (COUNT(*) = %s)::int FROM checked_rows"
            )
            params, refusal = (*params, rows), ROWS_DISAGREE
        self._queue.append(_Deferred(sql, params, refusal=refusal))

    def flush(self) -> None:
        """Send what is queued, in one round trip (nothing when nothing is)."""
        if self._queue:
            self._send(None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        """Run one statement in the unit's transaction (``%s`` parameters), after what is
        queued and in the same round trip."""
        return self._send((sql, params))

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._send((sql, params)).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._send((sql, params)).fetchall()

    def many(self, reads: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        """The rows of each of several statements that do not depend on one another,
        after what is queued and in the same round trip."""
        queue: list[Statement] = list(self._queue)
        queue.extend(Statement(sql, params, True) for sql, params in reads)
        self._queue, self._opening = [], 0
        results = self._run(queue)
        return [result.fetchall() for result in results[len(results) - len(reads) :]]

    def one_and_commit(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """:meth:`one`, committed in the same round trip: for a unit whose only change
        is this statement's, made only when what the unit's queued checks read holds
        (the statement must check it on the server). The unit then has nothing left to
        commit; after a failure nothing is committed.

        As the unit's first round trip, the pipeline is the transaction: the server
        runs a pipeline's statements in one implicit transaction (at the session's
        ``READ COMMITTED``, see ``connection.connection_settings``), commits it at the
        pipeline's end and runs none of it after a failure; so ``BEGIN``, ``COMMIT`` and
        the queued checks are left out. Later, ``COMMIT`` goes with the statement."""
        statement = Statement(sql, params, True)
        queue: list[Statement]
        if self.sent:
            queue = [*self._queue, statement, Statement("COMMIT", (), False)]
        else:
            queue = [*(item for item in self._queue if not _starts_transaction(item)), statement]
        self._queue, self._opening = [], 0
        results = self._run(queue)
        self.committed = True
        return results[queue.index(statement)].fetchone()

    def begin_again(self) -> None:
        """After :meth:`one_and_commit`, open a new transaction for the rest of the unit:
        its start is queued again, and each scope's lock is taken again before the
        first statement on it."""
        self.committed = False
        self.sent = False
        self.locked.clear()
        self._queue = list(self._start)
        self._opening = len(self._queue)

    def _send(self, last: tuple[str, Sequence[Any]] | None) -> Result:
        """The queue, then ``last``, in one round trip; then each queued statement's
        ``then``, in order. The result is ``last``'s."""
        queue: list[Statement] = list(self._queue)
        self._queue, self._opening = [], 0
        if last is not None:
            queue.append(Statement(last[0], last[1], True))
        return self._run(queue)[-1]

    def _run(self, queue: list[Statement]) -> list[Result]:
        """``queue`` in one round trip; then each queued statement's ``then``."""
        self.sent = True
        sent, owners = _coalesced(queue)
        try:
            carried = round_trip(self.conn, sent)
        except Refused as refused:
            item = queue[owners.index(refused.index)]  # a check is never coalesced
            assert isinstance(item, _Deferred) and item.refusal is not None
            raise RepositoryCorruption(item.refusal) from None
        results = [carried[owner] for owner in owners]
        for item, result in zip(queue, results, strict=True):
            if isinstance(item, _Deferred) and item.then is not None:
                item.then(result)
        return results

    def commit(self) -> None:
        """Send what is queued and ``COMMIT``: in one round trip, or two when a queued
        statement's result must be checked here first (a failed check rolls the unit
        back with nothing committed). A unit that sent nothing but its start has nothing
        to commit."""
        if self.committed and not self._queue:
            return  # committed with the unit's only change (see one_and_commit)
        if not self.sent and len(self._queue) == self._opening:
            self._queue, self._opening = [], 0
            return
        if any(item.check for item in self._queue):
            self._send(None)
        self._send(("COMMIT", ()))

    def rollback(self) -> None:
        """End the transaction without its changes (nothing to do when nothing was
        sent); a failure to reach the server is left to the pool, which checks the
        connection."""
        self._queue, self._opening = [], 0
        if self.sent:
            with contextlib.suppress(psycopg.Error):
                round_trip(self.conn, [Statement("ROLLBACK", (), False)])

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of a query, fetched ``CHUNK`` at a time through a server-side cursor
        of the unit's transaction (so memory holds one chunk). Only valid inside the unit
        of work."""
        self.flush()
        cursor = self.conn.cursor(name=f"trueheart_scan_{next(_cursor_names)}")
        cursor.itersize = CHUNK
        self._cursors.add(cursor)
        try:
            cursor.execute(sql, params)
            yield from cursor
        finally:
            self._cursors.discard(cursor)
            cursor.close()

    def end(self) -> None:
        """The unit is over (committed or rolled back), and its connection about to go
        back to the pool: close the cursors of reads left unfinished (a call that failed
        while it walked one). The transaction that held them has ended, so nothing is
        sent to the server; left open, a cursor would be closed whenever its reader is
        collected, by a ``CLOSE`` sent inside whatever unit then holds the connection,
        which the server refuses, aborting that unit's transaction."""
        cursors, self._cursors = self._cursors, set()
        for cursor in cursors:
            with contextlib.suppress(psycopg.Error):
                cursor.close()

    def ensure_scope(self, scope: ScopeKey) -> None:
        """Record the scope in ``scopes`` (once per unit; a no-op when it is there)."""
        if scope in self.ensured or scope in self.known:
            return
        self.write(
            f"INSERT INTO scopes ({KEY}) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            self.key(scope),
        )
        self.ensured.add(scope)

    def chunks(self, values: Sequence[Any]) -> Iterator[list[Any]]:
        """``values`` in lists of at most ``CHUNK`` (for ``= ANY(%s)`` parameters)."""
        for start in range(0, len(values), CHUNK):
            yield list(values[start : start + CHUNK])


class Role:
    """The base of each role of a PostgreSQL unit of work."""

    def __init__(self, session: Session) -> None:
        self._s = session
