"""The reading subcommands: ``stats``, ``verify``, ``scopes``, ``audit``, ``recall``,
``search``, ``list`` and ``show``. Each opens the store read-only, makes one library
call and prints."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import TextIO

from trueheart_core.cli import progress, render
from trueheart_core.cli.common import CORRUPT, OK, hint, now, opened
from trueheart_core.cli.common import progress as progress_line
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.model import MemoryStatus, RecallQuery
from trueheart_core.domain.search.model import MemoryCapsule, SearchQuery

__all__ = ["audit", "list_memories", "recall", "scopes", "search", "show", "stats", "verify"]


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
    with opened(args, write=False) as service, progress.task(f"verifying {args.db}"):
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
    as_of = now(args.as_of)
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
        hint(args, as_of, out, "nothing to recall")
    return OK


def search(args: argparse.Namespace, out: TextIO) -> int:
    as_of = now(args.as_of)
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
        hint(args, as_of, out, "no memory matches")
    elif not capsule.items:
        _budget_hint(args, as_of, out, capsule)
    return OK


def _budget_hint(
    args: argparse.Namespace, as_of: datetime, out: TextIO, capsule: MemoryCapsule
) -> None:
    """The hint when memories matched but none was returned: a search returns whole
    memories, and the budget is smaller than the cost of each. With a budget of the
    cheapest one's cost, that one at least fits when its turn comes."""
    out.flush()
    matched = capsule.matched
    budget = capsule.budget_tokens
    cheapest = min((entry.tokens for entry in capsule.trace), default=None)
    advice = (
        "; try a larger --budget"
        if cheapest is None
        else f" (the smallest takes {cheapest}); try --budget {cheapest} or more"
    )
    progress_line(
        f"hint: {matched} {'memory matches' if matched == 1 else 'memories match'} in "
        f"{format_scope(args.scope)} as of {render.when(as_of)}, but none fits in "
        f"{budget} {'token' if budget == 1 else 'tokens'}{advice}"
    )


def list_memories(args: argparse.Namespace, out: TextIO) -> int:
    """Print one page of the memories of ``args.scope`` in ID order (reversed with
    ``--descending``); when more follow, the cursor of the next page goes to stderr
    (``next_cursor`` with ``--json``)."""
    status = None if args.status is None else MemoryStatus(args.status)
    with opened(args, write=False) as service:
        page = service.list_memories(
            args.scope,
            status=status,
            kinds=tuple(args.kind),
            limit=args.limit,
            cursor=args.cursor,
            descending=args.descending,
        )
    if args.json:
        doc = {
            "scope": format_scope(args.scope),
            "memories": [render.memory(m) for m in page.items],
            "next_cursor": page.next_cursor,
        }
        render.document(out, doc)
        return OK
    render.table(
        out,
        ("memory id", "status", "kind", "created at", "content"),
        [
            (m.memory_id, m.status.value, m.kind, render.when(m.created_at), m.content)
            for m in page.items
        ],
        clip="content",
    )
    out.flush()
    if page.next_cursor is not None:
        progress_line(f"more memories: run the same command with --cursor {page.next_cursor}")
    elif not page.items and args.cursor is None:
        progress_line(
            f"hint: no memories listed in {format_scope(args.scope)}; "
            f"list the scopes with {render.command('trueheart', 'scopes', args.db)}"
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


def scopes(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        found = service.scopes(tenant_id=args.tenant, owner_id=args.owner)
    if args.json:
        render.document(out, {"scopes": [format_scope(scope) for scope in found]})
    else:
        out.writelines(f"{format_scope(scope)}\n" for scope in found)  # escaped, printable
    return OK
