"""The SQL of a search's eligibility filters over a row that copies a memory's filter
columns (a search entry, a pending one, or a vector), shared by the search and vectors
roles."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from trueheart_core.adapters.sql.expressions import (
    NOT_A_CLAIM,
    SQLITE,
    Fragment,
    Param,
    claim_status,
    supersedes_at,
)
from trueheart_core.ports import Period


def hex_set(values: Sequence[str]) -> str:
    """Texts as one JSON parameter of their upper-case UTF-8 hex. SQLite's JSON
    functions stop at a NUL character, so text is compared through ``hex()``."""
    return json.dumps(sorted({value.encode("utf-8").hex().upper() for value in values}))


def eligibility_filters(
    as_of: int,
    kinds: Sequence[str],
    min_trust: int | None,
    claim_statuses: Sequence[str],
    claim_kind: str,
    d: str = "d",
    period: Period | None = None,
    doc: str = "doc",
) -> tuple[str, list[Any]]:
    """``AND`` clauses over a row ``d`` that copies a memory's ``trust``, ``kind`` and
    ``created_at`` (and names the memory's ``rid`` in its column ``doc``) for the kind,
    trust, claim-status and period filters of a search, with their parameters. ``d`` must
    not be ``m``, the alias of the memory row the clauses read."""
    filters = ""
    params: list[Any] = []
    if min_trust is not None:
        filters += f" AND {d}.trust >= ?"
        params.append(min_trust)
    if kinds:
        filters += f" AND hex({d}.kind) IN (SELECT value FROM json_each(?))"
        params.append(hex_set(kinds))
    # A claim's status at as_of decides whether it is a candidate; memories of the
    # claim kind without a claim row are plain memories. The rules are the shared
    # builders'; the superseders are read through their index, and each one's memory
    # by its key (left free, the planner would walk the scope's recall index instead).
    known = supersedes_at(SQLITE, "sm.status", "sm.created_at", Param(as_of))
    superseded = Fragment(
        "EXISTS (SELECT 1 FROM claims s INDEXED BY claims_by_supersedes"
        " CROSS JOIN memories sm INDEXED BY memories_by_id"
        " ON sm.memory_id = s.claim_id AND sm.scope_id = s.scope_id"
        " AND sm.erased IS NOT 1"
        f" WHERE s.scope_id = c.scope_id AND s.supersedes = c.claim_id AND s.erased IS NOT 1"
        f" AND {known.sql})",
        known.params,
    )
    status = claim_status(
        SQLITE, "c.claim_id", "c.valid_from", "c.valid_to", superseded, Param(as_of)
    )
    filters += (
        f" AND ({d}.kind IS NOT ? OR (SELECT {status.sql}"
        " FROM memories m LEFT JOIN claims c"
        f" ON c.claim_id = m.memory_id AND c.scope_id = m.scope_id AND c.erased IS NOT 1"
        f" WHERE m.rid = {d}.{doc}) IN (SELECT value FROM json_each(?)))"
    )
    params += [claim_kind, *status.params]
    params.append(json.dumps([NOT_A_CLAIM, *claim_statuses]))
    if period is not None:
        clause, extra = _in_period(period, d, doc)
        filters += clause
        params += [claim_kind, *extra]
    return filters, params


def _in_period(period: Period, d: str, doc: str) -> tuple[str, list[Any]]:
    """The clause of a period: a claim (of the claim kind, with a claim row) is in it
    when its validity overlaps it, any other memory when it was created in it."""
    start, end = period
    created, valid, params, valid_params = ["1"], ["1"], [], []
    if start is not None:
        created.append(f"{d}.created_at >= ?")
        valid.append("(c.valid_to IS NULL OR c.valid_to > ?)")
        params.append(start)
        valid_params.append(start)
    if end is not None:
        created.append(f"{d}.created_at < ?")
        valid.append("(c.valid_from IS NULL OR c.valid_from < ?)")
        params.append(end)
        valid_params.append(end)
    clause = (
        " AND (SELECT CASE WHEN c.claim_id IS NULL OR m.kind IS NOT ?"
        f" THEN {' AND '.join(created)} ELSE {' AND '.join(valid)} END"
        " FROM memories m LEFT JOIN claims c"
        f" ON c.claim_id = m.memory_id AND c.scope_id = m.scope_id AND c.erased IS NOT 1"
        f" WHERE m.rid = {d}.{doc})"
    )
    return clause, [*params, *valid_params]
