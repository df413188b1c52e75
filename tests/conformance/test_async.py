"""AsyncTrueHeart: the TrueHeart face as coroutines, run in one worker thread per face.

The face has every public method of ``TrueHeart`` with the same signature and docstring;
each call gives what the sync face gives on the same store; calls run one at a time in
the order they started, without blocking the event loop; a call cancelled while it waits
never runs, one cancelled while it runs finishes in the worker; ``aclose`` lets the
running call finish, fails the waiting ones, closes the store once and ends the thread.

Slowness is made deterministic with host callables that block the worker thread on an
event until the test releases them (``Hold``); no test measures time.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
from conformance_builders import (
    NOW,
    OTHER_SCOPE,
    SCOPE,
    assert_not_chained,
    claim,
    command,
    event,
    memory,
    msg,
)

from trueheart_core import (
    AsyncTrueHeart,
    CanonicalClaimExtractor,
    ClaimQuery,
    EntityNotFound,
    GovernanceAction,
    HashingEmbedder,
    IdempotencyConflict,
    RecallQuery,
    SearchQuery,
    TrueHeart,
    TrueHeartError,
    ValidationError,
)
from trueheart_core.ports import Capability, Repository

WAIT = 30.0
"""How long a held worker waits for the test at most: a guard against a hang, never a
measurement (a test that reaches it fails)."""

CLOSED = "repository: is closed"
ADA = (
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark; "
    "valid_from=2026-04-18T09:30:00Z; confidence=1.000; authority=application."
)


# --- helpers --------------------------------------------------------------------------


class Hold:
    """Blocks the worker thread where a host callable runs, until the test releases it.

    ``arm()`` makes the next ``pause()`` set ``entered`` and wait for ``release()``;
    ``threads`` records the thread of every ``pause()`` and ``calls`` counts them."""

    def __init__(self) -> None:
        self.calls = 0
        self.threads: list[threading.Thread] = []
        self._armed = False
        self.entered = threading.Event()
        self._released = threading.Event()

    def arm(self) -> None:
        self._armed = True

    def release(self) -> None:
        self._released.set()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def pause(self) -> None:
        self.calls += 1
        self.threads.append(threading.current_thread())
        if self._armed:
            self._armed = False
            self.entered.set()
            if not self._released.wait(WAIT):
                raise AssertionError("the test never released the worker")

    async def reached(self) -> None:
        """Wait, without blocking the loop, until the worker is held."""
        assert await asyncio.to_thread(self.entered.wait, WAIT)


class HeldClock(Hold):
    """A service clock at ``NOW`` that can hold the call reading it."""

    def __call__(self) -> datetime:
        self.pause()
        return NOW


class HeldEstimator(Hold):
    """A token estimator (UTF-8 bytes, one token each) that can hold a search."""

    name = "held-bytes"

    def estimate(self, text: str) -> int:
        self.pause()
        return len(text.encode("utf-8"))


class CountingRepository:
    """A repository that forwards to another and counts ``close`` calls."""

    def __init__(self, inner: Repository) -> None:
        self._inner = inner
        self.unit_of_work = inner.unit_of_work
        self.capabilities = inner.capabilities
        self.closes = 0

    def close(self) -> None:
        self.closes += 1
        self._inner.close()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def yield_to_loop(times: int = 3) -> None:
    """Let every ready task take its next step (a task's first step submits its call)."""
    for _ in range(times):
        await asyncio.sleep(0)


@contextmanager
def raises_same(sync_call: Callable[[], object]) -> Iterator[None]:
    """The block raises the same error class with the same message as ``sync_call``."""
    with pytest.raises(TrueHeartError) as expected:
        sync_call()
    with pytest.raises(type(expected.value), match=msg(str(expected.value))) as got:
        yield
    assert type(got.value) is type(expected.value)
    assert_not_chained(got.value)


# --- the faces cannot drift -----------------------------------------------------------

ASYNC_ONLY = {"aclose", "wrap"}
OWN_DOCSTRING = {"close"}


def drift(
    sync_face: type, async_face: type, returns: dict[object, object], *, constructor: bool = True
) -> list[str]:
    """Every way ``async_face`` differs from ``sync_face``: a public sync member without
    a coroutine (or property) of the same name, signature (sync return types mapped by
    ``returns``) and docstring, the constructors' parameters, or a public async member
    the sync face lacks (other than ``ASYNC_ONLY``); with ``constructor``, also the
    constructors' signatures."""
    problems = []
    sync_names = {name for name in dir(sync_face) if not name.startswith("_")}
    async_names = {name for name in dir(async_face) if not name.startswith("_")}
    problems += [f"{name}: not in the sync face" for name in async_names - sync_names - ASYNC_ONLY]
    for name in sorted(sync_names):
        sync_member = inspect.getattr_static(sync_face, name)
        async_member = inspect.getattr_static(async_face, name, None)
        if async_member is None:
            problems.append(f"{name}: missing")
            continue
        if isinstance(sync_member, property):
            if not isinstance(async_member, property):
                problems.append(f"{name}: not a property")
                continue
            sync_function, async_function = sync_member.fget, async_member.fget
        else:
            if isinstance(sync_member, classmethod) is not isinstance(async_member, classmethod):
                problems.append(f"{name}: classmethod on one face only")
                continue
            sync_function, async_function = getattr(sync_face, name), getattr(async_face, name)
            if not inspect.iscoroutinefunction(async_function):
                problems.append(f"{name}: not a coroutine function")
        expected = inspect.signature(sync_function, eval_str=True)
        expected = expected.replace(
            return_annotation=returns.get(expected.return_annotation, expected.return_annotation)
        )
        if inspect.signature(async_function, eval_str=True) != expected:
            problems.append(f"{name}: signature differs")
        if name not in OWN_DOCSTRING and async_function.__doc__ != sync_function.__doc__:
            problems.append(f"{name}: docstring differs")
    sync_init = inspect.signature(sync_face.__init__, eval_str=True)  # type: ignore[misc]
    async_init = inspect.signature(async_face.__init__, eval_str=True)  # type: ignore[misc]
    if constructor and sync_init != async_init:
        problems.append("__init__: signature differs")
    return problems


def test_every_public_method_has_a_coroutine_with_its_signature_and_docstring() -> None:
    assert drift(TrueHeart, AsyncTrueHeart, {TrueHeart: AsyncTrueHeart}) == []


def test_the_drift_check_finds_drift() -> None:
    class Sync:
        def __init__(self, x: int) -> None: ...

        def kept(self, a: int, *, b: str = "") -> int:
            """Doc."""
            return a

        def renamed(self) -> None: ...

        def changed(self, a: int) -> int:
            return a

        def documented(self) -> None:
            """Sync doc."""

    class Async:
        def __init__(self, x: str) -> None: ...

        async def kept(self, a: int, *, b: str = "") -> int:
            """Doc."""
            return a

        async def changed(self, a: int, b: int = 0) -> int:
            return a

        def documented(self) -> None:
            """Sync doc."""

        async def extra(self) -> None: ...

    assert drift(Sync, Async, {}) == [
        "extra: not in the sync face",
        "changed: signature differs",
        "documented: not a coroutine function",
        "renamed: missing",
        "__init__: signature differs",
    ]


# --- same results as the sync face ------------------------------------------------------


class Both:
    """Calls a method on the async face and then on the sync face; remembers the names."""

    def __init__(self, face: AsyncTrueHeart, service: TrueHeart) -> None:
        self.face = face
        self.service = service
        self.used: set[str] = set()

    async def __call__(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        self.used.add(name)
        got = await getattr(self.face, name)(*args, **kwargs)
        return got, getattr(self.service, name)(*args, **kwargs)

    async def one(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.used.add(name)
        return await getattr(self.face, name)(*args, **kwargs)


@pytest.mark.requires(Capability.BACKUP)
def test_every_method_gives_what_the_sync_face_gives(
    repository: Repository,
    clock: Callable[[], datetime],
    backup_target: str,
    open_backup: Callable[..., Repository],
) -> None:
    service = TrueHeart(repository, clock=clock, embedder=HashingEmbedder(64), auto_index=False)
    face = AsyncTrueHeart.wrap(service)
    both = Both(face, service)
    extractor = CanonicalClaimExtractor()

    async def scenario() -> None:
        # Writes: a replay through the sync face returns what the async one stored.
        a, s = await both("ingest_event", event("evt-1", content="tea with lemon"))
        assert a == s
        a, s = await both("ingest_events", [event("evt-2"), event("evt-3", scope=OTHER_SCOPE)])
        assert a == s and len(a) == 2
        a, s = await both("materialize_once", memory("mem-1", content="tea with lemon"))
        assert a == s
        a, s = await both("materialize_claim", claim("claim-1", ("evt-2",)))
        assert a == s
        derived = memory("mem-4", ("evt-4",), content="green tea at night")
        drink = claim("claim-4", ("evt-4",), predicate="prefers_drink", value="tea")
        a, s = await both("ingest_derived", event("evt-4"), memories=[derived], claims=[drink])
        assert a == s and [m.memory_id for m in a.memories] == ["mem-4"]
        a, s = await both("ingest_extracted", event("evt-5", content=ADA), extractor)
        assert a == s and len(a.claims) == 1
        # Reads.
        a, s = await both("recall", RecallQuery(SCOPE, NOW, limit=20))
        assert a == s and {item.memory.memory_id for item in a} >= {"mem-1", "mem-4"}
        a, s = await both("claims", ClaimQuery(SCOPE, NOW))
        assert a == s and a.claims
        a, s = await both("claims", ClaimQuery(SCOPE, NOW, limit=1))
        assert a == s and len(a.claims) == 1 and a.next_cursor is not None
        a, s = await both("claims", ClaimQuery(SCOPE, NOW, limit=1000, cursor=a.next_cursor))
        assert a == s and a.claims and a.next_cursor is None
        a, s = await both("get_claims", SCOPE, ["claim-1", "claim-4"], as_of=NOW)
        assert a == s and len(a) == 2
        a, s = await both("get_extraction", SCOPE, "evt-5")
        assert a == s
        a, s = await both("search", SearchQuery(SCOPE, "tea", NOW, 200))
        assert a == s and {item.memory.memory_id for item in a.items} >= {"mem-1", "mem-4"}
        a, s = await both("get_memory", SCOPE, "mem-1")
        assert a == s
        a, s = await both("get_receipt", SCOPE, "evt-1")
        assert a == s
        a, s = await both("derived_memories", SCOPE, "evt-1")
        assert a == s and a
        a, s = await both("list_memories", SCOPE, limit=1)
        assert a == s and a.next_cursor is not None
        a, s = await both("list_memories", SCOPE, limit=100, cursor=a.next_cursor)
        assert a == s
        a, s = await both("list_memories", SCOPE, limit=2, descending=True)
        assert a == s and a.next_cursor is not None
        ascending = await both("list_memories", SCOPE, limit=100)
        assert a.items == ascending[0].items[::-1][:2]
        a, s = await both("audit", SCOPE, limit=100)
        assert a == s and a
        a, s = await both("verify_integrity")
        assert a == s and a.ok
        a, s = await both("verify_integrity", SCOPE)
        assert a == s
        a, s = await both("stats")
        assert a == s
        a, s = await both("stats", SCOPE)
        assert a == s
        a, s = await both("scopes", tenant_id=SCOPE.tenant_id)
        assert a == s and set(a) == {SCOPE, OTHER_SCOPE}
        # Semantic projection: one memory through each face, then nothing left to do.
        a, s = await both("semantic_status", SCOPE)
        assert a == s and "mem-1" in a.missing_memory_ids
        assert await both.one("index_semantic", SCOPE, ["mem-1"]) == 1
        assert service.index_semantic(SCOPE, ["mem-4"]) == 1
        a, s = await both("index_semantic", SCOPE, ["mem-1", "mem-4"])
        assert a == s == 0
        done: list[tuple[int, int]] = []
        synced = await both.one("sync_semantic", SCOPE, 8, lambda d, t: done.append((d, t)))
        assert synced == service.sync_semantic(SCOPE) == service.semantic_status(SCOPE)
        assert done and done[-1][0] == done[-1][1]
        assert not synced.missing_memory_ids and not synced.stale_memory_ids
        # Governance: a seal through each face removes the same classes of artifacts.
        sealed = await both.one("govern", command(GovernanceAction.SEAL, "mem-1"))
        other = service.govern(command(GovernanceAction.SEAL, "mem-4"))
        assert (sealed.affected_ids, other.affected_ids) == (("mem-1",), ("mem-4",))
        assert sealed.removed == other.removed
        restored = await both.one("govern", command(GovernanceAction.RESTORE, "mem-1"))
        again = service.govern(command(GovernanceAction.RESTORE, "mem-4"))
        assert restored.removed == again.removed
        # Maintenance: idempotent operations agree.
        a, s = await both("rebuild_search_index")
        assert a == s
        a, s = await both("rebuild_indexes")
        assert a == s
        a, s = await both("expire_raw_content", as_of=NOW)
        assert a == s == 0
        expired = await both.one("expire_raw_content", as_of=NOW + timedelta(days=8))
        assert expired > 0
        assert not service.get_receipt(SCOPE, "evt-1").content_available
        assert service.expire_raw_content(as_of=NOW + timedelta(days=8)) == 0
        # Erasure: what the async face erases is what the sync face planned.
        planned = service.erase_subject(OTHER_SCOPE, occurred_at=NOW, dry_run=True)
        a, s = await both("erase_subject", OTHER_SCOPE, occurred_at=NOW, dry_run=True)
        assert a == s == planned
        erased = await both.one("erase_subject", OTHER_SCOPE, occurred_at=NOW)
        assert (erased.erased, erased.event_ids) == (planned.erased, planned.event_ids)
        assert service.scopes() == (SCOPE,)
        a, s = await both("erase_subject", OTHER_SCOPE, occurred_at=NOW, rewrite=False)
        assert a == s and a.erased.total == 0
        # Compaction changes no answer.
        before = service.recall(RecallQuery(SCOPE, NOW))
        a, s = await both("compact")
        assert a is s is None
        assert service.recall(RecallQuery(SCOPE, NOW)) == before
        # Backup: the copy holds what the store holds.
        report = await both.one("backup", backup_target)
        assert report.pages > 0
        copy = TrueHeart(open_backup(backup_target), clock=clock)
        assert copy.recall(RecallQuery(SCOPE, NOW)) == service.recall(RecallQuery(SCOPE, NOW))
        # Export and import: both faces write the same file; this store is not empty.
        out, again = io.StringIO(), io.StringIO()
        exported = await both.one("export_store", out, scope=SCOPE)
        assert exported == service.export_store(again, scope=SCOPE) and exported.rows > 0
        assert out.getvalue() == again.getvalue()
        with raises_same(lambda: service.import_store(io.StringIO(out.getvalue()))):
            await both.one("import_store", io.StringIO(out.getvalue()))
        await face.aclose()

    run(scenario())
    public = {name for name in dir(TrueHeart) if not name.startswith("_")}
    assert both.used == public - {"close"}


def test_errors_are_the_sync_faces_classes_and_messages(
    repository: Repository, clock: Callable[[], datetime]
) -> None:
    service = TrueHeart(repository, clock=clock)
    face = AsyncTrueHeart.wrap(service)
    service.ingest_event(event("evt-1"))
    bad: Any = "not a draft"

    async def scenario() -> None:
        with raises_same(lambda: service.get_memory(SCOPE, "mem-x")):
            await face.get_memory(SCOPE, "mem-x")
        with raises_same(lambda: service.get_receipt(OTHER_SCOPE, "evt-1")):
            await face.get_receipt(OTHER_SCOPE, "evt-1")
        with raises_same(lambda: service.ingest_event(event("evt-1", content="different"))):
            await face.ingest_event(event("evt-1", content="different"))
        with raises_same(lambda: service.ingest_event(bad)):
            await face.ingest_event(bad)
        with raises_same(lambda: service.audit(SCOPE, limit=0)):
            await face.audit(SCOPE, limit=0)
        with raises_same(lambda: service.index_semantic(SCOPE, ["mem-1"])):
            await face.index_semantic(SCOPE, ["mem-1"])
        await face.aclose()

    run(scenario())
    with raises_same(lambda: TrueHeart(bad)):
        AsyncTrueHeart(bad)
    with pytest.raises(ValidationError, match=msg("service: must be a TrueHeart")):
        AsyncTrueHeart.wrap(bad)


# --- serialised, in order, never blocking the loop -------------------------------------


def test_many_concurrent_calls_are_served_one_at_a_time_in_order(
    repository: Repository,
) -> None:
    clock = HeldClock()
    face = AsyncTrueHeart(repository, clock=clock)
    count = 50

    async def scenario() -> list[Any]:
        calls = []
        for i in range(count):
            calls += [
                face.ingest_event(event(f"evt-{i}", content=f"note {i}")),
                face.materialize_once(memory(f"mem-{i:02}", (f"evt-{i}",), content=f"tea {i}")),
                face.search(SearchQuery(SCOPE, "tea", NOW, 100_000, limit=100)),
                face.recall(RecallQuery(SCOPE, NOW, limit=100)),
            ]
        results = await asyncio.gather(*calls)
        await face.aclose()
        return results

    results = run(scenario())
    for i in range(count):
        receipt, stored, capsule, recalled = results[4 * i : 4 * i + 4]
        assert receipt.event_id == f"evt-{i}" and stored.memory_id == f"mem-{i:02}"
        # Each read saw exactly the writes started before it, and all of them.
        assert capsule.matched == len(capsule.items) == i + 1
        assert sorted(item.memory.memory_id for item in recalled) == [
            f"mem-{j:02}" for j in range(i + 1)
        ]
    assert len(set(clock.threads)) == 1
    assert clock.threads[0] is not threading.main_thread()


def test_the_loop_keeps_running_while_a_call_runs(repository: Repository) -> None:
    estimator = HeldEstimator()
    face = AsyncTrueHeart(repository, clock=HeldClock(), token_estimator=estimator)
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        for _ in range(20):
            ticks += 1
            await asyncio.sleep(0)

    async def scenario() -> None:
        await face.ingest_event(event("evt-1"))
        await face.materialize_once(memory("mem-1", content="slow tea"))
        estimator.arm()
        search = asyncio.create_task(face.search(SearchQuery(SCOPE, "tea", NOW, 100)))
        await estimator.reached()  # the search is inside the estimator, in the worker
        await heartbeat()
        assert ticks == 20 and not search.done()
        estimator.release()
        capsule = await search
        assert [item.memory.memory_id for item in capsule.items] == ["mem-1"]
        assert capsule.estimator == "held-bytes"
        await face.aclose()

    run(scenario())


# --- cancellation ------------------------------------------------------------------------


def test_a_call_cancelled_while_waiting_never_runs(repository: Repository) -> None:
    clock = HeldClock()
    face = AsyncTrueHeart(repository, clock=clock)

    async def scenario() -> None:
        clock.arm()
        running = asyncio.create_task(face.ingest_event(event("evt-1")))
        await clock.reached()
        waiting = asyncio.create_task(face.ingest_event(event("evt-2")))
        await yield_to_loop()  # queued behind the held call
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        clock.release()
        assert (await running).event_id == "evt-1"
        assert clock.calls == 1  # the cancelled ingest never read the clock
        with pytest.raises(EntityNotFound):
            await face.get_receipt(SCOPE, "evt-2")
        assert [(r.action, r.entity_id) for r in await face.audit(SCOPE)] == [("ingest", "evt-1")]
        await face.aclose()

    run(scenario())


def test_a_call_cancelled_while_running_finishes_in_the_worker(repository: Repository) -> None:
    clock = HeldClock()
    face = AsyncTrueHeart(repository, clock=clock)

    async def scenario() -> None:
        clock.arm()
        running = asyncio.create_task(face.ingest_event(event("evt-1", content="kept whole")))
        await clock.reached()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert not clock.released  # the caller got CancelledError while the call ran
        after = asyncio.create_task(face.get_receipt(SCOPE, "evt-1"))
        clock.release()
        receipt = await after  # queued behind the cancelled call, which completed
        assert receipt.content_available
        assert [(r.action, r.entity_id) for r in await face.audit(SCOPE)] == [("ingest", "evt-1")]
        assert (await face.verify_integrity()).ok
        await face.aclose()

    run(scenario())


def test_a_cancelled_running_write_that_fails_rolls_back_whole(repository: Repository) -> None:
    clock = HeldClock()
    face = AsyncTrueHeart(repository, clock=clock)

    async def scenario() -> None:
        await face.ingest_event(event("evt-1"))
        clock.arm()
        batch = [event("evt-2"), event("evt-1", content="conflicting")]
        running = asyncio.create_task(face.ingest_events(batch))
        await clock.reached()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        clock.release()
        with pytest.raises(EntityNotFound):
            await face.get_receipt(SCOPE, "evt-2")
        with pytest.raises(IdempotencyConflict):  # the batch fails the same way uncancelled
            await face.ingest_events(batch)
        assert len(await face.audit(SCOPE)) == 1
        await face.aclose()

    run(scenario())


# --- closing --------------------------------------------------------------------------


def test_aclose_lets_the_running_call_finish_and_fails_the_rest(repository: Repository) -> None:
    clock = HeldClock()
    counted = CountingRepository(repository)
    face = AsyncTrueHeart(counted, clock=clock)

    async def scenario() -> None:
        await face.ingest_event(event("evt-0"))
        (worker,) = clock.threads
        clock.arm()
        running = asyncio.create_task(face.ingest_event(event("evt-1")))
        await clock.reached()
        waiting = asyncio.create_task(face.ingest_event(event("evt-2")))
        await yield_to_loop()
        closing = asyncio.create_task(face.aclose())
        await yield_to_loop()
        with pytest.raises(ValidationError, match=msg(CLOSED)):
            await face.get_memory(SCOPE, "mem-1")  # refused at once, while the call runs
        assert not clock.released and not closing.done()
        clock.release()
        assert (await running).event_id == "evt-1"
        with pytest.raises(ValidationError, match=msg(CLOSED)) as refused:
            await waiting
        assert_not_chained(refused.value)
        await closing
        assert clock.calls == 2 and counted.closes == 1  # evt-2 never read the clock
        assert not worker.is_alive()
        await face.aclose()
        await face.close()
        assert counted.closes == 1
        with pytest.raises(ValidationError, match=msg(CLOSED)):
            await face.recall(RecallQuery(SCOPE, NOW))

    run(scenario())


def test_concurrent_and_cancelled_closes_close_once(repository: Repository) -> None:
    clock = HeldClock()
    counted = CountingRepository(repository)
    face = AsyncTrueHeart(counted, clock=clock)

    async def scenario() -> None:
        clock.arm()
        running = asyncio.create_task(face.ingest_event(event("evt-1")))
        await clock.reached()
        cancelled = asyncio.create_task(face.aclose())
        others = [asyncio.create_task(face.aclose()), asyncio.create_task(face.close())]
        await yield_to_loop()
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        clock.release()
        await asyncio.gather(*others)
        assert (await running).event_id == "evt-1"
        assert counted.closes == 1
        assert not clock.threads[0].is_alive()

    run(scenario())


def test_async_with_closes_and_a_face_that_made_no_call_closes(repository: Repository) -> None:
    counted = CountingRepository(repository)

    async def scenario() -> None:
        async with AsyncTrueHeart(counted) as face:
            pass
        assert counted.closes == 1
        with pytest.raises(ValidationError, match=msg(CLOSED)):
            await face.stats()

    run(scenario())


# --- event loops ---------------------------------------------------------------------


def test_the_face_serves_one_event_loop_after_another(repository: Repository) -> None:
    clock = HeldClock()
    face = AsyncTrueHeart(repository, clock=clock)

    async def leave_a_call_running() -> None:
        clock.arm()
        left = [asyncio.create_task(face.ingest_event(event("evt-1")))]
        await clock.reached()  # the loop ends now, cancelling the task; the call runs on
        assert not left[0].done()

    run(leave_a_call_running())
    clock.release()
    receipt = run(face.get_receipt(SCOPE, "evt-1"))  # after the call of the closed loop
    assert receipt.event_id == "evt-1"
    assert run(face.ingest_event(event("evt-2"))).event_id == "evt-2"
    run(face.aclose())
    assert not clock.threads[0].is_alive()
    with pytest.raises(ValidationError, match=msg(CLOSED)):
        run(face.stats())


def test_two_loops_in_two_threads_share_the_faces_queue(repository: Repository) -> None:
    clock = HeldClock()
    face = AsyncTrueHeart(repository, clock=clock)
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def loop_thread(prefix: str) -> None:
        async def writes() -> None:
            start.wait(WAIT)
            await asyncio.gather(*(face.ingest_event(event(f"{prefix}-{n}")) for n in range(20)))

        try:
            run(writes())
        except BaseException as error:  # reported by the test thread below
            failures.append(error)

    threads = [threading.Thread(target=loop_thread, args=(p,)) for p in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert failures == [] and not any(thread.is_alive() for thread in threads)
    audited = run(face.audit(SCOPE, limit=100))
    assert sorted(r.entity_id for r in audited) == sorted(
        f"{p}-{n}" for p in ("a", "b") for n in range(20)
    )
    assert len(set(clock.threads)) == 1
    run(face.aclose())
