"""Crash safety: a writer killed with SIGKILL at random points loses nothing it reported.

A child process writes continuously (ingest, batch ingest, materialize, seal, forget, raw
delete, expiry) and logs ``B <op>`` before and ``C <op>`` after every call that returned.
The parent kills it at a random moment, reopens the store and checks that it opens, that
``verify_integrity()`` is clean, and that every completed operation is durable. Only the
single operation that was in flight when the child died may have gone either way.
"""

from __future__ import annotations

import os
import random
import runpy
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    InvalidTransition,
    Scope,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
)

SRC = Path(__file__).resolve().parents[2] / "src"
PARENT_NOW = datetime(2030, 6, 1, tzinfo=UTC)
ROUNDS = 6

CHILD_SCRIPT = """
import sys
from datetime import UTC, datetime, timedelta

from trueheart_core import (
    EntityType, GovernanceAction, GovernanceCommand, MemoryDraft, RawEventDraft,
    RetentionPolicy, Scope, SourceRef, SQLiteRepository, TrueHeart, TrustLevel,
)

SCOPE = Scope("tenant", "owner", "crash")
CHILD_NOW = datetime(2020, 1, 1, tzinfo=UTC)


def event_draft(event_id):
    return RawEventDraft(
        event_id,
        SCOPE,
        SourceRef("src", "crash", CHILD_NOW, TrustLevel.CONFIRMED, {"event": event_id}),
        "body of " + event_id + " " + "x" * 300,
        RetentionPolicy(timedelta(hours=1), timedelta(days=10), timedelta(days=20)),
        {"list": [1, 2, event_id]},
    )


def memory_draft(memory_id, sources):
    return MemoryDraft(
        memory_id, SCOPE, "memory " + memory_id, tuple(sources), "fact",
        TrustLevel.OBSERVED, CHILD_NOW, {"m": memory_id},
    )


def command(action, entity_type, entity_id):
    return GovernanceCommand(SCOPE, action, entity_type, entity_id, CHILD_NOW, "crash test")


def log(*parts):
    sys.stdout.write(" ".join(parts) + "\\n")
    sys.stdout.flush()


def main():
    path, prefix = sys.argv[1], sys.argv[2]
    service = TrueHeart(SQLiteRepository(path), clock=lambda: CHILD_NOW)
    log("READY")
    deleted_events = set()
    removed = set()
    i = 0
    while True:
        eid = prefix + "-e" + str(i)
        log("B", "E", eid)
        service.ingest_event(event_draft(eid))
        log("C", "E", eid)
        if i % 4 == 3:
            pair = [prefix + "-b" + str(i) + "a", prefix + "-b" + str(i) + "b"]
            log("B", "E", *pair)
            service.ingest_events([event_draft(pair[0]), event_draft(pair[1])])
            log("C", "E", *pair)
        mid = prefix + "-m" + str(i)
        sources = [eid]
        prev = prefix + "-e" + str(i - 1)
        if i > 0 and prev not in deleted_events:
            sources.append(prev)
        log("B", "M", mid, *sources)
        service.materialize_once(memory_draft(mid, sources))
        log("C", "M", mid, *sources)
        if i % 3 == 1:
            log("B", "S", mid)
            service.govern(command(GovernanceAction.SEAL, EntityType.MEMORY, mid))
            log("C", "S", mid)
        if i % 6 == 4:
            log("B", "R", mid)
            service.govern(command(GovernanceAction.RESTORE, EntityType.MEMORY, mid))
            log("C", "R", mid)
        victim = prefix + "-m" + str(i - 1)
        if i % 5 == 2 and victim not in removed:
            log("B", "F", victim)
            service.govern(command(GovernanceAction.FORGET, EntityType.MEMORY, victim))
            removed.add(victim)
            log("C", "F", victim)
        target = prefix + "-e" + str(i - 2)
        if i % 7 == 6 and target not in deleted_events:
            log("B", "D", target)
            result = service.govern(command(GovernanceAction.DELETE, EntityType.RAW_EVENT, target))
            deleted_events.add(target)
            removed.update(result.affected_ids)
            log("C", "D", *result.affected_ids)
        if i % 10 == 9:
            log("B", "X")
            count = service.expire_raw_content(as_of=CHILD_NOW + timedelta(hours=2))
            log("C", "X", str(count))
        i += 1


if __name__ == "__main__":
    main()
"""


