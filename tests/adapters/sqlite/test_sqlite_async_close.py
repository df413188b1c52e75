"""An async face whose close the SQLite repository refuses: the close did not happen,
the face stays usable, and the next ``aclose()`` closes it (and, after an erasure,
scrubs the erased bytes from the files).

SQLite refuses a close while another connection holds up an erasure's scrub, and while
a call of another thread on the same repository outlasts its busy timeout."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path

import pytest
from byte_search import leftovers
from conformance_builders import ERASED_AT, NOW, SCOPE, SUBJECT_WORDS, populate_subject
from sqlite_builders import pinned_reader

from trueheart_core import (
    AsyncTrueHeart,
    RepositoryBusy,
    SQLiteRepository,
    TrueHeart,
    ValidationError,
)

WAIT = 30.0
CLOSED = r"^repository: is closed$"


def _worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("trueheart-async")]


def test_a_close_held_up_by_a_reader_is_made_again_and_scrubs(db_path: Path) -> None:
    repository = SQLiteRepository(db_path, busy_timeout=0.2)
    service = TrueHeart(repository, clock=lambda: NOW)
    populate_subject(service)  # ends with an erasing call: the WAL is empty
    face = AsyncTrueHeart.wrap(service)
    words = [w.encode() for w in SUBJECT_WORDS]

    async def scenario() -> None:
        reader = pinned_reader(db_path)
        try:
            with pytest.raises(RepositoryBusy, match="erasure checkpoint incomplete"):
                await face.erase_subject(SCOPE, occurred_at=ERASED_AT)
            with pytest.raises(RepositoryBusy, match="erasure checkpoint incomplete"):
                await face.aclose()
        finally:
            reader.close()
        assert leftovers(db_path, words) != {}  # the scrub is still owed
        await face.aclose()  # tried again: the scrub runs, then the close
        with pytest.raises(ValidationError, match=CLOSED):
            await face.stats()

    asyncio.run(scenario())
    assert leftovers(db_path, words) == {}
    with pytest.raises(ValidationError, match=CLOSED):
        service.stats()
    assert not _worker_threads()


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


def test_a_close_that_waited_for_another_threads_call_is_made_again(db_path: Path) -> None:
    service = TrueHeart(SQLiteRepository(db_path, busy_timeout=0.2), clock=lambda: NOW)
    populate_subject(service)
    face = AsyncTrueHeart.wrap(service)
    writer = _HeldWriter()
    exporter = threading.Thread(target=service.export_store, args=(writer,))
    exporter.start()
    assert writer.entered.wait(WAIT)

    async def scenario() -> None:
        try:
            with pytest.raises(RepositoryBusy, match="a call of another thread is still running"):
                await face.aclose()
        finally:
            writer.released.set()
            await asyncio.to_thread(exporter.join, WAIT)
        # The failed close left the face open: its calls run again.
        assert (await face.stats(SCOPE)).memories > 0
        await face.aclose()
        with pytest.raises(ValidationError, match=CLOSED):
            await face.stats()
        await face.aclose()  # closed once: a later close has nothing to do

    asyncio.run(scenario())
    assert writer.getvalue()  # the other thread's export finished whole
    with pytest.raises(ValidationError, match=CLOSED):
        service.stats()
    assert not _worker_threads()
