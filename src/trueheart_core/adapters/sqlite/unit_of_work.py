"""The SQLite unit of work: one transaction, offered as the port's roles.

Each role lives in its own module (``events``, ``memories``, ``tombstones``, ``audit``,
``claims``, ``search``, ``vectors``, ``operations``) and holds SQL only: rows go in and come
out exactly as the service hands them over. Roles that remove rows of another role (a
memory's search entry, claim row and vector go with it) call that role directly.
"""

from __future__ import annotations

import functools
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
    """One SQLite transaction and its roles (see ``ports.UnitOfWork``). A role is made
    when the unit first uses it: most units use a few."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        scope_ids: dict[ScopeKey, int],
        scratch: dict[object, object] | None = None,
    ) -> None:
        self._session = Session(conn, scope_ids, scratch)
        self.committed = False

    @functools.cached_property
    def search(self) -> SQLiteSearch:
        return SQLiteSearch(self._session)

    @functools.cached_property
    def claims(self) -> SQLiteClaims:
        return SQLiteClaims(self._session)

    @functools.cached_property
    def vectors(self) -> SQLiteVectors:
        return SQLiteVectors(self._session, search=self.search)

    @functools.cached_property
    def audit(self) -> SQLiteAudit:
        return SQLiteAudit(self._session)

    @functools.cached_property
    def events(self) -> SQLiteEvents:
        return SQLiteEvents(self._session, claims=self.claims, audit=self.audit)

    @functools.cached_property
    def memories(self) -> SQLiteMemories:
        return SQLiteMemories(
            self._session, search=self.search, claims=self.claims, vectors=self.vectors
        )

    @functools.cached_property
    def tombstones(self) -> SQLiteTombstones:
        return SQLiteTombstones(self._session)

    @functools.cached_property
    def operations(self) -> SQLiteOperations:
        return SQLiteOperations(self._session, search=self.search)

    @property
    def rewrite_requested(self) -> bool:
        """Set by compaction: the repository rewrites the file after the commit."""
        return "operations" in self.__dict__ and self.operations.rewrite_requested

    def scratch(self) -> MutableMapping[object, object]:
        return self._session.scratch

    def commit(self) -> None:
        self._session.conn.execute("COMMIT")
        self.committed = True
        self._session.known.update(self._session.new)


def _conforms(uow: SQLiteUnitOfWork) -> UnitOfWork:
    return uow  # checked by mypy: the SQLite unit of work implements every role