@dataclass
class Journal:
    """What the child reported: completed operations and the one in flight."""

    completed: list[list[str]] = field(default_factory=list)
    in_flight: list[str] | None = None


def parse(text: str) -> Journal:
    journal = Journal()
    lines = text.split("\n")
    # A line without its newline was cut by the kill: ignore it.
    for line in lines[:-1]:
        parts = line.split(" ")
        if parts[0] == "B":
            journal.in_flight = parts[1:]
        elif parts[0] == "C":
            assert journal.in_flight is not None
            assert journal.in_flight[0] == parts[1]
            journal.completed.append(parts[1:])
            journal.in_flight = None
    return journal


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + existing if existing else "")
    return env


def memory_probe(service: TrueHeart, scope: Scope, memory_id: str, action: GovernanceAction) -> str:
    """Return 'ok', 'invalid' or 'deleted'; any other outcome is a failure."""
    command = GovernanceCommand(
        scope, action, EntityType.MEMORY, memory_id, PARENT_NOW, "crash probe"
    )
    try:
        service.govern(command)
    except InvalidTransition:
        return "invalid"
    except EntityDeleted:
        return "deleted"
    return "ok"


def verify_round(service: TrueHeart, script: dict[str, object], journal: Journal) -> int:
    """Check every completed operation; return how many were checked."""
    scope = script["SCOPE"]
    assert isinstance(scope, Scope)
    event_draft = script["event_draft"]
    assert callable(event_draft)

    events: list[str] = []
    expired_after: set[str] = set()  # events ingested before a completed expiry
    deleted_events: set[str] = set()
    removed: set[str] = set()
    memories: dict[str, list[str]] = {}
    sealed: set[str] = set()
    for op in journal.completed:
        kind, args = op[0], op[1:]
        if kind == "E":
            events.extend(args)
        elif kind == "M":
            memories[args[0]] = args[1:]
        elif kind == "S":
            sealed.add(args[0])
        elif kind == "R":
            sealed.discard(args[0])
        elif kind == "F":
            removed.add(args[0])
        elif kind == "D":
            for entity_id in args:
                if "-e" in entity_id:
                    deleted_events.add(entity_id)
                else:
                    removed.add(entity_id)
        elif kind == "X":
            expired_after.update(events)

    # The operation in flight may or may not have committed.
    uncertain_events: set[str] = set()
    uncertain_memories: set[str] = set()
    expiry_in_flight = False
    flight = journal.in_flight
    if flight is not None:
        kind, args = flight[0], flight[1:]
        if kind == "E":
            uncertain_events.update(args)
        elif kind in {"M", "S", "R", "F"}:
            uncertain_memories.add(args[0])
        elif kind == "D":
            uncertain_events.add(args[0])
            uncertain_memories.update(m for m, srcs in memories.items() if args[0] in srcs)
        elif kind == "X":
            expiry_in_flight = True

    checked = 0
    if flight is not None and flight[0] == "E" and len(flight) > 2:
        # A batch in flight committed all of its events or none of them.
        present = set()
        for event_id in flight[1:]:
            receipt = service.ingest_event(event_draft(event_id))
            present.add(receipt.ingested_at == script["CHILD_NOW"])
        assert len(present) == 1, f"batch {flight[1:]} was half committed"
        checked += 1
    for event_id in events:
        if event_id in uncertain_events and event_id not in deleted_events:
            continue
        draft = event_draft(event_id)
        if event_id in deleted_events:
            with pytest.raises(EntityDeleted):
                service.ingest_event(draft)
            checked += 1
            continue
        receipt = service.ingest_event(draft)
        # A receipt stamped with the parent's clock would mean the event had been lost.
        assert receipt.ingested_at != PARENT_NOW, f"lost committed event {event_id}"
        assert receipt.ingested_at == script["CHILD_NOW"]
        if event_id in expired_after:
            assert receipt.content_available is False, event_id
        elif not expiry_in_flight:
            assert receipt.content_available is True, event_id
        checked += 1

    for memory_id in memories:
        if memory_id in uncertain_memories:
            outcome = memory_probe(service, scope, memory_id, GovernanceAction.SEAL)
            assert outcome in {"ok", "invalid", "deleted"}
            continue
        if memory_id in removed:
            assert memory_probe(service, scope, memory_id, GovernanceAction.SEAL) == "deleted"
        elif memory_id in sealed:
            assert memory_probe(service, scope, memory_id, GovernanceAction.RESTORE) == "ok"
        else:
            assert memory_probe(service, scope, memory_id, GovernanceAction.SEAL) == "ok"
        checked += 1
    return checked


