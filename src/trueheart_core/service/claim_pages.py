"""Claims page by page: one page of a :class:`ClaimQuery` with a ``limit``.

Service-layer functions over one unit of work. A page walks the claims of the scope (or
of one subject, or one subject and predicate) in answer order, ``(subject, predicate,
created_at, claim_id)``, through the port's keyset reads (``ClaimStore.page``), in
batches: the first batch holds ``limit + 1`` claims, and when the claims a query leaves
out (not known at ``known_at``, or of another status) force it to read on, each further
batch is four times larger, up to :data:`LAST_BATCH` claims.

A page ends just before the claim that would be its ``limit + 1``-th; its cursor names
the last claim it read (shown or not), and the next page reads on after that claim. The
conflicts of a (subject, predicate) are reported on the page that reads its last claim,
computed over all its claims (when they began on an earlier page, read again through the
index for that one subject and predicate). So every claim and every conflict of the
unpaged answer is on exactly one page, and a page holds at most ``limit`` claims, one
batch, and the current claims of one (subject, predicate).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from trueheart_core.domain import validation
from trueheart_core.domain.claims import (
    ClaimConflict,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimStatus,
    ClaimView,
    conflicts,
    is_known,
)
from trueheart_core.errors import ValidationError
from trueheart_core.ports import ClaimPosition, UnitOfWork
from trueheart_core.service import loading
from trueheart_core.service.claims import known_views, load
from trueheart_core.service.reading import decode_cursor, encode_cursor
from trueheart_core.service.records import scope_key, to_us

_CURSOR_VERSION = "c1"
_INVALID_CLAIM = "invalid claim record"
LAST_BATCH = 4096
"""The most claims one read of a page asks for."""

Group = tuple[str, str]


def query_id(query: ClaimQuery) -> str:
    """A short fingerprint of what a query selects, bound into its cursors (the limit
    and the cursor are not part of it)."""
    assert query.known_at is not None
    text = validation.canonical_json(
        [
            list(scope_key(query.scope)),
            to_us(query.as_of),
            to_us(query.known_at),
            query.subject,
            query.predicate,
            sorted({s.value for s in query.statuses}),
        ]
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def position(claim: ClaimRecord) -> ClaimPosition:
    """Where a claim stands in answer order."""
    return (claim.subject, claim.predicate, to_us(claim.created_at), claim.claim_id)


def _anchor(uow: UnitOfWork, query: ClaimQuery, cursor: str) -> ClaimPosition:
    """The position of the claim a cursor of this query names."""
    claim_id = decode_cursor(cursor, query_id(query), _CURSOR_VERSION, "query")
    rows = uow.claims.get(scope_key(query.scope), (claim_id,))
    if not rows:
        raise ValidationError("cursor", "names a claim that is no longer held")
    (claim,) = load(uow, query.scope, rows)
    if (query.subject is not None and claim.subject != query.subject) or (
        query.predicate is not None and claim.predicate != query.predicate
    ):
        raise ValidationError("cursor", "must be a cursor returned by the same query")
    return position(claim)


def _selected(claim: ClaimRecord, query: ClaimQuery) -> bool:
    return (query.subject is None or claim.subject == query.subject) and (
        query.predicate is None or claim.predicate == query.predicate
    )


class _Walk:
    """What a page has read so far: its claims, its conflicts, and the current views of
    the (subject, predicate) it is reading."""

    def __init__(self, uow: UnitOfWork, query: ClaimQuery, after: ClaimPosition | None) -> None:
        self.uow, self.query = uow, query
        self.shown: list[ClaimView] = []
        self.found: list[ClaimConflict] = []
        self.last: ClaimRecord | None = None
        # The group being read, its current views, and whether it began on this page.
        self.group: Group | None = None
        self.current: list[ClaimView] = []
        self.whole = True
        self.began_before: Group | None = None if after is None else (after[0], after[1])

    def enter(self, group: Group) -> None:
        """Start reading the claims of ``group``, closing the one before."""
        if group == self.group:
            return
        self.close()
        self.group, self.current = group, []
        self.whole = group != self.began_before

    def close(self) -> None:
        """Report the conflicts of the group being read: its last claim has been read."""
        if self.group is None:
            return
        current = self.current if self.whole else self._current_of(self.group)
        self.found.extend(conflicts(current))
        self.group, self.current = None, []

    def _current_of(self, group: Group) -> list[ClaimView]:
        """Every current view of one group, read through the index for it alone."""
        query, key = self.query, scope_key(self.query.scope)
        assert query.known_at is not None
        rows = self.uow.claims.about(key, *group)
        if any((r.subject, r.predicate) != group for r in rows):
            loading.corrupt(_INVALID_CLAIM)
        known = [c for c in load(self.uow, query.scope, rows) if is_known(c, query.known_at)]
        views = known_views(self.uow, query.scope, known, query.as_of, query.known_at)
        return [v for v in views if v.status is ClaimStatus.CURRENT]


def _batch(
    uow: UnitOfWork, query: ClaimQuery, after: ClaimPosition | None, size: int
) -> tuple[list[ClaimRecord], dict[str, ClaimView]]:
    """The next ``size`` claims after ``after``, verified and in order, and the views of
    those known at ``query.known_at``."""
    assert query.known_at is not None
    rows = uow.claims.page(scope_key(query.scope), query.subject, query.predicate, after, size)
    claims = load(uow, query.scope, rows)
    previous = after
    for claim in claims:
        here = position(claim)
        if not _selected(claim, query) or (previous is not None and not here > previous):
            loading.corrupt(_INVALID_CLAIM)
        previous = here
    known = [c for c in claims if is_known(c, query.known_at)]
    views = known_views(uow, query.scope, known, query.as_of, query.known_at)
    return claims, {view.claim.claim_id: view for view in views}


def page(uow: UnitOfWork, query: ClaimQuery) -> ClaimSet:
    """One page of the answer to a query with a ``limit``."""
    limit, known_at = query.limit, query.known_at
    assert limit is not None and known_at is not None
    after = None if query.cursor is None else _anchor(uow, query, query.cursor)
    walk = _Walk(uow, query, after)
    size = limit + 1
    more = False
    while not more:
        claims, views = _batch(uow, query, after, size)
        more = _read(walk, claims, views, limit)
        if more or len(claims) < size:
            break
        after = position(claims[-1])
        size = min(size * 4, LAST_BATCH)
    if not more:
        walk.close()
    next_cursor = None
    if more and walk.last is not None:
        next_cursor = encode_cursor(query_id(query), walk.last.claim_id, _CURSOR_VERSION)
    found = tuple(sorted(walk.found, key=lambda c: c.claim_ids))
    return ClaimSet(query.as_of, known_at, tuple(walk.shown), found, next_cursor)


def _read(
    walk: _Walk, claims: Sequence[ClaimRecord], views: dict[str, ClaimView], limit: int
) -> bool:
    """Read one batch into the page; ``True`` when the page is full and a claim it would
    show is left for the next page."""
    statuses = walk.query.statuses
    for claim in claims:
        view = views.get(claim.claim_id)
        shows = view is not None and (not statuses or view.status in statuses)
        group = (claim.subject, claim.predicate)
        if shows and len(walk.shown) == limit:
            if group != walk.group:
                walk.close()
            return True
        walk.enter(group)
        if view is not None:
            if view.status is ClaimStatus.CURRENT:
                walk.current.append(view)
            if shows:
                walk.shown.append(view)
        walk.last = claim
    return False
