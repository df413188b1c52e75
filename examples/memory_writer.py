"""Memory writer walkthrough: a model's memories and claims, checked against the message.

Run it from anywhere: ``python examples/memory_writer.py``. It needs the ``writer`` extra
(``pip install 'trueheart-core[writer]'``); without it, it says so in one line and exits.

There is no real model and no network: a small chat-completions server runs in this
process on a loopback port and answers with scripted JSON, as a model might, including
mistakes. The writer keeps only what the message says where the model says it does:
an invented quote and a value outside its quote are dropped and reported by code. The
second message repeats a memory (skipped) and changes a preference (the new claim
supersedes the old one, in the same scope). A failing model stores nothing. It uses
synthetic data, fixed times and a temporary SQLite file removed on exit; its output is
deterministic.
"""

from __future__ import annotations

import importlib
import json
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from trueheart_core import (
    ClaimQuery,
    ProviderError,
    RetentionPolicy,
    Scope,
    SQLiteRepository,
    TrueHeart,
)
from trueheart_core.integrations.writer import ChatSettings, MemoryWriter

SCOPE = Scope("synthetic-tenant", "chat-assistant", "synthetic-ada")
RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=30), clear_for=timedelta(days=90), recall_for=timedelta(days=365)
)
MAY = datetime(2026, 5, 20, 9, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)

FIRST = "Hi, I'm Ada. I moved to Lisbon in May. My favourite colour is teal."
SECOND = "Quick update: my favourite colour is orange now. I moved to Lisbon in May."
THIRD = "I also play the cello."


def _colour(quote: str, value: str) -> dict[str, Any]:
    return {"subject": "favourite colour", "predicate": "is", "value": value, "quote": quote}


# What the scripted "model" answers to each message: a JSON object, or an HTTP status.
ANSWERS: dict[str, dict[str, Any] | int] = {
    FIRST: {
        "memories": [
            {"content": "I moved to Lisbon in May", "quote": "I moved to Lisbon in May."},
            {"content": "Ada owns a boat", "quote": "I own a boat."},  # invented quote
        ],
        "claims": [
            _colour("My favourite colour is teal.", "teal"),
            _colour("My favourite colour is teal.", "crimson"),  # not in its quote
        ],
    },
    SECOND: {
        "memories": [{"content": "I moved to Lisbon in May", "quote": "I moved to Lisbon in May."}],
        "claims": [_colour("my favourite colour is orange now.", "orange")],
    },
    THIRD: 500,
}


def _handler() -> type[BaseHTTPRequestHandler]:
    class ScriptedModel(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["content-length"])))
            scripted = ANSWERS.get(request["messages"][-1]["content"], 404)
            status = 200
            body: dict[str, Any]
            if isinstance(scripted, int):
                status, body = scripted, {"error": {"message": "scripted failure"}}
            else:
                body = {
                    "id": "example",
                    "object": "chat.completion",
                    "created": 0,
                    "model": request["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": json.dumps(scripted)},
                        }
                    ],
                }
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return ScriptedModel


@contextmanager
def scripted_model() -> Iterator[str]:
    """A chat-completions server on 127.0.0.1 (a free port); yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler())
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _writer_extra_installed() -> bool:
    try:
        importlib.import_module("openai")
    except ImportError:
        return False
    return True


def main(temporary_root: str | Path | None = None) -> int:
    if not _writer_extra_installed():
        print("this example needs the writer extra: pip install 'trueheart-core[writer]'")
        return 0
    with tempfile.TemporaryDirectory(dir=temporary_root) as directory, scripted_model() as url:
        repository = SQLiteRepository(Path(directory) / "memory.db")
        with TrueHeart(repository, clock=lambda: JUNE) as memory:
            settings = ChatSettings(
                model="scripted-model", base_url=url, api_key="not-needed", max_retries=0
            )
            with MemoryWriter(memory, settings, retention=RETENTION) as writer:
                first = writer.write(SCOPE, FIRST, event_id="turn-1", occurred_at=MAY)
                dropped = ", ".join(f"{code} {n}" for code, n in first.dropped_counts().items())
                print(
                    f"turn-1: {len(first.memories)} memory, {len(first.claims)} claim written; "
                    f"dropped: {dropped}"
                )
                for stored in first.memories:
                    start, end = stored.metadata["span_start"], stored.metadata["span_end"]
                    print(f"  memory {stored.content!r} from span {start}-{end}")
                for span in first.extraction.spans:
                    print(f"  claim read from {FIRST[span.start : span.end]!r}")

                second = writer.write(
                    SCOPE, SECOND, event_id="turn-2", occurred_at=MAY + timedelta(days=5)
                )
                skipped = [issue.code for issue in second.dropped]
                print(f"turn-2: skipped {', '.join(skipped)}; supersedes {len(second.superseded)}")
                answer = memory.claims(ClaimQuery(SCOPE, as_of=JUNE, subject="favourite colour"))
                for view in answer.claims:
                    print(f"  favourite colour is {view.claim.value}: {view.status}")

                try:
                    writer.write(SCOPE, THIRD, event_id="turn-3", occurred_at=JUNE)
                except ProviderError as error:
                    print(f"turn-3: {type(error).__name__}: {error}")
                stats = memory.stats(SCOPE)
                print(
                    f"in the scope: events {stats.events}, claims {stats.claims}, "
                    f"other memories {stats.memories - stats.claims}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
