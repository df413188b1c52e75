"""The semantic scan with numpy, when it is installed (the ``numpy`` extra).

numpy is imported the first time a search that can use it runs, never at import. The
scope's vectors of the current space are kept in process memory as float32 matrices
(one per chunk read) with their handles and the columns the filters read, in the
repository's scratch dictionary (see ``VectorStore.scratch``), with the scope's
generation they were read at. A search first reads the stored generation; when it
differs, the copy is read again. numpy computes every similarity in float32; each
differs from the exact one by less than a margin that follows from the float32 error
bound of a dot product, so the same exact comparisons as the zero-dependency scan decide
(:class:`~trueheart_core.service.search.scan.Selection`), and the answer is the same,
bit for bit.

The accelerator steps aside (the zero-dependency scan runs) when the environment sets
``TRUEHEART_SCAN=python``, when numpy is missing, for a capped scan, when the copy of
the scope alone would take more than ``TRUEHEART_SCAN_CACHE_MB`` MiB (default 1,024;
copies of other scopes are dropped, least recently used first, to keep one
repository's copies within it), and when a stored vector or filter column is not of the
form the library writes (the zero-dependency scan then decides what such a store
gives).
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trueheart_core.domain.claims import CLAIM_KIND
from trueheart_core.ports import ScopeKey, VectorStore

if TYPE_CHECKING:
    from trueheart_core.service.search.scan import Filters, Selection

__all__ = ["SWITCH", "enabled", "select"]

SWITCH = "TRUEHEART_SCAN"
"""The environment variable that chooses the scan: ``python`` forces the
zero-dependency scan; anything else (or nothing) uses numpy when it is installed."""

BUDGET = "TRUEHEART_SCAN_CACHE_MB"
"""The environment variable that bounds the memory of one repository's vector copies."""

_DEFAULT_BUDGET_MB = 1024
_CHUNK = 4096
_SCRATCH_LOCK = threading.Lock()
"""Held while a search changes a repository's scratch space (see :func:`_current`)."""
_STEPPED_ASIDE = "stepped aside"


def enabled() -> bool:
    """Whether searches use numpy: not switched off, and importable."""
    return os.environ.get(SWITCH, "").strip().lower() != "python" and _module() is not None


@functools.cache
def _module() -> Any:
    """numpy, imported once, or ``None`` when it is not installed."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def _budget() -> int:
    try:
        megabytes = int(os.environ.get(BUDGET, _DEFAULT_BUDGET_MB))
    except ValueError:
        megabytes = _DEFAULT_BUDGET_MB
    return max(0, megabytes) * 2**20


@dataclass(frozen=True, slots=True)
class _Copy:
    """A scope's vectors of one space, as read at ``generation``."""

    generation: int
    handles: Any  # int64, one per row
    blocks: tuple[Any, ...]  # float32 matrices, one row per vector, in the handles' order
    largest_norm: float  # an upper bound of every row's Euclidean norm
    active: Any  # bool
    created: Any  # int64
    recall: Any  # int64
    trust: Any  # int64
    kinds: Any  # int32 codes
    codes: dict[str, int]  # kind -> code
    size: int  # bytes held


def select(
    store: VectorStore,
    scratch: MutableMapping[object, object],
    key: ScopeKey,
    space_id: int,
    dimensions: int,
    filters: Filters,
    chosen: Selection,
) -> int | None:
    """Offer ``chosen`` the bounds of every eligible vector that can reach its window
    and return how many vectors were eligible; ``None`` when the accelerator steps
    aside."""
    if not enabled():
        return None
    np = _module()
    copy = _current(np, store, scratch, key, space_id, dimensions)
    if copy is None:
        return None
    eligible = copy.active & (copy.created <= filters.as_of) & (copy.recall > filters.as_of)
    claim = copy.codes.get(CLAIM_KIND)
    if filters.created_from is not None or filters.created_until is not None:
        # A claim is in a period by its validity, which the store decides (below).
        in_period = copy.active.copy()
        if filters.created_from is not None:
            in_period &= copy.created >= filters.created_from
        if filters.created_until is not None:
            in_period &= copy.created < filters.created_until
        eligible &= in_period if claim is None else in_period | (copy.kinds == claim)
    if filters.min_trust is not None:
        eligible &= copy.trust >= filters.min_trust
    if filters.kinds:
        wanted = [copy.codes[kind] for kind in set(filters.kinds) if kind in copy.codes]
        eligible &= np.isin(copy.kinds, np.array(wanted, dtype=np.int32))
    if claim is not None:
        # A claim's status at as_of, and whether it is in the period, come from the
        # claims: the store decides.
        claims = np.flatnonzero(eligible & (copy.kinds == claim))
        if claims.size:
            asked = [int(h) for h in copy.handles[claims]]
            kept = {
                hit[0]
                for hits in store.scan(
                    key,
                    space_id,
                    filters.as_of,
                    filters.kinds,
                    filters.min_trust,
                    filters.claim_statuses,
                    None,
                    _CHUNK,
                    filters.created_from,
                    filters.created_until,
                    handles=asked,
                )
                for hit in hits
            }
            eligible[claims] = np.fromiter((h in kept for h in asked), dtype=bool, count=len(asked))
    rows = np.flatnonzero(eligible)
    if not rows.size:
        return 0
    query = np.array(chosen.values, dtype=np.float32)
    scores = np.concatenate([block @ query for block in copy.blocks])[rows].astype(np.float64)
    # A float32 dot product of n terms differs from the exact one by at most
    # n * 2**-24 / (1 - n * 2**-24) times the sum of the terms' magnitudes, itself at
    # most the product of the norms; twice that is the margin.
    gamma = _gamma(dimensions + 2)
    query_norm = float(np.sqrt(np.dot(query.astype(np.float64), query.astype(np.float64))))
    margin = 2.0 * gamma * copy.largest_norm * query_norm * (1.0 + 2.0**-20) + 2.0**-1000
    window = chosen.window
    if window and rows.size >= window:
        lowers = scores - margin
        chosen.raise_floor(float(np.partition(lowers, rows.size - window)[rows.size - window]))
    uppers = scores + margin
    keep = np.flatnonzero(uppers >= chosen.threshold())
    chosen.offer_bounds(
        [int(h) for h in copy.handles[rows[keep]]], [float(u) for u in uppers[keep]]
    )
    return int(rows.size)


