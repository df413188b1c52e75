"""``trueheart demo PATH``: a small synthetic store, walked through its lifecycle.

Ingest, materialise, search, seal, forget, erase a subject, verify; each step printed.
Every step happens at one instant, the demo's clock: the current time (to the second),
so that the store's memories are visible to a ``recall`` or ``search`` made just after,
or ``--at TIME``, with which the output is the same on every run except for the path.
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from trueheart_core import stores
from trueheart_core.cli import render
from trueheart_core.cli.failures import TargetExists, TargetRefused
from trueheart_core.cli.newfile import built_in_place
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.model import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrustLevel,
)
from trueheart_core.domain.search.model import SearchQuery
from trueheart_core.service.trueheart import TrueHeart

ALICE = Scope("demo", "agent", "alice")
BOB = Scope("demo", "agent", "bob")
_BUSY_TIMEOUT = 5.0
"""How long the demo waits for its own store's lock (no other process knows its name)."""
RETENTION = RetentionPolicy(timedelta(days=7), timedelta(days=30), timedelta(days=90))
EVENTS = (
    (ALICE, "evt-1", "I drink green tea every morning."),
    (ALICE, "evt-2", "My sister lives in Lisbon."),
    (ALICE, "evt-3", "Please call me Ali."),
    (BOB, "evt-1", "I prefer black tea, no sugar."),
)
MEMORIES = (
    (ALICE, "mem-1", "evt-1", "Drinks green tea in the morning.", "habit"),
    (ALICE, "mem-2", "evt-2", "Has a sister in Lisbon.", "family"),
    (ALICE, "mem-3", "evt-3", "Prefers to be called Ali.", "preference"),
    (BOB, "mem-1", "evt-1", "Takes black tea without sugar.", "preference"),
)


def _event(scope: Scope, event_id: str, content: str, now: datetime) -> RawEventDraft:
    source = SourceRef("demo-chat", "chat", now, TrustLevel.OBSERVED)
    return RawEventDraft(event_id, scope, source, content, RETENTION)


def _govern(action: GovernanceAction, memory_id: str, now: datetime) -> GovernanceCommand:
    return GovernanceCommand(ALICE, action, EntityType.MEMORY, memory_id, now, "demo")


def clock(at: datetime | None) -> datetime:
    """The demo's instant: ``at``, or the current time in UTC to the second."""
    return datetime.now(UTC).replace(microsecond=0) if at is None else at


def run(args: argparse.Namespace, out: TextIO) -> int:
    if stores.is_server_url(args.path):
        raise TargetRefused(stores.redacted(args.path), "demo creates a new SQLite file")
    path = os.path.abspath(args.path)
    if os.path.lexists(path):
        raise TargetExists(args.path, "demo creates a new store")
    # Built whole under another name, then linked into place: a demo that does not
    # finish leaves nothing, and never writes into (or removes) a file another process
    # made at the path meanwhile.
    return built_in_place(
        args.path,
        lambda temporary: _walk(args, out, path, temporary),
        busy_timeout=_BUSY_TIMEOUT,
        purpose="demo",
    )


def _walk(args: argparse.Namespace, out: TextIO, path: str, temporary: str) -> int:
    now = clock(args.at)
    steps: list[dict[str, Any]] = []

    def step(name: str, text: str, **fields: Any) -> None:
        steps.append({"step": name, **fields})
        if not args.json:
            out.write(f"{len(steps)}. {name}: {text}\n")

    with TrueHeart(stores.open_repository(temporary), clock=lambda: now) as service:
        step("create", f"new store at {render.printable(path)}", path=path)
        service.ingest_events([_event(scope, eid, text, now) for scope, eid, text in EVENTS])
        step("ingest", "3 events for demo/agent/alice, 1 for demo/agent/bob", events=len(EVENTS))
        for scope, memory_id, source, content, kind in MEMORIES:
            service.materialize_once(
                MemoryDraft(memory_id, scope, content, (source,), kind, TrustLevel.OBSERVED, now)
            )
        step("materialize", "3 memories for alice, 1 for bob", memories=len(MEMORIES))
        found = service.search(SearchQuery(ALICE, "green tea", now))
        ids = [item.memory.memory_id for item in found.items]
        step("search", f"alice, 'green tea': {', '.join(ids)}", matched=found.matched, ids=ids)
        service.govern(_govern(GovernanceAction.SEAL, "mem-2", now))
        step("seal", "mem-2 is kept but no longer recalled or searched", memory_id="mem-2")
        removed = [
            a.value for a in service.govern(_govern(GovernanceAction.FORGET, "mem-3", now)).removed
        ]
        step("forget", f"mem-3; removed: {', '.join(removed)}", memory_id="mem-3", removed=removed)
        receipt = service.erase_subject(ALICE, occurred_at=now)
        erased = render.counts(receipt.erased) or {}
        summary = ", ".join(f"{n} {name}" for name, n in erased.items() if n)
        step(
            "erase-subject",
            f"{format_scope(ALICE)}: {summary}; verified: {'yes' if receipt.verified else 'no'}",
            erased=erased,
            verified=receipt.verified,
        )
        report = service.verify_integrity()
        bob = service.stats(BOB)
        step(
            "verify",
            f"{'ok' if report.ok else 'problems'}, {report.rows_checked} rows checked; "
            f"bob still has {bob.memories} memory",
            ok=report.ok,
            rows_checked=report.rows_checked,
        )
    if args.json:
        render.document(out, {"path": path, "steps": steps})
    return 0 if report.ok and receipt.verified else 4
