"""The SQLite claims role (see ``ports.claims``): statements over the unit of work's
connection, and nothing else.

Claim rows are a kept table (see ``schema``): erasing one overwrites it in place and
marks it ``erased``. Subject and predicate keys are stored as 8-byte BLOBs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.sql.keys import text_key
from trueheart_core.adapters.sqlite.migrations import key_blob
from trueheart_core.adapters.sqlite.session import (
    CHUNK,
    Role,
    blanked,
)
from trueheart_core.ports import ClaimPosition, ClaimRow, ExtractionRow, ScopeKey

CLAIM_TEXT = ("subject", "predicate", "value", "authority", "supersedes", "digest")
"""The columns of a claim row that hold text of the host's, which erasing the claim
overwrites in place; its keys become zero bytes."""
CLAIM_KEYS = ("subject_key", "predicate_key")
"""The 8-byte index keys of a claim row's subject and predicate."""
ERASE_CLAIM = (
    f"{', '.join(blanked(c) for c in CLAIM_TEXT)}, "
    + ", ".join(f"{c} = zeroblob(length({c}))" for c in CLAIM_KEYS)
    + ", erased = 1"
)


def _key(text: str) -> object:
    return key_blob(text_key(text))


_CLAIM_COLUMNS = (
    "c.claim_id, c.subject, c.predicate, c.value, c.valid_from, c.valid_to, c.confidence, "
    "c.authority, c.supersedes, c.digest"
)


def _selection(sid: int, subject: str | None, predicate: str | None) -> tuple[str, list[Any]]:
    """The WHERE clause (over ``claims c``) and parameters that select the claims of a
    scope, or of one subject (and predicate): the keys select through the index, the
    texts are compared in the rows."""
    where = "c.scope_id = ? AND c.erased IS NOT 1"
    params: list[Any] = [sid]
    if subject is not None:
        where += " AND c.subject_key = ? AND c.subject = ?"
        params += [_key(subject), subject]
        if predicate is not None:
            where += " AND c.predicate_key = ? AND c.predicate = ?"
            params += [_key(predicate), predicate]
    elif predicate is not None:
        where += " AND c.predicate = ?"
        params.append(predicate)
    return where, params


