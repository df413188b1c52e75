"""Property: claims() answers what a brute-force reading of the claim rules answers.

Stores are built through the public API with random claims over a few subjects,
predicates and values: random creation times, valid-time bounds, supersession links to
earlier claims and source events with short or long recall deadlines. Some claims are
then sealed or forgotten and some source events deleted (taking their claims with them).
For random valid times ``as_of``, transaction times ``known_at`` and filters, the answer
must equal the reference computed here:

- a claim is known when it is still stored, active, and
  ``created_at <= known_at < recall_until``;
- its status at ``as_of`` is SUPERSEDED when a stored active claim created at or before
  ``known_at`` names it (that claim's own recall deadline does not matter), else ENDED
  when ``valid_to <= as_of``, else NOT_YET_VALID when ``as_of < valid_from``, else
  CURRENT;
- views are ordered by (subject, predicate, created_at, claim_id), filtered by status;
- conflicts are the groups of CURRENT claims of one (subject, predicate) among all the
  selected known claims with more than one distinct value, as sorted IDs, sorted.

A claim whose source event was deleted never appears.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trueheart_core import (
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimStatus,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

BASE = datetime(2026, 4, 1, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER = Scope("tenant", "owner", "other-subject")
SUBJECTS = ("user:ada", "user:bob")
PREDICATES = ("prefers_theme", "speaks")
VALUES = ("dark", "light", "en")
LONG = timedelta(days=400)
RECALL = (LONG, timedelta(hours=3), LONG, timedelta(hours=9), LONG)
EVENTS = len(RECALL)
FATES = ("active",) * 6 + ("sealed", "forgotten")
HOUR = timedelta(hours=1)
US = timedelta(microseconds=1)

View = tuple[str, ClaimStatus, tuple[str, ...]]


@dataclass(frozen=True)
class Spec:
    claim_id: str
    subject: str
    predicate: str
    value: str
    source: int
    created: int
    valid_from: int | None
    valid_to: int | None
    supersedes: int | None
    fate: str


@st.composite
def specs(draw: st.DrawFn) -> list[Spec]:
    ids = draw(
        st.lists(st.text("abAB9é", min_size=1, max_size=3), min_size=4, max_size=12, unique=True)
    )
    out = []
    for index, claim_id in enumerate(ids):
        valid_from = draw(st.none() | st.integers(-2, 10))
        valid_to = draw(st.none() | st.integers(-1, 12))
        if valid_from is not None and valid_to is not None and valid_to <= valid_from:
            valid_to = valid_from + 1 + abs(valid_to) % 4
        supersedes = None  # an earlier claim, the first one more often
        if index and draw(st.integers(0, 2)) == 0:
            supersedes = draw(st.sampled_from((0, *range(index))))
        out.append(
            Spec(
                claim_id,
                draw(st.sampled_from((*SUBJECTS, SUBJECTS[0]))),  # mostly one subject
                draw(st.sampled_from((*PREDICATES, PREDICATES[0], PREDICATES[0]))),
                draw(st.sampled_from(VALUES)),
                draw(st.integers(0, EVENTS - 1)),
                draw(st.integers(0, 8)),
                valid_from,
                valid_to,
                supersedes,
                draw(st.sampled_from(FATES)),
            )
        )
    return out


def _at(hours: int | None) -> datetime | None:
    return None if hours is None else BASE + hours * HOUR


def _govern(service: TrueHeart, action: GovernanceAction, entity_id: str) -> None:
    entity_type = EntityType.RAW_EVENT if action is GovernanceAction.DELETE else EntityType.MEMORY
    service.govern(GovernanceCommand(SCOPE, action, entity_type, entity_id, BASE, "test"))


def _build(
    service: TrueHeart, claims: list[Spec], deleted: set[int]
) -> tuple[list[ClaimRecord], set[str]]:
    """Store the claims and apply their fates and the event deletions; returns the
    records still active in SCOPE and the IDs of the claims whose event was deleted."""
    source = SourceRef("src", "test", BASE, TrustLevel.CONFIRMED)
    drafts = []
    for index in range(EVENTS):
        retention = RetentionPolicy(timedelta(days=1), HOUR, RECALL[index])
        drafts.append(RawEventDraft(f"evt-{index}", SCOPE, source, "body", retention))
    drafts.append(RawEventDraft("evt-0", OTHER, source, "body", RetentionPolicy(HOUR, HOUR, HOUR)))
    service.ingest_events(drafts)
    records: dict[str, ClaimRecord] = {}
    for spec in claims:
        target = None if spec.supersedes is None else claims[spec.supersedes].claim_id
        draft = ClaimDraft(
            spec.claim_id,
            SCOPE,
            spec.subject,
            spec.predicate,
            spec.value,
            (f"evt-{spec.source}",),
            TrustLevel.OBSERVED,
            BASE + spec.created * HOUR,
            _at(spec.valid_from),
            _at(spec.valid_to),
            supersedes=target,
        )
        records[spec.claim_id] = service.materialize_claim(draft)
    first = claims[0]
    elsewhere = ClaimDraft(
        first.claim_id,
        OTHER,
        first.subject,
        first.predicate,
        "other",
        ("evt-0",),
        TrustLevel.UNTRUSTED,
        BASE,
    )
    service.materialize_claim(elsewhere)
    for spec in claims:
        if spec.fate == "sealed":
            _govern(service, GovernanceAction.SEAL, spec.claim_id)
        elif spec.fate == "forgotten":
            _govern(service, GovernanceAction.FORGET, spec.claim_id)
    for index in sorted(deleted):
        _govern(service, GovernanceAction.DELETE, f"evt-{index}")
    cascaded = {spec.claim_id for spec in claims if spec.source in deleted}
    active = [
        records[spec.claim_id]
        for spec in claims
        if spec.fate == "active" and spec.claim_id not in cascaded
    ]
    return active, cascaded


def _reference(
    active: list[ClaimRecord], query: ClaimQuery
) -> tuple[list[View], list[tuple[str, ...]]]:
    """The views and conflict IDs the rules give for ``query`` over the active claims."""
    known_at, as_of = query.known_at, query.as_of
    assert known_at is not None
    selected = [
        c
        for c in active
        if c.created_at <= known_at < c.memory.recall_until
        and query.subject in (None, c.subject)
        and query.predicate in (None, c.predicate)
    ]
    views: list[tuple[tuple[str, str, datetime, str], View]] = []
    for c in selected:
        by = tuple(
            sorted(
                s.claim_id
                for s in active
                if s.supersedes == c.claim_id and s.created_at <= known_at
            )
        )
        if by:
            status = ClaimStatus.SUPERSEDED
        elif c.valid_to is not None and c.valid_to <= as_of:
            status = ClaimStatus.ENDED
        elif c.valid_from is not None and as_of < c.valid_from:
            status = ClaimStatus.NOT_YET_VALID
        else:
            status = ClaimStatus.CURRENT
        views.append(((c.subject, c.predicate, c.created_at, c.claim_id), (c.claim_id, status, by)))
    views.sort()
    groups: defaultdict[tuple[str, str], list[ClaimRecord]] = defaultdict(list)
    by_id = {c.claim_id: c for c in selected}
    for _, (claim_id, status, _) in views:
        if status is ClaimStatus.CURRENT:
            c = by_id[claim_id]
            groups[(c.subject, c.predicate)].append(c)
    conflicts = sorted(
        tuple(sorted(c.claim_id for c in group))
        for group in groups.values()
        if len({c.value for c in group}) > 1
    )
    shown = [v for _, v in views if not query.statuses or v[1] in query.statuses]
    return shown, conflicts


@st.composite
def queries(draw: st.DrawFn, active: list[ClaimRecord]) -> ClaimQuery:
    moments = [BASE + h * HOUR for h in range(-3, 14)] + [BASE + timedelta(days=401)]
    for c in active:
        for point in (c.created_at, c.valid_from, c.valid_to, c.memory.recall_until):
            if point is not None:
                moments += [point - US, point, point + US]
    known_at = draw(st.sampled_from(moments) | st.sampled_from((BASE + 8 * HOUR, BASE + 9 * HOUR)))
    statuses: list[ClaimStatus] = []
    if draw(st.integers(0, 3)) == 0:
        statuses = draw(st.lists(st.sampled_from(ClaimStatus), min_size=1, max_size=3, unique=True))
    return ClaimQuery(
        SCOPE,
        draw(st.sampled_from(moments)),
        known_at,
        subject=draw(st.sampled_from((None, None, None, *SUBJECTS, "user:none"))),
        predicate=draw(st.sampled_from((None, None, *PREDICATES))),
        statuses=tuple(statuses),
    )


def _check(answer: ClaimSet, query: ClaimQuery, active: list[ClaimRecord]) -> None:
    views, conflicts = _reference(active, query)
    assert (answer.as_of, answer.known_at) == (query.as_of, query.known_at)
    assert [(v.claim.claim_id, v.status, v.superseded_by) for v in answer.claims] == views
    assert [c.claim_ids for c in answer.conflicts] == conflicts
    by_id = {c.claim_id: c for c in active}
    for view in answer.claims:
        assert view.claim == by_id[view.claim.claim_id]
        assert view.claim.scope == SCOPE


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    claims=specs(),
    deleted=st.sets(st.integers(0, EVENTS - 1), max_size=2),
    data=st.data(),
)
def test_claims_match_the_brute_force_reference(
    claims: list[Spec], deleted: set[int], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        repository = SQLiteRepository(Path(directory) / "store.db")
        with TrueHeart(repository, clock=lambda: BASE) as service:
            active, cascaded = _build(service, claims, deleted)
            everything = service.claims(ClaimQuery(SCOPE, BASE + 5 * HOUR, BASE + 9 * HOUR))
            assert not {v.claim.claim_id for v in everything.claims} & cascaded
            for _ in range(10):
                query = data.draw(queries(active), label="query")
                answer = service.claims(query)
                _check(answer, query, active)
                assert not {v.claim.claim_id for v in answer.claims} & cascaded
                shifted = timezone(timedelta(hours=-7))
                assert query.known_at is not None
                moved = ClaimQuery(
                    SCOPE,
                    query.as_of.astimezone(shifted),
                    query.known_at.astimezone(shifted),
                    query.subject,
                    query.predicate,
                    query.statuses,
                )
                assert service.claims(moved) == answer
            assert service.verify_integrity().ok
