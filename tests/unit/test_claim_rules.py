"""The pure claim rules: DTO validation, status at a valid time, conflicts."""

from __future__ import annotations

import pickle
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from trueheart_core import MemoryRecord, MemoryStatus, Scope, TrustLevel, ValidationError
from trueheart_core.domain.claims import (
    ClaimConflict,
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimStatus,
    ClaimView,
    claim_text,
    conflicts,
    is_known,
    status_at,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
DAY = timedelta(days=1)


def msg(text: str) -> str:
    """An anchored pattern matching exactly ``text``."""
    return "^" + re.escape(text) + "$"


def draft(**changes: object) -> ClaimDraft:
    fields: dict[str, object] = {
        "claim_id": "c1",
        "scope": SCOPE,
        "subject": "user:ada",
        "predicate": "prefers_theme",
        "value": "dark",
        "source_event_ids": ("e1",),
        "trust": TrustLevel.CONFIRMED,
        "created_at": NOW,
    }
    fields.update(changes)
    return ClaimDraft(**fields)  # type: ignore[arg-type]


def record(
    claim_id: str = "c1",
    value: str = "dark",
    *,
    subject: str = "user:ada",
    predicate: str = "prefers_theme",
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    created_at: datetime = NOW,
    status: MemoryStatus = MemoryStatus.ACTIVE,
) -> ClaimRecord:
    memory = MemoryRecord(
        claim_id,
        SCOPE,
        claim_text(subject, predicate, value),
        ("e1",),
        "0" * 64,
        "claim",
        TrustLevel.CONFIRMED,
        created_at,
        created_at + 10 * DAY,
        created_at + 20 * DAY,
        status,
        {},
    )
    return ClaimRecord(
        claim_id, subject, predicate, value, valid_from, valid_to, 1.0, "application", None, memory
    )


def test_draft_normalises_times_and_confidence() -> None:
    plus_two = timezone(timedelta(hours=2))
    made = draft(
        valid_from=datetime(2026, 4, 18, 11, 30, tzinfo=plus_two),
        confidence=1,
        created_at=NOW.astimezone(plus_two),
    )
    assert made.valid_from == datetime(2026, 4, 18, 9, 30, tzinfo=UTC)
    assert made.valid_from is not None and made.valid_from.tzinfo is UTC
    assert made.created_at.tzinfo is UTC
    assert type(made.confidence) is float and made.confidence == 1.0
    assert made.content == "user:ada prefers_theme dark"
    assert pickle.loads(pickle.dumps(made)) == made


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"claim_id": " "}, "claim_id: must be a non-blank string"),
        ({"scope": "tenant"}, "scope: must be a Scope"),
        ({"subject": ""}, "subject: must be a non-blank string"),
        ({"predicate": "x" * 129}, "predicate: must be at most 128 characters"),
        ({"value": "  "}, "value: must be a non-blank string"),
        ({"value": "v" * 1025}, "value: must be at most 1024 characters"),
        ({"value": "\ud800"}, "value: must be valid UTF-8"),
        ({"source_event_ids": ()}, "source_event_ids: must be a non-empty tuple"),
        ({"source_event_ids": ("e1", "e1")}, "source_event_ids: must not repeat an ID"),
        ({"trust": 2}, "trust: must be a TrustLevel"),
        ({"created_at": datetime(2026, 1, 1)}, "created_at: must be timezone-aware"),
        ({"valid_from": NOW, "valid_to": NOW}, "valid_to: must be later than valid_from"),
        ({"confidence": 1.5}, "confidence: must be a number from 0 through 1"),
        ({"confidence": -0.1}, "confidence: must be a number from 0 through 1"),
        ({"confidence": True}, "confidence: must be a number from 0 through 1"),
        ({"confidence": float("nan")}, "confidence: must be a number from 0 through 1"),
        ({"confidence": 10**400}, "confidence: must be a number from 0 through 1"),
        ({"authority": ""}, "authority: must be a non-blank string"),
        ({"supersedes": "c1"}, "supersedes: must name another claim"),
        ({"metadata": []}, "metadata: must be a JSON object"),
    ],
)
def test_draft_rules(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=msg(message)):
        draft(**changes)


def test_status_order_supersession_first_then_end_then_start() -> None:
    bounded = record(valid_from=NOW, valid_to=NOW + DAY)
    assert status_at(bounded, True, NOW - DAY) is ClaimStatus.SUPERSEDED
    assert status_at(bounded, False, NOW - timedelta(microseconds=1)) is ClaimStatus.NOT_YET_VALID
    assert status_at(bounded, False, NOW) is ClaimStatus.CURRENT
    assert status_at(bounded, False, NOW + DAY - timedelta(microseconds=1)) is ClaimStatus.CURRENT
    assert status_at(bounded, False, NOW + DAY) is ClaimStatus.ENDED
    assert status_at(record(), False, datetime(1, 1, 2, tzinfo=UTC)) is ClaimStatus.CURRENT


def test_known_needs_an_active_claim_created_and_not_past_its_deadline() -> None:
    claim = record()
    assert not is_known(claim, NOW - timedelta(microseconds=1))
    assert is_known(claim, NOW)
    assert is_known(claim, NOW + 20 * DAY - timedelta(microseconds=1))
    assert not is_known(claim, NOW + 20 * DAY)
    assert not is_known(record(status=MemoryStatus.SEALED), NOW)


def test_conflicts_are_current_claims_of_one_subject_and_predicate_with_other_values() -> None:
    views = [
        ClaimView(record("c3", "light"), ClaimStatus.CURRENT),
        ClaimView(record("c1", "dark"), ClaimStatus.CURRENT),
        ClaimView(record("c2", "dark"), ClaimStatus.CURRENT),
        ClaimView(record("c4", "blue"), ClaimStatus.SUPERSEDED, ("c1",)),
        ClaimView(record("c5", "en", predicate="language"), ClaimStatus.CURRENT),
        ClaimView(record("c6", "fr", predicate="language"), ClaimStatus.ENDED),
    ]
    assert conflicts(views) == (ClaimConflict(("c1", "c2", "c3")),)
    assert conflicts(views[1:3]) == ()


def test_record_and_view_rules() -> None:
    with pytest.raises(ValidationError, match=msg("memory: must be the claim's MemoryRecord")):
        ClaimRecord("other", "s", "p", "v", None, None, 1.0, "a", None, record().memory)
    with pytest.raises(ValidationError, match=msg("status: must be a ClaimStatus")):
        ClaimView(record(), "current")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=msg("claim_ids: must name at least two claims")):
        ClaimConflict(("c1",))


def test_query_defaults_known_at_to_as_of() -> None:
    query = ClaimQuery(SCOPE, NOW.astimezone(timezone(timedelta(hours=-5))))
    assert query.known_at == query.as_of == NOW
    assert query.as_of.tzinfo is UTC
    with pytest.raises(ValidationError, match=msg("statuses: must be a tuple of ClaimStatus")):
        ClaimQuery(SCOPE, NOW, statuses=("current",))  # type: ignore[arg-type]
