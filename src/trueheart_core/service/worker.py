"""The worker thread of the async faces: one face's calls run there, one at a time.

A :class:`Worker` owns one thread (a ``ThreadPoolExecutor`` with a single worker,
started on the first call). Calls run in the order they were submitted, each to its end:
the thread runs nothing else meanwhile, so a face's calls never overlap, and the event
loop that awaits them is never blocked. A :class:`Gate` is one face's side of a worker:
whether that face is closing, and the error its calls raise once it is. Several faces
may share a worker (the evicortex face and its engine); the face that owns it stops it.

Cancellation: a call whose caller is cancelled before the thread starts it is taken off
the queue and never runs; once started, it runs to its end in the thread (its unit of
work commits or rolls back there) and its outcome is dropped. Closing: a face's calls
that have not started when its close begins fail with the gate's error, new ones are
refused with it, the close runs after the call in progress, and the owner's close ends
the thread. Only the standard library is used (``asyncio`` once a call is awaited).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["Gate", "Worker", "same_docs_as", "settled"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_F = TypeVar("_F", bound=Callable[..., object])


def same_docs_as(sync: Callable[..., object]) -> Callable[[_F], _F]:
    """Give a coroutine of an async face the docstring of the sync method it runs."""

    def attach(method: _F) -> _F:
        method.__doc__ = sync.__doc__
        return method

    return attach


class Gate:
    """One face's access to a worker: ``error()`` builds the error a call raises once
    the face is closing (the face's documented error for a closed store)."""

    __slots__ = ("_closing", "error")

    def __init__(self, error: Callable[[], Exception]) -> None:
        self.error = error
        # The close of this face, once it began (the job every close call waits for).
        self._closing: Future[None] | None = None

    @property
    def closing(self) -> bool:
        """Whether this face's close has begun."""
        return self._closing is not None


class Worker:
    """One thread that runs the submitted calls one at a time, first come first served.

    ``name`` prefixes the thread's name. The thread is started by the first submission
    and ends after :meth:`close` with ``stop=True``; a worker that is dropped without it
    ends its thread when it is garbage collected (or when the interpreter exits).
    """

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._lock = threading.Lock()
        # The owner's close, once it began: nothing is submitted after it.
        self._final: Future[None] | None = None

    async def call(
        self, gate: Gate, function: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _R:
        """``function(*args, **kwargs)`` in the thread, after the calls submitted before
        it; its result, or the exception it raised. Raises ``gate.error()`` without
        running it when the gate or the worker is closing (before or while it waits)."""
        job = self.submit(gate, functools.partial(function, *args, **kwargs))
        return await settled(job, cancel=True)

    def submit(self, gate: Gate, function: Callable[[], _R]) -> Future[_R]:
        """Queue ``function`` behind the calls submitted before it (see :meth:`call`)."""
        with self._lock:
            if gate.closing or self._final is not None:
                raise gate.error()
            try:
                return self._executor.submit(self._turn, gate, function)
            except RuntimeError:  # the interpreter is shutting down
                raise gate.error() from None

    def _turn(self, gate: Gate, function: Callable[[], _R]) -> _R:
        """In the thread: run ``function`` unless the face's close began meanwhile."""
        with self._lock:
            refused = gate.closing or self._final is not None
        if refused:
            raise gate.error()
        return function()

    async def close(self, gate: Gate, final: Callable[[], None], *, stop: bool) -> None:
        """Close one face, once: from now on its calls raise ``gate.error()`` (those
        still waiting too); ``final`` runs in the thread after the call in progress.
        With ``stop`` (the owner's close) the worker takes no more calls of any face and
        its thread has ended when this returns. Idempotent: later and concurrent calls
        wait for the same close. Cancelling the caller does not stop the close.

        A close whose ``final`` raises did not happen: every caller waiting for it gets
        that error, the face (and the worker) take calls again, and the next close
        runs ``final`` anew, as a sync close that failed leaves its service usable and
        is tried again by the next."""
        with self._lock:
            job = gate._closing
            if job is None:
                job = self._final
                if job is None:
                    job = self._submit_final(final)
                    if stop:
                        self._final = job
                gate._closing = job
        # Outside the lock: a job already done runs the callback here and now.
        job.add_done_callback(functools.partial(self._reopen_if_failed, gate))
        await settled(job, cancel=False)
        if stop:
            # The thread has nothing left to run: this only waits for it to notice.
            self._executor.shutdown(wait=True)

    def _reopen_if_failed(self, gate: Gate, job: Future[None]) -> None:
        """After a close job ended: when ``final`` raised, the close is undone (see
        :meth:`close`). Runs once per caller that waited; only the first finds the job
        still in place."""
        if job.cancelled() or job.exception() is None:
            return
        with self._lock:
            if gate._closing is job:
                gate._closing = None
            if self._final is job:
                self._final = None

    def abandon(self, final: Callable[[], None]) -> None:
        """Stop the worker without waiting: ``final`` runs in the thread after whatever
        is queued, and then the thread ends (for a face that could not be opened)."""
        with self._lock:
            if self._final is None:
                self._final = self._submit_final(final)
                self._executor.shutdown(wait=False)

    def _submit_final(self, final: Callable[[], None]) -> Future[None]:
        """``final`` queued for the thread; run here and now when the executor takes
        nothing more (the interpreter is shutting down: an ``atexit`` handler, a thread
        that outlived the main one), so that a close still closes."""
        try:
            return self._executor.submit(final)
        except RuntimeError:
            done: Future[None] = Future()
            try:
                final()
            except BaseException as error:  # the close's own outcome, for its caller
                done.set_exception(error)
            else:
                done.set_result(None)
            return done


async def settled(job: Future[_R], *, cancel: bool) -> _R:
    """Wait, without blocking the event loop, for ``job`` to finish; its result. If the
    caller is cancelled meanwhile, ``job`` is cancelled too when ``cancel`` is true and
    it has not started (a job that started runs to its end and its outcome is dropped),
    and ``CancelledError`` propagates at once."""
    # Imported here, where a loop already runs, so that importing the library does not
    # load asyncio.
    import asyncio  # noqa: PLC0415

    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()

    def wake(_: Future[_R]) -> None:
        # A loop that closed meanwhile has nobody waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_set_done, waiter)

    job.add_done_callback(wake)
    try:
        await waiter
    except asyncio.CancelledError:
        if cancel:
            job.cancel()
        raise
    return job.result()


def _set_done(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
