"""The semantic subcommands: ``semantic-status`` (how far each scope's memories are
projected) and ``semantic-sync`` (embed what is missing or stale, with an embedder named
by an import path).

``--embedder MODULE:ATTR`` names an object importable by the Python that runs the
command (the current directory is searched after the installed packages): an
:class:`~trueheart_core.Embedder`, or a class or function that returns one when called
without arguments (``trueheart_core:HashingEmbedder``). The service is opened with it,
which registers its vector space in a store that has none, as ``TrueHeart(...,
embedder=...)`` does; a path that does not name one is a usage error (exit status 2).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from typing import Any, TextIO

from trueheart_core.cli import progress, render
from trueheart_core.cli.common import OK, opened
from trueheart_core.cli.failures import CommandFailure
from trueheart_core.cli.scopes import format_scope
from trueheart_core.domain import validation
from trueheart_core.domain.model import Scope
from trueheart_core.domain.semantic.embedders import Embedder
from trueheart_core.domain.semantic.model import SemanticStatus
from trueheart_core.errors import (
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    SemanticProjectionError,
    ValidationError,
)
from trueheart_core.service import semantic as semantic_space
from trueheart_core.service.trueheart import TrueHeart

__all__ = ["EmbedderRefused", "load_embedder", "semantic_status", "semantic_sync"]


class EmbedderRefused(CommandFailure):
    """``--embedder`` does not name an importable embedder (exit status 2). The message
    names the path as given and a fixed reason, never the text of an exception raised
    while importing or constructing it."""

    status = 2

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"--embedder {path}: {why}")


def _is_embedder(value: object) -> bool:
    """Whether ``value`` is an embedder; one whose attributes fail when read is not
    (the protocol check reads them)."""
    try:
        return not isinstance(value, type) and isinstance(value, Embedder)
    except (Exception, SystemExit):
        return False


def _check_space(path: str, embedder: Embedder) -> Embedder:
    """``embedder``, once its identity, dimensions and normalisation pass the checks the
    service makes when it opens with it: made here, a refusal is a usage error reported
    before the store is opened, not a failure after."""
    try:
        validation.text("identity", embedder.identity)
        semantic_space.snapshot(embedder)
    except ValidationError as error:
        field, _, rule = str(error).partition(": ")
        reason = rule if field == "embedder" else f"{field} {rule}"
        raise EmbedderRefused(path, f"is not a usable embedder: its {reason}") from None
    except (Exception, SystemExit):  # a property that fails when read: text not shown
        raise EmbedderRefused(path, "is not a usable embedder: reading its space failed") from None
    return embedder


def load_embedder(path: str) -> Embedder:
    """The embedder named ``MODULE:ATTR`` (``ATTR`` may be dotted); see the module
    docstring."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise EmbedderRefused(path, "must be MODULE:ATTR, such as trueheart_core:HashingEmbedder")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.append(here)
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError:
        raise EmbedderRefused(path, f"cannot import module {module_name}") from None
    except (Exception, SystemExit):  # the module's own failure: its text is not shown
        raise EmbedderRefused(path, f"importing module {module_name} failed") from None
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise EmbedderRefused(path, f"module {module_name} has no {attribute}") from None
        except (Exception, SystemExit):  # the module's own failure: its text is not shown
            raise EmbedderRefused(path, f"reading {attribute} of {module_name} failed") from None
    if _is_embedder(value):
        return _check_space(path, value)
    if not callable(value):
        raise EmbedderRefused(path, "is not an embedder, nor a class or function that makes one")
    try:
        made = value()
    except (Exception, SystemExit):
        raise EmbedderRefused(path, "calling it without arguments failed") from None
    if not _is_embedder(made):
        raise EmbedderRefused(path, "calling it did not return an embedder")
    return _check_space(path, made)


def _scopes(service: TrueHeart, scope: Scope | None) -> list[Scope]:
    return [scope] if scope is not None else list(service.scopes())


def _status(value: SemanticStatus) -> dict[str, Any]:
    return {
        "scope": format_scope(value.scope),
        "embedder": value.embedder,
        "registered": value.registered,
        "complete": value.complete,
        "memories": value.memories,
        "indexed": value.indexed,
        "missing": value.missing_count,
        "stale": value.stale_count,
        "missing_memory_ids": list(value.missing_memory_ids),
        "stale_memory_ids": list(value.stale_memory_ids),
        "missing_claim_ids": list(value.missing_claim_ids),
        "stale_claim_ids": list(value.stale_claim_ids),
    }


_HEADERS = ("scope", "memories", "indexed", "missing", "stale", "complete")


def _row(value: SemanticStatus) -> tuple[object, ...]:
    return (
        format_scope(value.scope),
        value.memories,
        value.indexed,
        value.missing_count,
        value.stale_count,
        value.complete,
    )


def semantic_status(args: argparse.Namespace, out: TextIO) -> int:
    with opened(args, write=False) as service:
        found = [service.semantic_status(scope) for scope in _scopes(service, args.scope)]
    if args.json:
        render.document(out, {"scopes": [_status(status) for status in found]})
    else:
        render.table(out, _HEADERS, [_row(status) for status in found])
    return OK


def _sync(service: TrueHeart, scope: Scope, batch: int, about: str) -> tuple[int, SemanticStatus]:
    """Sync one scope under a progress bar; returns how many were embedded, and the
    status afterwards."""
    embedded = 0
    with progress.task(about) as shown:

        def report(done: int, total: int) -> None:
            nonlocal embedded
            embedded = done
            shown.update(done, total)

        try:
            status = service.sync_semantic(scope, batch, progress=report)
        except SemanticProjectionError as error:
            # Vectors that could not be stored because of the file itself: reported as
            # that (exit status 5 or 4), as any other write to such a store is.
            cause = error.__cause__
            if isinstance(cause, RepositoryBusy | RepositoryReadOnly | RepositoryCorruption):
                raise cause from None
            raise
    return embedded, status


def semantic_sync(args: argparse.Namespace, out: TextIO) -> int:
    results: list[tuple[int, SemanticStatus]] = []
    # What the embedder's own code prints goes to stderr: stdout holds the command's
    # answer alone (one JSON document with ``--json``).
    with contextlib.redirect_stdout(sys.stderr):
        embedder = load_embedder(args.embedder)
        with opened(args, write=True, embedder=embedder) as service:
            targets = _scopes(service, args.scope)
            for number, scope in enumerate(targets, start=1):
                about = f"embedding {format_scope(scope)} ({number} of {len(targets)}) in {args.db}"
                results.append(_sync(service, scope, args.batch, about))
    if args.json:
        doc = {
            "embedder": embedder.identity,
            "scopes": [{"embedded": n, **_status(status)} for n, status in results],
        }
        render.document(out, doc)
    else:
        render.table(
            out,
            ("scope", "embedded", *_HEADERS[1:]),
            [(_row(status)[0], n, *_row(status)[1:]) for n, status in results],
        )
    return OK
