"""Exact reads of claims by ID, and the scopes a store holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    claim,
    command,
    event,
    materialize_all,
    msg,
)

from trueheart_core import ClaimStatus, GovernanceAction, Scope, TrueHeart, ValidationError


def test_get_claims_reads_by_id_with_status(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1"))
    service.materialize_claim(claim("c-old", value="dark"))
    service.materialize_claim(
        claim("c-new", value="light", created_at=NOW + timedelta(hours=1), supersedes="c-old")
    )
    later = NOW + timedelta(days=1)
    views = service.get_claims(SCOPE, ["c-new", "missing", "c-old"], as_of=later)
    assert [(v.claim.claim_id, v.status) for v in views] == [
        ("c-new", ClaimStatus.CURRENT),
        ("c-old", ClaimStatus.SUPERSEDED),
    ]
    assert views[1].superseded_by == ("c-new",)
    assert service.get_claims(OTHER_SCOPE, ["c-new"], as_of=later) == ()
    assert service.get_claims(SCOPE, ["c-new"], as_of=NOW) == ()  # not known yet
    with pytest.raises(ValidationError, match=msg("claim_ids: must be a list or tuple of str")):
        service.get_claims(SCOPE, "c-new", as_of=later)  # type: ignore[arg-type]


def test_scopes_lists_the_scopes_that_hold_something(service: TrueHeart) -> None:
    assert service.scopes() == ()
    materialize_all(service, {"m1": "a"})
    service.ingest_event(event("evt-9", scope=OTHER_SCOPE))
    third = Scope("another-tenant", "owner", "subject")
    service.ingest_event(event("evt-3", scope=third))
    assert service.scopes() == tuple(
        sorted([SCOPE, OTHER_SCOPE, third], key=lambda s: (s.tenant_id, s.owner_id, s.subject_id))
    )
    assert service.scopes(tenant_id="another-tenant") == (third,)
    assert service.scopes(tenant_id=SCOPE.tenant_id, owner_id="nobody") == ()
    service.govern(command(GovernanceAction.DELETE, "evt-3", entity_type=_raw(), scope=third))
    assert third not in service.scopes()


def _raw():  # type: ignore[no-untyped-def]
    from trueheart_core import EntityType

    return EntityType.RAW_EVENT
