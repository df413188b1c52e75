"""``trueheart claims``: one page of the claims of a scope, with their status and the
conflicts among the current ones.

The page is a :class:`trueheart_core.ClaimQuery` with a limit (default 100). When more
claims follow, the text output ends with a hint on stderr: the options to add to the
same command for the next page, ``--as-of`` and ``--known-at`` as this page used them
and ``--cursor`` (a cursor only works for the same query); ``--json`` gives
``next_cursor``.
"""

from __future__ import annotations

import argparse
import shlex
from datetime import UTC, datetime
from typing import TextIO

from trueheart_core.cli import render
from trueheart_core.cli.commands import opened, progress
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain.claims import MAX_CLAIM_PAGE, ClaimQuery, ClaimSet, ClaimView

__all__ = ["DEFAULT_LIMIT", "claims", "page_limit"]

DEFAULT_LIMIT = 100
OK = 0


def page_limit(text: str) -> int:
    """A ``--limit`` from 1 through 1000."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number") from None
    if not 1 <= value <= MAX_CLAIM_PAGE:
        raise argparse.ArgumentTypeError(f"must be from 1 through {MAX_CLAIM_PAGE}")
    return value


def _maybe(value: datetime | None) -> str | None:
    return None if value is None else render.when(value)


def view(value: ClaimView) -> render.Document:
    """A claim's view as a JSON-ready document."""
    claim = value.claim
    return {
        "claim_id": claim.claim_id,
        "subject": claim.subject,
        "predicate": claim.predicate,
        "value": claim.value,
        "status": value.status.value,
        "valid_from": _maybe(claim.valid_from),
        "valid_to": _maybe(claim.valid_to),
        "confidence": claim.confidence,
        "authority": claim.authority,
        "supersedes": claim.supersedes,
        "superseded_by": list(value.superseded_by),
        "trust": claim.memory.trust.name.lower(),
        "created_at": render.when(claim.created_at),
        "source_event_ids": list(claim.memory.source_event_ids),
    }


def _next_options(answer: ClaimSet, cursor: str) -> str:
    """The options that ask the same query for the next page (its other options, such
    as a subject, are not repeated: they may be body text)."""
    words = ["--as-of", render.when(answer.as_of), "--known-at", render.when(answer.known_at)]
    return " ".join(shlex.quote(word) for word in [*words, "--cursor", cursor])


def claims(args: argparse.Namespace, out: TextIO) -> int:
    """Print one page of the claims of ``args.scope``."""
    as_of = datetime.now(UTC) if args.as_of is None else args.as_of
    query = ClaimQuery(
        args.scope,
        as_of,
        known_at=args.known_at,
        subject=args.subject,
        predicate=args.predicate,
        limit=args.limit,
        cursor=args.cursor,
    )
    with opened(args, write=False) as service:
        answer = service.claims(query)
    if args.json:
        doc = {
            "scope": format_scope(args.scope),
            "as_of": render.when(answer.as_of),
            "known_at": render.when(answer.known_at),
            "claims": [view(v) for v in answer.claims],
            "conflicts": [list(c.claim_ids) for c in answer.conflicts],
            "next_cursor": answer.next_cursor,
        }
        render.document(out, doc)
        return OK
    render.table(
        out,
        ("claim id", "subject", "predicate", "value", "status", "valid from", "valid to"),
        [
            (
                v.claim.claim_id,
                v.claim.subject,
                v.claim.predicate,
                v.claim.value,
                v.status.value,
                _maybe(v.claim.valid_from),
                _maybe(v.claim.valid_to),
            )
            for v in answer.claims
        ],
        clip="value",
    )
    for conflict in answer.conflicts:
        out.write(render.printable(f"conflict: {' '.join(conflict.claim_ids)}") + "\n")
    out.flush()
    if answer.next_cursor is not None:
        progress(
            "more claims: run the same command with " + _next_options(answer, answer.next_cursor)
        )
    elif not answer.claims and args.cursor is None:
        progress(
            f"hint: no claims in {format_scope(args.scope)} as of {render.when(answer.as_of)}"
            f" known at {render.when(answer.known_at)}; try another --as-of or --known-at"
        )
    return OK
