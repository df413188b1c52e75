"""Erasure reaches claims: a forgotten or deleted claim's subject, predicate and value
leave the backend's storage (as its forensic search finds, ``Capability.FORENSICS``), and
so do the words of the claims that a raw-event delete cascades to.

Many claims are stored around the secret one, so that in a backend that keeps them in
pages or blocks the secret claim sits among others that stay.
"""

from __future__ import annotations

import pytest
from conformance_builders import NOW, SCOPE, command, event, found_in_storage

from trueheart_core import (
    ClaimDraft,
    ClaimQuery,
    EntityType,
    GovernanceAction,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.FORENSICS)

SUBJECT = "user:zqxjsubject"
PREDICATE = "zqxjpredicate"
VALUE = "zqxjvalue"
SECRETS = ["zqxjsubject", "zqxjpredicate", "zqxjvalue"]
FILLERS = 400


def _claim(claim_id: str, subject: str, predicate: str, value: str, source: str) -> ClaimDraft:
    return ClaimDraft(
        claim_id, SCOPE, subject, predicate, value, (source,), TrustLevel.OBSERVED, NOW
    )


def _assert_erased(service: TrueHeart, repository: Repository) -> None:
    assert found_in_storage(repository, SECRETS) == []
    # the filler claims are still there, in the same storage
    assert found_in_storage(repository, ["filler36", "predicate10"]) == ["filler36", "predicate10"]
    found = service.claims(ClaimQuery(SCOPE, NOW))
    assert "claim-secret" not in {view.claim.claim_id for view in found.claims}
    assert len(found.claims) == FILLERS - 1
    assert service.verify_integrity().ok


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_erase_the_claim_text(
    service: TrueHeart, repository: Repository, action: GovernanceAction
) -> None:
    _build(service, repository)
    service.govern(command(action, "claim-secret"))
    _assert_erased(service, repository)


def test_raw_event_delete_erases_the_claims_it_supports(
    service: TrueHeart, repository: Repository
) -> None:
    _build(service, repository)
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-secret", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == ("claim-secret", "evt-secret")
    _assert_erased(service, repository)


def _build(service: TrueHeart, repository: Repository) -> None:
    service.ingest_events([event("evt-fill"), event("evt-secret")])
    for index in range(FILLERS):
        if index == FILLERS // 2:
            service.materialize_claim(
                _claim("claim-secret", SUBJECT, PREDICATE, VALUE, "evt-secret")
            )
        service.materialize_claim(
            _claim(
                f"claim-{index:04d}",
                f"user:filler{index % 37}",
                f"predicate{index % 11}",
                f"value{index}",
                "evt-fill",
            )
        )
    # An unrelated erasing call first: whatever it compacts, the secret claim stays stored.
    service.govern(command(GovernanceAction.FORGET, f"claim-{FILLERS - 1:04d}"))
    assert found_in_storage(repository, SECRETS) == SECRETS
