"""Concurrency: several processes and threads writing one store.

* Four processes write the same file with a short busy timeout and retry on
  ``RepositoryBusy``; nothing is lost and ``RepositoryBusy`` is the only error they see.
* Eight threads share one repository; every call succeeds and the results agree.
* A write lock held by another connection makes writes fail fast with exactly
  ``RepositoryBusy`` and write nothing, while reads keep working.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    MemoryStatus,
    RawEventDraft,
    RecallQuery,
    RepositoryBusy,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
    ValidationError,
)

SRC = Path(__file__).resolve().parents[2] / "src"
NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
PROCESSES = 4
ITERATIONS = 25

WRITER_SCRIPT = """
import json
import sys
import time
import traceback
from datetime import UTC, datetime, timedelta

from trueheart_core import (
    EntityType, GovernanceAction, GovernanceCommand, MemoryDraft, RawEventDraft, RecallQuery,
    RepositoryBusy, RetentionPolicy, Scope, SourceRef, SQLiteRepository, TrueHeart, TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
busy = 0


def retry(fn):
    global busy
    while True:
        try:
            return fn()
        except RepositoryBusy:
            busy += 1
            time.sleep(0.001)


def main():
    path, worker, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
    scope = Scope("tenant", "owner", "worker-" + worker)
    shared = Scope("tenant", "owner", "shared")
    service = retry(lambda: TrueHeart(SQLiteRepository(path, busy_timeout=0.01), clock=lambda: NOW))
    # A second connection whose clock identifies this worker, for racing on shared ids.
    stamp = NOW + timedelta(microseconds=1 + int(worker))
    racer = retry(lambda: TrueHeart(SQLiteRepository(path, busy_timeout=0.01), clock=lambda: stamp))
    race = Scope("tenant", "owner", "race")
    for i in range(iterations):
        eid = "e" + str(i)
        draft = RawEventDraft(
            eid, scope, SourceRef("src", "mp", NOW, TrustLevel.CONFIRMED), "body " + eid,
            RetentionPolicy(timedelta(days=1), timedelta(days=5), timedelta(days=9)),
        )
        retry(lambda: service.ingest_event(draft))
        shared_draft = RawEventDraft(
            "w" + worker + "-" + eid, shared, SourceRef("src", "mp", NOW, TrustLevel.CONFIRMED),
            "shared " + eid,
            RetentionPolicy(timedelta(days=1), timedelta(days=5), timedelta(days=9)),
        )
        retry(lambda: service.ingest_events([shared_draft]))
        memory = MemoryDraft(
            "m" + str(i), scope, "memory " + eid, (eid,), "fact", TrustLevel.OBSERVED, NOW,
        )
        retry(lambda: service.materialize_once(memory))
        if i % 5 == 0:
            command = GovernanceCommand(
                scope, GovernanceAction.SEAL, EntityType.MEMORY, "m" + str(i), NOW, "mp"
            )
            retry(lambda: service.govern(command))
        if i % 8 == 7:
            retry(lambda: service.expire_raw_content(as_of=NOW - timedelta(days=1)))
        retry(lambda: service.recall(RecallQuery(scope, NOW)))
        race_draft = RawEventDraft(
            "race-" + str(i), race, SourceRef("src", "mp", NOW, TrustLevel.CONFIRMED),
            "race body " + str(i),
            RetentionPolicy(timedelta(days=1), timedelta(days=5), timedelta(days=9)),
        )
        receipt = retry(lambda: racer.ingest_event(race_draft))
        race_memory = MemoryDraft(
            "race-m" + str(i), race, "race memory", ("race-" + str(i),), "fact",
            TrustLevel.OBSERVED, NOW,
        )
        record = retry(lambda: racer.materialize_once(race_memory))
        print(json.dumps({
            "event": eid,
            "memory": "m" + str(i),
            "race_ingested_at": receipt.ingested_at.isoformat(),
            "race_memory": record.memory_id,
        }), flush=True)
    racer.close()
    service.close()
    print(json.dumps({"busy": busy}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except BaseException as exc:
        sys.stderr.write("UNEXPECTED " + type(exc).__name__ + "\\n")
        traceback.print_exc()
        sys.exit(3)
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + existing if existing else "")
    return env


def event_draft(scope: Scope, event_id: str, body: str) -> RawEventDraft:
    return RawEventDraft(
        event_id,
        scope,
        SourceRef("src", "mp", NOW, TrustLevel.CONFIRMED),
        body,
        RetentionPolicy(timedelta(days=1), timedelta(days=5), timedelta(days=9)),
    )


@pytest.mark.slow
def test_processes_share_one_file(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    TrueHeart(SQLiteRepository(db), clock=lambda: NOW).close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER_SCRIPT, encoding="utf-8")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(db), str(worker), str(ITERATIONS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(),
            cwd=tmp_path,
            text=True,
        )
        for worker in range(PROCESSES)
    ]
    outputs: list[tuple[int, str, str]] = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            outputs.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    reports: list[list[dict[str, str]]] = []
    for worker, (code, out, err) in enumerate(outputs):
        assert code == 0, f"worker {worker} failed with {code}: {err}"
        assert err == "", f"worker {worker} wrote to stderr: {err}"
        lines = [json.loads(line) for line in out.splitlines()]
        assert len(lines) == ITERATIONS + 1
        assert "busy" in lines[-1]
        reports.append(lines[:-1])

    # Racing ingests of one event id: every worker got the winner's stored receipt.
    stamps = {NOW + timedelta(microseconds=1 + worker) for worker in range(PROCESSES)}
    for i in range(ITERATIONS):
        seen = {datetime.fromisoformat(lines[i]["race_ingested_at"]) for lines in reports}
        assert len(seen) == 1, f"race-{i} was stored more than once: {seen}"
        assert seen <= stamps

    sealed = {f"m{i}" for i in range(ITERATIONS) if i % 5 == 0}
    with TrueHeart(SQLiteRepository(db), clock=lambda: NOW + timedelta(days=365)) as service:
        assert service.verify_integrity().ok
        shared = Scope("tenant", "owner", "shared")
        for worker in range(PROCESSES):
            scope = Scope("tenant", "owner", f"worker-{worker}")
            for i in range(ITERATIONS):
                for target_scope, event_id, body in (
                    (scope, f"e{i}", f"body e{i}"),
                    (shared, f"w{worker}-e{i}", f"shared e{i}"),
                ):
                    receipt = service.ingest_event(event_draft(target_scope, event_id, body))
                    # Stamped by the child's clock: it was stored by the child, once.
                    assert receipt.ingested_at == NOW
            recalled = service.recall(RecallQuery(scope, NOW, limit=100))
            assert sorted(item.memory.memory_id for item in recalled) == sorted(
                f"m{i}" for i in range(ITERATIONS) if f"m{i}" not in sealed
            )
            assert all(item.memory.status is MemoryStatus.ACTIVE for item in recalled)
            audit = service.audit(scope, limit=100)
            # One ingest and one materialize per iteration, plus the seals.
            assert len(audit) == 2 * ITERATIONS + len(sealed)
            actions = sorted(record.action for record in audit)
            assert actions.count("ingest") == ITERATIONS
            assert actions.count("materialize") == ITERATIONS
            assert actions.count("seal") == len(sealed)
        race = Scope("tenant", "owner", "race")
        race_audit = service.audit(race, limit=100)
        assert sorted((r.action, r.entity_id) for r in race_audit) == sorted(
            [("ingest", f"race-{i}") for i in range(ITERATIONS)]
            + [("materialize", f"race-m{i}") for i in range(ITERATIONS)]
        )
        shared_audit = service.audit(shared, limit=100)
        assert len(shared_audit) == PROCESSES * ITERATIONS
        assert {record.entity_id for record in shared_audit} == {
            f"w{worker}-e{i}" for worker in range(PROCESSES) for i in range(ITERATIONS)
        }


def test_threads_share_one_repository(tmp_path: Path) -> None:
    threads_count = 8
    per_thread = 10
    shared = Scope("tenant", "owner", "threads")
    errors: list[BaseException] = []
    recalls: dict[int, list[int]] = {}
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: NOW) as service:
        barrier = threading.Barrier(threads_count)

        def work(worker: int) -> None:
            try:
                barrier.wait(timeout=30)
                seen: list[int] = []
                for i in range(per_thread):
                    event_id = f"t{worker}-e{i}"
                    receipt = service.ingest_event(event_draft(shared, event_id, f"b{i}"))
                    assert receipt.event_id == event_id
                    assert receipt.content_available is True
                    record = service.materialize_once(
                        MemoryDraft(
                            f"t{worker}-m{i}",
                            shared,
                            f"memory {worker} {i}",
                            (event_id,),
                            f"kind-{worker}",
                            TrustLevel.OBSERVED,
                            NOW,
                        )
                    )
                    assert record.source_event_ids == (event_id,)
                    mine = service.recall(
                        RecallQuery(shared, NOW, limit=100, kinds=(f"kind-{worker}",))
                    )
                    # A thread always sees all of its own writes, in id order.
                    assert [item.memory.memory_id for item in mine] == sorted(
                        f"t{worker}-m{k}" for k in range(i + 1)
                    )
                    seen.append(len(service.recall(RecallQuery(shared, NOW, limit=100))))
                recalls[worker] = seen
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(threads_count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        for seen in recalls.values():
            # The shared view only grows.
            assert seen == sorted(seen)
            assert seen[-1] >= per_thread
        everything = service.recall(RecallQuery(shared, NOW, limit=100))
        assert len(everything) == threads_count * per_thread
        assert service.audit(shared, limit=100) == service.audit(shared, limit=100)
        assert len(service.audit(shared, limit=100)) == 100
        assert service.verify_integrity().ok


def test_held_write_lock_gives_repository_busy(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    scope = Scope("tenant", "owner", "locked")
    with TrueHeart(SQLiteRepository(db, busy_timeout=0.1), clock=lambda: NOW) as service:
        service.ingest_event(event_draft(scope, "before", "before body"))
        service.materialize_once(
            MemoryDraft("m-before", scope, "memory", ("before",), "fact", TrustLevel.OBSERVED, NOW)
        )
        audit_before = service.audit(scope)
        blocker = sqlite3.connect(db, timeout=0, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            writes: list[tuple[str, Callable[[], object]]] = [
                ("ingest", lambda: service.ingest_event(event_draft(scope, "during", "x"))),
                (
                    "batch",
                    lambda: service.ingest_events([event_draft(scope, "during-batch", "y")]),
                ),
                (
                    "materialize",
                    lambda: service.materialize_once(
                        MemoryDraft(
                            "m-during", scope, "m", ("before",), "fact", TrustLevel.OBSERVED, NOW
                        )
                    ),
                ),
                (
                    "govern",
                    lambda: service.govern(
                        GovernanceCommand(
                            scope,
                            GovernanceAction.SEAL,
                            EntityType.MEMORY,
                            "m-before",
                            NOW,
                            "lock",
                        )
                    ),
                ),
                ("expire", lambda: service.expire_raw_content(as_of=NOW + timedelta(days=9))),
            ]
            for name, write in writes:
                with pytest.raises(RepositoryBusy) as caught:
                    write()
                assert type(caught.value) is RepositoryBusy, name
                assert caught.value.__cause__ is None
                assert str(caught.value).startswith("repository busy: "), name
            # Readers are not blocked by a writer.
            assert service.audit(scope) == audit_before
            assert [item.memory.memory_id for item in service.recall(RecallQuery(scope, NOW))] == [
                "m-before"
            ]
        finally:
            blocker.rollback()
            blocker.close()

        # Nothing was written while the lock was held.
        assert service.audit(scope) == audit_before
        assert service.recall(RecallQuery(scope, NOW))[0].memory.status is MemoryStatus.ACTIVE
        later = NOW + timedelta(hours=1)
        fresh = TrueHeart(SQLiteRepository(db), clock=lambda: later)
        with fresh:
            receipt = fresh.ingest_event(event_draft(scope, "during", "x"))
            assert receipt.ingested_at == later
            assert fresh.ingest_event(event_draft(scope, "before", "before body")).content_available
            assert fresh.verify_integrity().ok


CHECKPOINT_WRITER = """
import sys
import time
from datetime import UTC, datetime, timedelta

from trueheart_core import (
    EntityType, GovernanceAction, GovernanceCommand, MemoryDraft, RawEventDraft,
    RepositoryBusy, RetentionPolicy, Scope, SourceRef, SQLiteRepository, TrueHeart, TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "growing")


def retry(fn):
    while True:
        try:
            return fn()
        except RepositoryBusy:
            time.sleep(0.001)


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    service = TrueHeart(SQLiteRepository(path), clock=lambda: NOW)
    print("READY", flush=True)
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        # The file grows, and every forget checkpoints the WAL into the main file.
        drafts = [
            RawEventDraft(
                "e" + str(i) + "-" + str(k), SCOPE,
                SourceRef("src", "grow", NOW, TrustLevel.CONFIRMED),
                "x" * 3000 + str(k),
                RetentionPolicy(timedelta(days=1), timedelta(days=5), timedelta(days=9)),
            )
            for k in range(20)
        ]
        retry(lambda: service.ingest_events(drafts))
        memory = MemoryDraft(
            "m" + str(i), SCOPE, "memory", ("e" + str(i) + "-0",), "fact",
            TrustLevel.OBSERVED, NOW,
        )
        retry(lambda: service.materialize_once(memory))
        command = GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m" + str(i), NOW, "grow"
        )
        retry(lambda: service.govern(command))
        i += 1
    service.close()
    print("DONE", i, flush=True)


if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
def test_opening_while_another_process_checkpoints(tmp_path: Path) -> None:
    """Opening a store that another process is growing and checkpointing never fails closed.

    Read-write and read-only opens alternate. Only ``RepositoryBusy`` is acceptable: the
    file is healthy throughout.
    """
    db = tmp_path / "store.db"
    TrueHeart(SQLiteRepository(db), clock=lambda: NOW).close()
    script = tmp_path / "grower.py"
    script.write_text(CHECKPOINT_WRITER, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(db), "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd=tmp_path,
        text=True,
    )
    failures: dict[str, int] = {}
    opens = 0
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "READY\n"
        scope = Scope("tenant", "owner", "growing")
        attempts = 0
        while proc.poll() is None:
            attempts += 1
            try:
                repository = SQLiteRepository(db, busy_timeout=1.0, read_only=attempts % 2 == 0)
                with TrueHeart(repository) as reader:
                    reader.recall(RecallQuery(scope, NOW))
                    reader.audit(scope, limit=5)
                opens += 1
            except RepositoryBusy:
                continue
            except TrueHeartError as exc:
                failures[str(exc)] = failures.get(str(exc), 0) + 1
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.startswith("DONE ")
    assert failures == {}, f"{sum(failures.values())} of {opens} opens failed: {failures}"
    with TrueHeart(SQLiteRepository(db), clock=lambda: NOW) as service:
        assert service.verify_integrity().ok


CREATOR_SCRIPT = """
import os
import sys
import time
from datetime import UTC, datetime, timedelta

from trueheart_core import (
    RawEventDraft, RetentionPolicy, Scope, SourceRef, SQLiteRepository, TrueHeart, TrustLevel,
)

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
path, worker, go = sys.argv[1], sys.argv[2], sys.argv[3]
deadline = time.monotonic() + 30
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.0005)
with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
    service.ingest_event(
        RawEventDraft(
            "created-by-" + worker, Scope("tenant", "owner", "creators"),
            SourceRef("src", "create", NOW, TrustLevel.CONFIRMED), "body " + worker,
            RetentionPolicy(timedelta(days=1), timedelta(days=5), timedelta(days=9)),
        )
    )
print("ok", flush=True)
"""


@pytest.mark.slow
def test_processes_create_the_same_new_file(tmp_path: Path) -> None:
    """Several processes opening a store that does not exist yet all end up sharing one."""
    db = tmp_path / "fresh.db"
    go = tmp_path / "go"
    script = tmp_path / "creator.py"
    script.write_text(CREATOR_SCRIPT, encoding="utf-8")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(db), str(worker), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(),
            cwd=tmp_path,
            text=True,
        )
        for worker in range(PROCESSES)
    ]
    try:
        # Let every interpreter start, then release them together.
        time.sleep(0.5)
        go.touch()
        results = [proc.communicate(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out == "ok\n"
    with TrueHeart(SQLiteRepository(db), clock=lambda: NOW) as service:
        audit = service.audit(Scope("tenant", "owner", "creators"))
        assert sorted(record.entity_id for record in audit) == sorted(
            f"created-by-{worker}" for worker in range(PROCESSES)
        )
        assert service.verify_integrity().ok
    # No initialisation leftovers beside the store.
    leftovers = {p.name for p in tmp_path.iterdir()} - {
        "fresh.db",
        "fresh.db-wal",
        "fresh.db-shm",
        "go",
        "creator.py",
    }
    assert leftovers == set()


def _close_mid_flight(db: Path, delay: float) -> None:
    scope = Scope("tenant", "owner", "closing")
    service = TrueHeart(SQLiteRepository(db), clock=lambda: NOW)
    start = threading.Barrier(5)
    committed: list[str] = []
    unexpected: list[BaseException] = []
    closed_errors: list[int] = []

    def work(worker: int) -> None:
        start.wait(timeout=30)
        for i in range(100):
            event_id = f"w{worker}-{i}"
            try:
                if i % 2:
                    service.ingest_event(event_draft(scope, event_id, "body"))
                    committed.append(event_id)
                else:
                    service.recall(RecallQuery(scope, NOW))
            except ValidationError as exc:
                if str(exc) != "repository: is closed":
                    unexpected.append(exc)
                closed_errors.append(1)
            except BaseException as exc:
                unexpected.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    start.wait(timeout=30)
    time.sleep(delay)
    service.close()
    service.close()  # idempotent
    for thread in threads:
        thread.join(timeout=60)
    assert unexpected == []
    assert closed_errors or len(committed) == 4 * 50
    later = NOW + timedelta(days=1)
    with TrueHeart(SQLiteRepository(db), clock=lambda: later) as reopened:
        assert reopened.verify_integrity().ok
        for event_id in committed:
            receipt = reopened.ingest_event(event_draft(scope, event_id, "body"))
            assert receipt.ingested_at == NOW, f"lost {event_id}"


def test_close_while_threads_work(tmp_path: Path) -> None:
    """Closing a shared repository mid-flight: other threads see only 'is closed'."""
    for round_no in range(8):
        _close_mid_flight(tmp_path / f"store-{round_no}.db", 0.002 * round_no)


def test_opening_waits_for_a_held_store_as_long_as_the_busy_timeout(tmp_path: Path) -> None:
    # The check of the catalog at open waits like every call: past SQLite's default of 5
    # seconds when the busy timeout is longer, and no longer than a shorter one.
    db = tmp_path / "store.db"
    SQLiteRepository(db).close()
    holder_code = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA locking_mode=EXCLUSIVE')\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('held', flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n"
        "c.execute('COMMIT')\n"
        "c.close()\n"
    )
    for seconds, busy_timeout in (("7", 60.0), ("60", 0.2)):
        holder = subprocess.Popen(
            [sys.executable, "-c", holder_code, str(db), seconds], stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            if busy_timeout > 7:
                with TrueHeart(SQLiteRepository(db, busy_timeout=busy_timeout)) as service:
                    assert service.verify_integrity().ok
            else:
                with pytest.raises(RepositoryBusy):
                    SQLiteRepository(db, busy_timeout=busy_timeout)
        finally:
            holder.kill()
            holder.wait()
