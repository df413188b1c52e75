"""A process whose file size limit (``RLIMIT_FSIZE``) stops the scrub after an erasure
commits: the store cannot grow its database file, and SQLite reports a write error.
The call says that the erasure committed, and the change stands."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    EntityDeleted,
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

resource = pytest.importorskip("resource")

SRC = Path(__file__).resolve().parents[2] / "src"
NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent", "user-1")
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))


def _event(event_id: str, content: str) -> RawEventDraft:
    return RawEventDraft(
        event_id, SCOPE, SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED), content, RETENTION
    )


_CHILD = """
import logging, resource, signal, sys
from datetime import UTC, datetime
from trueheart_core import (
    EntityType, GovernanceAction, GovernanceCommand, Scope, SQLiteRepository, TrueHeart,
    TrueHeartError,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent", "user-1")
warnings = []
handler = logging.Handler()
handler.emit = lambda record: warnings.append(record.getMessage())
logging.getLogger("trueheart_core.erasure").addHandler(handler)
service = TrueHeart(SQLiteRepository(sys.argv[1]), clock=lambda: NOW)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
for n in range(1, 40):
    command = GovernanceCommand(
        SCOPE, GovernanceAction.DELETE, EntityType.RAW_EVENT, f"evt-{n}", NOW, "asked"
    )
    try:
        service.govern(command)
    except TrueHeartError as error:
        print(f"evt-{n}", type(error).__name__, error, sep="|")
        break
service.close()
print("closed", *warnings, sep="|")
"""


def test_an_erasure_whose_scrub_cannot_write_says_it_committed(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        service.ingest_events([_event(f"evt-{n}", f"BODY-{n:04d} " * 400) for n in range(40)])
        service.govern(
            GovernanceCommand(
                SCOPE, GovernanceAction.DELETE, EntityType.RAW_EVENT, "evt-0", NOW, "asked"
            )
        )  # an erasing call: the log is copied into the file and emptied
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(SRC)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(path.stat().st_size)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    failed, closed = done.stdout.splitlines()
    event_id, name, message = failed.split("|")
    assert (name, message) == (
        "RepositoryCorruption",
        "repository corruption: erasure committed, but scrubbing its bytes from the files "
        "failed: make any call or close the repository to try again",
    )
    assert closed.startswith("closed|erasure scrub given up at close: ")
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        with pytest.raises(EntityDeleted):
            service.get_receipt(SCOPE, event_id)  # the erasure committed, as it said
        assert [r.entity_id for r in service.audit(SCOPE, limit=1)] == [event_id]
        assert service.verify_integrity().ok
