"""A unit of work's statements on the wire: each round trip is one libpq pipeline.

The statements of one round trip are sent back to back with one ``Sync`` through
libpq's pipeline mode, on psycopg's libpq layer (``psycopg.pq``), their parameters
adapted and their rows loaded by psycopg's own adapters (``psycopg.adapt.Transformer``),
so values travel exactly as ``cursor.execute`` sends and returns them. The server runs
them one after another, each with a snapshot of its own at ``READ COMMITTED``; after a
failed statement it skips the rest of the pipeline. A statement sent a second time on a
connection is prepared there (a named statement, at most :data:`PREPARED_MAX` per
connection), so the server parses and plans it once; ``BEGIN``, ``COMMIT`` and
``ROLLBACK`` never are, so that ending a transaction needs no named statement.

Waiting for the server happens in ``poll``/``select`` with the GIL released, never inside
libpq. A server error is raised, after the whole pipeline has been read, as the psycopg
exception of its SQLSTATE, without the server's message (which may quote a value); the
caller translates it (see ``connection.translate``). Anything else that interrupts a
round trip (a lost connection, an interrupt) closes the connection, whose state is then
unknown: the pool replaces it.
"""

from __future__ import annotations

import itertools
import re
import select
import weakref
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import abc, errors, pq
from psycopg.adapt import PyFormat, Transformer

PREPARED_MAX = 256
"""Named statements prepared on one connection at most; later new statements are sent
unnamed (parsed and planned at every use)."""

_SEEN_MAX = 4096
"""Statements remembered per connection as sent once (the next use prepares them)."""

_PLACEHOLDER = re.compile(r"%[s%]")
_CONTROL = (b"BEGIN", b"COMMIT", b"ROLLBACK")
"""Statements never prepared: ending a transaction must not need a named statement."""
_OK = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK, pq.ExecStatus.EMPTY_QUERY)


class Result:
    """The outcome of one statement: its rows (for a statement whose result is read) and
    the number of rows it returned or changed (``-1`` when the server does not say)."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows


_SKIPPED = Result([], -1)


class Statement:
    """One statement of a round trip: SQL with ``%s`` parameters, its parameters,
    whether its rows are wanted, and whether it checks itself (it divides by zero when
    what it checks does not hold: see :class:`Refused`)."""

    __slots__ = ("checked", "params", "read", "sql")

    def __init__(
        self, sql: str, params: Sequence[Any], read: bool, *, checked: bool = False
    ) -> None:
        self.sql = sql
        self.params = params
        self.read = read
        self.checked = checked


class Refused(Exception):
    """The check of the statement at ``index`` of a round trip did not hold: the
    statement divided by zero, and the server ran nothing after it."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


class _Link:
    """What the round trips of one connection keep: its named statements (and nothing
    that refers to the connection, which the link must not keep alive)."""

    __slots__ = ("names", "numbers", "seen")

    def __init__(self) -> None:
        self.names: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self.seen: set[tuple[bytes, tuple[int, ...]]] = set()
        self.numbers = itertools.count(1)


_links: weakref.WeakKeyDictionary[psycopg.Connection[Any], _Link] = weakref.WeakKeyDictionary()


@lru_cache(maxsize=2048)
def converted(sql: str) -> bytes:
    """``sql`` with its ``%s`` placeholders numbered (``$1``, ``$2``, ...) and ``%%`` as
    ``%``, as the server takes it."""
    numbers = itertools.count(1)
    return _PLACEHOLDER.sub(
        lambda m: "%" if m.group() == "%%" else f"${next(numbers)}", sql
    ).encode("utf-8")


def round_trip(conn: psycopg.Connection[Any], statements: Sequence[Statement]) -> list[Result]:
    """Run ``statements`` in order in one round trip; their results, in order.

    Raises the psycopg exception of the first statement that failed (the server ran
    none after it), or :class:`Refused` when that statement's own check failed."""
    link = _links.get(conn)
    if link is None:
        link = _links[conn] = _Link()
    pg = conn.pgconn
    tx = Transformer(conn)
    try:
        pg.enter_pipeline_mode()
        # Per command sent: the index of its statement, or -1 for a statement's
        # preparation, with the name and key it is registered under once it succeeds.
        sent = _send(pg, tx, link, statements)
        pg.pipeline_sync()
        _flush(pg)
        results, failure, failed = _receive(pg, tx, link, statements, sent)
        pg.exit_pipeline_mode()
    except BaseException:
        # The connection's protocol state is unknown: nothing may use it again.
        conn.close()
        raise
    if failure is not None:
        if failure.sqlstate == "22012" and failed >= 0 and statements[failed].checked:
            raise Refused(failed)
        if failure.sqlstate == "26000":
            # A named statement is gone (``DEALLOCATE ALL`` or ``DISCARD ALL`` ran on
            # this session): the next round trips prepare theirs again, so the unit can
            # run again (``connection.translate`` makes this a conflict).
            link.names.clear()
            link.seen.clear()
        raise failure
    return results


