"""The memory tools on the wire: the official MCP SDK's low-level server, over stdio or
over streamable HTTP on a loopback address.

This is the only module of the library that imports the ``mcp`` package (the ``mcp``
extra, with ``anyio`` and ``uvicorn``, which it brings). Every call runs in a worker
thread, one at a time (see :class:`~.tools.MemoryTools`); a refused call is a tool error
(``isError``) whose text is the library's body-free message; an unknown tool is a
protocol error.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

try:
    import anyio  # type: ignore[import-not-found, unused-ignore]
    import anyio.to_thread  # type: ignore[import-not-found, unused-ignore]
    import uvicorn  # type: ignore[import-not-found, unused-ignore]
    from mcp import types  # type: ignore[import-not-found, unused-ignore]
    from mcp.server import (  # type: ignore[import-not-found, unused-ignore]
        Server,
        ServerRequestContext,
    )
    from mcp.server.stdio import stdio_server  # type: ignore[import-not-found, unused-ignore]
    from mcp.shared.exceptions import MCPError  # type: ignore[import-not-found, unused-ignore]
except ModuleNotFoundError as missing:
    if missing.name is None or missing.name.split(".")[0] not in ("anyio", "uvicorn", "mcp"):
        raise
    raise ImportError(
        "trueheart_core.integrations.mcp_server.server needs the MCP SDK: "
        "pip install 'trueheart-core[mcp]'"
    ) from None

import trueheart_core
from trueheart_core.errors import ValidationError
from trueheart_core.integrations.mcp_server.tools import MemoryTools, ToolFailure, UnknownTool

__all__ = ["HTTP_PATH", "LOOPBACK_HOSTS", "build_server", "serve_http", "serve_stdio"]

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
"""The only addresses the HTTP transport binds: the SDK protects them against DNS
rebinding (it checks the ``Host`` and ``Origin`` headers)."""
HTTP_PATH = "/mcp"
SERVER_NAME = "trueheart"
INSTRUCTIONS = (
    "Long-term memory kept by TrueHeart Core for one scope (tenant, owner, subject) that "
    "the server was started with. Search or recall before answering from memory; "
    "remember durable facts, preferences and decisions as short self-contained "
    "statements; forget what the user asks to be forgotten. Every write is audited."
)


def _tool(spec: Any) -> Any:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def build_server(tools: MemoryTools) -> Server[Any]:
    """An MCP server offering ``tools`` (every call in their bound scope)."""
    specs = tools.specs()
    listed = [_tool(spec) for spec in specs]
    schemas = {spec.name: spec.input_schema for spec in specs}
    offered = ", ".join(schemas)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments: Mapping[str, Any] | None = params.arguments
        try:
            result = await anyio.to_thread.run_sync(tools.call, params.name, arguments)
        except UnknownTool:
            message = f"unknown tool; this server offers {offered}"
            raise MCPError(code=types.INVALID_PARAMS, message=message) from None
        except ToolFailure as failure:
            text = types.TextContent(type="text", text=failure.message)
            return types.CallToolResult(content=[text], is_error=True)
        text = types.TextContent(
            type="text", text=json.dumps(result, ensure_ascii=False, sort_keys=True)
        )
        return types.CallToolResult(content=[text], structured_content=result)

    return Server(
        SERVER_NAME,
        version=trueheart_core.__version__,
        title="TrueHeart memory",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


_CHUNK = 65536
_READ_AHEAD = 16
"""How many lines of stdin may wait for the server (the reader stops reading beyond)."""
_STEP = 0.1
"""Seconds the stdin reader waits at a time, for input or for room, before it looks
whether the server has stopped."""


class StdinLines:
    """The lines of standard input for the MCP transport, read by a daemon thread of
    their own.

    The SDK's transport reads stdin in a worker thread that a stop cannot leave behind:
    on SIGTERM or Ctrl-C, the process would go on until the client closed its end. This
    reader's thread is a daemon reading the descriptor with ``os.read`` (no lock of
    Python's own file objects held), so a stopped server is not held by its input (an
    answer it is writing to a client that does not read is another matter); it waits for
    input in steps of :data:`_STEP` seconds (where the descriptor can be waited on, as
    pipes, terminals and files can on POSIX) and, once stopped, reads no more, so the
    client's next bytes stay for whoever reads stdin next. While it serves, descriptor
    0 reads the null device (host code and child processes then find end of file, not
    the client's messages), as the SDK's own transport arranges; :meth:`stop` puts it
    back. Lines are decoded as UTF-8, an invalid byte as U+FFFD, as the SDK's transport
    does."""

    def __init__(self) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue(_READ_AHEAD)
        self._stopped = threading.Event()
        self._waitable = True
        self._wire = os.dup(0)  # never closed: :meth:`stop` gives it back to descriptor 0
        diversion = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(diversion, 0)
        finally:
            os.close(diversion)
        threading.Thread(target=self._read, name="trueheart-mcp-stdin", daemon=True).start()

    def _read(self) -> None:
        parts: list[bytes] = []
        try:
            while chunk := self._next_chunk():
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    parts.append(chunk[start : end + 1])
                    if not self._put(b"".join(parts).decode("utf-8", "replace")):
                        return
                    parts.clear()
                    start = end + 1
                if start < len(chunk):
                    parts.append(chunk[start:])
            if parts:
                self._put(b"".join(parts).decode("utf-8", "replace"))
        except OSError:
            pass  # the client's end is gone as far as this server can tell
        finally:
            self._put(None)

    def _next_chunk(self) -> bytes:
        """The next bytes of the wire: empty at its end, and once stopped."""
        while not self._stopped.is_set():
            if self._waitable:
                try:
                    ready, _, _ = select.select([self._wire], [], [], _STEP)
                except (OSError, ValueError):
                    self._waitable = False  # a descriptor that cannot be waited on
                    continue
                if not ready:
                    continue
            return os.read(self._wire, _CHUNK)
        return b""

    def _put(self, line: str | None) -> bool:
        """Hand ``line`` to the server, waiting for room while it serves; False once
        stopped."""
        while not self._stopped.is_set():
            try:
                self._lines.put(line, timeout=_STEP)
            except queue.Full:
                continue
            return True
        return False

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        line: str | None = await anyio.to_thread.run_sync(self._lines.get, abandon_on_cancel=True)
        if line is None:
            self._end()  # every later read ends too
            raise StopAsyncIteration
        return line

    def _end(self) -> None:
        with contextlib.suppress(queue.Full):
            self._lines.put_nowait(None)

    def stop(self) -> None:
        """Stop reading, release a read left waiting (a stopped server's), and give
        descriptor 0 its stream back."""
        self._stopped.set()
        self._end()
        with contextlib.suppress(OSError):
            os.dup2(self._wire, 0)


_STOPS = (signal.SIGINT, signal.SIGTERM)


async def _stop_on_signal(scope: Any, stopped: list[int]) -> None:
    """Cancel ``scope`` (the server's) at the first SIGINT or SIGTERM, noted in
    ``stopped``; a later one is ignored while the server winds down."""
    try:
        with anyio.open_signal_receiver(*_STOPS) as signals:
            async for number in signals:
                stopped.append(int(number))
                scope.cancel()
    finally:
        if stopped:
            for number in _STOPS:
                signal.signal(number, signal.SIG_IGN)


def _interruption(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The ``KeyboardInterrupt`` (a subclass too) that a task group wrapped, if any."""
    for error in group.exceptions:
        if isinstance(error, KeyboardInterrupt):
            return error
        if isinstance(error, BaseExceptionGroup):
            found = _interruption(error)
            if found is not None:
                return found
    return None


def _stdin_is_descriptor_0() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.buffer.fileno() == 0
    except (AttributeError, OSError, ValueError):
        return False


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over stdin and stdout until it closes stdin, or until SIGINT or
    SIGTERM.

    In the main thread, a SIGINT or SIGTERM stops the server from inside its event loop
    (a tool call already running finishes first; a second signal meanwhile is
    ignored); the signal's own handlers are then put back and the signal raised again
    once the loop has ended, so that it reaches the caller as it would have (Ctrl-C as
    ``KeyboardInterrupt``) with nothing of the server left running."""
    # A host that gave ``sys.stdin`` another stream is served from it by the SDK itself.
    lines = StdinLines() if _stdin_is_descriptor_0() else None
    wire: Any = lines  # read as the SDK reads its own stdin file: ``async for line in``
    watch = threading.current_thread() is threading.main_thread()
    previous = {number: signal.getsignal(number) for number in _STOPS} if watch else {}
    stopped: list[int] = []

    async def run() -> None:
        async with anyio.create_task_group() as group:
            if watch:
                group.start_soon(_stop_on_signal, group.cancel_scope, stopped)
            async with stdio_server(stdin=wire) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()  # the client closed stdin: stop watching

    try:
        anyio.run(run)
    except BaseExceptionGroup as group:
        # A signal that landed before the watch began, raised inside a task.
        interruption = _interruption(group)
        if interruption is None:
            raise
        raise interruption from None
    finally:
        if lines is not None:
            lines.stop()
        for number, handler in previous.items():
            if handler is not None:  # one not set from Python cannot be put back
                signal.signal(number, handler)
    if stopped:
        signal.raise_signal(stopped[0])


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    """A socket bound to ``host`` and ``port`` and listening: a client that connects as
    soon as the URL is printed waits in the backlog until the server accepts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as error:
        sock.close()
        # The address is what the message is about (the command line prints it).
        raise OSError(error.errno, error.strerror, f"{host} port {port}") from None
    return sock


def serve_http(
    server: Server[Any], host: str, port: int, *, ready: Callable[[str], object]
) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until SIGTERM (a clean stop,
    after open requests finish) or SIGINT (``KeyboardInterrupt``, after the same).

    Each request is answered with one JSON response rather than an event stream: the
    server sends nothing but answers, and uvicorn lets an open response finish at a
    clean stop, where the event streams are cut at once (a call that committed would
    lose its answer).

    ``host`` must be one of :data:`LOOPBACK_HOSTS` and ``port`` an ``int`` from 0 through
    65535 (``ValidationError`` otherwise); port 0 takes a free port. ``ready``
    is called with the URL once the socket listens (a client may connect from then on),
    before the first request is accepted. A port that cannot be bound raises
    ``OSError``. A SIGTERM at any time from the call to ``ready`` on stops the server
    cleanly, before it serves or after."""
    if not isinstance(host, str) or host not in LOOPBACK_HOSTS:
        raise ValidationError("host", "must be a loopback address (127.0.0.1, ::1 or localhost)")
    if type(port) is not int or not 0 <= port <= 65535:
        raise ValidationError("port", "must be an int from 0 through 65535")
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host, json_response=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    serving = uvicorn.Server(config)
    sock = _listen(host, port, config.backlog)
    try:
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{bound}{HTTP_PATH}"
        if threading.current_thread() is not threading.main_thread():
            ready(url)
            serving.run(sockets=[sock])  # signals are the main thread's
            return

        def stop(number: int, frame: object) -> None:
            # Before uvicorn takes SIGTERM over: it then starts, serves nothing and
            # shuts down. While it serves, its own handler does the same; it then
            # restores this one and raises the signal again, which lands here.
            serving.should_exit = True

        previous = signal.signal(signal.SIGTERM, stop)
        try:
            ready(url)
            serving.run(sockets=[sock])
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        sock.close()
