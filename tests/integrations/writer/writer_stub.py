"""The chat-completions stub of the memory writer tests, and the values they share.

The stub is a stdlib HTTP server in a thread, bound to 127.0.0.1 on a port the system
chooses. It answers every ``POST`` with the replies a test scripts, in order, and
records each request body and path. A reply can hang until the stub is released (the
timeout tests); :func:`serve` releases every hanging reply when it ends, so no test waits
on one. No other network is used, and no real model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trueheart_core import RetentionPolicy, Scope

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant-a", "assistant", "user-ada")
OTHER_SCOPE = Scope("tenant-a", "assistant", "user-bob")
RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=30), clear_for=timedelta(days=90), recall_for=timedelta(days=365)
)
# Longer than any client timeout of these tests, shorter than a hung test run.
HANG_LIMIT_SECONDS = 30.0


@dataclass
class Reply:
    """One scripted answer: an HTTP status and a JSON body (or raw bytes); ``hang`` holds
    the reply until the stub is released."""

    status: int = 200
    body: Any = None
    hang: bool = False
    headers: dict[str, str] = field(default_factory=dict)


def completion(
    content: str | None,
    *,
    finish_reason: str | None = "stop",
    refusal: str | None = None,
) -> dict[str, Any]:
    """A chat-completions response body with one choice."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
    }


def answer(memories: list[dict[str, Any]], claims: list[dict[str, Any]]) -> Reply:
    """A well-formed reply whose content is the writer's JSON answer."""
    return Reply(body=completion(json.dumps({"memories": memories, "claims": claims})))


@dataclass
class Stub:
    """The running stub: its base URL, the replies still to give and what it was sent."""

    url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def next_reply(self, path: str, request: dict[str, Any]) -> Reply:
        with self.lock:
            self.paths.append(path)
            self.requests.append(request)
            if not self.replies:
                return Reply(status=500, body={"error": {"message": "no reply scripted"}})
            return self.replies.pop(0)


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                request = {}
            reply = stub.next_reply(self.path, request)
            if reply.hang:
                stub.release.wait(HANG_LIMIT_SECONDS)
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up (a timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve() -> Iterator[Stub]:
    """Run a stub until the block ends; hanging replies are released first."""
    stub = Stub("")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    host, port = server.server_address[:2]
    stub.url = f"http://{host!s}:{port}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=HANG_LIMIT_SECONDS)
