"""Pure lifecycle policy, tested without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core import Scope, TrustEscalation, TrustLevel, ValidationError
from trueheart_core.domain import policy

US_MIN = -62135596800 * 10**6  # 0001-01-01T00:00Z in microseconds since the epoch
US_MAX = 253402300799999999  # 9999-12-31T23:59:59.999999Z


def test_content_hash_matches_the_documented_value() -> None:
    digest = policy.content_hash("synthetic message")
    assert digest.startswith("5f241eec") and digest.endswith("e5ea3e2")
    assert policy.is_sha256_hex(digest)


def test_fingerprint_hashes_the_documented_canonical_text() -> None:
    scope = Scope("tenant", "owner", "subject")
    text = policy.fingerprint_text(scope, "fact", ["evt-2", "evt-1"])
    assert text == (
        '{"kind":"fact","scope":{"owner_id":"owner","subject_id":"subject",'
        '"tenant_id":"tenant"},"source_event_ids":["evt-1","evt-2"]}'
    )
    assert policy.dependency_fingerprint(scope, "fact", ("evt-2", "evt-1")) == (
        policy.sha256_hex(text)
    )


def test_clarity_boundaries() -> None:
    clear = datetime(2026, 1, 1, tzinfo=UTC)
    recall = clear + timedelta(days=2)
    assert policy.clarity(clear, clear, recall) == 1.0
    assert policy.clarity(clear + timedelta(days=1), clear, recall) == 0.5
    assert policy.clarity(clear - timedelta(days=9), clear, clear) == 1.0


@settings(max_examples=2000)
@given(
    clear=st.integers(US_MIN, US_MAX - 2),
    data=st.data(),
)
def test_rounding_shift_predicts_exactly_when_a_fade_ratio_is_one(
    clear: int, data: st.DataObject
) -> None:
    recall = data.draw(st.integers(clear + 1, US_MAX))
    span = recall - clear
    offset = data.draw(
        st.one_of(st.integers(1, 64), st.integers(1, span - 1) if span > 1 else st.just(1))
    )
    as_of = min(clear + offset, recall - 1) if span > 1 else clear
    exact_one = policy.clarity_us(as_of, clear, recall) == 1.0
    predicted = clear + ((recall - clear) >> policy.CLARITY_ROUNDING_SHIFT) >= as_of
    assert exact_one == predicted
    as_dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=as_of)
    clear_dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=clear)
    recall_dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=recall)
    assert policy.clarity(as_dt, clear_dt, recall_dt) == policy.clarity_us(as_of, clear, recall)


def test_rounding_shift_edge_is_real() -> None:
    clear, recall = 0, 1 << 56
    # (recall - clear) >> 54 == 4: four microseconds past clear still round to 1.0 ...
    assert policy.clarity_us(clear + 4, clear, recall) == 1.0
    # ... and the fifth does not.
    assert policy.clarity_us(clear + 5, clear, recall) < 1.0


def test_deadlines_take_independent_minima_and_report_overflow() -> None:
    created = datetime(2026, 8, 13, 12, tzinfo=UTC)
    clear, recall = policy.deadlines(
        created, [timedelta(days=4), timedelta(days=2)], [timedelta(days=6), timedelta(days=8)]
    )
    assert clear == datetime(2026, 8, 15, 12, tzinfo=UTC)
    assert recall == datetime(2026, 8, 19, 12, tzinfo=UTC)
    with pytest.raises(ValidationError, match=r"^created_at: retention deadline must be"):
        policy.deadlines(created, [timedelta.max], [timedelta.max])


def test_trust_ceiling() -> None:
    policy.check_trust_ceiling("m", TrustLevel.OBSERVED, [1, 2])
    with pytest.raises(TrustEscalation, match=r"^trust escalation: m$"):
        policy.check_trust_ceiling("m", TrustLevel.CONFIRMED, [1, 2])


def test_canonical_comparison_distinguishes_true_one_and_one_point_zero() -> None:
    assert not policy.same_json({"a": True}, {"a": 1})
    assert not policy.same_json({"a": 1}, {"a": 1.0})
    assert policy.same_json({"a": [1, 2]}, {"a": (1, 2)})


@pytest.mark.parametrize(
    ("action", "entity_type", "allowed"),
    [
        ("ingest", "raw_event", True),
        ("ingest", "memory", False),
        ("expire", "raw_event", True),
        ("materialize", "memory", True),
        ("seal", "raw_event", False),
        ("delete", "raw_event", True),
        ("delete", "memory", True),
        ("erase", "memory", False),
    ],
)
def test_audit_policy(action: str, entity_type: str, allowed: bool) -> None:
    reason = policy.AUDIT_REASONS.get(action, "governance requested")
    assert policy.audit_row_allowed(action, entity_type, reason) is allowed
    assert not policy.audit_row_allowed(action, entity_type, "something else")
