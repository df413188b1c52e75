"""The PostgreSQL repository: connecting, the schema, transactions and closing.

A pool of connections per repository, safe to share between threads; any number of
processes on any number of hosts may open the same store. Each unit of work is one
transaction on one pooled connection. A writing unit runs at ``READ COMMITTED`` under
advisory locks (see ``session.Session``): an exclusive lock on each scope it touches,
taken before the scope's first statement, and the store's lock, shared, or exclusive for
the operations that change many scopes at once. So the writers of one scope run one at
a time, as on SQLite's single writer, and every rule the service checks inside a unit
(idempotent replays, tombstones, audit rows with their change) holds; writers of
different scopes run at once. A lock not granted within ``lock_timeout`` is
``RepositoryBusy``; a deadlock (a unit that touches several scopes, against another in
the opposite order) rolls one back as ``RepositoryConflict``, which the service retries.
A reading unit runs at ``REPEATABLE READ READ ONLY``: one consistent snapshot. A
unit's statements travel in as few round trips as its reads allow (see
``session.Session`` and ``wire``).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import psycopg_pool
from psycopg.conninfo import conninfo_to_dict

from trueheart_core import logs
from trueheart_core.adapters.postgres import catalog
from trueheart_core.adapters.postgres import connection as conn_mod
from trueheart_core.adapters.postgres import schema as ddl
from trueheart_core.adapters.postgres.session import OWNS_THE_TABLES, Session
from trueheart_core.adapters.postgres.unit_of_work import PostgresUnitOfWork
from trueheart_core.adapters.postgres.watchdog import Watchdog
from trueheart_core.adapters.postgres.wire import Result
from trueheart_core.adapters.sql.failures import DIAGNOSTICS, REENTRANT
from trueheart_core.domain import validation as v
from trueheart_core.domain.validation import utf8_size
from trueheart_core.errors import (
    RepositoryBusy,
    RepositoryReadOnly,
    RepositoryUnavailable,
    TrueHeartError,
    ValidationError,
    body_free_errors,
)
from trueheart_core.ports import Capability, Operation

_REWRITE_OWED = "erasure rewrite incomplete"
_LOCK = {True: "pg_advisory_xact_lock", False: "pg_advisory_xact_lock_shared"}
"""The store's lock: exclusive (``True``) for whole-store changes, else shared."""


_STORE_REPLACED = (
    "the store was dropped and created again since it was opened: close the repository "
    "and open it again"
)


def _read_meta(
    session: Session, owed: Callable[[], None], same_store: Callable[[object], None]
) -> Callable[[Result], None]:
    """What a unit does with the stored version and tokenizer it read at its start,
    whether a rewrite is owed (``owed`` is called when one is), and which store it
    reads (``same_store`` is given the ``meta`` table's OID)."""

    def read(result: Result) -> None:
        rows = result.fetchall()
        session.read_tokenizer(catalog.checked_meta(rows))
        same_store(rows[0][3])
        if rows[0][2] is True:
            owed()

    return read


_WHOLE_STORE: frozenset[Operation] = frozenset({"expire", "rebuild", "import", "compact"})
"""Writing operations that change rows of many scopes: they hold the store's lock
exclusively, so no scope's writer runs meanwhile (every other writer holds it shared)."""


def _seconds(field: str, value: object, *, low: float, high: float) -> float:
    number = v.real(value)
    if number is None or (isinstance(number, float) and not math.isfinite(number)):
        raise ValidationError(field, "must be a number of seconds")
    # An int is compared exactly (converting a huge one to float would overflow).
    if not low <= number <= high:
        raise ValidationError(field, f"must be from {low:g} through {high:g} seconds")
    return float(number)


def _conninfo(conninfo: object) -> str:
    """A libpq connection string or URL, checked by libpq's own parser. The message
    never quotes it: it may hold a password."""
    if not isinstance(conninfo, str) or not conninfo.strip() or "\x00" in conninfo:
        raise ValidationError("conninfo", "must be a libpq connection string or URL")
    if not conninfo.isascii() and utf8_size(conninfo) is None:
        # libpq takes UTF-8 only; the encoder's error would quote the whole string
        raise ValidationError("conninfo", "must be a libpq connection string or URL")
    try:
        conninfo_to_dict(conninfo)
    except psycopg.Error:
        raise ValidationError("conninfo", "must be a libpq connection string or URL") from None
    return conninfo


