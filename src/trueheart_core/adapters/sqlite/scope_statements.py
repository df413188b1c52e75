"""The statements over whole scopes that the SQLite operations role runs: a scope's
counts (and the store's), its erasure in order, and the checks of what the store holds
(see ``operations``). Each reads through an index of the scope, so that it costs what
the scope holds."""

from __future__ import annotations

from collections.abc import Sequence

from trueheart_core.adapters.sqlite import buffer
from trueheart_core.adapters.sqlite.audit import SEQ_LIMIT
from trueheart_core.adapters.sqlite.claims import CLAIM_KEYS, CLAIM_TEXT, ERASE_CLAIM
from trueheart_core.adapters.sqlite.events import (
    BODY_TEXT,
    ERASE_BODY,
    ERASE_RECEIPT,
    RECEIPT_TEXT,
)
from trueheart_core.adapters.sqlite.memories import (
    ERASE_MEMORY,
    MEMORY_TEXT,
)
from trueheart_core.adapters.sqlite.pending import ERASE_TERM, PENDING_PAIRS
from trueheart_core.adapters.sqlite.vectors import ERASE_VECTOR, VECTOR_TEXT

ARTIFACTS = (
    "search_posting",
    "search_term",
    "search_entry",
    "search_statistics",
    "claim",
    "extraction_record",
    "lineage_edge",
    "vector",
    "memory",
    "raw_body",
    "raw_event",
)
"""What erasing a scope removes, by artifact name."""

_RECEIPTS = (
    "SELECT rid FROM raw_events INDEXED BY raw_events_by_scope WHERE scope_id = ?1 "
    "AND erased IS NOT 1"
)
_MEMORIES = (
    "SELECT rid FROM memories INDEXED BY memories_by_status WHERE scope_id = ?1 AND erased IS NOT 1"
)
_ENTRIES = "SELECT doc FROM search_docs INDEXED BY search_docs_by_scope WHERE scope_id = ?1"
_TERMS = (
    "SELECT term_id FROM search_terms INDEXED BY search_terms_lookup "
    "WHERE scope_id = ?1 AND erased IS NOT 1"
)


def _term_count(terms: str, pending: str) -> str:
    """A count of the terms a searchable memory holds: the ``terms`` counted, less
    those that only these ``pending`` removals still hold (their merged frequency plus
    their pending changes is nothing), which the next merge erases."""
    return (
        "WITH w AS MATERIALIZED (SELECT v.term_id AS term_id, SUM(v.change) AS n "
        f"FROM ({pending}) v GROUP BY v.term_id) "
        f"SELECT ({terms}) - (SELECT COUNT(*) FROM w "
        "JOIN search_terms t ON t.term_id = w.term_id AND t.erased IS NOT 1 "
        "LEFT JOIN search_df f ON f.term_id = w.term_id WHERE IFNULL(f.df, 0) + w.n <= 0)"
    )


