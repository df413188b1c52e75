"""Erasure reaches claims: a forgotten or deleted claim's subject, predicate and value
leave the database file and its write-ahead log, and so do the words of the claims that
a raw-event delete cascades to.

Subjects and predicates are indexed only through 64-bit hashes, so stale copies of index
cells cannot hold them; the claim row and the memory row are the only copies of the text,
and erasure removes both. Many claims are stored around the secret one, so the claim
b-trees have several pages and have been reorganised.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_builders import NOW, SCOPE, command, event, store_bytes

from trueheart_core import (
    ClaimDraft,
    ClaimQuery,
    EntityType,
    GovernanceAction,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SUBJECT = "user:zqxjsubject"
PREDICATE = "zqxjpredicate"
VALUE = "zqxjvalue"
SECRETS = (b"zqxjsubject", b"zqxjpredicate", b"zqxjvalue")
FILLERS = 400


@pytest.fixture
def service(db_path: Path) -> Iterator[TrueHeart]:
    with TrueHeart(SQLiteRepository(db_path), clock=lambda: NOW) as opened:
        yield opened


def _claim(claim_id: str, subject: str, predicate: str, value: str, source: str) -> ClaimDraft:
    return ClaimDraft(
        claim_id, SCOPE, subject, predicate, value, (source,), TrustLevel.OBSERVED, NOW
    )


def _assert_erased(service: TrueHeart, path: Path) -> None:
    data = store_bytes(path)
    assert [secret for secret in SECRETS if secret in data] == []
    found = service.claims(ClaimQuery(SCOPE, NOW))
    assert "claim-secret" not in {view.claim.claim_id for view in found.claims}
    assert len(found.claims) == FILLERS - 1
    assert service.verify_integrity().ok


@pytest.mark.parametrize("action", [GovernanceAction.FORGET, GovernanceAction.DELETE])
def test_forget_and_delete_erase_the_claim_text(
    service: TrueHeart, db_path: Path, action: GovernanceAction
) -> None:
    _build_at(service, db_path)
    service.govern(command(action, "claim-secret"))
    _assert_erased(service, db_path)


def test_raw_event_delete_erases_the_claims_it_supports(service: TrueHeart, db_path: Path) -> None:
    _build_at(service, db_path)
    result = service.govern(
        command(GovernanceAction.DELETE, "evt-secret", entity_type=EntityType.RAW_EVENT)
    )
    assert result.affected_ids == ("claim-secret", "evt-secret")
    _assert_erased(service, db_path)


def _build_at(service: TrueHeart, path: Path) -> None:
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
    # An unrelated erasing call checkpoints the WAL, so every page is in the main file.
    service.govern(command(GovernanceAction.FORGET, f"claim-{FILLERS - 1:04d}"))
    assert all(secret in store_bytes(path) for secret in SECRETS)
