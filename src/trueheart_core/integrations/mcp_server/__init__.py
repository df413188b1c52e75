"""An MCP (Model Context Protocol) server over one TrueHeart store and one scope.

``trueheart mcp --store PATH --scope TENANT/OWNER/SUBJECT`` serves it (see
``docs/integrations.md``). :mod:`.tools` declares and runs the tools without the MCP
SDK; :mod:`.server` puts them on the wire with the SDK (the ``mcp`` extra) and is
imported only by the command that serves. Importing this package imports neither the
SDK nor the server module.
"""

from trueheart_core.integrations.mcp_server.tools import (
    DEFAULT_KIND,
    DEFAULT_RETENTION,
    READING_TOOLS,
    WRITING_TOOLS,
    MemoryTools,
    ToolFailure,
    ToolSpec,
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