SCOPE_COUNTS: dict[str, str] = {
    # One statement per artifact, each through an index of the scope (``?1``).
    "raw_event": f"SELECT COUNT(*) FROM ({_RECEIPTS})",
    "raw_body": f"SELECT COUNT(*) FROM raw_bodies WHERE erased IS NOT 1 AND rid IN ({_RECEIPTS})",
    "memory": f"SELECT COUNT(*) FROM ({_MEMORIES})",
    "lineage_edge": "SELECT COUNT(*) FROM lineage WHERE scope_id = ?1",
    "claim": "SELECT COUNT(*) FROM claims INDEXED BY claims_by_subject "
    "WHERE scope_id = ?1 AND erased IS NOT 1",
    "extraction_record": "SELECT COUNT(*) FROM extractions WHERE scope_id = ?1",
    "vector": "SELECT COUNT(*) FROM vectors INDEXED BY vectors_scan "
    "WHERE scope_id = ?1 AND erased IS NOT 1",
    "search_entry": "SELECT (SELECT COUNT(*) FROM search_docs d INDEXED BY search_docs_by_scope "
    "WHERE d.scope_id = ?1) + IFNULL((SELECT SUM(change) FROM search_pending "
    "WHERE scope_id = ?1), 0)",
    "search_posting": "SELECT (SELECT COUNT(*) FROM search_postings "
    f"INDEXED BY search_postings_by_doc WHERE doc IN ({_ENTRIES})) "
    f"+ IFNULL((SELECT SUM(change) FROM ({PENDING_PAIRS} WHERE x.scope_id = ?1)), 0)",
    "search_term": _term_count(
        f"SELECT COUNT(*) FROM ({_TERMS})", f"{PENDING_PAIRS} WHERE x.scope_id = ?1"
    ),
    "search_statistics": "SELECT COUNT(*) FROM search_stats WHERE scope_id = ?1",
    "raw_event_with_body": "SELECT COUNT(*) FROM raw_bodies WHERE erased IS NOT 1 "
    f"AND rid IN ({_RECEIPTS})",
    "tombstone": "SELECT COUNT(*) FROM tombstones WHERE scope_id = ?1",
    "audit": "SELECT COUNT(*) FROM audit WHERE scope_id = ?1",
}
STORE_COUNTS: dict[str, str] = {
    "raw_event": "SELECT COUNT(*) FROM raw_events WHERE erased IS NOT 1",
    "raw_body": "SELECT COUNT(*) FROM raw_bodies WHERE erased IS NOT 1",
    "memory": "SELECT COUNT(*) FROM memories WHERE erased IS NOT 1",
    "lineage_edge": "SELECT COUNT(*) FROM lineage",
    "claim": "SELECT COUNT(*) FROM claims WHERE erased IS NOT 1",
    "extraction_record": "SELECT COUNT(*) FROM extractions",
    "vector": "SELECT COUNT(*) FROM vectors WHERE erased IS NOT 1",
    "search_entry": "SELECT (SELECT COUNT(*) FROM search_docs) "
    "+ IFNULL((SELECT SUM(change) FROM search_pending), 0)",
    "search_posting": "SELECT (SELECT COUNT(*) FROM search_postings) "
    f"+ IFNULL((SELECT SUM(change) FROM ({PENDING_PAIRS})), 0)",
    "search_term": _term_count(
        "SELECT COUNT(*) FROM search_terms WHERE erased IS NOT 1", PENDING_PAIRS
    ),
    "search_statistics": "SELECT COUNT(*) FROM search_stats",
    "raw_event_with_body": "SELECT COUNT(*) FROM raw_bodies WHERE erased IS NOT 1",
    "tombstone": "SELECT COUNT(*) FROM tombstones",
    "audit": "SELECT COUNT(*) FROM audit",
}

ERASE_SCOPE: Sequence[tuple[str, str]] = (
    # The whole-scope erasure, in order, each statement over the scope (``?1``): postings
    # first, while the terms and entries that tie them to the scope exist; bodies before
    # the receipts they are found through; kept rows overwritten in place, the rest
    # deleted. Each counts as removing the artifact it names.
    (
        "search_posting",
        f"DELETE FROM search_postings WHERE term_id IN ({_TERMS}) OR doc IN ({_ENTRIES}) "
        f"OR doc IN ({_MEMORIES})",
    ),
    ("", f"DELETE FROM search_df WHERE term_id IN ({_TERMS})"),
    (
        "search_term",
        f"UPDATE search_terms SET {ERASE_TERM} WHERE scope_id = ?1 AND erased IS NOT 1",
    ),
    ("search_entry", f"DELETE FROM search_docs WHERE scope_id = ?1 OR doc IN ({_MEMORIES})"),
    ("search_statistics", "DELETE FROM search_stats WHERE scope_id = ?1"),
    ("", "DELETE FROM search_waiting WHERE scope_id = ?1"),
    ("", f"DELETE FROM write_buffer WHERE scope_id = ?1 AND {buffer.PENDING_ROW}"),
    (
        "claim",
        f"UPDATE claims SET {ERASE_CLAIM} WHERE erased IS NOT 1 AND (scope_id = ?1 AND "
        "(rid IN (SELECT rid FROM claims INDEXED BY claims_by_subject WHERE scope_id = ?1 "
        "AND erased IS NOT 1) OR claim_id IN (SELECT memory_id FROM memories "
        "INDEXED BY memories_by_status WHERE scope_id = ?1 AND erased IS NOT 1)))",
    ),
    ("extraction_record", "DELETE FROM extractions WHERE scope_id = ?1"),
    ("lineage_edge", "DELETE FROM lineage WHERE scope_id = ?1"),
    (
        "vector",
        # One probe per vector of the scope: by its memory's row, and by its own scope
        # (an OR of the two lists would walk every vector of the store instead).
        f"UPDATE vectors SET {ERASE_VECTOR} WHERE vid IN ("
        "SELECT vid FROM vectors INDEXED BY vectors_by_doc WHERE erased IS NOT 1 "
        f"AND doc IN ({_MEMORIES}) UNION "
        "SELECT vid FROM vectors INDEXED BY vectors_scan WHERE scope_id = ?1 "
        "AND erased IS NOT 1)",
    ),
    ("memory", f"UPDATE memories SET {ERASE_MEMORY} WHERE rid IN ({_MEMORIES})"),
    (
        "raw_body",
        f"UPDATE raw_bodies SET {ERASE_BODY} WHERE erased IS NOT 1 AND rid IN ({_RECEIPTS})",
    ),
    ("raw_event", f"UPDATE raw_events SET {ERASE_RECEIPT} WHERE rid IN ({_RECEIPTS})"),
)

