"""TrueHeart memory for the OpenAI Agents SDK (the ``openai-agents`` extra).

* :func:`memory_tools`: function tools (``search_memory``, ``remember``,
  ``forget_memory``, ``claims``, ``remember_claim``) bound by the host to one exact
  scope.
* :class:`TrueHeartSession`: the SDK's ``Session`` protocol, keeping conversation
  history as governed, audited, expiring and erasable records of a scope.

Importing this package imports the SDK (``agents``); ``import trueheart_core`` does
not. See ``docs/integrations.md``.
"""

try:
    import agents as _agents  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
except ImportError:
    raise ImportError(
        "trueheart_core.integrations.openai_agents needs the OpenAI Agents SDK: "
        'pip install "trueheart-core[openai-agents]"'
    ) from None

from trueheart_core.integrations.openai_agents.session import (
    DEFAULT_SESSION_RETENTION,
    TrueHeartSession,
)
from trueheart_core.integrations.openai_agents.tools import (
    DEFAULT_MEMORY_RETENTION,
    MEMORY_KIND,
    memory_tools,
    tool_error_message,
)

__all__ = [
    "DEFAULT_MEMORY_RETENTION",
    "DEFAULT_SESSION_RETENTION",
    "MEMORY_KIND",
    "TrueHeartSession",
    "memory_tools",
    "tool_error_message",
]
