"""The library's loggers: lifecycle events an operator needs, never a body.

Every record goes to a standard-library logger under ``trueheart_core``; the library
installs no handler but a ``NullHandler`` (configure logging in the host to see them).
A record carries only fixed text, operation names, counts, schema versions and
durations: never a body, an ID, a scope or metadata, so a log can be shipped anywhere
that the audit log can.

Loggers (documented in ``docs/operations.md``):

* ``trueheart_core.store``: stores opened (``DEBUG``), schema upgrades (``INFO``),
  stores refused by the schema or file checks, and the connections closed because a
  PostgreSQL server stopped answering (``WARNING``);
* ``trueheart_core.erasure``: scrubs that remove erased bytes from the files, the
  rewrites they needed, and scrubs postponed and retried (``INFO``/``WARNING``);
* ``trueheart_core.index``: rebuilds of derived indexes and semantic repairs (``INFO``);
* ``trueheart_core.busy``: units of work refused because another writer or reader held
  the store past the busy timeout (``WARNING``);
* ``trueheart_core.slow``: every unit of work's duration (``DEBUG``), and units that
  took :data:`SLOW_SECONDS` or longer (``WARNING``).
"""

from __future__ import annotations

import logging

ROOT = logging.getLogger("trueheart_core")
ROOT.addHandler(logging.NullHandler())

STORE = logging.getLogger("trueheart_core.store")
ERASURE = logging.getLogger("trueheart_core.erasure")
INDEX = logging.getLogger("trueheart_core.index")
BUSY = logging.getLogger("trueheart_core.busy")
SLOW = logging.getLogger("trueheart_core.slow")

SLOW_SECONDS = 1.0
"""A unit of work that takes at least this long (seconds, wall time, from its begin to
its end, scrub included) is logged at ``WARNING`` on ``trueheart_core.slow``."""


def unit_finished(operation: str, *, write: bool, seconds: float) -> None:
    """Record a finished unit of work's duration (slow ones as a warning)."""
    level = logging.WARNING if seconds >= SLOW_SECONDS else logging.DEBUG
    if SLOW.isEnabledFor(level):
        SLOW.log(
            level,
            "%s operation %s took %.3f s",
            "write" if write else "read",
            operation,
            seconds,
        )


def busy(operation: str, diagnostic: str) -> None:
    """Record a unit of work refused as busy (the caller may retry it)."""
    BUSY.warning("%s refused, repository busy: %s", operation, diagnostic)
