"""verify_integrity of clean stores, and its report. (Reads of rows tampered with behind
the library's back fail closed: see the SQLite adapter tests.)"""

from __future__ import annotations

from typing import Any

import pytest
from conformance_builders import OTHER_SCOPE, SCOPE, command, event, memory, msg

from trueheart_core import (
    EntityType,
    GovernanceAction,
    IntegrityProblem,
    IntegrityReport,
    Scope,
    TrueHeart,
    ValidationError,
)
from trueheart_core.ports import Repository
from trueheart_core.service.records import scope_key

SECRET_EVENT = "integrity-secret-event-body-5c2a"
SECRET_MEMORY = "integrity-secret-memory-body-9e41"


def _populate(service: TrueHeart) -> None:
    service.ingest_event(event("evt-1", content=SECRET_EVENT, metadata={"k": [1]}))
    service.ingest_event(event("evt-2"))
    service.materialize_once(memory("mem-1", ("evt-1",), content=SECRET_MEMORY))
    service.materialize_once(memory("mem-2", ("evt-2",), kind="other"))
    service.ingest_event(event("evt-gone"))
    service.govern(command(GovernanceAction.DELETE, "evt-gone", entity_type=EntityType.RAW_EVENT))


# --------------------------------------------------------------------------- clean stores


def test_empty_store_is_ok(service: TrueHeart) -> None:
    report = service.verify_integrity()
    assert isinstance(report, IntegrityReport)
    assert report.ok is True
    assert report.problems == ()


def test_clean_store_is_ok_and_counts_rows(service: TrueHeart) -> None:
    empty = service.verify_integrity().rows_checked
    _populate(service)
    report = service.verify_integrity()
    assert report.ok is True
    assert report.problems == ()
    assert isinstance(report.rows_checked, int)
    assert report.rows_checked > empty
    scoped = service.verify_integrity(SCOPE)
    assert scoped.ok is True
    assert service.verify_integrity(OTHER_SCOPE).ok is True


@pytest.mark.parametrize("scope", ["tenant", ("tenant", "owner", "subject"), 1])
def test_verify_integrity_type_checks_scope(service: TrueHeart, scope: Any) -> None:
    with pytest.raises(ValidationError, match=msg("scope: must be a Scope")):
        service.verify_integrity(scope)


def test_report_ok_property() -> None:
    assert IntegrityReport((), 0).ok is True
    problem = IntegrityProblem("memory", "mem-1", SCOPE, "digest_mismatch")
    report = IntegrityReport((problem,), 7)
    assert report.ok is False
    assert report.rows_checked == 7
    assert report.problems[0].scope == SCOPE
    assert IntegrityProblem("raw_event", "evt-1", None, "x").scope is None


def test_unknown_scope_verifies_ok(service: TrueHeart) -> None:
    _populate(service)
    report = service.verify_integrity(Scope("nobody", "nobody", "nobody"))
    assert report.ok is True
    assert report.problems == ()


def test_an_audit_id_that_two_rows_hold_is_reported_once(
    service: TrueHeart, repository: Repository
) -> None:
    """A copied audit row (written behind the library's back, through the port) is
    reported under its ID and scope, by the whole-store check and its scope's."""
    _populate(service)
    service.ingest_event(event("evt-other", scope=OTHER_SCOPE))
    (copied,) = [a for a in service.audit(SCOPE) if a.entity_id == "evt-2"]
    with repository.unit_of_work("ingest", write=True) as uow:
        (row,) = [r for r in uow.audit.iter(scope_key(SCOPE)) if r.audit_id == copied.audit_id]
        uow.audit.insert(row)
        uow.commit()
    expected = [("audit", copied.audit_id, SCOPE, "duplicate_audit_id")]
    for report in (service.verify_integrity(), service.verify_integrity(SCOPE)):
        assert [(p.entity_type, p.entity_id, p.scope, p.code) for p in report.problems] == (
            expected
        )
    assert service.verify_integrity(OTHER_SCOPE).ok
