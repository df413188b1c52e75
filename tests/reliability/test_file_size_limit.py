"""A process whose file size limit (``RLIMIT_FSIZE``) stops the scrub after an erasure
commits: the store cannot grow its database file, and SQLite reports a write error.
The call says that the erasure committed, and the change stands."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import pytest
from storage_faults import NOW, RETENTION, SCOPE, in_child

import trueheart_core as th

resource = pytest.importorskip("resource")

SCRUB_FAILED = (
    "repository corruption: erasure committed, but scrubbing its bytes from the files "
    "failed: make any call or close the repository to try again"
)


def _delete(event_id: str) -> th.GovernanceCommand:
    return th.GovernanceCommand(
        SCOPE, th.GovernanceAction.DELETE, th.EntityType.RAW_EVENT, event_id, NOW, "asked"
    )


def _delete_until_refused(path: Path) -> tuple[str, str, str, list[str]]:
    """In a child: delete events until one is refused once the database file may not
    grow; that event, the error's class and message, and the erasure log's warnings."""
    warnings: list[str] = []
    handler = logging.Handler()
    # A record whose arguments are not all text (an exception, with its frames) is
    # noted as such: a handler that keeps records must keep nothing else.
    handler.emit = lambda record: warnings.append(  # type: ignore[method-assign]
        record.getMessage() if all(type(a) is str for a in record.args or ()) else "not text"
    )
    logging.getLogger("trueheart_core.erasure").addHandler(handler)
    service = th.TrueHeart(th.SQLiteRepository(path), clock=lambda: NOW)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size, resource.RLIM_INFINITY))
    refused = ("", "", "")
    for n in range(1, 40):
        try:
            service.govern(_delete(f"evt-{n}"))
        except th.TrueHeartError as error:
            refused = (f"evt-{n}", type(error).__name__, str(error))
            break
    service.close()
    return (*refused, warnings)


def test_an_erasure_whose_scrub_cannot_write_says_it_committed(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    source = th.SourceRef("chat", "chat", NOW, th.TrustLevel.OBSERVED)
    with th.TrueHeart(th.SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events(
            [
                th.RawEventDraft(f"evt-{n}", SCOPE, source, f"BODY-{n:04d} " * 400, RETENTION)
                for n in range(40)
            ]
        )
        service.govern(_delete("evt-0"))  # an erasing call: the log is copied and emptied
    outcome, found = in_child(lambda: _delete_until_refused(path), seconds=120)
    assert outcome == "ok", found
    assert isinstance(found, tuple)
    event_id, name, message, warnings = found
    assert (name, message) == ("RepositoryCorruption", SCRUB_FAILED)
    assert [w for w in warnings if w.startswith("erasure scrub given up at close: ")]
    with th.TrueHeart(th.SQLiteRepository(path), clock=lambda: NOW) as service:
        with pytest.raises(th.EntityDeleted):
            service.get_receipt(SCOPE, event_id)  # the erasure committed, as it said
        assert [r.entity_id for r in service.audit(SCOPE, limit=1)] == [event_id]
        assert service.verify_integrity().ok
