"""The subcommands: each opens the store, makes one or two library calls and prints.

Read-only commands open the store read-only and never create a file; every command but
``demo`` refuses a path where no database exists.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TextIO

from trueheart_core.adapters.sqlite import SQLiteRepository
from trueheart_core.cli import render
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    RecallQuery,
)
from trueheart_core.retrieval.model import SearchQuery
from trueheart_core.service import TrueHeart

OK = 0
CORRUPT = 4


class DatabaseMissing(Exception):
    """No database file at the given path (exit status 3)."""


def progress(message: str) -> None:
    """One progress line on stderr, before a long operation."""
    sys.stderr.write(f"trueheart: {message}\n")
    sys.stderr.flush()


@contextmanager
def opened(args: argparse.Namespace, *, write: bool) -> Iterator[TrueHeart]:
    """The store at ``args.db``; read-only unless ``write``. Never creates a file."""
    if not os.path.exists(args.db):
        raise DatabaseMissing(args.db)
    repository = SQLiteRepository(args.db, busy_timeout=args.busy_timeout, read_only=not write)
    with TrueHeart(repository) as service:
        yield service


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


def backup(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        progress(f"backing up {args.db} to {args.target}")
        report = service.backup(args.target)
    doc = render.backup(report)
    if args.json:
        render.document(out, doc)
    else:
        render.pairs(out, list(doc.items()))
    return OK
