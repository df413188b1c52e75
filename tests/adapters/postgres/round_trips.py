"""A loopback proxy in front of the test server that counts round trips.

Every byte goes through unchanged; the proxy reads the protocol messages of both
directions on the way. A round trip begins when the client sends a message while it
waits for no answer, and ends when the server has answered every ``Sync`` and simple
``Query`` sent meanwhile (its ``ReadyForQuery`` messages): statements pipelined
behind one another count once, a client that waits for an answer before it sends
again counts every exchange.
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from urllib.parse import urlsplit, urlunsplit

_ANSWERED = (b"S", b"Q")
"""Client messages the server answers with ``ReadyForQuery`` (``Sync``, ``Query``)."""


class _Stream:
    """The messages of one direction of one connection, read as they pass."""

    def __init__(self, *, typed: bool) -> None:
        self.buffer = b""
        self.typed = typed  # the client's first message (startup) has no type byte

    def messages(self, data: bytes) -> list[bytes]:
        """The types of the messages ``data`` completes (``b""`` for the startup)."""
        self.buffer += data
        found: list[bytes] = []
        while True:
            if not self.typed:
                if len(self.buffer) < 4:
                    return found
                (length,) = struct.unpack("!i", self.buffer[:4])
                if len(self.buffer) < length:
                    return found
                self.buffer = self.buffer[length:]
                self.typed = True
                found.append(b"")
                continue
            if len(self.buffer) < 5:
                return found
            (length,) = struct.unpack("!i", self.buffer[1:5])
            if len(self.buffer) < 1 + length:
                return found
            found.append(self.buffer[:1])
            self.buffer = self.buffer[1 + length :]


class _Link:
    """One proxied connection: its two sockets and what the client waits for."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client, self.server = client, server
        self.sent = _Stream(typed=False)
        self.answered = _Stream(typed=True)
        self.waiting = 0  # Sync and Query messages not answered yet
        self.open = False  # a round trip is under way


class RoundTripCounter:
    """A proxy on a free loopback port to the server of ``url``; :meth:`url` is the
    URL that goes through it, :attr:`round_trips` the round trips counted since the
    last :meth:`reset` (over every connection), :attr:`statements` the statements run
    in them (the client's ``Execute`` messages)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._base = parts
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._wake_read, self._wake_write = socket.socketpair()
        self._selector.register(self._wake_read, selectors.EVENT_READ, "stop")
        self._lock = threading.Lock()
        self._round_trips = 0
        self._statements = 0
        self._running = True
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def url(self) -> str:
        """The server's URL through the proxy (plain TCP: the proxy reads the bytes)."""
        port = self._listener.getsockname()[1]
        netloc = self._base.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{port}"
        location = f"{netloc[0]}@{host}" if len(netloc) == 2 else host
        query = "&".join(q for q in (self._base.query, "sslmode=disable&gssencmode=disable") if q)
        return urlunsplit((self._base.scheme, location, self._base.path, query, ""))

    @property
    def round_trips(self) -> int:
        with self._lock:
            return self._round_trips

    @property
    def statements(self) -> int:
        with self._lock:
            return self._statements

    def reset(self) -> None:
        with self._lock:
            self._round_trips = 0
            self._statements = 0

    def close(self) -> None:
        self._running = False
        self._wake_write.send(b"x")
        self._thread.join(timeout=10)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()
        self._wake_write.close()

    def _run(self) -> None:
        while self._running:
            for key, _ in self._selector.select():
                if key.data == "stop":
                    return
                if key.data is None:
                    self._accept()
                else:
                    link, from_client = key.data
                    self._forward(link, from_client)

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        server = socket.create_connection(self._target)
        link = _Link(client, server)
        self._selector.register(client, selectors.EVENT_READ, (link, True))
        self._selector.register(server, selectors.EVENT_READ, (link, False))

    def _forward(self, link: _Link, from_client: bool) -> None:
        source, target = (link.client, link.server) if from_client else (link.server, link.client)
        try:
            data = source.recv(65536)
        except OSError:
            data = b""
        if not data:
            for sock in (link.client, link.server):
                self._selector.unregister(sock)
                sock.close()
            return
        # Counted before the bytes go on: once the client has its answer, the count
        # of its round trip is complete.
        with self._lock:
            if from_client:
                for kind in link.sent.messages(data):
                    if kind == b"X":
                        continue  # Terminate: nothing is answered
                    if kind == b"E":
                        self._statements += 1
                    if link.waiting == 0 and not link.open:
                        link.open = True
                        self._round_trips += 1
                    if kind in _ANSWERED or kind == b"":
                        link.waiting += 1
            else:
                for kind in link.answered.messages(data):
                    if kind == b"Z":
                        link.waiting -= 1
                        if link.waiting == 0:
                            link.open = False
        target.sendall(data)
