"""An MCP (Model Context Protocol) server over one TrueHeart store and one scope.

``trueheart mcp --store PATH --scope TENANT/OWNER/SUBJECT`` serves it (see
``docs/integrations.md``). Without the MCP SDK, :mod:`.tools` runs the tools,
:mod:`.schemas` declares them, :mod:`.arguments` checks a call's arguments,
:mod:`.documents` builds its results, :mod:`.events` names and deletes the source events
of the writes and :mod:`.trust` names the trust levels; :mod:`.server` puts the tools on
the wire with the SDK (the ``mcp`` extra) and is imported only by the command that
serves. Importing this package imports neither the SDK nor the server module.
"""

from trueheart_core.integrations.mcp_server.schemas import (
    DEFAULT_KIND,
    READING_TOOLS,
    WRITING_TOOLS,
    ToolSpec,
)
from trueheart_core.integrations.mcp_server.tools import (
    DEFAULT_RETENTION,
    MemoryTools,
    ToolFailure,
    UnknownTool,
)

__all__ = [
    "DEFAULT_KIND",
    "DEFAULT_RETENTION",
    "READING_TOOLS",
    "WRITING_TOOLS",
    "MemoryTools",
    "ToolFailure",
    "ToolSpec",
    "UnknownTool",
]
