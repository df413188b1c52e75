"""The PostgreSQL unit of work: one transaction, offered as the port's roles.

Each role lives in its own module (``events``, ``memories``, ``tombstones``, ``audit``,
``claims``, ``search``, ``vectors``, ``operations``) and holds SQL only: rows go in and come
out exactly as the service hands them over. Roles that remove rows of another role (a
memory's search entry, claim row and vector go with it) call that role directly.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from trueheart_core.adapters.postgres.audit import PostgresAudit
from trueheart_core.adapters.postgres.claims import PostgresClaims
from trueheart_core.adapters.postgres.events import PostgresEvents
from trueheart_core.adapters.postgres.memories import PostgresMemories
from trueheart_core.adapters.postgres.operations import PostgresOperations
from trueheart_core.adapters.postgres.search import PostgresSearch
from trueheart_core.adapters.postgres.session import Session
from trueheart_core.adapters.postgres.tombstones import PostgresTombstones
from trueheart_core.adapters.postgres.vectors import PostgresVectors
from trueheart_core.ports import ScopeKey, UnitOfWork

if TYPE_CHECKING:
    import psycopg


class PostgresUnitOfWork:
    """One PostgreSQL transaction and its roles (see ``ports.UnitOfWork``)."""

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
        self.session = Session(
            conn,
            scratch,
            write=write,
            store=store,
            store_oid=store_oid,
            known=known,
            erasing=erasing,
        )
        self.committed = False
        self.search = PostgresSearch(self.session)
        self.claims = PostgresClaims(self.session)
        self.vectors = PostgresVectors(self.session, search=self.search)
        self.events = PostgresEvents(self.session, claims=self.claims)
        self.memories = PostgresMemories(
            self.session,
            search=self.search,
            claims=self.claims,
            vectors=self.vectors,
            events=self.events,
        )
        self.tombstones = PostgresTombstones(self.session)
        self.audit = PostgresAudit(self.session)
        self.operations = PostgresOperations(self.session)

    def scratch(self) -> MutableMapping[object, object]:
        return self.session.scratch

    def commit(self) -> None:
        self.session.commit()
        self.committed = True
        self.session.known.update(self.session.ensured)


def _conforms(uow: PostgresUnitOfWork) -> UnitOfWork:
    return uow  # checked by mypy: the PostgreSQL unit of work implements every role
