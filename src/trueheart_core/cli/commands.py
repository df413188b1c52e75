"""The subcommands: each opens the store, makes one or two library calls and prints.

Read-only commands open the store read-only and never create a file; every command but
``demo`` refuses a path where no database exists. ``forget`` and ``erase-subject`` ask
for confirmation when stdin is a terminal, unless ``--yes`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TextIO

from trueheart_core.adapters.sqlite import SQLiteRepository
from trueheart_core.cli import render
from trueheart_core.cli.failures import (
    DatabaseMissing,
    NotConfirmed,
    TargetExists,
    TargetRefused,
    UnknownScope,
)
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.model import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    RecallQuery,
    Scope,
)
from trueheart_core.domain.search.model import SearchQuery
from trueheart_core.errors import ValidationError
from trueheart_core.service.trueheart import TrueHeart

__all__ = ["DatabaseMissing", "confirmed", "opened", "progress"]

OK = 0
CORRUPT = 4


def progress(message: str) -> None:
    """One progress line on stderr, before a long operation."""
    sys.stderr.write(f"trueheart: {message}\n")
    sys.stderr.flush()


def _hint(args: argparse.Namespace, as_of: datetime, out: TextIO, what: str) -> None:
    """One line on stderr when a read shows nothing (text output only), after what
    ``out`` holds so far."""
    out.flush()
    progress(
        f"hint: {what} in {format_scope(args.scope)} as of {render.when(as_of)}; "
        f"try another --as-of, or list the scopes with 'trueheart scopes {shlex.quote(args.db)}'"
    )


def _on_terminal() -> bool:
    stdin = sys.stdin
    try:
        return stdin is not None and stdin.isatty()
    except ValueError:  # closed
        return False


def confirmed(args: argparse.Namespace, question: str, answer: str | None = None) -> None:
    """Ask ``question`` on stderr when stdin is a terminal and ``--yes`` was not given,
    and raise :class:`NotConfirmed` unless the reply is ``answer`` (or, when ``answer``
    is ``None``, y or yes). Off a terminal, or with ``--yes``, proceeds without asking."""
    if args.yes or not _on_terminal():
        return
    sys.stderr.write(f"trueheart: {question} ")
    sys.stderr.flush()
    try:
        reply = sys.stdin.readline().strip()  # "" at the end of input: declined
    except OSError:  # the terminal went away
        reply = ""
    accepted = reply.lower() in ("y", "yes") if answer is None else reply == answer
    if not accepted:
        raise NotConfirmed


@contextmanager
def opened(args: argparse.Namespace, *, write: bool) -> Iterator[TrueHeart]:
    """The store at ``args.db``; read-only unless ``write``. Never creates a file."""
    if not os.path.exists(args.db):
        raise DatabaseMissing(args.db)
    repository = SQLiteRepository(args.db, busy_timeout=args.busy_timeout, read_only=not write)
    with TrueHeart(repository) as service:
        yield service


def _known(service: TrueHeart, scope: Scope) -> bool:
    """Whether the store holds anything in ``scope`` or has audited it (an erased scope
    keeps its audit records)."""
    held = service.scopes(tenant_id=scope.tenant_id, owner_id=scope.owner_id)
    return scope in held or bool(service.audit(scope, limit=1))


def _now(value: datetime | None) -> datetime:
    return datetime.now(UTC) if value is None else value


def stats(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        found = service.stats(args.scope)
    doc = render.stats(found)
    if args.json:
        render.document(out, doc)
        return OK
    items: list[tuple[str, object]] = [("scope", doc["scope"] or "(whole store)")]
    for name in (
        "events",
        "events_with_body",
        "events_without_body",
        "memories",
        "active_memories",
        "sealed_memories",
    ):
        items.append((name, doc[name]))
    items += [(f"memories of kind {k}", n) for k, n in found.memories_by_kind]
    for name in (
        "claims",
        "extraction_records",
        "tombstones",
        "audit_records",
        "search_entries",
        "search_terms",
        "search_postings",
        "vectors",
        "storage_bytes",
        "database_bytes",
        "wal_bytes",
    ):
        items.append((name, doc[name]))
    render.pairs(out, items)
    return OK


def verify(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        progress(f"verifying {args.db}")
        report = service.verify_integrity(args.scope)
    if args.json:
        render.document(out, render.integrity(report))
    elif report.ok:
        out.write(f"ok: {report.rows_checked} rows checked, no problems\n")
    else:
        render.table(
            out,
            ("entity type", "entity id", "scope", "code"),
            [
                (p.entity_type, p.entity_id, render.scope_text(p.scope), p.code)
                for p in report.problems
            ],
        )
        count = len(report.problems)
        noun = "problem" if count == 1 else "problems"
        out.write(f"{count} {noun} in {report.rows_checked} rows checked\n")
    return OK if report.ok else CORRUPT


def audit(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        records = service.audit(args.scope, limit=args.limit)
    if args.json:
        doc = {"scope": format_scope(args.scope), "records": [render.audit(r) for r in records]}
        render.document(out, doc)
        return OK
    render.table(
        out,
        ("occurred at", "action", "entity type", "entity id", "reason"),
        [
            (render.when(r.occurred_at), r.action, r.entity_type.value, r.entity_id, r.reason)
            for r in records
        ],
    )
    return OK


def recall(args: argparse.Namespace, out: TextIO) -> int:
    as_of = _now(args.as_of)
    query = RecallQuery(args.scope, as_of, args.limit, tuple(args.kind))
    with opened(args, write=False) as service:
        items = service.recall(query)
    if args.json:
        doc = {
            "scope": format_scope(args.scope),
            "as_of": render.when(as_of),
            "items": [{"clarity": item.clarity, **render.memory(item.memory)} for item in items],
        }
        render.document(out, doc)
        return OK
    render.table(
        out,
        ("clarity", "memory id", "kind", "created at", "content"),
        [
            (
                f"{i.clarity:.2f}",
                i.memory.memory_id,
                i.memory.kind,
                render.when(i.memory.created_at),
                i.memory.content,
            )
            for i in items
        ],
        clip="content",
    )
    if not items:
        _hint(args, as_of, out, "nothing to recall")
    return OK


def search(args: argparse.Namespace, out: TextIO) -> int:
    as_of = _now(args.as_of)
    query = SearchQuery(args.scope, args.text, as_of, args.budget, args.limit, tuple(args.kind))
    with opened(args, write=False) as service:
        capsule = service.search(query)
    if args.json:
        doc = {
            "scope": format_scope(args.scope),
            "as_of": render.when(as_of),
            "matched": capsule.matched,
            "budget_tokens": capsule.budget_tokens,
            "used_tokens": capsule.used_tokens,
            "items": [
                {
                    "rank": item.rank,
                    "score": item.score,
                    "clarity": item.clarity,
                    "tokens": item.tokens,
                    **render.memory(item.memory),
                }
                for item in capsule.items
            ],
        }
        render.document(out, doc)
        return OK
    render.table(
        out,
        ("rank", "score", "memory id", "tokens", "content"),
        [
            (i.rank, round(i.score, 3), i.memory.memory_id, i.tokens, i.memory.content)
            for i in capsule.items
        ],
        clip="content",
    )
    out.write(
        f"{capsule.matched} matched, {len(capsule.items)} returned, "
        f"{capsule.used_tokens} of {capsule.budget_tokens} tokens\n"
    )
    if capsule.matched == 0:
        _hint(args, as_of, out, "no memory matches")
    return OK


def show(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        if args.event:
            doc = render.receipt(service.get_receipt(args.scope, args.id))
        else:
            doc = render.memory(service.get_memory(args.scope, args.id))
    if args.json:
        render.document(out, doc)
        return OK
    content = doc.pop("content", None)
    render.pairs(out, [(name, _plain(value)) for name, value in doc.items()])
    if content is not None:
        out.write(f"content\n{content}\n")
    return OK


def _plain(value: object) -> object:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else "-"
    return value


def forget(args: argparse.Namespace, out: TextIO) -> int:
    command = GovernanceCommand(
        args.scope,
        GovernanceAction.FORGET,
        EntityType.MEMORY,
        args.memory_id,
        _now(args.at),
        args.reason,
    )
    with opened(args, write=True) as service:
        if not args.yes and _on_terminal():
            service.get_memory(args.scope, args.memory_id)  # refused before asking
            confirmed(args, f"forget {args.memory_id} in {format_scope(args.scope)}? [y/N]")
        result = service.govern(command)
    doc = {
        "action": "forget",
        "scope": format_scope(args.scope),
        "affected_ids": list(result.affected_ids),
        "removed": [artifact.value for artifact in result.removed],
    }
    if args.json:
        render.document(out, doc)
    else:
        removed = ", ".join(doc["removed"]) or "nothing"
        out.write(f"forgot {args.memory_id}; removed: {removed}\n")
    return OK


def erase_subject(args: argparse.Namespace, out: TextIO) -> int:
    at = _now(args.at)
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
        progress(f"{verb} {format_scope(args.scope)} in {args.db}")
        receipt = service.erase_subject(args.scope, occurred_at=at, dry_run=args.dry_run)
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
    return CORRUPT if receipt.verified is False else OK


def rebuild(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=True) as service:
        progress(f"rebuilding the indexes of {args.db}")
        report = service.rebuild_indexes()
    doc = render.rebuild(report)
    if args.json:
        render.document(out, doc)
    else:
        render.pairs(out, list(doc.items()))
    return OK


def scopes(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        found = service.scopes(tenant_id=args.tenant, owner_id=args.owner)
    if args.json:
        render.document(out, {"scopes": [format_scope(scope) for scope in found]})
    else:
        out.writelines(f"{format_scope(scope)}\n" for scope in found)
    return OK


def backup(args: argparse.Namespace, out: TextIO) -> int:
    if os.path.lexists(args.target):
        raise TargetExists(args.target, "backup writes a new file")
    with opened(args, write=False) as service:
        progress(f"backing up {args.db} to {args.target}")
        try:
            report = service.backup(args.target)
        except ValidationError as error:
            field, _, rule = str(error).partition(": ")
            if field != "path":
                raise
            raise TargetRefused(args.target, rule) from None
    doc = render.backup(report)
    if args.json:
        render.document(out, doc)
    else:
        render.pairs(out, list(doc.items()))
    return OK
