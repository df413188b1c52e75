"""Maintenance of a store: statistics and the rebuild of every derived index.

Service-layer functions over one unit of work; the caller opens it (and commits a
rebuild). Nothing here calls a provider or reads a body for anything but recomputing
the search index from memory rows.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterator
from itertools import islice

from trueheart_core.domain import validation as v
from trueheart_core.domain.model import MemoryStatus, Scope
from trueheart_core.domain.operations import IndexRebuildReport, StoreStats
from trueheart_core.domain.semantic.sketch import sketch_of
from trueheart_core.errors import ValidationError
from trueheart_core.ports import ScopeKey, SearchDocRow, UnitOfWork
from trueheart_core.service import loading
from trueheart_core.service import search as searching
from trueheart_core.service import semantic as projecting
from trueheart_core.service.records import scope_key

_CHUNK = 500


def _count(value: object) -> int:
    if type(value) is not int or value < 0:
        loading.corrupt("invalid row count")
    return value


def stats(
    uow: UnitOfWork, scope: Scope | None, sizes: tuple[tuple[str, int], ...] | None
) -> StoreStats:
    """Row counts of the scope (or the whole store), with the sizes of the storage."""
    key = None if scope is None else scope_key(scope)
    rows = {name: _count(value) for name, value in uow.operations.count_rows(key).items()}
    by_status: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    for status, kind, count in uow.operations.count_memories(key):
        if not isinstance(status, str) or not isinstance(kind, str):
            loading.corrupt("invalid memory record")
        by_status[status] += _count(count)
        by_kind[kind] += count
    parts = dict(sizes or ())
    return StoreStats(
        scope,
        rows.get("raw_event", 0),
        rows.get("raw_event_with_body", 0),
        rows.get("memory", 0),
        by_status[MemoryStatus.ACTIVE.value],
        by_status[MemoryStatus.SEALED.value],
        tuple(sorted(by_kind.items())),
        rows.get("claim", 0),
        rows.get("extraction_record", 0),
        rows.get("tombstone", 0),
        rows.get("audit", 0),
        rows.get("search_entry", 0),
        rows.get("search_term", 0),
        rows.get("search_posting", 0),
        rows.get("vector", 0),
        parts.get("database"),
        parts.get("wal"),
        None if sizes is None else sum(size for _, size in sizes),
        tuple(sizes or ()),
    )


def _fingerprint(row: object) -> bytes:
    """A compact identity (16 bytes) of a whole row: a search entry, terms included, or a
    term row's values."""
    return hashlib.blake2b(repr(row).encode("utf-8"), digest_size=16).digest()


def _chunks(rows: Iterator[SearchDocRow]) -> Iterator[list[SearchDocRow]]:
    while chunk := list(islice(rows, _CHUNK)):
        yield chunk


def _entries(uow: UnitOfWork) -> Counter[bytes]:
    """Every search entry of the store, whole; an entry without a memory counts under a
    key of its own so that it can only be removed."""
    found: Counter[bytes] = Counter()
    orphans = 0
    for chunk in _chunks(uow.search.iter_docs(None)):
        by_scope: dict[ScopeKey, list[str]] = {}
        for doc in chunk:
            if doc.memory_id is None:
                orphans += 1
                found[b"orphan%d" % orphans] += 1
            else:
                by_scope.setdefault(doc.scope, []).append(doc.memory_id)
        for key, memory_ids in by_scope.items():
            for doc in uow.search.docs_for(key, memory_ids):
                found[_fingerprint(doc)] += 1
    return found


def _terms(uow: UnitOfWork) -> Counter[bytes]:
    """Every search term of the store with its frequency, each by its fingerprint (a
    term row read back as a tuple of its values takes several times its 16 bytes)."""
    return Counter(_fingerprint((t.scope, t.term, t.df)) for t in uow.search.iter_terms(None))


def rebuild(uow: UnitOfWork) -> IndexRebuildReport:
    """Rebuild the search index from the memory rows, re-derive claim index keys and
    vector sketches, and rebuild the storage engine's indexes; report what changed."""
    entries_before, terms_before = _entries(uow), _terms(uow)
    searching.rebuild(uow)
    entries_after, terms_after = _entries(uow), _terms(uow)
    claim_keys = _count(uow.claims.rekey())
    copies = orphans = sketches = damaged = 0
    if uow.vectors is not None:
        damaged = _count(projecting.remove_damaged(uow))
        copies, orphans, sketches = (_count(n) for n in uow.vectors.repair_copies(sketch_of))
    storage = _count(uow.operations.rebuild_storage_indexes())
    return IndexRebuildReport(
        entries_before.total(),
        entries_after.total(),
        (entries_after - entries_before).total(),
        (entries_before - entries_after).total(),
        terms_before.total(),
        terms_after.total(),
        (terms_after - terms_before).total(),
        (terms_before - terms_after).total(),
        claim_keys,
        storage,
        copies,
        orphans,
        sketches,
        damaged,
    )


def backup_target(path: object) -> str:
    """The absolute path of a file to create: a str or PathLike naming nothing yet, in an
    existing directory."""
    path = v.fspath_of(path)
    if not isinstance(path, str) or not path or "\x00" in path or path == ":memory:":
        raise ValidationError("path", "must be a str or os.PathLike")
    if v.utf8_size(path) is None:
        raise ValidationError("path", "must be valid UTF-8")
    target = os.path.abspath(path)
    if os.path.lexists(target):
        raise ValidationError("path", "must not exist")
    if not os.path.isdir(os.path.dirname(target)):
        raise ValidationError("path", "must be in an existing directory")
    return target
