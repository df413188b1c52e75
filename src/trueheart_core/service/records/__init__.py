"""The canonical stored form of every entity and its row digest.

Converting a DTO to a row computes the row's digest: the SHA-256 of the canonical JSON of
a table tag and every stored field (scope included). Converting a row back recomputes the
digest before anything else and then rebuilds the DTO through its validating constructor,
so a tampered body, metadata value, date, trust, status or ID never reaches a caller.
Pure functions; failures raise :class:`RowInvalid`, which the service turns into
``RepositoryCorruption`` with the diagnostic of the operation at hand.

One module per kind of row: :mod:`.codecs` (the shared codecs and the digest),
:mod:`.events`, :mod:`.memories` (with lineage), :mod:`.governance` (tombstones and
audit), :mod:`.claims` (with extraction records) and :mod:`.vectors`; the names the
service uses are imported here.
"""

from __future__ import annotations

from trueheart_core.service.records.claims import (
    claim_from_row,
    claim_row,
    extraction_from_row,
    extraction_row,
)
from trueheart_core.service.records.codecs import (
    EVENT_ACTIVE,
    EVENT_EXPIRED,
    RowInvalid,
    from_us,
    scope_key,
    scope_of,
    to_us,
)
from trueheart_core.service.records.events import (
    body_row,
    check_body,
    event_row,
    receipt_from_row,
    with_event_status,
)
from trueheart_core.service.records.governance import (
    audit_from_row,
    audit_row,
    check_tombstone,
    tombstone_row,
)
from trueheart_core.service.records.memories import (
    check_edge,
    check_entry_columns,
    edge_row,
    edge_snapshots,
    memory_from_row,
    memory_row,
    verify_memory_row,
    with_memory_status,
)
from trueheart_core.service.records.vectors import (
    vector_digest,
)

__all__ = [
    "EVENT_ACTIVE",
    "EVENT_EXPIRED",
    "RowInvalid",
    "audit_from_row",
    "audit_row",
    "body_row",
    "check_body",
    "check_edge",
    "check_entry_columns",
    "check_tombstone",
    "claim_from_row",
    "claim_row",
    "edge_row",
    "edge_snapshots",
    "event_row",
    "extraction_from_row",
    "extraction_row",
    "from_us",
    "memory_from_row",
    "memory_row",
    "receipt_from_row",
    "scope_key",
    "scope_of",
    "to_us",
    "tombstone_row",
    "vector_digest",
    "verify_memory_row",
    "with_event_status",
    "with_memory_status",
]