def _gamma(terms: int) -> float:
    """The relative error bound of a float32 sum of ``terms`` products."""
    return terms * 2.0**-24 / (1.0 - terms * 2.0**-24)


def _current(
    np: Any,
    store: VectorStore,
    scratch: MutableMapping[object, object],
    key: ScopeKey,
    space_id: int,
    dimensions: int,
) -> _Copy | None:
    """The copy of the scope's vectors at the stored generation, read again when the
    generation moved; ``None`` when the accelerator steps aside for this scope."""
    name = ("semantic vectors", key, space_id, dimensions)
    generation = store.generation(key)
    budget = _budget()
    # The scratch space is the repository's, shared by the units of every thread (on a
    # server backend several run at once): each change to it is made under one lock,
    # and the vectors are read outside it.
    with _SCRATCH_LOCK:
        held = scratch.pop(name, None)
        if isinstance(held, _Copy) and held.generation == generation:
            scratch[name] = held  # the most recently used last
            return held
        if held == (_STEPPED_ASIDE, generation, budget):
            scratch[name] = held
            return None
    copy = _read(np, store, key, space_id, dimensions, generation, budget)
    with _SCRATCH_LOCK:
        if copy is None:
            # Not read again until the scope or the budget changes.
            scratch[name] = (_STEPPED_ASIDE, generation, budget)
            return None
        _make_room(scratch, budget - copy.size)
        scratch[name] = copy
    return copy


def _make_room(scratch: MutableMapping[object, object], free: int) -> None:
    """Drop the least recently used copies until the others fit in ``free`` bytes
    (under ``_SCRATCH_LOCK``; the repository may empty the space meanwhile)."""
    copies = [(name, held) for name, held in list(scratch.items()) if isinstance(held, _Copy)]
    used = sum(held.size for _, held in copies)
    for name, held in copies:
        if used <= free:
            break
        scratch.pop(name, None)
        used -= held.size


def _read(
    np: Any,
    store: VectorStore,
    key: ScopeKey,
    space_id: int,
    dimensions: int,
    generation: int,
    budget: int,
) -> _Copy | None:
    """The scope's vectors as a copy, or ``None`` when they exceed the budget or are not
    all of the form the library writes."""
    width = 4 * dimensions
    per_row = width + 40
    blocks: list[Any] = []
    handles: list[int] = []
    active: list[int] = []
    created: list[int] = []
    recall: list[int] = []
    trust: list[int] = []
    kinds: list[int] = []
    codes: dict[str, int] = {}
    squares = 0.0
    gamma = _gamma(dimensions + 1)
    for entries in store.load(key, space_id, _CHUNK):
        if (len(handles) + len(entries)) * per_row > budget:
            return None
        columns = list(zip(*entries, strict=True))
        vectors = columns[1]
        if set(map(type, vectors)) != {bytes} or set(map(len, vectors)) != {width}:
            return None
        if any(set(map(type, column)) != {int} for column in (columns[0], *columns[2:6])):
            return None
        if set(map(type, columns[6])) != {str}:
            return None
        # One block per chunk, on the bytes joined once: no copy of the whole scope.
        block = np.frombuffer(b"".join(vectors), dtype="<f4").reshape(len(entries), dimensions)
        block = np.ascontiguousarray(block, dtype=np.float32)
        # float32 sums of squares: below the exact ones by at most a relative gamma (the
        # float32 error bound of n terms); a non-finite component is refused here.
        largest = float(np.einsum("ij,ij->i", block, block).max())
        if not np.isfinite(largest):
            return None
        squares = max(squares, largest / (1.0 - gamma))
        blocks.append(block)
        handles += columns[0]
        active += columns[2]
        created += columns[3]
        recall += columns[4]
        trust += columns[5]
        kinds += [codes.setdefault(kind, len(codes)) for kind in columns[6]]
    try:
        numbers = [np.array(column, dtype=np.int64) for column in (active, created, recall, trust)]
    except OverflowError:
        return None
    return _Copy(
        generation,
        np.array(handles, dtype=np.int64),
        tuple(blocks),
        float(np.sqrt(squares)) * (1.0 + 2.0**-30),
        numbers[0] == 1,
        numbers[1],
        numbers[2],
        numbers[3],
        np.array(kinds, dtype=np.int32),
        codes,
        len(handles) * per_row,
    )
