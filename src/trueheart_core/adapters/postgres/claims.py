"""The PostgreSQL claims role (see ``ports.claims``): statements over the unit of work's
connection, and nothing else.

A claim row's ``subject_key`` and ``predicate_key`` are the SQLite adapter's
:func:`~trueheart_core.adapters.sql.keys.text_key` of its texts, so that
``stale_keys`` and ``rekey`` mean the same on both backends; the index of the scope by
those keys selects a subject's claims, and the texts themselves are compared in the rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from trueheart_core.adapters.postgres.scans import scan
from trueheart_core.adapters.postgres.session import (
    KEY,
    Role,
    dec,
    enc,
    enc_opt,
    scoped,
)
from trueheart_core.adapters.sql.keys import text_key
from trueheart_core.ports import ClaimPosition, ClaimRow, ExtractionRow, ScopeKey

_CLAIM_COLUMNS = (
    "c.claim_id, c.subject, c.predicate, c.value, c.valid_from, c.valid_to, c.confidence, "
    "c.authority, c.supersedes, c.digest"
)
_EXTRACTION_COLUMNS = "x.event_id, x.extractor, x.claim_ids, x.spans, x.diagnostics, x.digest"


def _claim(scope: ScopeKey, r: Sequence[Any]) -> ClaimRow:
    """A :class:`ClaimRow` from the columns of ``_CLAIM_COLUMNS``."""
    return ClaimRow(
        scope,
        dec(r[0]),
        dec(r[1]),
        dec(r[2]),
        dec(r[3]),
        r[4],
        r[5],
        r[6],
        dec(r[7]),
        dec(r[8]),
        r[9],
    )


def _extraction(scope: ScopeKey, r: Sequence[Any]) -> ExtractionRow:
    return ExtractionRow(scope, dec(r[0]), dec(r[1]), r[2], r[3], r[4], r[5])


def _selection(
    key: tuple[bytes, bytes, bytes], subject: str | None, predicate: str | None
) -> tuple[str, list[Any]]:
    """The WHERE clause (over ``claims c``) and parameters that select the claims of a
    scope, or of one subject (and predicate): the keys select through the index, the
    texts are compared in the rows."""
    where = scoped("c")
    params: list[Any] = list(key)
    if subject is not None:
        where += " AND c.subject_key = %s AND c.subject = %s"
        params += [text_key(subject), enc(subject)]
        if predicate is not None:
            where += " AND c.predicate_key = %s AND c.predicate = %s"
            params += [text_key(predicate), enc(predicate)]
    elif predicate is not None:
        where += " AND c.predicate = %s"
        params.append(enc(predicate))
    return where, params


class PostgresClaims(Role):
    """The claims role over one transaction."""

    def insert(self, row: ClaimRow) -> None:
        self._s.ensure_scope(row.scope)
        self._s.write(
            f"INSERT INTO claims ({KEY}, claim_id, subject, predicate, value, valid_from, "
            "valid_to, confidence, authority, supersedes, digest, subject_key, predicate_key) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                *self._s.key(row.scope),
                enc(row.claim_id),
                enc(row.subject),
                enc(row.predicate),
                enc(row.value),
                row.valid_from,
                row.valid_to,
                row.confidence,
                enc(row.authority),
                enc_opt(row.supersedes),
                row.digest,
                text_key(row.subject),
                text_key(row.predicate),
            ),
        )

    def get(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        return self._claims_in(scope, "claim_id", claim_ids)

    def about(self, scope: ScopeKey, subject: str | None, predicate: str | None) -> list[ClaimRow]:
        where, params = _selection(self._s.key(scope), subject, predicate)
        return [
            _claim(scope, r)
            for r in self._s.all(f"SELECT {_CLAIM_COLUMNS} FROM claims c WHERE {where}", params)
        ]

    def page(
        self,
        scope: ScopeKey,
        subject: str | None,
        predicate: str | None,
        after: ClaimPosition | None,
        limit: int,
    ) -> list[ClaimRow]:
        # Row values compare column by column: BYTEA texts byte by byte (UTF-8, so
        # code-point order), then integers. First, without reading memory rows, the
        # (subject, predicate) of the ``limit``-th claim of the groups after the
        # cursor's: the page ends in that group or before it, so only the claims up to it
        # are joined to their memory rows to be sorted by ``created_at`` (a top-N sort
        # that holds ``limit`` rows).
        key = self._s.key(scope)
        where, params = _selection(key, subject, predicate)
        later, later_params = where, list(params)
        position: list[Any] = []
        if after is not None:
            position = [enc(after[0]), enc(after[1]), after[2], enc(after[3])]
            later += " AND (c.subject, c.predicate) > (%s, %s)"
            later_params += position[:2]
        bound = self._s.one(
            f"SELECT c.subject, c.predicate FROM claims c WHERE {later} "
            "ORDER BY c.subject, c.predicate LIMIT 1 OFFSET %s",
            [*later_params, max(limit - 1, 0)],
        )
        if after is not None:
            where += (
                " AND (c.subject, c.predicate) >= (%s, %s)"
                " AND (c.subject, c.predicate, m.created_at, c.claim_id) > (%s, %s, %s, %s)"
            )
            params += [*position[:2], *position]
        if bound is not None:
            where += " AND (c.subject, c.predicate) <= (%s, %s)"
            params += [bytes(bound[0]), bytes(bound[1])]
        # A claim without its memory row (NULL ``created_at``) sorts first in its group.
        return [
            _claim(scope, r)
            for r in self._s.all(
                f"SELECT {_CLAIM_COLUMNS} FROM claims c LEFT JOIN memories m "
                "ON m.tenant_id = c.tenant_id AND m.owner_id = c.owner_id "
                "AND m.subject_id = c.subject_id AND m.memory_id = c.claim_id "
                f"WHERE {where} "
                "ORDER BY c.subject, c.predicate, m.created_at NULLS FIRST, c.claim_id "
                "LIMIT %s",
                [*params, limit],
            )
        ]

    def superseders_of(self, scope: ScopeKey, claim_ids: Sequence[str]) -> list[ClaimRow]:
        return self._claims_in(scope, "supersedes", claim_ids)

    def iter(self, scope: ScopeKey | None) -> Iterator[ClaimRow]:
        for key, r in scan(
            self._s, _CLAIM_COLUMNS.replace("c.", "x."), "claims", "x.claim_id", scope
        ):
            yield _claim(key, r)

    def insert_extraction(self, row: ExtractionRow) -> None:
        self._s.ensure_scope(row.scope)
        self._s.write(
            f"INSERT INTO extractions ({KEY}, event_id, extractor, claim_ids, spans, "
            "diagnostics, digest) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                *self._s.key(row.scope),
                enc(row.event_id),
                enc(row.extractor),
                row.claim_ids,
                row.spans,
                row.diagnostics,
                row.digest,
            ),
        )

    def get_extraction(self, scope: ScopeKey, event_id: str) -> ExtractionRow | None:
        r = self._s.one(
            f"SELECT {_EXTRACTION_COLUMNS} FROM extractions x WHERE {scoped('x')} "
            "AND x.event_id = %s",
            (*self._s.key(scope), enc(event_id)),
        )
        return None if r is None else _extraction(scope, r)

    def iter_extractions(self, scope: ScopeKey | None) -> Iterator[ExtractionRow]:
        for key, r in scan(self._s, _EXTRACTION_COLUMNS, "extractions", "x.event_id", scope):
            yield _extraction(key, r)

    def stale_keys(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, str]]:
        return [(key, dec(claim_id)) for key, claim_id, _, _ in self._stale(scope)]

    def rekey(self) -> int:
        stale = self._stale(None)
        for key, claim_id, subject_key, predicate_key in stale:
            self._s.write(
                "UPDATE claims SET subject_key = %s, predicate_key = %s "
                f"WHERE {scoped()} AND claim_id = %s",
                (subject_key, predicate_key, *self._s.key(key), claim_id),
            )
        return len(stale)

    def delete_claim(self, scope: ScopeKey, claim_id: str) -> None:
        """Remove a claim's fields (part of removing its memory)."""
        self._s.touched_tables.add("claims")
        self._s.write(
            f"DELETE FROM claims WHERE {scoped()} AND claim_id = %s",
            (*self._s.key(scope), enc(claim_id)),
        )

    def delete_extraction(self, scope: ScopeKey, event_id: str) -> None:
        """Remove an event's extraction record (part of deleting the event)."""
        self._s.touched_tables.add("extractions")
        self._s.write(
            f"DELETE FROM extractions WHERE {scoped()} AND event_id = %s",
            (*self._s.key(scope), enc(event_id)),
        )

    def _claims_in(self, scope: ScopeKey, column: str, values: Sequence[str]) -> list[ClaimRow]:
        found: list[ClaimRow] = []
        for chunk in self._s.chunks([enc(value) for value in values]):
            found.extend(
                _claim(scope, r)
                for r in self._s.all(
                    f"SELECT {_CLAIM_COLUMNS} FROM claims c WHERE {scoped('c')} "
                    f"AND c.{column} = ANY(%s)",
                    (*self._s.key(scope), chunk),
                )
            )
        return found

    def _stale(self, scope: ScopeKey | None) -> list[tuple[ScopeKey, bytes, int, int]]:
        """``(scope, stored claim_id, subject key, predicate key)`` of every claim row
        whose stored keys differ from the keys of its texts (rows whose texts are not
        UTF-8 are left to the row checks that report them)."""
        stale: list[tuple[ScopeKey, bytes, int, int]] = []
        for key, (claim_id, stored_subject, stored_predicate, sk, pk) in scan(
            self._s,
            "x.claim_id, x.subject, x.predicate, x.subject_key, x.predicate_key",
            "claims",
            "x.claim_id",
            scope,
        ):
            subject, predicate = dec(stored_subject), dec(stored_predicate)
            if not isinstance(subject, str) or not isinstance(predicate, str):
                continue
            keys = (text_key(subject), text_key(predicate))
            if (sk, pk) != keys:
                stale.append((key, bytes(claim_id), *keys))
        return stale
