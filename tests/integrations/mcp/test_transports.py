"""``trueheart mcp`` as a child process: over stdio with the SDK's ``stdio_client``, and
over streamable HTTP on a free loopback port with the SDK's HTTP client; then the store
as the library reads it."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import pytest
from mcp_support import (
    DEADLINE,
    SCOPE,
    Client,
    StdioServerParameters,
    child_environment,
    error_text,
    run,
    server_command,
    stdio_client,
    streamable_http_client,
    structured,
)

from trueheart_core import EntityType, Scope, SQLiteRepository, TrueHeart, ValidationError
from trueheart_core.integrations.mcp_server import READING_TOOLS, MemoryTools

SCOPE_ARGUMENT = "acme/assistant/user-1"


def _audit_trail(store: Path) -> list[tuple[str, EntityType]]:
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert service.verify_integrity().ok
        return sorted((r.action, r.entity_type) for r in service.audit(SCOPE, limit=100))


def test_stdio_end_to_end(tmp_path: Path) -> None:
    store = tmp_path / "memory.db"
    errors = tmp_path / "server-stderr.txt"
    command, *arguments = server_command(
        "--store", str(store), "--scope", SCOPE_ARGUMENT, "--create", "--raw-ttl", "7d"
    )
    parameters = StdioServerParameters(
        command=command, args=arguments, env=child_environment(), cwd=str(tmp_path)
    )

    async def body() -> None:
        with errors.open("w") as errlog:
            async with Client(stdio_client(parameters, errlog=errlog)) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"remember", "search_memory", "forget_memory"} <= names
                stored = structured(
                    await client.call_tool(
                        "remember", {"content": "Speaks Portuguese at home.", "kind": "fact"}
                    )
                )
                memory_id = stored["memory"]["memory_id"]
                found = structured(await client.call_tool("search_memory", {"query": "Portuguese"}))
                assert [item["memory_id"] for item in found["items"]] == [memory_id]
                structured(
                    await client.call_tool(
                        "forget_memory", {"memory_id": memory_id, "reason": "user asked"}
                    )
                )
                missing = await client.call_tool("get_memory", {"memory_id": memory_id})
                assert error_text(missing) == f"entity deleted: {memory_id}"
                await client.call_tool("remember", {"content": "Reads maps.", "kind": "fact"})

    run(body)
    log = errors.read_text()
    assert f"trueheart: serving the memory of {SCOPE_ARGUMENT} in {store}" in log
    assert "over stdio" in log and "Traceback" not in log
    assert _audit_trail(store) == [
        ("delete", EntityType.RAW_EVENT),  # the forgotten memory's own event
        ("forget", EntityType.MEMORY),
        ("ingest", EntityType.RAW_EVENT),
        ("ingest", EntityType.RAW_EVENT),
        ("materialize", EntityType.MEMORY),
        ("materialize", EntityType.MEMORY),
    ]
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        kept, _ = stored_event_ids(service)  # the latest first
        receipt = service.get_receipt(SCOPE, kept)
        assert (receipt.raw_expires_at - receipt.source.occurred_at).days == 7


def test_stdio_read_only(tmp_path: Path) -> None:
    store = tmp_path / "memory.db"
    with TrueHeart(SQLiteRepository(store)) as service:
        tools = MemoryTools(service, SCOPE)
        kept = tools.call("remember", {"content": "Reads science fiction."})["memory"]
    before = store.read_bytes()
    command, *arguments = server_command(
        "--store", str(store), "--scope", SCOPE_ARGUMENT, "--read-only"
    )
    parameters = StdioServerParameters(
        command=command, args=arguments, env=child_environment(), cwd=str(tmp_path)
    )

    async def body() -> None:
        with (tmp_path / "server-stderr.txt").open("w") as errlog:
            async with Client(stdio_client(parameters, errlog=errlog)) as client:
                names = sorted(tool.name for tool in (await client.list_tools()).tools)
                assert names == sorted(READING_TOOLS)
                found = structured(
                    await client.call_tool("search_memory", {"query": "science fiction"})
                )
                assert [item["memory_id"] for item in found["items"]] == [kept["memory_id"]]

    run(body)
    assert "(read-only) over stdio" in (tmp_path / "server-stderr.txt").read_text()
    assert store.read_bytes() == before


def stored_event_ids(service: TrueHeart) -> list[str]:
    return [r.entity_id for r in service.audit(SCOPE, limit=100) if r.action == "ingest"]


def _lines(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


def _http_server(
    cwd: Path, store: Path, *options: str
) -> tuple[subprocess.Popen[str], queue.Queue[str], threading.Thread]:
    """``trueheart mcp`` over HTTP on a free loopback port (with ``options``), and its
    stderr read line by line into a queue by a thread of its own."""
    process = subprocess.Popen(
        server_command(
            "--store",
            str(store),
            "--scope",
            SCOPE_ARGUMENT,
            "--transport",
            "http",
            "--port",
            "0",
            *options,
        ),
        env=child_environment(),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_lines, args=(process.stderr, lines), daemon=True)
    reader.start()
    return process, lines, reader


def test_streamable_http_on_a_free_loopback_port(tmp_path: Path) -> None:
    store = tmp_path / "memory.db"
    process, lines, reader = _http_server(tmp_path, store, "--create")
    assert process.stdout is not None
    try:
        first = lines.get(timeout=DEADLINE)  # the server says where it listens, once bound
        assert first.startswith(f"trueheart: serving the memory of {SCOPE_ARGUMENT}"), first
        url = first.rsplit(" at ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def body() -> None:
            async with Client(streamable_http_client(url)) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "remember" in names
                stored = structured(
                    await client.call_tool("remember", {"content": "Cycles to the office."})
                )
                found = structured(await client.call_tool("search_memory", {"query": "cycles"}))
                assert [i["memory_id"] for i in found["items"]] == [stored["memory"]["memory_id"]]

        run(body)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=DEADLINE)
            raise
        reader.join(timeout=DEADLINE)
    rest: list[Any] = []
    while not lines.empty():
        rest.append(lines.get())
    assert status == 0, rest
    assert not any("Traceback" in line for line in rest), rest
    assert process.stdout.read() == ""
    process.stdout.close()
    process.stderr.close()
    assert _audit_trail(store) == [
        ("ingest", EntityType.RAW_EVENT),
        ("materialize", EntityType.MEMORY),
    ]


def _post(url: str, body: dict[str, Any], session: str | None = None) -> tuple[str | None, bytes]:
    """POST one JSON-RPC message as any streamable HTTP client does (a plain request,
    no stream of the client's own open beside it): the session ID the server gives, and
    the whole answer."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=DEADLINE)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    try:
        connection.request("POST", parts.path, json.dumps(body), headers)
        response = connection.getresponse()
        return response.getheader("mcp-session-id"), response.read()
    finally:
        connection.close()


def test_a_sigterm_over_http_answers_the_running_call_before_the_server_stops(
    tmp_path: Path,
) -> None:
    """A call still running when SIGTERM arrives (here it waits for another process's
    write lock) is answered over its open request, and the server then exits with status
    0: a client is never left without the answer to a write that committed."""
    store = tmp_path / "memory.db"
    TrueHeart(SQLiteRepository(store)).close()
    process, lines, reader = _http_server(tmp_path, store, "--busy-timeout", "30")
    lock = sqlite3.connect(store, isolation_level=None)
    answers: list[bytes] = []
    try:
        url = lines.get(timeout=DEADLINE).rsplit(" at ", 1)[1].strip()
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        hello["clientInfo"] = {"name": "plain", "version": "1"}
        session, _ = _post(
            url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        )
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        lock.execute("BEGIN IMMEDIATE")
        call = {"name": "remember", "arguments": {"content": "Walks at dawn."}}
        caller = threading.Thread(
            target=lambda: answers.append(
                _post(
                    url,
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
                    session,
                )[1]
            )
        )
        caller.start()
        time.sleep(2)  # the call reaches the server and waits for the lock
        process.send_signal(signal.SIGTERM)
        time.sleep(1)
        lock.execute("COMMIT")
        caller.join(DEADLINE)
        status = process.wait(timeout=DEADLINE)
    finally:
        lock.close()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=DEADLINE)
        reader.join(timeout=DEADLINE)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    assert status == 0, rest
    assert not any("Traceback" in line for line in rest), rest
    (answer,) = answers
    result = json.loads(answer)["result"]["structuredContent"]
    assert result["memory"]["content"] == "Walks at dawn."
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert [m.content for m in service.list_memories(SCOPE).items] == ["Walks at dawn."]


