"""The SQLite unit of work: one transaction, offered as the port's roles.

Each role lives in its own module (``events``, ``memories``, ``tombstones``, ``audit``,
``claims``, ``search``, ``vectors``, ``operations``) and holds SQL only: rows go in and come
out exactly as the service hands them over. Roles that remove rows of another role (a
memory's search entry, claim row and vector go with it) call that role directly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import MutableMapping

from trueheart_core.adapters.sqlite.audit import SQLiteAudit
from trueheart_core.adapters.sqlite.claims import SQLiteClaims
from trueheart_core.adapters.sqlite.events import SQLiteEvents
from trueheart_core.adapters.sqlite.memories import SQLiteMemories
from trueheart_core.adapters.sqlite.operations import SQLiteOperations
from trueheart_core.adapters.sqlite.search import SQLiteSearch
from trueheart_core.adapters.sqlite.session import Session
from trueheart_core.adapters.sqlite.tombstones import SQLiteTombstones
from trueheart_core.adapters.sqlite.vectors import SQLiteVectors
from trueheart_core.ports import ScopeKey, UnitOfWork


class SQLiteUnitOfWork:
    """One SQLite transaction and its roles (see ``ports.UnitOfWork``).

    The roles hold no state of their own beyond the session's, so a repository makes
    them once per connection and hands them to each unit, which starts the session
    afresh (:meth:`Session.begin`): building eight roles for every call would cost a
    short write a tenth of its time."""

    __slots__ = (
        "_session",
        "audit",
        "claims",
        "committed",
        "events",
        "memories",
        "operations",
        "search",
        "tombstones",
        "vectors",
    )

    def __init__(
        self,
        conn: sqlite3.Connection,
        scope_ids: dict[ScopeKey, int],
        scratch: dict[object, object] | None = None,
    ) -> None:
        session = self._session = Session(conn, scope_ids, scratch)
        self.search = SQLiteSearch(session)
        self.claims = SQLiteClaims(session)
        self.vectors = SQLiteVectors(session, search=self.search)
        self.audit = SQLiteAudit(session)
        self.events = SQLiteEvents(session, claims=self.claims, audit=self.audit)
        self.tombstones = SQLiteTombstones(session)
        self.memories = SQLiteMemories(
            session,
            search=self.search,
            claims=self.claims,
            vectors=self.vectors,
            events=self.events,
            tombstones=self.tombstones,
        )
        self.operations = SQLiteOperations(session, search=self.search)
        self.committed = False

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection this unit's roles use."""
        return self._session.conn

    def current(self, data_version: object) -> bool:
        """Whether no other connection has committed since these roles last found the
        store as their memo has it (``data_version``: the connection's
        ``PRAGMA data_version`` now)."""
        return self._session.data_version == data_version

    def revalidated(self, data_version: object) -> None:
        """The store at ``data_version`` passed the unit's checks: the memo starts
        empty from it."""
        self._session.forget()
        self._session.data_version = data_version

    def forget(self) -> None:
        """Drop the connection's memo (see ``Session.recall``)."""
        self._session.forget()

    def begin(self) -> None:
        """Start a new transaction's unit on these roles, or close one that rolled back:
        nothing a unit learnt about its own transaction carries over."""
        self._session.begin()
        self.operations.rewrite_requested = False
        self.committed = False

    @property
    def rewrite_requested(self) -> bool:
        """Set by compaction: the repository rewrites the file after the commit."""
        return self.operations.rewrite_requested

    def scratch(self) -> MutableMapping[object, object]:
        return self._session.scratch

    def commit(self) -> None:
        self._session.conn.execute("COMMIT")
        self.committed = True
        self._session.committed()


def _conforms(uow: SQLiteUnitOfWork) -> UnitOfWork:
    return uow  # checked by mypy: the SQLite unit of work implements every role
