"""The persistence port: what the service needs from storage, and nothing more.

A backend implements :class:`Repository`, whose units of work offer one role protocol
each (:mod:`events <trueheart_core.ports.events>`, memories, tombstones, audit, claims,
search, vectors, operations) over the row types of :mod:`trueheart_core.ports.rows`, and
declares its :class:`Capability` set. The docstrings of these protocols are the contract;
the conformance suite (``tests/conformance``) checks it.
"""

from __future__ import annotations

from trueheart_core.ports.audit import AuditLog
from trueheart_core.ports.claims import ClaimStore
from trueheart_core.ports.events import EventStore
from trueheart_core.ports.memories import MemoryStore
from trueheart_core.ports.operations import StoreOperations
from trueheart_core.ports.repository import (
    Capability,
    Repository,
    SupportsBackup,
    SupportsForensics,
    SupportsStorageSizes,
    UnitOfWork,
)
from trueheart_core.ports.rows import (
    AuditRow,
    BodyRow,
    ClaimPosition,
    ClaimRow,
    EdgeRow,
    EventRow,
    ExtractionRow,
    MemoryRow,
    Operation,
    Period,
    RecallCandidate,
    ScopeKey,
    SearchCandidate,
    SearchDocRow,
    SearchStatsRow,
    SearchTermRow,
    SpaceRow,
    TombstoneRow,
    VectorEntry,
    VectorFacts,
    VectorHit,
    VectorRow,
    VectorState,
)
from trueheart_core.ports.search import SearchIndex
from trueheart_core.ports.tombstones import TombstoneStore
from trueheart_core.ports.vectors import VectorStore

__all__ = [
    "AuditLog",
    "AuditRow",
    "BodyRow",
    "Capability",
    "ClaimPosition",
    "ClaimRow",
    "ClaimStore",
    "EdgeRow",
    "EventRow",
    "EventStore",
    "ExtractionRow",
    "MemoryRow",
    "MemoryStore",
    "Operation",
    "Period",
    "RecallCandidate",
    "Repository",
    "ScopeKey",
    "SearchCandidate",
    "SearchDocRow",
    "SearchIndex",
    "SearchStatsRow",
    "SearchTermRow",
    "SpaceRow",
    "StoreOperations",
    "SupportsBackup",
    "SupportsForensics",
    "SupportsStorageSizes",
    "TombstoneRow",
    "TombstoneStore",
    "UnitOfWork",
    "VectorEntry",
    "VectorFacts",
    "VectorHit",
    "VectorRow",
    "VectorState",
    "VectorStore",
]
