"""Helpers of the storage fault tests: a populated store, byte edits of its pages, calls
run in a child process with a deadline, and running a child as an unprivileged user.

A damaged store may make a call loop or block; each such call runs in a forked child
that is killed at its deadline, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trueheart_core import (
    ClaimDraft,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent-7", "user-42")
OTHER = Scope("acme", "agent-7", "user-43")
RETENTION = RetentionPolicy(timedelta(hours=1), timedelta(days=2), timedelta(days=4))
NOBODY = 65534


def body(kind: str, index: int, scope: Scope = SCOPE) -> str:
    """A distinctive body, so that its bytes can be searched for in the files."""
    return f"SECRET-{kind}-{scope.subject_id}-{index:03d} hiking near the lake"


def populate(path: Path, count: int = 6) -> None:
    """Events, memories (one sealed) and a claim in two scopes."""
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        for scope in (SCOPE, OTHER):
            for index in range(count):
                source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
                service.ingest_event(
                    RawEventDraft(
                        f"e{index}", scope, source, body("event", index, scope), RETENTION
                    )
                )
                service.materialize_once(
                    MemoryDraft(
                        f"m{index}",
                        scope,
                        body("memory", index, scope),
                        (f"e{index}",),
                        "note",
                        TrustLevel.OBSERVED,
                        NOW,
                    )
                )
            service.materialize_claim(
                ClaimDraft("c1", scope, "user", "likes", "tea", ("e0",), TrustLevel.OBSERVED, NOW)
            )
            service.govern(
                GovernanceCommand(
                    scope, GovernanceAction.SEAL, EntityType.MEMORY, "m1", NOW, "review"
                )
            )


def root_page(path: Path, name: str) -> tuple[int, int]:
    """``(root page number, page size)`` of a b-tree of a checkpointed store."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)
        ).fetchone()
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    finally:
        conn.close()
    return int(root), int(size)


def edit_page(path: Path, page: int, size: int, needle: bytes, replacement: bytes) -> None:
    """Replace the first ``needle`` on one page of the main file (a checkpointed store)."""
    data = bytearray(path.read_bytes())
    start = (page - 1) * size
    offset = bytes(data[start : start + size]).find(needle)
    assert offset >= 0, "needle not on the page"
    data[start + offset : start + offset + len(needle)] = replacement
    path.write_bytes(bytes(data))


def in_child(
    call: Callable[[], object], *, seconds: float = 20.0, uid: int | None = None
) -> tuple[str, object]:
    """Run ``call`` in a forked child (as ``uid`` when given) and return
    ``("ok", result)``, ``("error", (type name, message, is a TrueHeartError))``,
    ``("raw", traceback text)`` or ``("hang", None)`` when it outlived ``seconds``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read)
        try:
            if uid is not None:
                os.setgid(uid)
                os.setuid(uid)
            try:
                outcome: tuple[str, object] = ("ok", call())
            except Exception as error:
                from trueheart_core import TrueHeartError

                if isinstance(error, TrueHeartError):
                    outcome = ("error", (type(error).__name__, str(error), True))
                else:
                    outcome = ("raw", traceback.format_exc())
            try:
                data = pickle.dumps(outcome)
            except Exception:
                data = pickle.dumps(("ok", repr(outcome[1])))
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write)
    deadline = datetime.now(UTC) + timedelta(seconds=seconds)
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        os.set_blocking(pipe.fileno(), False)
        while True:
            finished, _ = os.waitpid(pid, os.WNOHANG)
            try:
                chunk = pipe.read()
            except BlockingIOError:
                chunk = None
            if chunk:
                chunks.append(chunk)
            if finished:
                rest = pipe.read()
                if rest:
                    chunks.append(rest)
                break
            if datetime.now(UTC) > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                return "hang", None
            time.sleep(0.005)
    data = b"".join(chunks)
    if not data:
        return "raw", "the child reported nothing"
    result: tuple[str, object] = pickle.loads(data)
    return result
