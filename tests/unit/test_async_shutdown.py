"""An async face closed while the interpreter shuts down (from an ``atexit`` handler):
the close still closes the service, and raises nothing of the executor's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

_SCRIPT = """
import asyncio, atexit, sys
from datetime import UTC, datetime, timedelta
from trueheart_core import (
    AsyncTrueHeart, RawEventDraft, RetentionPolicy, Scope, SourceRef, SQLiteRepository,
    TrueHeart, TrustLevel,
)

NOW = datetime(2026, 8, 13, tzinfo=UTC)
scope = Scope("acme", "agent", "user-1")
retention = RetentionPolicy(timedelta(days=1), timedelta(days=1), timedelta(days=1))
face = AsyncTrueHeart(SQLiteRepository(sys.argv[1]), clock=lambda: NOW)
source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
asyncio.run(face.ingest_event(RawEventDraft("evt-1", scope, source, "body", retention)))


def close_at_exit():
    asyncio.run(face.aclose())
    print("closed")
    try:
        TrueHeart.stats(face._service)
    except Exception as error:
        print(type(error).__name__, error)


atexit.register(close_at_exit)
"""


def test_an_async_face_closed_at_exit_closes_its_service(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(SRC)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "memory.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "closed\nValidationError repository: is closed\n", done.stderr
    assert "Traceback" not in done.stderr