KEPT_TABLES: Sequence[tuple[str, str]] = (
    # The kept tables, with what ``compact`` removes of them before the file is rewritten.
    ("raw_events", "erased = 1"),
    ("raw_bodies", "erased = 1"),
    ("memories", "erased = 1"),
    ("claims", "erased = 1"),
    ("vectors", "erased = 1"),
    ("search_terms", "erased = 1"),
)


SCOPED_TABLES = (
    "raw_events",
    "raw_bodies",
    "memories",
    "lineage",
    "claims",
    "extractions",
    "tombstones",
    "audit_log",
    "search_docs",
    "search_stats",
    "search_terms",
    "search_waiting",
    "write_buffer",
    "vectors",
    "vector_generations",
)
"""Every table whose rows belong to a scope (a ``scope_id`` column), ``scopes`` aside."""

SCOPE_INDEXED = {
    "raw_event": ("raw_events", "event_id", "raw_events_by_scope", "raw_events_by_id"),
    "memory": ("memories", "memory_id", "memories_by_status", "memories_by_id"),
}
"""For each kind of row found by scope: its table, its ID column, its scope index and
its ID index."""


ERASED_TEXT: dict[str, tuple[str, ...]] = {
    "raw_events": RECEIPT_TEXT,
    "raw_bodies": BODY_TEXT,
    "memories": MEMORY_TEXT,
    "claims": (*CLAIM_TEXT, *CLAIM_KEYS),
    "vectors": VECTOR_TEXT,
    "search_terms": ("term",),
}
"""The columns an erasure overwrites, by table (see ``ERASE_*``)."""


_AUDIT_ONLY = ("occurred_at", "seq", "audit_id", "action", "entity_type", "entity_id", "reason")
_PENDING_ONLY = (
    "change",
    "length",
    "created_at",
    "clear_until",
    "recall_until",
    "trust",
    "kind",
    "postings",
)
_SEQ_RANGE = f"typeof({{seq}}) = 'integer' AND {{seq}} >= 1 AND {{seq}} < {SEQ_LIMIT}"
STORED_ORDER = (
    # The write buffer (fewer than ``BUFFER_BOUND`` rows) holds rows it can move: each an
    # audit row or a pending row (see ``buffer.PENDING_ROW``), with the columns of its
    # kind and none of the other's, and a key that neither its clustered table nor
    # another buffered row holds; and every audit row's write order is a positive
    # integer small enough to count on from (the next is one more than the largest).
    f"SELECT 1 FROM write_buffer WHERE {buffer.AUDIT_ROW} AND (doc IS NOT NULL OR "
    + " OR ".join(f"{c} IS NOT NULL" for c in _PENDING_ONLY)
    + " OR typeof(occurred_at) != 'integer' OR NOT ("
    + _SEQ_RANGE.format(seq="seq")
    + ")) LIMIT 1",
    f"SELECT 1 FROM write_buffer WHERE {buffer.PENDING_ROW} AND ("
    + " OR ".join(f"{c} IS NOT NULL" for c in (*_AUDIT_ONLY, "metadata", "digest"))
    + " OR typeof(doc) != 'integer' OR typeof(change) != 'integer' "
    "OR typeof(length) != 'integer' OR typeof(postings) != 'text') LIMIT 1",
    f"SELECT 1 FROM write_buffer WHERE jid NOT IN ({buffer.MOVABLE}) LIMIT 1",
    f"SELECT 1 FROM audit_log WHERE NOT ({_SEQ_RANGE.format(seq='seq')}) LIMIT 1",
)