class SQLiteClaims(Role):
    """The claims role over one transaction."""

    def insert(self, row: ClaimRow) -> None:
        self._conn.execute(
            "INSERT INTO claims (scope_id, claim_id, subject, predicate, value, valid_from, "
            "valid_to, confidence, authority, supersedes, digest, subject_key, predicate_key) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self._ensure_scope(row.scope),
                row.claim_id,
                row.subject,
                row.predicate,
                row.value,
                row.valid_from,
                row.valid_to,
                row.confidence,
                row.authority,
                row.supersedes,
                row.digest,
                _key(row.subject),
                _key(row.predicate),
            ),
        )

    def get(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        return self._claims_in(scope, "claim_id", claim_ids, None)

    def about(self, scope: ScopeKey, subject: str | None, predicate: str | None) -> list[ClaimRow]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        where, params = _selection(sid, subject, predicate)
        return [
            ClaimRow(scope, *r)
            for r in self._conn.execute(
                f"SELECT {_CLAIM_COLUMNS} FROM claims c INDEXED BY claims_by_subject WHERE {where}",
                params,
            )
        ]

    def page(
        self,
        scope: ScopeKey,
        subject: str | None,
        predicate: str | None,
        after: ClaimPosition | None,
        limit: int,
    ) -> list[ClaimRow]:
        sid = self._scope_id(scope)
        if sid is None:
            return []
        # Row values compare column by column: texts in BINARY collation (UTF-8 bytes,
        # which is code-point order), then integers. With a LIMIT, SQLite's sorter keeps
        # only the first rows. First, without reading memory rows, the (subject,
        # predicate) of the ``limit``-th claim of the groups after the cursor's: the
        # page ends in that group or before it, so only the claims up to it are joined
        # to their memory rows to be sorted by ``created_at``.
        where, params = _selection(sid, subject, predicate)
        later, later_params = where, list(params)
        if after is not None:
            later += " AND (c.subject, c.predicate) > (?, ?)"
            later_params += [after[0], after[1]]
        bound = self._conn.execute(
            "SELECT c.subject, c.predicate FROM claims c INDEXED BY claims_by_subject "
            f"WHERE {later} ORDER BY c.subject, c.predicate LIMIT 1 OFFSET ?",
            [*later_params, limit - 1],
        ).fetchone()
        if after is not None:
            where += (
                " AND (c.subject, c.predicate) >= (?, ?)"
                " AND (c.subject, c.predicate, m.created_at, c.claim_id) > (?, ?, ?, ?)"
            )
            params += [after[0], after[1], *after]
        if bound is not None:
            where += " AND (c.subject, c.predicate) <= (?, ?)"
            params += list(bound)
        return [
            ClaimRow(scope, *r)
            for r in self._conn.execute(
                f"SELECT {_CLAIM_COLUMNS} FROM claims c INDEXED BY claims_by_subject "
                "LEFT JOIN memories m ON m.memory_id = c.claim_id AND m.scope_id = c.scope_id "
                f"AND m.erased IS NOT 1 WHERE {where} "
                "ORDER BY c.subject, c.predicate, m.created_at, c.claim_id LIMIT ?",
                [*params, limit],
            )
        ]

    def superseders_of(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        return self._claims_in(scope, "supersedes", claim_ids, "claims_by_supersedes")

    def iter(self, scope: ScopeKey | None) -> Iterator[ClaimRow]:
        for r in self._every(
            "SELECT s.tenant_id, s.owner_id, s.subject_id, x.claim_id, x.subject, x.predicate, "
            "x.value, x.valid_from, x.valid_to, x.confidence, x.authority, x.supersedes, "
            "x.digest FROM claims x JOIN scopes s ON s.scope_id = x.scope_id "
            "WHERE x.erased IS NOT 1",
            scope,
        ):
            yield ClaimRow((r[0], r[1], r[2]), *r[3:])

    def insert_extraction(self, row: ExtractionRow) -> None:
        self._conn.execute(
            "INSERT INTO extractions (scope_id, event_id, extractor, claim_ids, spans, "
            "diagnostics, digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                self._ensure_scope(row.scope),
                row.event_id,
                row.extractor,
                row.claim_ids,
                row.spans,
                row.diagnostics,
                row.digest,
            ),
        )

    def get_extraction(self, scope: ScopeKey, event_id: str) -> ExtractionRow | None:
        sid = self._scope_id(scope)
        if sid is None:
            return None
        r = self._conn.execute(
            "SELECT event_id, extractor, claim_ids, spans, diagnostics, digest "
            "FROM extractions WHERE event_id = ? AND scope_id = ?",
            (event_id, sid),
        ).fetchone()
        return None if r is None else ExtractionRow(scope, *r)

    def iter_extractions(self, scope: ScopeKey | None) -> Iterator[ExtractionRow]:
        for r in self._every(
            "SELECT s.tenant_id, s.owner_id, s.subject_id, x.event_id, x.extractor, "
            "x.claim_ids, x.spans, x.diagnostics, x.digest "
            "FROM extractions x JOIN scopes s ON s.scope_id = x.scope_id WHERE 1 = 1",
            scope,
        ):
            yield ExtractionRow((r[0], r[1], r[2]), *r[3:])

    def stale_keys(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        return [(key, claim_id) for _, key, claim_id, _, _ in self._claim_keys(scope)]

    def rekey(self) -> int:
        # Keys are 8-byte BLOBs, so a stale key is written over in place with one of the
        # same size. A key of another type or size is damage: writing it changes the
        # row's size, which may move cells between pages, so the store is marked for a
        # rewrite by the next erasure or compaction (see ``schema``).
        stale = self._claim_keys(None)
        for rid, _, _, sk, pk in stale:
            sized = self._conn.execute(
                "UPDATE claims SET subject_key = ?, predicate_key = ? WHERE rid = ? "
                "AND typeof(subject_key) = 'blob' AND length(subject_key) = 8 "
                "AND typeof(predicate_key) = 'blob' AND length(predicate_key) = 8",
                (sk, pk, rid),
            ).rowcount
            if not sized:
                self._conn.execute(
                    "UPDATE claims SET subject_key = ?, predicate_key = ? WHERE rid = ?",
                    (sk, pk, rid),
                )
                self._conn.execute("UPDATE store_state SET clean = 0 WHERE singleton = 1")
        return len(stale)

    def _claims_in(
        self, scope: ScopeKey, column: str, values: Sequence[str], index: str | None
    ) -> list[ClaimRow]:
        sid = self._scope_id(scope)
        if sid is None or not values:
            return []
        found: list[ClaimRow] = []
        for start in range(0, len(values), CHUNK):
            chunk = list(values[start : start + CHUNK])
            marks = ",".join("?" * len(chunk))
            found.extend(
                ClaimRow(scope, *r)
                for r in self._conn.execute(
                    f"SELECT {_CLAIM_COLUMNS} FROM claims c"
                    f"{'' if index is None else f' INDEXED BY {index}'} "
                    f"WHERE c.scope_id = ? AND c.{column} IN ({marks}) AND c.erased IS NOT 1",
                    [sid, *chunk],
                )
            )
        return found

    def _every(self, sql: str, scope: ScopeKey | None) -> Iterator[Sequence[Any]]:
        where, params = "", []
        if scope is not None:
            sid = self._scope_id(scope)
            if sid is None:
                return
            where, params = " AND x.scope_id = ?", [sid]
        cursor = self._conn.execute(f"{sql}{where} ORDER BY x.rid", params)
        while rows := cursor.fetchmany(CHUNK):
            yield from rows

    def delete_claim(self, scope: ScopeKey, claim_id: str) -> None:
        """Remove a claim's fields (part of removing its memory): overwritten in place."""
        self._conn.execute(
            f"UPDATE claims SET {ERASE_CLAIM} "
            "WHERE claim_id = ? AND scope_id = ? AND erased IS NOT 1",
            (claim_id, self._scope_id(scope)),
        )

    def delete_extraction(self, scope: ScopeKey, event_id: str) -> None:
        """Remove an event's extraction record (part of deleting the event)."""
        self._conn.execute(
            "DELETE FROM extractions WHERE event_id = ? AND scope_id = ?",
            (event_id, self._scope_id(scope)),
        )

    def _claim_keys(
        self, scope: ScopeKey | None
    ) -> list[tuple[int, ScopeKey, str, object, object]]:
        """``(rid, scope, claim_id, subject key, predicate key)`` of every claim row whose
        stored keys differ from the keys of its texts (or whose texts are not text)."""
        where, params = "", []
        if scope is not None:
            sid = self._scope_id(scope)
            if sid is None:
                return []
            where, params = " AND c.scope_id = ?", [sid]
        stale = []
        cursor = self._conn.execute(
            "SELECT c.rid, s.tenant_id, s.owner_id, s.subject_id, c.claim_id, c.subject, "
            "c.predicate, c.subject_key, c.predicate_key FROM claims c "
            "JOIN scopes s ON s.scope_id = c.scope_id "
            f"WHERE c.erased IS NOT 1{where} ORDER BY c.rid",
            params,
        )
        while rows := cursor.fetchmany(500):
            for rid, tenant, owner, subject_id, claim_id, subject, predicate, sk, pk in rows:
                if not isinstance(subject, str) or not isinstance(predicate, str):
                    continue  # an invalid claim row is reported by its own check
                try:
                    keys = (_key(subject), _key(predicate))
                except UnicodeEncodeError:
                    continue
                if (sk, pk) != keys:
                    stale.append((rid, (tenant, owner, subject_id), claim_id, *keys))
        return stale
