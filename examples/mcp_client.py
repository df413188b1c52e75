"""MCP walkthrough: an MCP client talking to ``trueheart mcp`` over stdio.

Run it from anywhere: ``python examples/mcp_client.py`` (with the ``mcp`` extra:
``pip install "trueheart-core[mcp]"``; without it, the example says it is skipped and
exits with status 0). It starts ``trueheart mcp`` as a child process, against a new store
in a temporary directory bound to one scope, connects with the MCP SDK's stdio client,
remembers a preference, searches for it, forgets it, and shows that the same
idempotency key cannot bring it back. The temporary directory, and the store in it, are
removed at the end. The lines it prints do not depend on the time it runs.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import trueheart_core

try:
    import anyio  # type: ignore[import-not-found, unused-ignore]
    from mcp import Client, StdioServerParameters, stdio_client  # type: ignore[import-not-found, unused-ignore]
    from mcp.types import TextContent  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # the mcp extra is not installed
    HAVE_SDK = False
else:
    HAVE_SDK = True

SCOPE = "example/assistant/ada"
SKIPPED = "skipped: the MCP SDK is not installed (pip install 'trueheart-core[mcp]')"


async def walk_through(store: Path, log: Any) -> None:
    source = Path(trueheart_core.__file__).resolve().parents[1]  # this library, for the child
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "trueheart_core.cli",
            "mcp",
            "--store",
            str(store),
            "--scope",
            SCOPE,
            "--create",
        ],
        env={"PYTHONPATH": str(source)},
    )
    async with Client(stdio_client(server, errlog=log)) as client:
        tools = (await client.list_tools()).tools
        print(f"connected: {len(tools)} tools for {SCOPE}")

        remember = {
            "content": "Prefers green tea in the morning.",
            "kind": "preference",
            "idempotency_key": "morning-drink",
        }
        stored = (await client.call_tool("remember", remember)).structured_content
        memory_id = stored["memory"]["memory_id"]
        print(f"remembered: {stored['memory']['content']} ({stored['memory']['kind']})")

        found = (await client.call_tool("search_memory", {"query": "green tea"})).structured_content
        print(f"search 'green tea': {[item['content'] for item in found['items']]}")

        forgot = (
            await client.call_tool("forget_memory", {"memory_id": memory_id, "reason": "asked to"})
        ).structured_content
        print(f"forgot it; removed: {', '.join(forgot['removed'])}")

        found = (await client.call_tool("search_memory", {"query": "green tea"})).structured_content
        print(f"search 'green tea': {[item['content'] for item in found['items']]}")

        again = await client.call_tool("remember", remember)
        block = again.content[0]
        text = block.text if isinstance(block, TextContent) else ""
        message = text.replace(memory_id, "<memory id>")
        print(f"remember with the same key: error={again.is_error}: {message}")


def main() -> int:
    if not HAVE_SDK:
        print(SKIPPED)
        return 0
    with tempfile.TemporaryDirectory() as directory:
        store = Path(directory) / "memory.db"
        log_path = Path(directory) / "server.log"
        with log_path.open("w") as log:
            try:
                anyio.run(walk_through, store, log)
            except BaseException:
                log.flush()
                sys.stderr.write(log_path.read_text())
                raise
    print("done: the temporary store is removed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