@pytest.mark.slow
def test_sigkill_during_writes_loses_nothing_committed(tmp_path: Path) -> None:
    script_path = tmp_path / "crash_child.py"
    script_path.write_text(CHILD_SCRIPT, encoding="utf-8")
    script = runpy.run_path(str(script_path), run_name="crash_child_library")
    db = tmp_path / "store.db"
    # The store exists before the first child starts.
    TrueHeart(SQLiteRepository(db), clock=lambda: PARENT_NOW).close()

    seed = random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    total_checked = 0
    total_completed = 0
    for round_no in range(ROUNDS):
        out_path = tmp_path / f"child-{round_no}.out"
        err_path = tmp_path / f"child-{round_no}.err"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, str(script_path), str(db), f"r{round_no}"],
                stdout=out,
                stderr=err,
                env=child_env(),
                cwd=tmp_path,
            )
            try:
                deadline = time.monotonic() + 30
                while b"READY\n" not in out_path.read_bytes():
                    assert proc.poll() is None, err_path.read_text(errors="replace")
                    assert time.monotonic() < deadline, "child never became ready"
                    time.sleep(0.01)
                time.sleep(rng.uniform(0.05, 0.5))
                assert proc.poll() is None, (
                    f"child died on its own (seed {seed}): " + err_path.read_text(errors="replace")
                )
                proc.send_signal(signal.SIGKILL)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        assert err_path.read_text(errors="replace") == ""

        journal = parse(out_path.read_text(encoding="utf-8"))
        total_completed += len(journal.completed)
        try:
            service = TrueHeart(SQLiteRepository(db), clock=lambda: PARENT_NOW)
        except TrueHeartError as exc:  # pragma: no cover - reported with context
            pytest.fail(f"store failed to open after kill in round {round_no} (seed {seed}): {exc}")
        with service:
            report = service.verify_integrity()
            assert report.ok, (seed, round_no, report.problems)
            total_checked += verify_round(service, script, journal)
            assert service.audit(script["SCOPE"], limit=1)  # type: ignore[arg-type]
            assert service.verify_integrity().ok

    assert total_completed > 0, "the child never completed an operation"
    assert total_checked > 0


def _last_committed_page(wal: bytes, page_no: int) -> bytes | None:
    """The newest committed copy of one page in a WAL file (frames are checksummed)."""
    page_size = int.from_bytes(wal[8:12], "big")
    salts = wal[16:24]
    offset = 32
    latest: bytes | None = None
    pending: bytes | None = None
    while offset + 24 + page_size <= len(wal):
        frame = wal[offset : offset + 24]
        if frame[8:16] != salts:
            break
        number = int.from_bytes(frame[0:4], "big")
        if number == page_no:
            pending = wal[offset + 24 : offset + 24 + page_size]
        if int.from_bytes(frame[4:8], "big") and pending is not None:
            latest = pending
        offset += 24 + page_size
    return latest


