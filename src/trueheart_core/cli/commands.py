"""The subcommands, by role: each opens the store, makes one or a few library calls and
prints. This module gathers them under one name (the parser registers
``commands.<name>``); they live in :mod:`~trueheart_core.cli.reads`,
:mod:`~trueheart_core.cli.governance`, :mod:`~trueheart_core.cli.maintenance`,
:mod:`~trueheart_core.cli.semantic` and :mod:`~trueheart_core.cli.ingest`, and what they
share in :mod:`~trueheart_core.cli.common`.

Read-only commands open the store read-only and never create a file; every command but
``demo`` refuses a path where no database exists. ``forget``, ``delete-event`` and
``erase-subject`` ask for confirmation when stdin is a terminal, unless ``--yes`` is
given.
"""

from __future__ import annotations

from trueheart_core.cli.common import (
    CORRUPT,
    OK,
    confirmed,
    hint,
    now,
    on_terminal,
    opened,
    progress,
)
from trueheart_core.cli.failures import DatabaseMissing
from trueheart_core.cli.governance import (
    delete_event,
    erase_subject,
    expire,
    forget,
    restore,
    seal,
)
from trueheart_core.cli.ingest import ingest
from trueheart_core.cli.maintenance import backup, compact, rebuild
from trueheart_core.cli.reads import (
    audit,
    list_memories,
    recall,
    scopes,
    search,
    show,
    stats,
    verify,
)
from trueheart_core.cli.semantic import semantic_status, semantic_sync

# The helpers' earlier names here, for the subcommand modules that import them.
_now = now
_hint = hint
_on_terminal = on_terminal

__all__ = [
    "CORRUPT",
    "OK",
    "DatabaseMissing",
    "audit",
    "backup",
    "compact",
    "confirmed",
    "delete_event",
    "erase_subject",
    "expire",
    "forget",
    "ingest",
    "list_memories",
    "opened",
    "progress",
    "rebuild",
    "recall",
    "restore",
    "scopes",
    "seal",
    "search",
    "semantic_status",
    "semantic_sync",
    "show",
    "stats",
    "verify",
]
