"""An async face whose close the SQLite repository refuses: the close did not happen,
the face stays usable, and the next ``aclose()`` closes it (and, after an erasure,
scrubs the erased bytes from the files).

SQLite refuses a close while another connection holds up an erasure's scrub, and while
a call of another thread on the same repository outlasts its busy timeout."""

from __future__ import annotations

import asyncio
import fcntl
import os
import termios
import threading
import time
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


def test_a_close_that_waited_for_another_threads_call_is_made_again(db_path: Path) -> None:
    service = TrueHeart(SQLiteRepository(db_path, busy_timeout=0.2), clock=lambda: NOW)
    populate_subject(service)
    face = AsyncTrueHeart.wrap(service)
    # Another thread exports into a pipe nobody reads yet: once its 4 KiB are full, the
    # export (and the repository's lock) waits for a reader.
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    sink = open(write_end, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    exporter = threading.Thread(target=service.export_store, args=(sink,))
    exporter.start()
    deadline = time.monotonic() + WAIT
    while _unread(read_end) < 4096:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 65536):
            received.extend(chunk)

    async def scenario() -> None:
        reader = threading.Thread(target=drain)
        try:
            with pytest.raises(RepositoryBusy, match="a call of another thread is still running"):
                await face.aclose()
        finally:
            reader.start()
            await asyncio.to_thread(exporter.join, WAIT)
            sink.close()
            await asyncio.to_thread(reader.join, WAIT)
            os.close(read_end)
        # The failed close left the face open: its calls run again.
        assert (await face.stats(SCOPE)).memories > 0
        await face.aclose()
        with pytest.raises(ValidationError, match=CLOSED):
            await face.stats()
        await face.aclose()  # closed once: a later close has nothing to do

    asyncio.run(scenario())
    assert received.endswith(b"\n") and received.count(b"\n") > 10  # the export finished
    with pytest.raises(ValidationError, match=CLOSED):
        service.stats()
    assert not _worker_threads()


def _unread(fd: int) -> int:
    """How many bytes wait in the pipe whose read end is ``fd``."""
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), "little")
