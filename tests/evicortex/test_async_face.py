"""AsyncEviCortex: the evicortex face as coroutines, run in one worker thread per face.

The face has every public member of ``EviCortex`` (``open`` as an async classmethod,
``engine`` as an ``AsyncTrueHeart`` sharing the face's thread) with the same signature
and docstring; every call gives what the sync face gives; calls are served one at a time
without blocking the loop; cancellation and close behave as documented in
``docs/integrations.md``. Slowness is made deterministic by host callables that block
the worker thread until the test releases them; no test measures time.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from evicortex_builders import NS, OTHER, T0, T1, T2, record_id, scope

from evicortex import (
    AsyncEviCortex,
    CanonicalClaimExtractor,
    ClaimExtraction,
    ClaimInput,
    EviCortex,
    HashingEmbedder,
)
from evicortex.errors import StorageClosedError, ValidationError
from trueheart_core import AsyncTrueHeart, TrueHeart

WAIT = 30.0
"""How long a held worker waits for the test at most: a guard against a hang, never a
measurement (a test that reaches it fails)."""

SRC = Path(__file__).resolve().parents[2] / "src"
CLAIM = "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark."


class Hold:
    """Blocks the worker thread where a host callable runs, until the test releases it:
    ``arm()`` makes the next ``pause()`` set ``entered`` and wait for ``release()``;
    ``threads`` records the thread of every ``pause()``."""

    def __init__(self) -> None:
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
        self.threads.append(threading.current_thread())
        if self._armed:
            self._armed = False
            self.entered.set()
            if not self._released.wait(WAIT):
                raise AssertionError("the test never released the worker")

    async def reached(self) -> None:
        """Wait, without blocking the loop, until the worker is held."""
        assert await asyncio.to_thread(self.entered.wait, WAIT)


class HeldExtractor(Hold):
    """The canonical extractor, able to hold the call that runs it."""

    identity = "test.held-canonical/1"

    def extract(self, content: str) -> ClaimExtraction:
        self.pause()
        return CanonicalClaimExtractor().extract(content)


class HeldEmbedder(Hold):
    """A hashing embedder whose identity, read when a store opens, can hold the open."""

    def __init__(self) -> None:
        super().__init__()
        self._inner = HashingEmbedder(32)
        self.term_based = True

    @property
    def identity(self) -> str:
        self.pause()
        return "test.held-hashing/1"

    @property
    def dimensions(self) -> int:
        return self._inner.dimensions

    @property
    def normalized(self) -> bool:
        return self._inner.normalized

    def embed_documents(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Sequence[float]:
        return self._inner.embed_query(text)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def yield_to_loop(times: int = 3) -> None:
    """Let every ready task take its next step (a task's first step submits its call)."""
    for _ in range(times):
        await asyncio.sleep(0)


@contextmanager
def raises_same(sync_call: Callable[[], object]) -> Iterator[None]:
    """The block raises the same exception class with the same message as ``sync_call``."""
    with pytest.raises(Exception) as expected:
        sync_call()
    with pytest.raises(type(expected.value)) as got:
        yield
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)
    assert got.value.__cause__ is None
    assert got.value.__context__ is None or got.value.__suppress_context__


# --- the faces cannot drift -----------------------------------------------------------


def drift(sync_face: type, async_face: type, returns: dict[object, object]) -> list[str]:
    """Every public member of ``sync_face`` that ``async_face`` lacks as a coroutine (or
    property, or classmethod) with the same signature (return types mapped by
    ``returns``) and docstring, and every public async member the sync face lacks."""
    own_docstring = {"close", "open", "engine"}
    problems = []
    sync_names = {name for name in dir(sync_face) if not name.startswith("_")}
    async_names = {name for name in dir(async_face) if not name.startswith("_")}
    problems += [f"{name}: not in the sync face" for name in async_names - sync_names - {"aclose"}]
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
        if name not in own_docstring and async_function.__doc__ != sync_function.__doc__:
            problems.append(f"{name}: docstring differs")
    return problems


def test_every_public_member_has_an_async_counterpart_with_its_signature() -> None:
    returns = {EviCortex: AsyncEviCortex, TrueHeart: AsyncTrueHeart}
    assert drift(EviCortex, AsyncEviCortex, returns) == []