def test_interrupted_checkpoint_still_opens(tmp_path: Path) -> None:
    """A crash in the middle of a checkpoint leaves a valid store, not a truncated one.

    A checkpoint copies WAL pages into the database file in page order, so page 1 (with
    the new, larger page count) lands before the pages that extend the file. Killing the
    process there leaves a main file shorter than its header says while the WAL still
    holds every committed page: SQLite recovers from that, and so must the library.
    """
    child_now = datetime(2020, 1, 1, tzinfo=UTC)
    script_path = tmp_path / "crash_child.py"
    script_path.write_text(CHILD_SCRIPT, encoding="utf-8")
    script = runpy.run_path(str(script_path), run_name="crash_child_library")
    event_draft = script["event_draft"]
    db = tmp_path / "live" / "store.db"
    db.parent.mkdir()
    image = tmp_path / "image"
    image.mkdir()
    service = TrueHeart(SQLiteRepository(db), clock=lambda: child_now)
    try:
        service.ingest_events([event_draft(f"base-{i}") for i in range(5)])
        size_before = db.stat().st_size
        drafts = [event_draft(f"grow-{i}") for i in range(150)]
        for start in range(0, len(drafts), 10):
            service.ingest_events(drafts[start : start + 10])
        wal_path = Path(str(db) + "-wal")
        if not wal_path.exists() or wal_path.stat().st_size == 0:
            pytest.skip("the store checkpointed every write: no WAL image to interrupt")
        # A crash image: the files as they are on disk between two transactions.
        shutil.copyfile(db, image / "store.db")
        shutil.copyfile(wal_path, image / "store.db-wal")
    finally:
        service.close()

    main = bytearray((image / "store.db").read_bytes())
    assert len(main) == size_before, "no checkpoint should have run yet"
    page_one = _last_committed_page((image / "store.db-wal").read_bytes(), 1)
    assert page_one is not None
    main[: len(page_one)] = page_one
    (image / "store.db").write_bytes(bytes(main))
    page_size = int.from_bytes(page_one[16:18], "big")
    page_count = int.from_bytes(page_one[28:32], "big")
    assert page_count * page_size > len(main), "the image must look shorter than its header"
    assert page_one[24:28] == page_one[92:96], "the header page count is in force"

    with TrueHeart(SQLiteRepository(image / "store.db"), clock=lambda: PARENT_NOW) as recovered:
        assert recovered.verify_integrity().ok
        for name in [f"base-{i}" for i in range(5)] + [f"grow-{i}" for i in range(150)]:
            receipt = recovered.ingest_event(event_draft(name))
            assert receipt.ingested_at == child_now, f"lost committed event {name}"
        assert len(recovered.audit(script["SCOPE"], limit=100)) == 100


CREATE_SCRIPT = """
import sys
from trueheart_core import SQLiteRepository

sys.stdout.write("START\\n")
sys.stdout.flush()
SQLiteRepository(sys.argv[1]).close()
"""


@pytest.mark.slow
def test_sigkill_during_store_creation(tmp_path: Path) -> None:
    """A process killed while creating a new store never leaves an unopenable file."""
    script = tmp_path / "create_child.py"
    script.write_text(CREATE_SCRIPT, encoding="utf-8")
    rng = random.Random(random.SystemRandom().randrange(1 << 30))
    for round_no in range(12):
        directory = tmp_path / f"round-{round_no}"
        directory.mkdir()
        db = directory / "store.db"
        proc = subprocess.Popen(
            [sys.executable, str(script), str(db)],
            stdout=subprocess.PIPE,
            env=child_env(),
            cwd=directory,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"START\n"
            time.sleep(rng.uniform(0, 0.006))
            proc.send_signal(signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            assert proc.stdout is not None
            proc.stdout.close()
        scope = Scope("tenant", "owner", "created")
        with TrueHeart(SQLiteRepository(db), clock=lambda: PARENT_NOW) as service:
            assert service.verify_integrity().ok
            assert service.audit(scope) == ()