_Sent = list[tuple[int, bytes, tuple[bytes, tuple[int, ...]] | None]]


def _send(
    pg: pq.abc.PGconn, tx: abc.Transformer, link: _Link, statements: Sequence[Statement]
) -> _Sent:
    sent: _Sent = []
    pending: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
    for index, statement in enumerate(statements):
        query = converted(statement.sql)
        params = statement.params
        if params:
            values: Sequence[Any] | None = tx.dump_sequence(params, [PyFormat.AUTO] * len(params))
            types: tuple[int, ...] = tuple(tx.types or ())
            formats: Sequence[int] | None = tx.formats
        else:
            values, types, formats = None, (), None
        key = (query, types)
        name = link.names.get(key) or pending.get(key)
        if (
            name is None
            and not query.startswith(_CONTROL)
            and key in link.seen
            and len(link.names) + len(pending) < PREPARED_MAX
        ):
            name = b"trueheart_%d" % next(link.numbers)
            pg.send_prepare(name, query, param_types=types)
            sent.append((-1, name, key))
            pending[key] = name
        if name is None:
            if len(link.seen) >= _SEEN_MAX:
                link.seen.clear()
            link.seen.add(key)
            pg.send_query_params(query, values, param_types=types, param_formats=formats)
        else:
            pg.send_query_prepared(name, values, param_formats=formats)
        sent.append((index, b"", None))
    return sent


def _receive(
    pg: pq.abc.PGconn,
    tx: abc.Transformer,
    link: _Link,
    statements: Sequence[Statement],
    sent: _Sent,
) -> tuple[list[Result], psycopg.Error | None, int]:
    """Every result of the pipeline, up to its ``Sync``; the first failure, and the
    index of its statement (``-1``: a preparation failed)."""
    results = [_SKIPPED] * len(statements)
    failure: psycopg.Error | None = None
    failed = -1
    for index, name, key in sent:
        result = _next(pg)
        while _next(pg) is not None:
            pass  # the end of this command's results
        if result is None:
            raise psycopg.OperationalError("no result")
        status = result.status
        if status == pq.ExecStatus.FATAL_ERROR:
            if failure is None:
                failure, failed = _error(result), index
            continue
        if status not in _OK:
            continue  # skipped after a failure (PIPELINE_ABORTED)
        if index < 0:
            if key is not None:
                link.names[key] = name
            continue
        rowcount = result.command_tuples
        rows: list[tuple[Any, ...]] = []
        if statements[index].read and status == pq.ExecStatus.TUPLES_OK:
            tx.set_pgresult(result)
            rows = tx.load_rows(0, result.ntuples, tuple)
        results[index] = Result(rows, -1 if rowcount is None else rowcount)
    end = _next(pg)
    if end is None or end.status != pq.ExecStatus.PIPELINE_SYNC:
        raise psycopg.OperationalError("pipeline out of step")
    return results, failure, failed


def _error(result: pq.abc.PGresult) -> psycopg.Error:
    """The psycopg exception of a failed statement's SQLSTATE, without the server's
    message (no SQLSTATE: the client library's own error, a connection that broke)."""
    state = (result.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode("ascii", "replace")
    if not state:
        return psycopg.OperationalError()
    try:
        return errors.lookup(state)()
    except KeyError:
        error = psycopg.DatabaseError()
        error.sqlstate = state
        return error


def _next(pg: pq.abc.PGconn) -> pq.abc.PGresult | None:
    """The next result, waiting (outside libpq) until it has arrived."""
    while pg.is_busy():
        _wait(pg.socket, write=False)
        pg.consume_input()
    return pg.get_result()


def _flush(pg: pq.abc.PGconn) -> None:
    """Send what libpq holds (a non-blocking connection may hold part of a pipeline)."""
    while pg.flush():
        if _wait(pg.socket, write=True):
            pg.consume_input()


if hasattr(select, "poll"):

    def _wait(fd: int, *, write: bool) -> bool:
        """Wait until the socket is readable (or, with ``write``, writable); whether it
        is readable."""
        poller = select.poll()
        poller.register(fd, select.POLLIN | (select.POLLOUT if write else 0))
        events = 0
        for _, happened in poller.poll():
            events |= happened
        return bool(events & (select.POLLIN | select.POLLERR | select.POLLHUP))

else:  # pragma: no cover - systems without poll()

    def _wait(fd: int, *, write: bool) -> bool:
        readable, _, failed = select.select([fd], [fd] if write else [], [fd])
        return bool(readable or failed)
