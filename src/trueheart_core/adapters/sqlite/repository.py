"""The SQLite repository: opening the store, transactions and closing.

One persistent connection per repository, guarded by a lock so the repository can be
shared by threads; several processes may open the same file (WAL mode). Each unit of
work is one SQLite transaction. Write units begin with ``BEGIN IMMEDIATE`` so that
contention surfaces before any work is done.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator

from trueheart_core import logs
from trueheart_core.adapters.sql.failures import DIAGNOSTICS, REENTRANT
from trueheart_core.adapters.sqlite import backup as backup_mod
from trueheart_core.adapters.sqlite import connection as conn_mod
from trueheart_core.adapters.sqlite import files, handles, opening, schema
from trueheart_core.adapters.sqlite.unit_of_work import SQLiteUnitOfWork
from trueheart_core.domain import validation as v
from trueheart_core.errors import (
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    RepositoryUnavailable,
    TrueHeartError,
    ValidationError,
    body_free_errors,
)
from trueheart_core.ports import Capability, Operation, ScopeKey

_FILE_GONE = (
    "the database file was removed or replaced since it was opened: close the repository "
    "and open the path again"
)
_SCRUB_NEEDS_SPACE = (
    "erasure committed, but scrubbing its bytes from the files needs free disk space: "
    "free space, then make any call or close the repository"
)
_SCRUB_FAILED = (
    "erasure committed, but scrubbing its bytes from the files failed: make any call or "
    "close the repository to try again"
)
_CLOSE_WAITED = "a call of another thread is still running; nothing was closed"
_EARLIER_SCRUB_NEEDS_SPACE = "an earlier erasure's scrub needs free disk space; nothing was done"


def _clean(conn: sqlite3.Connection) -> bool:
    """Whether the store's kept tables hold only rows that were appended and overwritten
    in place since the file was last rewritten (see ``schema``)."""
    row = conn.execute("SELECT clean FROM store_state WHERE singleton = 1").fetchone()
    return row is not None and row[0] == 1


@body_free_errors
class SQLiteRepository:
    """The SQLite adapter: a file path (created on first use) or ``":memory:"``.

    Keeps one connection open until :meth:`close`; usable as a context manager and safe
    to share between threads. Files that are not TrueHeart databases, or that a newer
    version wrote, are refused before SQLite touches them. ``read_only=True`` (or a file
    the process may not write) opens the store for reading only: every write raises
    ``RepositoryReadOnly``. ``busy_timeout`` is how many seconds a write waits for
    another writer before raising ``RepositoryBusy``, and how long a call waits for a
    call of another thread on this repository (its calls run one at a time) before
    raising it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        read_only: bool = False,
    ) -> None:
        target = files.normalise_path(path)
        seconds = v.real(busy_timeout)
        if seconds is None:
            raise ValidationError("busy_timeout", "must be a number of seconds")
        if not 0 <= seconds <= 3600:
            raise ValidationError("busy_timeout", "must be from 0 through 3600 seconds")
        if not isinstance(read_only, bool):
            raise ValidationError("read_only", "must be a bool")
        self._lock = threading.RLock()
        self._unit_thread: int | None = None  # the thread inside a unit of work
        self._scope_ids: dict[ScopeKey, int] = {}
        # What the service keeps in memory of this store (see UnitOfWork.scratch).
        self._scratch: dict[object, object] = {}
        # The roles of this connection's units, made with the first (see the unit).
        self._roles: SQLiteUnitOfWork | None = None
        self._file_backed = target != ":memory:"
        self._path = os.path.abspath(target) if self._file_backed else None
        # The file itself, every symbolic link of the path resolved: SQLite keeps the
        # WAL beside it, and the sizes and byte searches read it there.
        self._file = self._path
        self._conn: sqlite3.Connection | None = None
        # This repository's hold on the file's descriptor (see ``handles``).
        self._handle: handles.Handle | None = None
        # Set when an erasing change committed but its checkpoint could not finish.
        self._erasure_pending = False
        # Set when a bulk erasure committed but the file has not been rewritten yet.
        self._rewrite_pending = False
        # For a file read as an immutable snapshot: what the file was when it was opened
        # (see ``_fresh_snapshot``); None otherwise.
        self._snapshot: files.Stamp | None = None
        self._busy_timeout = float(seconds)
        try:
            self._opened(self._path or target, read_only)
        except TrueHeartError as error:
            logs.STORE.warning("store refused: %s: %s", type(error).__name__, str(error))
            raise
        logs.STORE.debug(
            "store opened: %s, %s, schema version %d",
            "file" if self._file_backed else "in memory",
            "read-only" if self._read_only else "writable",
            schema.SCHEMA_VERSION,
        )

    def _opened(self, target: str, read_only: bool) -> None:
        """Open the store at ``target`` (see ``opening.open_store``) and take it as this
        repository's connection, file hold and snapshot stamp."""
        opened = opening.open_store(target, busy_timeout=self._busy_timeout, read_only=read_only)
        self._conn, self._handle, self._file = opened.conn, opened.handle, opened.path
        self._snapshot, self._read_only = opened.snapshot, opened.read_only

    def _check_in_place(self) -> None:
        """Refuse a unit when the path no longer names the file this repository opened:
        it was removed, or another file took its name (a restored backup moved over it,
        the old file renamed aside or kept under another hard link). The connection
        would go on reading and writing the old file, which nobody finds at the path,
        and a write it committed would be lost. (One ``stat`` of the path: the link
        count of the open file would miss a file that keeps another name.)"""
        assert self._path is not None and self._handle is not None
        try:
            found = os.stat(self._path)
        except OSError:
            raise RepositoryUnavailable(_FILE_GONE) from None
        if (found.st_dev, found.st_ino) != self._handle.key:
            raise RepositoryUnavailable(_FILE_GONE)

    def _fresh_snapshot(self) -> None:
        """Before a unit on a file read as an immutable snapshot: when the file has
        changed since it was opened, or side files have appeared beside it (a user who
        may write the directory, such as its owner, has written since), open it again,
        as a snapshot if it still is one, else as a store in use, so that what that
        user committed is read instead of stale pages."""
        if self._snapshot is None or self._path is None:
            return
        if self._file is not None and files.file_stamp(self._file) == self._snapshot:
            return
        old_conn, old_handle = self._conn, self._handle
        # On failure this unit fails, the old connection stays, and the next unit tries
        # again.
        self._opened(self._path, True)
        if old_conn is not None:
            with contextlib.suppress(sqlite3.Error):
                old_conn.close()
        if old_handle is not None:
            old_handle.release()
        self._scope_ids.clear()
        self._scratch.clear()

    @property
    def capabilities(self) -> frozenset[Capability]:
        """A file store is persistent, shared across processes, opens read-only, has
        file sizes and forensic byte search; every store has backup and vectors."""
        common = {Capability.BACKUP, Capability.VECTORS}
        if not self._file_backed:
            return frozenset(common)
        return frozenset(
            common
            | {
                Capability.PERSISTENT,
                Capability.SHARED_ACROSS_PROCESSES,
                Capability.READ_ONLY_OPEN,
                Capability.STORAGE_SIZES,
                Capability.FORENSICS,
            }
        )

    def residue(self, needles: Collection[bytes]) -> frozenset[bytes]:
        """The needles found in the database file, its WAL or its rollback journal (see
        ``ports.SupportsForensics``); empty for ``:memory:``, which has no file."""
        if self._file is None:
            return frozenset()
        with self._held("residue", DIAGNOSTICS["verify"]):
            return handles.residue(self._file, self._handle, needles)

    @property
    def read_only(self) -> bool:
        """Whether this repository refuses writes."""
        return self._read_only

    @contextlib.contextmanager
    def unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool = False
    ) -> Iterator[SQLiteUnitOfWork]:
        """One transaction (see ``ports.Repository.unit_of_work``), timed and logged
        (see :mod:`trueheart_core.logs`)."""
        started = time.perf_counter()
        try:
            yield from self._unit_of_work(operation, write=write, erasing=erasing)
        except RepositoryBusy:
            logs.busy(operation, DIAGNOSTICS[operation])
            raise
        finally:
            logs.unit_finished(operation, write=write, seconds=time.perf_counter() - started)

    def _unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool
    ) -> Iterator[SQLiteUnitOfWork]:
        """The body of :meth:`unit_of_work`: a generator that yields the unit once (one
        context manager, not two nested, on every call)."""
        diagnostic = DIAGNOSTICS[operation]
        # The lock as :meth:`_held` takes it, without a generator of its own: every
        # call passes here.
        if not self._lock.acquire(timeout=self._busy_timeout):
            raise RepositoryBusy(diagnostic)
        try:
            if self._conn is None:
                raise ValidationError("repository", "is closed")
            if self._unit_thread == threading.get_ident():
                # A host callback (an embedder, a reranker) called back into the store
                # from inside a call: the lock is re-entrant, the transaction is not.
                raise ValidationError("repository", REENTRANT)
            if write and self._read_only:
                raise RepositoryReadOnly(diagnostic)
            if self._snapshot is not None:
                self._fresh_snapshot()
            elif self._handle is not None:
                self._check_in_place()
            conn = self._conn
            if self._erasure_pending or (erasing and self._file_backed):
                self._scrub_first(conn, diagnostic, erasing=erasing)
            with conn_mod.translate(diagnostic):
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                uow = self._roles
                if uow is None or uow.conn is not conn:
                    uow = self._roles = SQLiteUnitOfWork(conn, self._scope_ids, self._scratch)
                else:
                    uow.begin()
                try:
                    # The schema can change only by a commit of another connection.
                    (data_version,) = conn.execute("PRAGMA data_version").fetchone()
                    if not uow.current(data_version):
                        (version,) = conn.execute("PRAGMA user_version").fetchone()
                        schema.check_version(version)
                        uow.revalidated(data_version)
                    self._unit_thread = threading.get_ident()
                    yield uow
                finally:
                    self._unit_thread = None
                    if not uow.committed:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                        uow.begin()  # nothing the rolled-back transaction learnt stays
                if uow.committed and erasing:
                    # Nothing erased may stay in what the service derived from the store.
                    self._scratch.clear()
                    uow.forget()
                if uow.committed and erasing and self._file_backed:
                    self._rewrite_pending = (
                        self._rewrite_pending or uow.rewrite_requested or not _clean(conn)
                    )
                    self._erasure_pending = True
                    try:
                        with conn_mod.translate(diagnostic):
                            self._erasure_pending = not self._scrub(conn)
                    except RepositoryFull:
                        raise RepositoryFull(_SCRUB_NEEDS_SPACE) from None
                    except RepositoryBusy:
                        pass  # still pending: reported below
                    except (RepositoryCorruption, RepositoryReadOnly) as error:
                        # The files could not be written (an I/O error, a file size
                        # limit): the change stands, as the message says.
                        raise type(error)(_SCRUB_FAILED) from None
                    if self._erasure_pending:
                        # A reader began between the check and the commit and outlived
                        # the busy timeout. The change is committed; only the scrub of
                        # the WAL waits for it. Every later call retries it first.
                        raise RepositoryBusy("erasure checkpoint incomplete")
        finally:
            self._lock.release()

    @contextlib.contextmanager
    def _held(self, name: str, diagnostic: str) -> Iterator[None]:
        """The repository's lock, waited for up to ``busy_timeout`` as a write waits for
        another connection's writer: a call of another thread on this repository that
        runs longer (a slow reranker, a long export, a host callback that waits for a
        call of its own on another thread) makes this one ``RepositoryBusy``, before
        any work, instead of a wait without end. The thread that holds it takes it at
        once (a callback's call is then refused as re-entrant). A refusal is logged on
        ``trueheart_core.busy`` under ``name``."""
        if not self._lock.acquire(timeout=self._busy_timeout):
            logs.busy(name, diagnostic)  # as a unit of work's refusal is
            raise RepositoryBusy(diagnostic)
        try:
            yield
        finally:
            self._lock.release()

    def _scrub_first(self, conn: sqlite3.Connection, diagnostic: str, *, erasing: bool) -> None:
        """Finish an earlier erasure's scrub before this unit, and before an erasing unit
        make sure no other connection pins an older snapshot of the WAL's frames: an
        erasing change can only be scrubbed from the WAL when none does, so such a reader
        becomes ``RepositoryBusy`` before any work is done, like write contention (a
        reader of an empty WAL holds no checkpoint up and is only found after the
        commit). A scrub that
        needs disk space holds up only erasing units: reads go on meanwhile."""
        try:
            with conn_mod.translate(diagnostic):
                scrubbed = self._scrub(conn)
        except RepositoryFull:
            if erasing:
                pending = self._erasure_pending
                raise RepositoryFull(
                    _EARLIER_SCRUB_NEEDS_SPACE if pending else diagnostic
                ) from None
            return
        self._erasure_pending = self._erasure_pending and not scrubbed
        if erasing and not scrubbed:
            raise RepositoryBusy(diagnostic)

    def _scrub_before_close(self, conn: sqlite3.Connection) -> None:
        """The owed scrub, once more, before the connection closes: raises when a reader
        or a full disk still holds it up (see :meth:`close`); any other failure (files
        that cannot be written, damage) gives it up, with a warning, as nothing later in
        this repository could run it either."""
        try:
            with conn_mod.translate(DIAGNOSTICS["erase"]):
                scrubbed = self._scrub(conn)
        except RepositoryFull:
            raise RepositoryFull(_SCRUB_NEEDS_SPACE) from None
        except RepositoryBusy:
            scrubbed = False
        except TrueHeartError as error:
            # Given up: the connection closes all the same.
            self._erasure_pending = False
            logs.ERASURE.warning("erasure scrub given up at close: %s", str(error))
            return
        if not scrubbed:
            raise RepositoryBusy("erasure checkpoint incomplete")
        self._erasure_pending = False

    def _scrub(self, conn: sqlite3.Connection) -> bool:
        """Make removed bytes leave the files: rewrite the database first when a bulk
        erasure asked for it, then copy the WAL into the file and truncate it. False
        when another connection holds it up (it is retried before the next unit).
        Logged on ``trueheart_core.erasure`` when it scrubs an erasure: done (``INFO``),
        postponed (``WARNING``); the check before an erasing unit is not logged."""
        owed = self._erasure_pending
        started = time.perf_counter()
        if self._rewrite_pending:
            try:
                rewritten = conn_mod.rewrite(conn)
            except RepositoryFull:
                logs.ERASURE.warning("erasure scrub postponed: the file rewrite needs disk space")
                raise
            if not rewritten:
                logs.ERASURE.warning("erasure scrub postponed: another connection holds the store")
                return False
            self._rewrite_pending = False
            # Fresh pages hold only live cells: erasing in place is exact again.
            conn.execute("UPDATE store_state SET clean = 1 WHERE singleton = 1 AND clean = 0")
            logs.ERASURE.info(
                "erasure scrub: database file rewritten in %.3f s", time.perf_counter() - started
            )
        try:
            done = conn_mod.checkpoint_truncate(conn)
        except RepositoryFull:
            if owed:
                logs.ERASURE.warning("erasure scrub postponed: the checkpoint needs disk space")
            raise
        if owed:
            if done:
                logs.ERASURE.info(
                    "erasure scrub: WAL copied into the file and truncated in %.3f s",
                    time.perf_counter() - started,
                )
            else:
                logs.ERASURE.warning("erasure scrub postponed: a reader holds the WAL")
        return done

    # --- operations: backup and file sizes -------------------------------------------

    def backup(self, target: str) -> tuple[int, int]:
        """Copy the whole store, online and consistently, into a new file at ``target``
        (see ``ports.SupportsBackup``); works for file and ``:memory:`` stores."""
        with self._held("backup", backup_mod.DIAGNOSTIC):
            if self._conn is None:
                raise ValidationError("repository", "is closed")
            if self._snapshot is not None:
                with conn_mod.translate(DIAGNOSTICS["open"]):
                    self._fresh_snapshot()
            elif self._handle is not None:
                self._check_in_place()
            return backup_mod.copy_to(self._conn, target)

    def storage_sizes(self) -> tuple[tuple[str, int], ...] | None:
        """``(("database", bytes), ("wal", bytes))`` of a file store (a missing WAL
        counts 0); ``None`` for ``:memory:`` (see ``ports.SupportsStorageSizes``)."""
        if self._file is None:
            return None
        # Under the lock that units and ``close`` take: another thread may be closing
        # the repository or opening its file again.
        with self._held("stats", DIAGNOSTICS["stats"]):
            if self._conn is None:
                raise ValidationError("repository", "is closed")
            if self._handle is not None:
                # Sizes are read before the call's unit: a file no longer at its path is
                # refused here as the unit would refuse it.
                self._check_in_place()
        database, wal = handles.sizes(self._file, DIAGNOSTICS["stats"])
        return (("database", database), ("wal", wal))

    def file_sizes(self) -> tuple[int, int] | None:
        """``(database bytes, WAL bytes)`` of a file store (a missing WAL counts 0),
        ``None`` for ``:memory:``, as 0.5.0 returned them: read from the files alone,
        without waiting for a call of another thread, and after :meth:`close` too
        (``TrueHeart.stats()`` reports the same figures; ``RepositoryCorruption`` when
        the database file cannot be read)."""
        return None if self._file is None else handles.sizes(self._file, DIAGNOSTICS["stats"])

    def close(self) -> None:
        """Close the connection. Idempotent; later use raises ``ValidationError``. A
        callback inside a call on this thread (an estimator, an embedder) may not close
        it under the call's transaction: ``ValidationError``, and nothing is closed.

        When an earlier erasure's scrub is still owed (a call raised ``RepositoryBusy(
        "erasure checkpoint incomplete")``, or ``RepositoryFull`` for its scrub), it is
        run first. When it still cannot run, nothing is closed and the reason is raised:
        ``RepositoryBusy("erasure checkpoint incomplete")`` while another connection
        holds the log, ``RepositoryFull`` without disk space. The repository stays
        usable; close it again (or make any call) once the reader has finished or
        space is freed, so that the erased bytes leave the files. A scrub that fails
        otherwise (files that cannot be written) is given up, with a warning on
        ``trueheart_core.erasure``, and the repository closes.

        A call of another thread still running is waited for up to ``busy_timeout``,
        as any call waits for it; then nothing is closed and ``RepositoryBusy("a call
        of another thread is still running; nothing was closed")`` is raised."""
        with self._held("close", _CLOSE_WAITED):
            if self._unit_thread == threading.get_ident():
                raise ValidationError("repository", REENTRANT)
            if self._conn is not None and self._erasure_pending:
                self._scrub_before_close(self._conn)
            conn, self._conn = self._conn, None
            self._roles = None
            self._scratch.clear()
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            # After the connection: the last hold closes the descriptor.
            handle, self._handle = self._handle, None
            if handle is not None:
                handle.release()

    def __enter__(self) -> SQLiteRepository:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
