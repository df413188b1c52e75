"""The governing subcommands: ``forget``, ``seal``, ``restore`` and ``delete-event``
(each one :class:`GovernanceCommand`), ``erase-subject`` and ``expire``.

``forget``, ``delete-event`` and ``erase-subject`` remove for good: on a terminal they
ask first (unless ``--yes``), after checking that what they name exists, so a refusal
comes before the question. Off a terminal they proceed without asking. ``seal`` and
``restore`` are reversible and never ask; ``expire`` removes only what the retention of
each event already made due, and never asks either.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from trueheart_core.cli import progress, render
from trueheart_core.cli.common import CORRUPT, OK, confirmed, now, on_terminal, opened
from trueheart_core.cli.failures import UnknownScope
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain import validation
from trueheart_core.domain.model import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    Scope,
)
from trueheart_core.service.trueheart import TrueHeart

__all__ = ["delete_event", "erase_subject", "expire", "forget", "restore", "seal"]

_DONE = {
    GovernanceAction.SEAL: "sealed",
    GovernanceAction.RESTORE: "restored",
    GovernanceAction.FORGET: "forgot",
    GovernanceAction.DELETE: "deleted",
}


def _command(
    args: argparse.Namespace, action: GovernanceAction, entity: EntityType, entity_id: str
) -> GovernanceCommand:
    return GovernanceCommand(args.scope, action, entity, entity_id, now(args.at), args.reason)


def _report(args: argparse.Namespace, out: TextIO, result: GovernanceResult) -> int:
    command = result.command
    doc: dict[str, Any] = {
        "action": command.action.value,
        "scope": format_scope(command.scope),
        "affected_ids": list(result.affected_ids),
        "removed": [artifact.value for artifact in result.removed],
    }
    if args.json:
        render.document(out, doc)
        return OK
    line = f"{_DONE[command.action]} {command.entity_id}"
    if command.action in (GovernanceAction.FORGET, GovernanceAction.DELETE):
        line += f"; removed: {', '.join(doc['removed']) or 'nothing'}"
    if command.entity_type is EntityType.RAW_EVENT:
        derived = [i for i in result.affected_ids if i != command.entity_id]
        line += f"; memories deleted with it: {', '.join(derived) or 'none'}"
    out.write(render.printable(line) + "\n")
    return OK


def _govern(args: argparse.Namespace, out: TextIO, command: GovernanceCommand) -> int:
    with opened(args, write=True) as service:
        result = service.govern(command)
    return _report(args, out, result)


def forget(args: argparse.Namespace, out: TextIO) -> int:
    command = _command(args, GovernanceAction.FORGET, EntityType.MEMORY, args.memory_id)
    with opened(args, write=True) as service:
        if not args.yes and on_terminal():
            service.get_memory(args.scope, args.memory_id)  # refused before asking
            confirmed(args, f"forget {args.memory_id} in {format_scope(args.scope)}? [y/N]")
        result = service.govern(command)
    return _report(args, out, result)


def seal(args: argparse.Namespace, out: TextIO) -> int:
    command = _command(args, GovernanceAction.SEAL, EntityType.MEMORY, args.memory_id)
    return _govern(args, out, command)


def restore(args: argparse.Namespace, out: TextIO) -> int:
    command = _command(args, GovernanceAction.RESTORE, EntityType.MEMORY, args.memory_id)
    return _govern(args, out, command)


def delete_event(args: argparse.Namespace, out: TextIO) -> int:
    command = _command(args, GovernanceAction.DELETE, EntityType.RAW_EVENT, args.event_id)
    with opened(args, write=True) as service:
        if not args.yes and on_terminal():
            service.get_receipt(args.scope, args.event_id)  # refused before asking
            confirmed(
                args,
                f"delete event {args.event_id} in {format_scope(args.scope)}, "
                "and every memory derived from it? [y/N]",
            )
        result = service.govern(command)
    return _report(args, out, result)


def _known(service: TrueHeart, scope: Scope) -> bool:
    """Whether the store holds anything in ``scope`` or has audited it (an erased scope
    keeps its audit records)."""
    held = service.scopes(tenant_id=scope.tenant_id, owner_id=scope.owner_id)
    return scope in held or bool(service.audit(scope, limit=1))


def erase_subject(args: argparse.Namespace, out: TextIO) -> int:
    at = now(args.at)
    with opened(args, write=not args.dry_run) as service:
        if not _known(service, args.scope):
            raise UnknownScope(args.scope, args.db)
        if not args.dry_run:
            subject = args.scope.subject_id
            confirmed(
                args,
                f"erase everything held in {format_scope(args.scope)}? "
                f"type the subject ID ({subject}) to confirm:",
                subject,
            )
        verb = "planning the erasure of" if args.dry_run else "erasing"
        with progress.task(f"{verb} {format_scope(args.scope)} in {args.db}"):
            receipt = service.erase_subject(
                args.scope, occurred_at=at, dry_run=args.dry_run, rewrite=args.rewrite
            )
    if args.json:
        render.document(out, render.erasure(receipt))
    else:
        render.pairs(
            out,
            [
                ("scope", format_scope(receipt.scope)),
                ("occurred at", render.when(receipt.occurred_at)),
                ("dry run", receipt.dry_run),
                ("events", len(receipt.event_ids)),
                ("memories", len(receipt.memory_ids)),
                ("claims", len(receipt.claim_ids)),
            ],
        )
        out.write("\n")
        remaining = receipt.remaining
        render.table(
            out,
            ("artifact", "would erase" if receipt.dry_run else "erased", "remaining"),
            [
                (artifact.value, n, None if remaining is None else remaining[artifact])
                for artifact, n in receipt.erased.items()
            ],
        )
        if receipt.verified is not None:
            out.write(f"\nverified: {'yes' if receipt.verified else 'no'}\n")
        elif not receipt.dry_run:
            out.write("\nverified: not counted (the store was busy after the erasure)\n")
    return CORRUPT if receipt.verified is False else OK


def expire(args: argparse.Namespace, out: TextIO) -> int:
    # Checked as the library checks it, before the progress line shows the time in UTC:
    # a time near the ends of the calendar may have no UTC equivalent.
    as_of = validation.utc("as_of", now(args.at))
    with (
        opened(args, write=True) as service,
        progress.task(f"expiring the raw bodies due by {render.when(as_of)} in {args.db}"),
    ):
        expired = service.expire_raw_content(as_of=as_of)
    if args.json:
        render.document(out, {"as_of": render.when(as_of), "expired": expired})
    else:
        noun = "body" if expired == 1 else "bodies"
        out.write(f"expired {expired} raw {noun} due by {render.when(as_of)}\n")
    return OK
