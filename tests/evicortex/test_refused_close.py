"""A close the store underneath refuses (here: a call of another thread on the same store
outlasts the repository's busy timeout, five seconds by default) closes nothing: the
store stays usable, and the next ``close()`` or ``aclose()`` closes it."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path

import pytest
from evicortex_builders import NS

from evicortex import AsyncEviCortex, EviCortex
from evicortex.errors import StorageClosedError
from trueheart_core import RepositoryBusy, TrueHeart, ValidationError

WAIT = 60.0
BUSY = "a call of another thread is still running"
CLOSED = r"^repository: is closed$"


class _HeldWriter(io.StringIO):
    """A text stream whose first write waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.released = threading.Event()

    def write(self, text: str) -> int:
        if not self.entered.is_set():
            self.entered.set()
            assert self.released.wait(WAIT)
        return super().write(text)


def _export_held(engine: TrueHeart) -> tuple[_HeldWriter, threading.Thread]:
    """An export of the store running in another thread, held at its first line."""
    writer = _HeldWriter()
    thread = threading.Thread(target=engine.export_store, args=(writer,))
    thread.start()
    assert writer.entered.wait(WAIT)
    return writer, thread


def test_a_refused_close_leaves_the_store_open_and_is_made_again(store_path: Path) -> None:
    memory = EviCortex.open(store_path)
    memory.remember(namespace=NS, content="kept across a refused close")
    engine = memory.engine
    writer, exporter = _export_held(engine)
    try:
        with pytest.raises(RepositoryBusy, match=BUSY):
            memory.close()
    finally:
        writer.released.set()
        exporter.join(WAIT)
    assert memory.stats(NS).memories == 1  # still open
    memory.close()
    with pytest.raises(StorageClosedError):
        memory.stats(NS)
    with pytest.raises(ValidationError, match=CLOSED):
        engine.stats()  # the repository itself was closed
    memory.close()


def test_a_refused_aclose_leaves_the_face_open_and_is_made_again(store_path: Path) -> None:
    store = EviCortex.open(store_path)
    engine = store.engine
    face = AsyncEviCortex(store)

    async def scenario() -> None:
        await face.remember(namespace=NS, content="kept across a refused close")
        writer, exporter = _export_held(engine)
        try:
            with pytest.raises(RepositoryBusy, match=BUSY):
                await face.aclose()
        finally:
            writer.released.set()
            await asyncio.to_thread(exporter.join, WAIT)
        assert (await face.stats(NS)).memories == 1  # the face takes calls again
        assert (await face.engine.stats()).memories == 1
        await face.aclose()
        with pytest.raises(StorageClosedError):
            await face.stats(NS)

    asyncio.run(scenario())
    with pytest.raises(ValidationError, match=CLOSED):
        engine.stats()
    assert not [t for t in threading.enumerate() if t.name.startswith("evicortex-async")]