SCHEMA_NAME_RULE = (
    "must be 1 to 63 lower-case letters, digits or underscores, not beginning with a digit or pg_"
)


def schema_exists(conninfo: str, schema: str) -> bool:
    """Whether the schema ``schema`` on the server at ``conninfo`` holds a store (its
    ``meta`` table), without creating anything."""
    target = _conninfo(conninfo)
    if not ddl.valid_schema_name(schema):
        raise ValidationError("schema", SCHEMA_NAME_RULE)
    with conn_mod.translate("could not connect to the server"):
        conn = psycopg.connect(target, autocommit=True, connect_timeout=10)
    # The query waits on the server: a watchdog of its own bounds that wait.
    watchdog = Watchdog(10.0, 10.0, lambda: None)
    watchdog.known(conn)
    with conn_mod.translate(DIAGNOSTICS["open"]), conn, watchdog.busy(conn):
        row = conn.execute(
            "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = 'meta'",
            (schema,),
        ).fetchone()
    return row is not None


@body_free_errors
class PostgresRepository:
    """The PostgreSQL adapter: a store in one schema of a PostgreSQL database.

    ``conninfo`` is a libpq connection string or URL (``"postgresql://user@host/db"``).
    ``schema`` names the schema that holds the store (created with its tables when it
    does not exist; an existing one must be exactly this version's, or an older version
    that is upgraded). ``max_connections`` bounds the pool; ``connect_timeout`` is how
    long a connection (or a free one from the pool) is waited for; ``lock_timeout`` how
    long a statement waits for a row or table lock before ``RepositoryBusy``;
    ``statement_timeout`` bounds one statement (``None``: no bound). ``probe_after``: once
    a call has used its connection for this many seconds, the repository checks that a
    server process answers at that connection's address (within ``connect_timeout``),
    and again every ``probe_after`` seconds while the call goes on; when none does, the
    pool's connections to that address are closed, and the calls waiting on them raise
    ``RepositoryUnavailable`` (a slow statement on a server that answers is not cut; see
    ``docs/postgres.md``).
    ``read_only=True`` opens every transaction read-only: writes raise
    ``RepositoryReadOnly``.

    Needs the ``postgres`` extra (psycopg 3 and psycopg-pool). Usable as a context
    manager; :meth:`close` closes the pool.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "trueheart",
        max_connections: int = 10,
        connect_timeout: float = 10.0,
        lock_timeout: float = 5.0,
        statement_timeout: float | None = None,
        probe_after: float = 30.0,
        read_only: bool = False,
    ) -> None:
        target = _conninfo(conninfo)
        if not ddl.valid_schema_name(schema):
            raise ValidationError("schema", SCHEMA_NAME_RULE)
        if (
            isinstance(max_connections, bool)
            or not isinstance(max_connections, int)
            or not 1 <= max_connections <= 1000
        ):
            raise ValidationError("max_connections", "must be an int from 1 through 1000")
        wait = _seconds("connect_timeout", connect_timeout, low=1, high=3600)
        locks = _seconds("lock_timeout", lock_timeout, low=0.001, high=3600)
        bound = (
            None
            if statement_timeout is None
            else _seconds("statement_timeout", statement_timeout, low=0.001, high=86400)
        )
        probe = _seconds("probe_after", probe_after, low=0.1, high=3600)
        if not isinstance(read_only, bool):
            raise ValidationError("read_only", "must be a bool")
        self._schema = schema
        self._read_only = read_only
        self._scratch: dict[object, object] = {}
        self._lock = threading.Lock()
        # Whether this repository may have left a rewrite owed, or found one owed by
        # another (see ``close``).
        self._rewrite_may_be_owed = False
        self._lock_timeout = locks
        # Scopes whose row is committed (a scope's row is never deleted).
        self._known: set[tuple[str, str, str]] = set()
        # The OID of the store's ``meta`` table when it was opened: another OID is
        # another store, made under the same name since (see ``_same_store``).
        self._store_oid = 0
        self._inside = threading.local()  # whether this thread is inside a unit of work
        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[tuple[Any, ...]]] | None = None
        options = conn_mod.options_text(
            conn_mod.connection_settings(
                schema=schema, lock_timeout=locks, statement_timeout=bound, read_only=read_only
            )
        )
        try:
            with conn_mod.translate(DIAGNOSTICS["open"]):
                self._lender = conn_mod.make_pool(
                    target,
                    options=options,
                    max_connections=max_connections,
                    connect_timeout=wait,
                    probe_after=probe,
                )
                self._pool = self._lender.pool
                with self._lender.connection(DIAGNOSTICS["open"]) as conn:
                    found = catalog.open_schema(conn, schema, read_only=read_only)
                    self._store_oid = catalog.store_oid(conn, schema)
        except TrueHeartError as error:
            self._close_pool()
            logs.STORE.warning("store refused: %s: %s", type(error).__name__, str(error))
            raise
        except BaseException:
            self._close_pool()
            raise
        if found < ddl.SCHEMA_VERSION:
            logs.STORE.info("schema upgraded from version %d to %d", found, ddl.SCHEMA_VERSION)
        logs.STORE.debug(
            "store opened: postgresql, %s, schema version %d",
            "read-only" if read_only else "writable",
            ddl.SCHEMA_VERSION,
        )

    @property
    def capabilities(self) -> frozenset[Capability]:
        """Persistent, shared by any number of processes, opens read-only, reports the
        size of its tables, stores vectors. It has no file of its own to search
        (``FORENSICS``) and no ``backup`` into a new store (use ``export_store`` and
        ``import_store``, or the server's own backups: see ``docs/postgres.md``)."""
        return frozenset(
            {
                Capability.PERSISTENT,
                Capability.SHARED_ACROSS_PROCESSES,
                Capability.READ_ONLY_OPEN,
                Capability.STORAGE_SIZES,
                Capability.VECTORS,
            }
        )

    @property
    def read_only(self) -> bool:
        """Whether this repository refuses writes."""
        return self._read_only

    @property
    def schema(self) -> str:
        """The name of the schema that holds the store."""
        return self._schema

    def _pool_or_fail(self) -> psycopg_pool.ConnectionPool[psycopg.Connection[tuple[Any, ...]]]:
        pool = self._pool
        if pool is None:
            raise ValidationError("repository", "is closed")
        return pool

    @contextlib.contextmanager
    def unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool = False
    ) -> Iterator[PostgresUnitOfWork]:
        """One transaction (see ``ports.Repository.unit_of_work``), timed and logged
        (see :mod:`trueheart_core.logs`)."""
        started = time.perf_counter()
        try:
            with self._unit_of_work(operation, write=write, erasing=erasing) as uow:
                yield uow
        except RepositoryBusy as error:
            logs.busy(operation, str(error).removeprefix("repository busy: "))
            raise
        finally:
            logs.unit_finished(operation, write=write, seconds=time.perf_counter() - started)

    @contextlib.contextmanager
    def _unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool
    ) -> Iterator[PostgresUnitOfWork]:
        diagnostic = DIAGNOSTICS[operation]
        self._pool_or_fail()
        if getattr(self._inside, "unit", False):
            # A host callback called back into the store from inside a call: a second
            # connection could wait for the first one's locks until the lock timeout.
            raise ValidationError("repository", REENTRANT)
        if write and self._read_only:
            raise RepositoryReadOnly(diagnostic)
        self._inside.unit = True
        try:
            with self._unit_on(
                self._lender, operation, diagnostic, write=write, erasing=erasing
            ) as uow:
                yield uow
        finally:
            self._inside.unit = False

    @contextlib.contextmanager
    def _unit_on(
        self,
        lender: conn_mod.Lender,
        operation: Operation,
        diagnostic: str,
        *,
        write: bool,
        erasing: bool,
    ) -> Iterator[PostgresUnitOfWork]:
        with conn_mod.translate(diagnostic), lender.connection(diagnostic) as conn:
            if erasing:
                self._rewrite_may_be_owed = True
            uow = PostgresUnitOfWork(
                conn,
                self._scratch,
                write=write,
                store=self._schema,
                store_oid=self._store_oid,
                known=self._known,
                erasing=erasing,
            )
            session = uow.session
            # The transaction, the store's lock and the stored version, with the tokenizer
            # the roles ask for: queued, they go to the server with the unit's first
            # statement (see ``session.Session``).
            if write:
                session.opening("BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE")
                session.opening(
                    f"SELECT {_LOCK[operation in _WHOLE_STORE]}(%s)", (session.store_lock,)
                )
            else:
                session.opening("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            session.opening(
                "SELECT schema_version, tokenizer, cardinality(rewrite_tables) > 0, "
                "tableoid::bigint FROM meta",
                (),
                _read_meta(session, self._owes_rewrite, self._same_store),
                check=True,
            )
            try:
                yield uow
            finally:
                if not uow.committed:
                    session.rollback()
                session.end()
                conn_mod.returned(conn)
            if uow.committed and erasing:
                # Nothing erased may stay in what the service derived from the store.
                self._scratch.clear()
                # This call's rewrite, and any an earlier erasure (of this process or
                # another) left owed: an erasing call that returns has left none of what
                # it or any erasure before it removed. Its change is committed, so
                # whatever stops the rewrite leaves it owed and says so.
                self._settle(conn)

    def _same_store(self, oid: object) -> None:
        """Refuse a unit that reads another store than the one opened: the schema was
        dropped and created again since (a restore, a reset). What this repository
        remembers of the store (the scopes whose row exists, what the service derived)
        is of the old one: a write that trusted it could leave a scope without its row,
        and a read could be answered from the old store's data. As a SQLite repository
        whose file was replaced, it stays refused; a new repository opens the new
        store. (A unit whose only change commits in its first round trip checks the
        same in its statement: see ``Session.store_oid``.)"""
        if oid != self._store_oid:
            raise RepositoryUnavailable(_STORE_REPLACED)

    def _settle(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """:meth:`_rewrite` after an erasing commit: any failure of the server's (a
        statement timeout, a lost connection) is ``RepositoryBusy("erasure rewrite
        incomplete")``, which says that the erasure committed and its rewrite is owed."""
        try:
            self._rewrite(conn)
        except psycopg.Error:
            logs.ERASURE.warning("erasure rewrite postponed: the server stopped it")
            raise RepositoryBusy(_REWRITE_OWED) from None

    def _rewrite(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Run the rewrite the store owes (``VACUUM FULL``: new files that hold only the
        rows that stay), after an erasure's commit and outside any transaction.

        An erasing transaction records the tables it asks to rewrite, and itself, in
        ``meta`` (see ``operations``): the rewrite is owed until it has run, whatever
        becomes of the process that erased. ``VACUUM FULL`` copies every row version a
        snapshot of the database might still see, and counts as such every version a
        transaction removed while some snapshot's horizon (``backend_xmin``) is not
        past it, even a snapshot taken after the commit; so first it waits, up to the
        lock timeout, until no other session of the database (nor a prepared
        transaction) holds a horizon or a transaction at or before the newest erasing
        transaction. When that, or the table locks, cannot be had in time, the rewrite
        stays owed: ``RepositoryBusy("erasure rewrite incomplete")``, and every later
        erasing call (and :meth:`close`) tries it again after its own change. A role that
        does not own the tables leaves it owed (the server would skip them with a
        warning). The rewrite runs without the session's statement timeout: it takes as
        long as copying the tables takes. Logged on ``trueheart_core.erasure``."""
        row = conn.execute("SELECT rewrite_tables, rewrite_xid::text FROM meta").fetchone()
        if row is None or not row[0]:
            return
        tables, xid = list(row[0]), str(row[1])
        owner = conn.execute(OWNS_THE_TABLES).fetchone()
        if owner is None or owner[0] is not True:
            logs.ERASURE.warning("erasure rewrite postponed: this role does not own the store")
            return
        started = time.perf_counter()
        if not self._older_horizons_ended(conn, xid):
            logs.ERASURE.warning("erasure rewrite postponed: an older transaction is open")
            raise RepositoryBusy(_REWRITE_OWED)
        ours = [t for t in tables if t in ddl.REWRITE_TABLES]
        if len(ours) < len(tables):
            # Names of no table of the store (the row edited behind the library's back,
            # which ``verify_integrity`` reports): they are dropped from the list below
            # and never rewritten. A VACUUM without a list would rewrite every table of
            # the database, other schemas' and other applications' included.
            logs.ERASURE.warning("erasure rewrite: the store's metadata names other tables")
        if ours:
            conn.execute("SET statement_timeout = 0")
            try:
                conn.execute(f"VACUUM (FULL, ANALYZE) {', '.join(map(ddl.quote, ours))}")
            except psycopg.errors.LockNotAvailable:
                logs.ERASURE.warning("erasure rewrite postponed: the tables are in use")
                raise RepositoryBusy(_REWRITE_OWED) from None
            finally:
                conn.execute("RESET statement_timeout")
        # The tables read above are settled, unless a newer erasure committed meanwhile
        # (its transaction is newer than ``xid``: all stay owed). An older one that
        # committed meanwhile (waited for above) keeps ``xid`` but may have added tables,
        # which stay owed: only the tables rewritten here leave the list.
        conn.execute(
            "UPDATE meta SET rewrite_tables = ARRAY(SELECT t FROM unnest(rewrite_tables) "
            "AS t WHERE NOT t = ANY(%s::text[]) ORDER BY t), "
            "rewrite_xid = CASE WHEN rewrite_tables <@ %s::text[] THEN NULL "
            "ELSE rewrite_xid END WHERE singleton = 1 AND rewrite_xid = %s::xid8",
            (tables, tables, xid),
        )
        logs.ERASURE.info(
            "erasure rewrite: %d tables rewritten in %.3f s",
            len(ours),
            time.perf_counter() - started,
        )

    def _older_horizons_ended(self, conn: psycopg.Connection[tuple[Any, ...]], xid: str) -> bool:
        """Wait (up to the lock timeout) until no other session of the database holds a
        snapshot horizon or a transaction at or before the transaction ``xid``, nor a
        prepared transaction, a standby (through ``hot_standby_feedback``, which its
        WAL sender holds on the primary) or a replication slot holds one; False if one
        still does, or when the server defers cleanup (``vacuum_defer_cleanup_age``).
        Vacuums are left out: the server leaves them out of the horizon too."""
        deadline = time.monotonic() + self._lock_timeout
        while True:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM pg_stat_activity WHERE (datname = "
                "current_database() OR backend_type = 'walsender') "
                "AND pid <> pg_backend_pid() AND backend_type <> 'autovacuum worker' "
                "AND (age(backend_xmin) >= age(%s::xid8::xid) "
                "OR age(backend_xid) >= age(%s::xid8::xid))) + "
                "(SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database() "
                "AND age(transaction) >= age(%s::xid8::xid)) + "
                "(SELECT count(*) FROM pg_replication_slots "
                "WHERE age(xmin) >= age(%s::xid8::xid)) + "
                "(SELECT count(*) WHERE COALESCE(NULLIF(current_setting("
                "'vacuum_defer_cleanup_age', true), ''), '0')::bigint > 0)",
                (xid, xid, xid, xid),
            ).fetchone()
            if row is not None and row[0] == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    # --- operations: sizes ------------------------------------------------------------

    def storage_sizes(self) -> tuple[tuple[str, int], ...] | None:
        """``(("database", bytes),)``: the size of every table of the store's schema with
        its indexes and TOAST data (see ``ports.SupportsStorageSizes``)."""
        self._pool_or_fail()
        with (
            conn_mod.translate(DIAGNOSTICS["stats"]),
            self._lender.connection(DIAGNOSTICS["stats"]) as conn,
        ):
            row = conn.execute(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind = 'r'",
                (self._schema,),
            ).fetchone()
        return (("database", int(row[0]) if row else 0),)

    def _close_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(Exception):
                pool.close(timeout=5)

    def _owes_rewrite(self) -> None:
        """A unit found a rewrite owed in the store (left by any repository): this one's
        :meth:`close` runs it, as its next erasing call would."""
        self._rewrite_may_be_owed = True

    def close(self) -> None:
        """Close the pool, after the rewrite still owed, if any: one this repository's
        erasing calls left, or one its calls found owed in the store (left by any
        repository); the owner of the tables runs it here as its erasing calls and
        ``compact()`` do, and what still cannot run stays owed. Idempotent; later use
        raises ``ValidationError``. A callback inside a call on this thread (an
        estimator, an embedder) may not close it under the call's transaction:
        ``ValidationError``, and nothing is closed."""
        if getattr(self._inside, "unit", False):
            raise ValidationError("repository", REENTRANT)
        pool = self._pool
        if pool is not None and self._rewrite_may_be_owed and not self._read_only:
            # What cannot be rewritten now stays owed in the store, for the next
            # erasing call of any process.
            with (
                contextlib.suppress(Exception),
                pool.connection(timeout=5) as conn,
                self._lender.watchdog.busy(conn),
            ):
                self._rewrite(conn)
        self._scratch.clear()
        self._close_pool()

    def __enter__(self) -> PostgresRepository:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
