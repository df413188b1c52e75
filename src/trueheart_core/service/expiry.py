"""Expiry: removing raw bodies whose retention ended, in every scope.

A service function over one erasing unit of work that the caller opens and commits.
"""

from __future__ import annotations

from datetime import datetime

from trueheart_core.domain.model import EntityType
from trueheart_core.ports import ScopeKey, UnitOfWork
from trueheart_core.service import loading, records, writing

_CHUNK = 500


def expire(uow: UnitOfWork, when: datetime) -> int:
    """Remove every body whose ``raw_expires_at`` is at or before ``when``, with one
    ``expire`` audit row each; returns how many. Fails closed on a receipt that does
    not verify, and on one offered again after its expiry (a damaged index), so the
    loop always makes progress or stops."""
    as_of_us = records.to_us(when)
    expired = 0
    # Chunks keep memory bounded however many bodies are due; one transaction.
    previous: set[tuple[ScopeKey, str]] = set()
    while rows := uow.events.expirable(as_of_us, _CHUNK):
        current: set[tuple[ScopeKey, str]] = set()
        for row in rows:
            receipt = loading.receipt(row, None, "invalid raw event record")
            # Every pass must make progress: a receipt offered again after its expiry is
            # a damaged index, not more work. One expired here says so by its status; one
            # offered again in the same or the next chunk is caught here too, without
            # keeping every expired receipt's key for the whole call.
            if not receipt.content_available or receipt.raw_expires_at > when:
                loading.corrupt("invalid raw event record")
            key = (row.scope, row.event_id)
            if key in current or key in previous:
                loading.corrupt("invalid raw event record")
            current.add(key)
            uow.events.expire(records.with_event_status(row, records.EVENT_EXPIRED))
            writing.audit(
                uow, receipt.scope, "expire", EntityType.RAW_EVENT, receipt.event_id, when
            )
        expired += len(rows)
        previous = current
    return expired