def test_the_drift_check_finds_drift() -> None:
    class Sync:
        @classmethod
        def open(cls, path: str) -> Sync:
            return cls()

        @property
        def engine(self) -> int:
            return 1

        def kept(self, *, namespace: str) -> str:
            """Doc."""
            return namespace

        def gone(self) -> None: ...

    class Async:
        async def open(self, path: str) -> Async:
            return self

        def engine(self) -> int:
            return 1

        async def kept(self, *, namespace: str) -> str:
            """Other doc."""
            return namespace

    assert drift(Sync, Async, {Sync: Async}) == [
        "engine: not a property",
        "gone: missing",
        "kept: docstring differs",
        "open: classmethod on one face only",
    ]


# --- same results as the sync face ------------------------------------------------------


def test_every_method_gives_what_the_sync_face_gives(store_path: Path) -> None:
    store = EviCortex.open(
        store_path,
        embedder=HashingEmbedder(32),
        extractor=CanonicalClaimExtractor(),
        auto_index=False,
    )
    face = AsyncEviCortex(store)
    used: set[str] = set()

    async def both(name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        used.add(name)
        got = await getattr(face, name)(*args, **kwargs)
        return got, getattr(store, name)(*args, **kwargs)

    async def one(name: str, *args: Any, **kwargs: Any) -> Any:
        used.add(name)
        return await getattr(face, name)(*args, **kwargs)

    claims = [ClaimInput("user:ada", "prefers_drink", "tea", valid_from=T0)]

    async def scenario() -> None:
        # Writes: a replay through the sync face returns what the async one stored.
        first, again = await both(
            "remember",
            namespace=NS,
            content="Ada drinks tea in the morning.",
            occurred_at=T1,
            idempotency_key="tea",
            claims=claims,
        )
        assert first == again and len(first.claims) == 1
        second, again = await both(
            "remember_extracted", namespace=NS, content=CLAIM, occurred_at=T1, idempotency_key="x"
        )
        assert second == again and len(second.claims) == 1
        third = store.remember(namespace=OTHER, content="Bob drinks coffee.", occurred_at=T1)
        # Reads.
        a, s = await both("get_extraction", NS, second.id)
        assert a == s and a.claim_ids == tuple(c.id for c in second.claims)
        a, s = await both("recall", namespace=NS, query="tea", as_of=T2)
        assert a == s and first.id in [item.memory_id for item in a.items]
        a, s = await both("expand", namespace=NS, memory_id=first.id)
        assert a == s == first
        a, s = await both("verify_integrity")
        assert a == s and a.ok
        a, s = await both("verify_integrity", NS)
        assert a == s
        a, s = await both("stats")
        assert a == s and a.namespaces == 2
        a, s = await both("stats", NS)
        assert a == s
        # Semantic projection: a record through each face, then nothing left to do.
        a, s = await both("semantic_status", NS)
        assert a == s and not a.complete
        indexed = await one("index_semantic", first)
        other = store.index_semantic(third)
        assert (indexed.embedded, other.embedded) == (2, 1)
        a, s = await both("index_semantic", first)
        assert a == s and a.embedded == 0
        synced = await one("sync_semantic", NS, 4)
        assert synced == store.sync_semantic(NS) == store.semantic_status(NS)
        assert synced.complete
        a, s = await both("rebuild_indexes")
        assert a is s is None
        # Purge: each face purges once; the second purge of a record finds nothing.
        assert await one("purge_memory", namespace=NS, memory_id=first.id) is True
        assert store.purge_memory(namespace=OTHER, memory_id=third.id) is True
        a, s = await both("purge_memory", namespace=NS, memory_id=first.id)
        assert a is s is False
        # The engine: an AsyncTrueHeart over the same store.
        engine = face.engine
        assert isinstance(engine, AsyncTrueHeart) and face.engine is engine
        got = await engine.get_memory(scope(NS), second.id)
        assert got == store.engine.get_memory(scope(NS), second.id)
        await face.aclose()

    run(scenario())
    public = {name for name in dir(EviCortex) if not name.startswith("_")}
    assert used == public - {"open", "close", "engine"}


def test_errors_are_the_sync_faces_classes_and_messages(store_path: Path) -> None:
    store = EviCortex.open(store_path)
    face = AsyncEviCortex(store)
    kept = store.remember(namespace=NS, content="kept", idempotency_key="k")
    bad: Any = 5

    async def scenario() -> None:
        with raises_same(lambda: store.expand(namespace=NS, memory_id="mem-missing")):
            await face.expand(namespace=NS, memory_id="mem-missing")
        with raises_same(lambda: store.expand(namespace=OTHER, memory_id=kept.id)):
            await face.expand(namespace=OTHER, memory_id=kept.id)
        with raises_same(lambda: store.remember(namespace="", content="x")):
            await face.remember(namespace="", content="x")
        with raises_same(lambda: store.remember_extracted(namespace=NS, content=CLAIM)):
            await face.remember_extracted(namespace=NS, content=CLAIM)
        with raises_same(
            lambda: store.remember(namespace=NS, content="other", idempotency_key="k")
        ):
            await face.remember(namespace=NS, content="other", idempotency_key="k")
        with raises_same(lambda: store.sync_semantic(NS, batch_size=bad)):
            await face.sync_semantic(NS, batch_size=bad)
        with raises_same(lambda: EviCortex.open(bad)):
            await AsyncEviCortex.open(bad)
        await face.aclose()
        with raises_same(store.stats):
            await face.stats()
        with raises_same(lambda: store.engine):
            assert face.engine

    run(scenario())
    with pytest.raises(ValidationError, match=r"^store: must be an EviCortex$"):
        AsyncEviCortex(bad)


# --- serialised, in order, never blocking the loop -------------------------------------


def test_many_concurrent_calls_are_served_one_at_a_time_in_order(store_path: Path) -> None:
    count = 50

    async def scenario() -> list[Any]:
        face = await AsyncEviCortex.open(store_path)
        calls = []
        for i in range(count):
            calls += [
                face.remember(namespace=NS, content=f"tea note {i}", occurred_at=T1),
                face.recall(namespace=NS, query="tea", as_of=T2, budget_tokens=100_000, limit=100),
                face.stats(NS),
            ]
        results = await asyncio.gather(*calls)
        await face.aclose()
        return results

    results = run(scenario())
    for i in range(count):
        record, capsule, stats = results[3 * i : 3 * i + 3]
        assert record.content == f"tea note {i}"
        assert capsule.matched == len(capsule.items) == stats.memories == i + 1
        assert record.id in {item.memory_id for item in capsule.items}


def test_the_loop_keeps_running_while_a_call_runs(store_path: Path) -> None:
    extractor = HeldExtractor()
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        for _ in range(20):
            ticks += 1
            await asyncio.sleep(0)

    async def scenario() -> None:
        face = await AsyncEviCortex.open(store_path, extractor=extractor)
        extractor.arm()
        write = asyncio.create_task(face.remember_extracted(namespace=NS, content=CLAIM))
        await extractor.reached()
        await heartbeat()
        assert ticks == 20 and not write.done()
        extractor.release()
        record = await write
        assert [claim.value for claim in record.claims] == ["dark"]
        assert extractor.threads[0] is not threading.main_thread()
        await face.aclose()

    run(scenario())


def test_the_engine_shares_the_faces_thread_and_queue(store_path: Path) -> None:
    extractor = HeldExtractor()
    progress: list[threading.Thread] = []

    async def scenario() -> None:
        face = await AsyncEviCortex.open(
            store_path, extractor=extractor, embedder=HashingEmbedder(32), auto_index=False
        )
        extractor.arm()
        write = asyncio.create_task(face.remember_extracted(namespace=NS, content=CLAIM))
        await extractor.reached()
        repair = asyncio.create_task(
            face.engine.sync_semantic(
                scope(NS), progress=lambda d, t: progress.append(threading.current_thread())
            )
        )
        await yield_to_loop()
        assert not repair.done()
        extractor.release()
        record = await write
        status = await repair  # queued behind the write, so it projects the write too
        assert not status.missing_memory_ids and not status.missing_claim_ids
        assert (await face.semantic_status(NS)).complete
        assert set(progress) == set(extractor.threads) == {extractor.threads[0]}
        assert record.claims
        await face.aclose()

    run(scenario())


# --- cancellation ------------------------------------------------------------------------


def test_a_call_cancelled_while_waiting_never_runs(store_path: Path) -> None:
    extractor = HeldExtractor()

    async def scenario() -> None:
        face = await AsyncEviCortex.open(store_path, extractor=extractor)
        extractor.arm()
        running = asyncio.create_task(face.remember_extracted(namespace=NS, content=CLAIM))
        await extractor.reached()
        waiting = asyncio.create_task(
            face.remember(namespace=NS, content="never", idempotency_key="never")
        )
        await yield_to_loop()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        extractor.release()
        await running
        assert (await face.stats(NS)).memories == 1
        with pytest.raises(KeyError):
            await face.expand(namespace=NS, memory_id=record_id(NS, "never"))
        await face.aclose()

    run(scenario())


def test_a_call_cancelled_while_running_finishes_in_the_worker(store_path: Path) -> None:
    extractor = HeldExtractor()

    async def scenario() -> None:
        face = await AsyncEviCortex.open(store_path, extractor=extractor)
        extractor.arm()
        running = asyncio.create_task(
            face.remember_extracted(namespace=NS, content=CLAIM, idempotency_key="a")
        )
        await extractor.reached()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert not extractor.released
        after = asyncio.create_task(face.expand(namespace=NS, memory_id=record_id(NS, "a")))
        extractor.release()
        record = await after  # queued behind the cancelled write, which completed whole
        assert [claim.value for claim in record.claims] == ["dark"]
        assert (await face.get_extraction(NS, record.id)).claim_ids == (record.claims[0].id,)
        assert (await face.verify_integrity()).ok
        await face.aclose()

    run(scenario())


def test_a_cancelled_open_closes_the_store_it_opened(store_path: Path) -> None:
    embedder = HeldEmbedder()
    EviCortex.open(store_path).close()  # the store exists; opening it holds in the embedder

    async def scenario() -> None:
        embedder.arm()
        opening = asyncio.create_task(AsyncEviCortex.open(store_path, embedder=embedder))
        await embedder.reached()
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening

    run(scenario())
    assert Path(f"{store_path}-wal").exists()  # the open in the worker holds the file
    embedder.release()
    (worker,) = set(embedder.threads)
    worker.join(WAIT)
    assert not worker.is_alive()
    assert not Path(f"{store_path}-wal").exists()  # its last connection closed


# --- closing --------------------------------------------------------------------------


def test_aclose_lets_the_running_call_finish_and_fails_the_rest(store_path: Path) -> None:
    extractor = HeldExtractor()

    async def scenario() -> None:
        face = await AsyncEviCortex.open(store_path, extractor=extractor)
        extractor.arm()
        running = asyncio.create_task(face.remember_extracted(namespace=NS, content=CLAIM))
        await extractor.reached()
        waiting = asyncio.create_task(face.remember(namespace=NS, content="never"))
        await yield_to_loop()
        closing = asyncio.create_task(face.aclose())
        await yield_to_loop()
        with pytest.raises(StorageClosedError, match=r"^storage closed$"):
            await face.stats()  # refused at once, while the call runs
        with pytest.raises(StorageClosedError):
            assert face.engine
        assert not extractor.released and not closing.done()
        extractor.release()
        assert (await running).claims
        with pytest.raises(StorageClosedError, match=r"^storage closed$"):
            await waiting
        await closing
        assert not extractor.threads[0].is_alive()
        await face.aclose()
        await face.close()

    run(scenario())
    with EviCortex.open(store_path) as again:
        assert again.stats(NS).memories == 1  # the waiting write never ran


def test_closing_the_engine_closes_the_service_not_the_face(tmp_path: Path) -> None:
    sync = EviCortex.open(tmp_path / "sync.db")
    sync.engine.close()
    face = AsyncEviCortex(EviCortex.open(tmp_path / "async.db"))

    async def scenario() -> None:
        engine = face.engine
        await engine.aclose()
        await engine.aclose()
        with raises_same(lambda: sync.stats(NS)):
            await face.stats(NS)
        with raises_same(sync.engine.stats):
            await engine.stats()
        async with face:
            pass
        with pytest.raises(StorageClosedError):
            await face.stats(NS)

    run(scenario())
    sync.close()


def test_async_with_closes_the_store(store_path: Path) -> None:
    async def scenario() -> None:
        async with await AsyncEviCortex.open(store_path) as face:
            await face.remember(namespace=NS, content="kept")
        with pytest.raises(StorageClosedError):
            await face.remember(namespace=NS, content="late")

    run(scenario())
    assert not Path(f"{store_path}-wal").exists()
    with EviCortex.open(store_path) as again:
        assert again.stats(NS).memories == 1


# --- event loops and imports ----------------------------------------------------------


def test_the_face_serves_one_event_loop_after_another(store_path: Path) -> None:
    face = run(AsyncEviCortex.open(store_path))
    record = run(face.remember(namespace=NS, content="first loop", occurred_at=T1))
    assert run(face.expand(namespace=NS, memory_id=record.id)) == record
    run(face.aclose())
    with pytest.raises(StorageClosedError):
        run(face.stats())


def test_importing_the_faces_loads_only_the_standard_library() -> None:
    code = (
        "import sys, trueheart_core, evicortex\n"
        "own = {'trueheart_core', 'evicortex', '__main__'}\n"
        "tops = {name.partition('.')[0] for name in sys.modules}\n"
        "print(sorted(t for t in tops if t not in sys.stdlib_module_names | own))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "[]\n"


def test_the_documented_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (SRC.parent / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = text.split("\n## Async API\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "integrations.md", "exec"), {"__name__": "async_example"})
    assert capsys.readouterr().out == "10 ['mem-1']\n['Ada prefers short answers.']\n"
