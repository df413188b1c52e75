"""The library's log: every record of a whole lifecycle, captured at ``DEBUG``, holds no
body, ID, scope part or metadata value, and the lifecycle events an operator needs are
there under their documented logger names."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest
from conformance_builders import (
    NOW,
    SCOPE,
    claim,
    command,
    event,
    listening,
    memory,
    populate_subject,
)

from trueheart_core import (
    ClaimQuery,
    GovernanceAction,
    RecallQuery,
    Scope,
    SearchQuery,
    TrueHeart,
    logs,
)
from trueheart_core.ports import Repository

SECRET_SCOPE = Scope("zqxlogtenant", "zqxlogowner", "zqxlogsubject")
BODY = "zqxlogbody the patient prefers jasmine tea at dawn"
MEMORY = "zqxlogmemory prefers jasmine tea"
# Every text of the lifecycle that must never reach a log record.
SECRETS = (
    "zqxlog",
    "jasmine",
    "evt-zq",
    "mem-zq",
    "claim-zq",
    "zqxsubj",
    "zqxother",
    "subject",
    "tenant",
    "owner",
    "user:",
    "synthetic",
)


class Captured(logging.Handler):
    """Keeps every record it sees."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def captured() -> Iterator[Captured]:
    handler = Captured()
    with listening("trueheart_core", handler):
        yield handler


def _lifecycle(service: TrueHeart) -> None:
    service.ingest_event(
        event("evt-zq1", scope=SECRET_SCOPE, content=BODY, metadata={"k": "zqxlogmeta"})
    )
    service.ingest_events(
        [event(f"evt-zq{i}", scope=SECRET_SCOPE, content=f"{BODY} {i}") for i in range(2, 5)]
    )
    service.materialize_once(memory("mem-zq1", ("evt-zq1",), scope=SECRET_SCOPE, content=MEMORY))
    service.materialize_once(memory("mem-zq2", ("evt-zq2",), scope=SECRET_SCOPE, content=MEMORY))
    service.materialize_claim(
        claim("claim-zq1", ("evt-zq3",), scope=SECRET_SCOPE, subject="user:zqxlog", value="zqxlogv")
    )
    service.recall(RecallQuery(SECRET_SCOPE, NOW, 10))
    service.search(SearchQuery(SECRET_SCOPE, "jasmine tea", NOW))
    service.claims(ClaimQuery(SECRET_SCOPE, NOW))
    service.list_memories(SECRET_SCOPE)
    service.govern(command(GovernanceAction.SEAL, "mem-zq2", scope=SECRET_SCOPE))
    service.govern(command(GovernanceAction.RESTORE, "mem-zq2", scope=SECRET_SCOPE))
    service.govern(command(GovernanceAction.FORGET, "mem-zq2", scope=SECRET_SCOPE))
    service.audit(SECRET_SCOPE)
    service.expire_raw_content(as_of=NOW + timedelta(days=30))
    service.rebuild_search_index()
    service.rebuild_indexes()
    service.verify_integrity(SECRET_SCOPE)
    service.verify_integrity()
    service.stats(SECRET_SCOPE)
    service.scopes()
    populate_subject(service)
    service.erase_subject(SCOPE, occurred_at=NOW)
    service.erase_subject(SECRET_SCOPE, occurred_at=NOW)


def _texts(record: logging.LogRecord) -> str:
    """Everything a handler could write of a record: its message, arguments and name."""
    return " ".join((record.getMessage(), repr(record.args), record.name, record.pathname))


def test_a_whole_lifecycle_logs_no_body_id_scope_or_metadata(
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
    captured: Captured,
) -> None:
    with TrueHeart(fresh_repository(), clock=clock) as service:
        _lifecycle(service)
    assert captured.records, "the lifecycle logged nothing"
    for record in captured.records:
        text = record.getMessage() + " " + repr(record.args)
        leaked = [secret for secret in SECRETS if secret in text]
        assert not leaked, (record.name, leaked)
        assert record.exc_info is None and record.stack_info is None
    names = {record.name for record in captured.records}
    assert {"trueheart_core.store", "trueheart_core.slow", "trueheart_core.index"} <= names
    assert names <= {
        "trueheart_core.store",
        "trueheart_core.erasure",
        "trueheart_core.index",
        "trueheart_core.busy",
        "trueheart_core.slow",
    }
    durations = [r for r in captured.records if r.name == "trueheart_core.slow"]
    # One record per unit of work: at least one per public call of the lifecycle.
    assert len(durations) >= 25
    assert any("write operation materialize took" in r.getMessage() for r in durations)
    rebuilt = [r.getMessage() for r in captured.records if r.name == "trueheart_core.index"]
    assert any(message.startswith("search index rebuilt: ") for message in rebuilt)
    assert any(message.startswith("derived indexes rebuilt: ") for message in rebuilt)


def test_a_slow_unit_of_work_is_a_warning(
    service: TrueHeart, captured: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.ingest_event(event("evt-zq1", scope=SECRET_SCOPE, content=BODY))
    assert not [r for r in captured.records if r.levelno >= logging.WARNING]
    monkeypatch.setattr(logs, "SLOW_SECONDS", 0.0)
    service.recall(RecallQuery(SECRET_SCOPE, NOW, 10))
    slow = [r for r in captured.records if r.levelno == logging.WARNING]
    assert [r.name for r in slow] == ["trueheart_core.slow"]
    assert slow[0].getMessage().startswith("read operation recall took ")


def test_the_library_installs_only_a_null_handler() -> None:
    handlers = logging.getLogger("trueheart_core").handlers
    assert [type(h) for h in handlers] == [logging.NullHandler]
    for name in ("store", "erasure", "index", "busy", "slow"):
        assert not logging.getLogger(f"trueheart_core.{name}").handlers
