"""Progress of a long command on stderr.

Off a terminal (a pipe, a file, a scheduler's log), a task writes one line,
``trueheart: <message>``, when it starts, and nothing more. When stderr is a terminal
(and ``TERM`` is not ``dumb``), the same line is drawn in place and redrawn about ten
times a second until the task ends: with a bar and ``done/total`` counts once the task
reports them through :meth:`Task.update` (redrawn at once too whenever the whole per
cent done changes), otherwise with a spinner; the elapsed time is shown either way, and
a line wider than the terminal (the one drawn on, whatever standard output is) loses
the end of its message, and on a narrow one its bar, not its counts. When the
task ends, the drawn line is replaced by the plain line (followed, after a success, by
the elapsed time), so that whatever is written next starts on a line of its own. If a
failure escapes before the task could end it (a Ctrl-C at the wrong instant),
:func:`settle`, which the command line calls before it reports any failure, ends the
line the same way.

Nothing here reads or shows a body: the message is the command's own fixed text, with
the paths and IDs it names, whose unprintable characters are escaped (``\\n``,
``\\x1b``) so that the line stays one line and cannot drive the terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from trueheart_core.cli.render import printable

__all__ = ["Task", "draws", "emit", "settle", "silence", "task"]

_SPINNER = "|/-\\"
_BAR = 20
_INTERVAL = 0.1
_SHORTEST = 20
"""The fewest characters of a message (its ``…`` included) that a narrow terminal shows
before the bar is left out."""


def emit(stream: TextIO, text: str) -> None:
    """Write ``text`` on ``stream`` (standard error) and flush it. What goes there tells
    of the command's work and is not that work: when it cannot be written (a full disk,
    a reader that went away), the stream is given up, its descriptor pointed at the null
    device, and the command goes on (its outcome is in its exit status, and under
    ``--json`` on standard output)."""
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        silence(stream)


def silence(stream: object, fd: int | None = None) -> None:
    """Point the descriptor of ``stream`` (a standard stream that cannot be written) at
    the null device, so that its pending output, every later write and the
    interpreter's flush at exit go nowhere without failing. With ``fd``, only when that
    is the stream's descriptor (a stream replaced by a test's buffer is left alone)."""
    try:
        found = stream.fileno()  # type: ignore[attr-defined]
        if fd is not None and found != fd:
            return
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):  # closed, or not a real file
        return
    try:
        os.dup2(null, found)
    except OSError:
        pass  # nothing more can be done for it
    finally:
        os.close(null)


def draws(stream: TextIO | None) -> bool:
    """Whether progress is drawn on ``stream``: a terminal, with ``TERM`` not ``dumb``."""
    if stream is None or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (ValueError, AttributeError):  # closed, or not a real stream
        return False


class Task:
    """One long step of a command; use as a context manager (see the module
    docstring)."""

    def __init__(self, message: str, stream: TextIO, total: int | None = None) -> None:
        self._message = f"trueheart: {printable(message)}"
        self._stream = stream
        self._total = total
        self._done = 0
        self._frame = 0
        self._drawing = draws(stream)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()
        self._drawn_at = 0.0  # when the line was last drawn (monotonic seconds)
        self._finished = False

    def __enter__(self) -> Task:
        self._started = time.monotonic()
        if not self._drawing:
            emit(self._stream, self._message + "\n")
            return self
        _DRAWN[:] = [self]
        try:
            self._draw()
            self._thread = threading.Thread(
                target=self._spin, name="trueheart-progress", daemon=True
            )
            self._thread.start()
        except BaseException:  # such as Ctrl-C: the line still ends
            self.finish(ok=False)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.finish(ok=kind is None)

    def finish(self, *, ok: bool) -> None:
        """Stop drawing and leave the plain line (with the elapsed time when ``ok``);
        does nothing off a terminal or once done."""
        if not self._drawing or self._finished:
            return
        self._stopped.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            with contextlib.suppress(RuntimeError):  # interrupted while starting
                thread.join()
        elapsed = time.monotonic() - self._started
        ending = f" (done in {elapsed:.1f}s)" if ok else ""
        with self._lock, contextlib.suppress(OSError, ValueError):  # the terminal went away
            self._stream.write(f"\r{self._message}{ending}\x1b[K\n")
            self._stream.flush()
        # Only now: a Ctrl-C before this point leaves the line to settle() to end.
        self._finished = True
        if _DRAWN and _DRAWN[0] is self:
            _DRAWN.clear()

    def update(self, done: int, total: int | None = None) -> None:
        """Report ``done`` of ``total`` items (``total`` as before when omitted). The
        line is redrawn at once when the whole per cent done changes, or when it was
        last drawn a tenth of a second ago or more; otherwise the next frame shows it (a
        task reporting every item would redraw it thousands of times a second)."""
        shown = self._percent()
        if total is not None:
            self._total = total
        self._done = done
        if self._drawing and (
            self._percent() != shown or time.monotonic() - self._drawn_at >= _INTERVAL
        ):
            self._draw()

    def _percent(self) -> int | None:
        total = self._total
        return 100 * min(self._done, total) // total if total else None

    def _spin(self) -> None:
        while not self._stopped.wait(_INTERVAL):
            if time.monotonic() - self._drawn_at >= _INTERVAL / 2:
                self._draw()

    def _draw(self) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            elapsed = time.monotonic() - self._started
            total = self._total
            if total:
                done = min(self._done, total)
                filled = _BAR * done // total
                counts = f"{done}/{total} {100 * done // total}%"
                states = [f"[{'#' * filled}{'.' * (_BAR - filled)}] {counts}", counts]
            else:
                states = [_SPINNER[self._frame % len(_SPINNER)]]
                self._frame += 1
            width = max(_columns(self._stream) - 1, 1)
            # A line too wide for the terminal loses the end of its message, and its bar
            # when that would leave less than ``_SHORTEST`` characters of the message;
            # never the counts and the time (unless they alone are wider).
            message = self._message
            for state in states:
                tail = f" {state} {elapsed:.1f}s"
                if len(tail) + min(len(message), _SHORTEST) <= width:
                    break
            if len(message) + len(tail) > width:
                message = message[: max(width - len(tail) - 1, 0)] + "\u2026"
            line = (message + tail)[:width]
            self._drawn_at = time.monotonic()
            try:
                self._stream.write(f"\r{line}\x1b[K")
                self._stream.flush()
            except (OSError, ValueError):  # the terminal went away: stop drawing
                self._stopped.set()


def _columns(stream: TextIO) -> int:
    """The width of the terminal ``stream`` writes to: ``COLUMNS`` when it is set (as
    :func:`shutil.get_terminal_size` reads it), else the stream's own terminal's (not
    standard output's, which may be a file), else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return 80


_DRAWN: list[Task] = []  # the task whose line is being drawn, if any


def settle() -> None:
    """End the line of a task still drawn (as after a failure), so that an error
    message written next starts on a line of its own; a no-op otherwise."""
    for drawn in list(_DRAWN):
        drawn.finish(ok=False)


def task(message: str, total: int | None = None, stream: TextIO | None = None) -> Task:
    """A :class:`Task` on ``stream`` (default: ``sys.stderr`` at the time of the call)."""
    return Task(message, sys.stderr if stream is None else stream, total)