def test_a_port_in_use_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "memory.db"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            server_command(
                "--store",
                str(store),
                "--scope",
                SCOPE_ARGUMENT,
                "--create",
                "--transport",
                "http",
                "--port",
                str(port),
            ),
            env=child_environment(),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"trueheart: 127.0.0.1 port {port}: Address already in use\n"


@pytest.mark.parametrize(("fd", "stream"), [(0, "stdin"), (1, "standard output")])
def test_a_stdio_server_started_without_its_stream_says_so_in_one_line(
    tmp_path: Path, fd: int, stream: str
) -> None:
    done = subprocess.run(
        server_command(
            "--store", str(tmp_path / "memory.db"), "--scope", SCOPE_ARGUMENT, "--create"
        ),
        env=child_environment(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(fd),
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == f"trueheart: {stream}: Bad file descriptor"


# A child that serves ``serve_http`` and sends itself SIGTERM at one moment of the start.
_SIGTERM_AT = """
import os, signal, socket, sys
import uvicorn
from trueheart_core import Scope, SQLiteRepository, TrueHeart
from trueheart_core.integrations.mcp_server import MemoryTools, server

moment = sys.argv[2]
original = uvicorn.Server.run


def run(self, sockets=None):
    if moment == "before-uvicorn":  # this process's handler is in place, uvicorn's not yet
        os.kill(os.getpid(), signal.SIGTERM)
    return original(self, sockets=sockets)


def ready(url):
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    socket.create_connection((host, int(port)), timeout=5).close()  # it listens already
    print("ready", flush=True)
    if moment == "at-ready":  # as soon as the URL is printed
        os.kill(os.getpid(), signal.SIGTERM)


uvicorn.Server.run = run
with TrueHeart(SQLiteRepository(sys.argv[1])) as service:
    server.serve_http(
        server.build_server(MemoryTools(service, Scope("a", "b", "c"))),
        "127.0.0.1",
        0,
        ready=ready,
    )
print("stopped", flush=True)
"""


@pytest.mark.parametrize("moment", ["at-ready", "before-uvicorn"])
def test_a_sigterm_during_the_start_stops_the_server_cleanly(tmp_path: Path, moment: str) -> None:
    """The URL is given once the socket listens, and a SIGTERM from then on, before the
    server has taken its own signal handlers over, still stops it with status 0."""
    done = subprocess.run(
        [sys.executable, "-c", _SIGTERM_AT, str(tmp_path / "memory.db"), moment],
        check=False,
        env=child_environment(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert (done.returncode, done.stdout) == (0, "ready\nstopped\n"), done.stderr


_INITIALIZE = (
    '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    '"2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}\n'
)


@pytest.mark.parametrize(
    ("number", "status", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
)
def test_a_stdio_server_stops_on_a_signal_while_the_client_keeps_stdin_open(
    tmp_path: Path, number: signal.Signals, status: int, word: str
) -> None:
    """A client that keeps its end of stdin open (as a client does while it runs): SIGTERM
    or Ctrl-C stops the server at once, with its status, and the store is left sound."""
    with _initialized_stdio_server(tmp_path) as (process, _, _):
        _stopped_by(process, number, status, word)
    with TrueHeart(SQLiteRepository(tmp_path / "memory.db", read_only=True)) as service:
        assert service.verify_integrity().ok


@pytest.mark.parametrize(
    ("number", "status", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")] * 3,
)
def test_a_stdio_server_stops_on_a_signal_while_it_answers_a_flood(
    tmp_path: Path, number: signal.Signals, status: int, word: str
) -> None:
    """A signal that lands while the server reads and answers a stream of requests: the
    same clean stop (no error group, no traceback, no thread left to wait for)."""
    with _initialized_stdio_server(tmp_path) as (process, stdin, stdout):
        pings = "".join(
            f'{{"jsonrpc": "2.0", "id": {n}, "method": "ping"}}\n' for n in range(2, 20_000)
        )
        threading.Thread(target=_write_quietly, args=(stdin, pings), daemon=True).start()
        assert '"id":2' in _line_within(stdout, DEADLINE).replace(" ", "")
        threading.Thread(target=stdout.read, daemon=True).start()  # keep it flowing
        _stopped_by(process, number, status, word)


@contextlib.contextmanager
def _initialized_stdio_server(
    tmp_path: Path,
) -> Iterator[tuple[subprocess.Popen[str], IO[str], IO[str]]]:
    """``trueheart mcp`` over stdio on a new store in ``tmp_path``, its pipes held open,
    after an ``initialize`` it has answered; killed if still running at the end."""
    process = subprocess.Popen(
        server_command(
            "--store", str(tmp_path / "memory.db"), "--scope", SCOPE_ARGUMENT, "--create"
        ),
        env=child_environment(),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_INITIALIZE)
        process.stdin.flush()
        answer = _line_within(process.stdout, DEADLINE)
        assert '"id":1' in answer.replace(" ", "") and "serverInfo" in answer
        yield process, process.stdin, process.stdout
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _stopped_by(process: subprocess.Popen[str], number: int, status: int, word: str) -> None:
    """Send ``number`` to the server: it exits with ``status``, its last word on stderr
    ``trueheart: WORD``, and no traceback."""
    process.send_signal(number)
    try:
        process.wait(DEADLINE)
    except subprocess.TimeoutExpired:
        pytest.fail("the server still ran after the signal")
    assert process.returncode == status
    assert process.stderr is not None
    errors = process.stderr.read()
    assert errors.splitlines()[-1] == f"trueheart: {word}"
    assert "Traceback" not in errors and "Fatal" not in errors


def _write_quietly(stream: IO[str], text: str) -> None:
    """Write ``text`` to a child's stdin until it is done or the child has gone."""
    with contextlib.suppress(OSError, ValueError):
        for start in range(0, len(text), 4096):
            stream.write(text[start : start + 4096])
            stream.flush()


def _line_within(stream: IO[str], seconds: float) -> str:
    """The next line of ``stream``, read in a thread so that a silent server fails the
    test instead of hanging it."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=seconds)
    except queue.Empty:
        pytest.fail("the server did not answer")


def _call(request_id: int, arguments: str) -> str:
    return (
        f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": '
        f'{{"name": "search_memory", "arguments": {{"query": "tea", "extra": {arguments}}}}}}}\n'
    )


def test_requests_the_sdk_cannot_read_go_unanswered_and_later_ones_are_served(
    tmp_path: Path,
) -> None:
    """What the guide says the MCP SDK's stdio reader drops: a lone surrogate's escape,
    nesting of about 200 levels from the message's top, an integer of over 4,300 digits.
    A request just inside those bounds is answered (a tool error for the extra
    argument); one beyond them gets no line at all, and the ping after it is answered."""
    answered = [("[" * 190 + "]" * 190), "1" * 4300]
    dropped = ['"\\ud800"', ("[" * 200 + "]" * 200), "1" * 4301]
    with _initialized_stdio_server(tmp_path) as (_, stdin, stdout):
        request_id = 2
        for arguments, expected in [(a, True) for a in answered] + [(d, False) for d in dropped]:
            ping = request_id + 1
            stdin.write(_call(request_id, arguments))
            stdin.write(f'{{"jsonrpc": "2.0", "id": {ping}, "method": "ping"}}\n')
            stdin.flush()
            lines = [_line_within(stdout, DEADLINE).replace(" ", "")]
            if expected:
                # The SDK answers a ping while a tool call runs: either may come first.
                lines.append(_line_within(stdout, DEADLINE).replace(" ", ""))
                (call,) = [line for line in lines if f'"id":{request_id},' in line]
                assert '"isError":true' in call
            assert [line for line in lines if f'"id":{ping},' in line], arguments[:10]
            request_id += 2


@pytest.mark.parametrize(
    ("host", "port", "message"),
    [
        ("0.0.0.0", 0, "host: must be a loopback address (127.0.0.1, ::1 or localhost)"),
        (["127.0.0.1"], 0, "host: must be a loopback address (127.0.0.1, ::1 or localhost)"),
        ("127.0.0.1", 70000, "port: must be an int from 0 through 65535"),
        ("127.0.0.1", "8000", "port: must be an int from 0 through 65535"),
        ("127.0.0.1", True, "port: must be an int from 0 through 65535"),
    ],
)
def test_serve_http_refuses_what_it_must_not_bind(
    tmp_path: Path, host: Any, port: Any, message: str
) -> None:
    from trueheart_core.integrations.mcp_server import server

    with TrueHeart(SQLiteRepository(tmp_path / "m.db")) as service:
        built = server.build_server(MemoryTools(service, Scope("a", "b", "c")))
        with pytest.raises(ValidationError, match=re.escape(message)):
            server.serve_http(built, host, port, ready=print)
