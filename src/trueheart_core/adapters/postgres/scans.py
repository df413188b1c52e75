"""Streamed whole-table reads shared by the record roles: one scope's rows, or every
scope's, in a stated order through a server-side cursor of the unit's transaction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trueheart_core.adapters.postgres.session import KEY, Session, key_of, scoped
from trueheart_core.ports import ScopeKey

WHOLE_KEY = ", ".join(f"x.{column}" for column in KEY.split(", "))
"""The scope columns of alias ``x``, for ordering a whole-store read by primary key."""


def scan(
    session: Session,
    columns: str,
    table: str,
    order: str,
    scope: ScopeKey | None,
    *,
    by_scope: bool = True,
) -> Iterator[tuple[ScopeKey, tuple[Any, ...]]]:
    """``(scope, row)`` for every row of ``table`` (aliased ``x``) in the scope, or in
    the whole store when ``scope`` is ``None``; ``row`` holds ``columns``.

    Rows come ordered by ``order`` within a scope. A whole-store read is ordered by the
    scope's IDs first (the full primary key) unless ``by_scope`` is false, for tables
    whose storage order is a store-wide sequence (write order)."""
    if scope is not None:
        for r in session.stream(
            f"SELECT {columns} FROM {table} x WHERE {scoped('x')} ORDER BY {order}",
            session.key(scope),
        ):
            yield scope, r
        return
    ordering = f"{WHOLE_KEY}, {order}" if by_scope else order
    for r in session.stream(f"SELECT {WHOLE_KEY}, {columns} FROM {table} x ORDER BY {ordering}"):
        yield key_of(r), r[3:]
