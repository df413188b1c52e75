"""Semantic projection: vector spaces, computing and storing vectors, status and repair.

Service-layer functions over a unit of work that the service hands them, plus
:func:`compute`, which calls the embedder and must run outside any transaction: a write
commits first and is projected afterwards (so a failing model never loses a write), and
a vector is stored only if its memory is still active with the content it was computed
from. Forget, delete and cascade remove vectors through ``UnitOfWork.delete_memory``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from trueheart_core.domain import policy
from trueheart_core.domain import validation as v
from trueheart_core.domain.claims import CLAIM_KIND
from trueheart_core.domain.model import MemoryRecord, MemoryStatus, Scope
from trueheart_core.domain.semantic.embedders import MAX_DIMENSIONS, Embedder
from trueheart_core.domain.semantic.model import SemanticStatus
from trueheart_core.domain.semantic.sketch import sketch_of
from trueheart_core.domain.semantic.vectors import as_listed, checked_vector, pack
from trueheart_core.errors import (
    EmbedderMismatch,
    ProviderError,
    SemanticProjectionError,
    TrueHeartError,
    ValidationError,
)
from trueheart_core.ports import SpaceRow, UnitOfWork, VectorRow, VectorStore
from trueheart_core.service import loading, records
from trueheart_core.service.records import scope_key

__all__ = [
    "Space",
    "check_current",
    "check_unchanged",
    "check_vectors",
    "compute",
    "current_space_id",
    "embed_documents",
    "needs_registration",
    "pending",
    "register",
    "repair_ids",
    "snapshot",
    "status",
    "store",
    "vectors_of",
]

_PAGE = 1000


@dataclass(frozen=True, slots=True)
class Space:
    """What the service snapshotted of its embedder when it opened."""

    identity: str
    dimensions: int
    normalized: bool

    def matches(self, row: SpaceRow | None) -> bool:
        """Whether a stored space is this one."""
        return (
            row is not None
            and row.identity == self.identity
            and row.dimensions == self.dimensions
            and bool(row.normalized) is self.normalized
        )


def snapshot(embedder: object) -> Space:
    """The space of an embedder, after checking that it is one. An exception raised
    while its properties are read (by the protocol check, too) becomes
    ``ProviderError("the embedder failed")``; a ``TrueHeartError`` passes unchanged."""
    try:
        return _space_of(embedder)
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the embedder failed") from error


def _space_of(embedder: object) -> Space:
    """:func:`snapshot`, letting what the host's properties raise pass unchanged."""
    if isinstance(embedder, type) or not isinstance(embedder, Embedder):
        raise ValidationError("embedder", "must be an Embedder")
    identity = v.text("embedder", embedder.identity)
    dimensions = embedder.dimensions
    if (
        isinstance(dimensions, bool)
        or not isinstance(dimensions, int)
        or not 1 <= dimensions <= MAX_DIMENSIONS
    ):
        raise ValidationError("embedder", f"dimensions must be from 1 through {MAX_DIMENSIONS}")
    if not isinstance(embedder.normalized, bool):
        raise ValidationError("embedder", "normalized must be a bool")
    return Space(identity, dimensions, embedder.normalized)


def check_unchanged(embedder: Embedder, space: Space) -> None:
    """Refuse an embedder whose space is no longer the one the service opened with
    (``EmbedderMismatch``); a property that raises gives ``ProviderError``."""
    _check_unchanged(embedder, space, snapshot)


def _check_unchanged(embedder: Embedder, space: Space, read: Callable[[object], Space]) -> None:
    try:
        now = read(embedder)
    except ValidationError:
        now = None
    if now != space:
        raise EmbedderMismatch("the embedder changed since the service opened")


def vectors_of(uow: UnitOfWork) -> VectorStore:
    """The unit of work's vector role (a backend without vectors cannot take an
    embedder)."""
    if uow.vectors is None:
        raise ValidationError("embedder", "needs a repository that stores vectors")
    return uow.vectors


def needs_registration(uow: UnitOfWork, space: Space, replace: bool) -> bool:
    """At service open: whether ``space`` must be registered (it is not current).
    Raises ``EmbedderMismatch`` when another embedder's space is current and
    ``replace`` is false."""
    current = vectors_of(uow).current_space()
    if space.matches(current):
        return False
    if current is not None and not replace:
        raise EmbedderMismatch("the store holds vectors of another embedder")
    return True


def register(uow: UnitOfWork, space: Space, replace: bool) -> int:
    """At service open, in a writing unit: the current space's ID, registering ``space``
    if no space is current (or if ``replace`` allows replacing another one)."""
    return _registered(vectors_of(uow), space, replace)


def check_current(uow: UnitOfWork, space: Space) -> None:
    """Refuse a service whose space another one has replaced since it opened (a store
    without a current space is not refused: its first vectors register ``space``)."""
    current = vectors_of(uow).current_space()
    if current is not None and not space.matches(current):
        raise EmbedderMismatch("the store holds vectors of another embedder")


def _registered(store: VectorStore, space: Space, replace: bool) -> int:
    """The current space's ID, registering ``space`` if no space is current (or if
    ``replace`` allows replacing another one)."""
    current = store.current_space()
    if space.matches(current):
        assert current is not None
        return current.space_id
    if current is not None and not replace:
        raise EmbedderMismatch("the store holds vectors of another embedder")
    return store.register_space(space.identity, space.dimensions, space.normalized)


def current_space_id(store: VectorStore, space: Space) -> int | None:
    """The ID of ``space`` if it is the store's current space (else searches have no
    vectors to scan); a store re-registered to another space since opening is refused."""
    current = store.current_space()
    if current is None:
        return None
    if not space.matches(current):
        raise EmbedderMismatch("the store holds vectors of another embedder")
    return current.space_id


def embed_documents(embedder: Embedder, space: Space, contents: Sequence[str]) -> list[bytes]:
    """The packed vectors of ``contents``, after checking the embedder's answer (what
    the host's code raises passes unchanged: :func:`compute` reports it)."""
    _check_unchanged(embedder, space, _space_of)
    answer = as_listed(embedder.embed_documents(list(contents)))
    _check_unchanged(embedder, space, _space_of)
    if isinstance(answer, str | bytes) or not isinstance(answer, Sequence):
        raise ValidationError("embedder", "must return one vector per text")
    # What counts is what the answer yields (its len() may say otherwise), read up to
    # one past the number of texts.
    vectors = list(itertools.islice(answer, len(contents) + 1))
    if len(vectors) != len(contents):
        raise ValidationError("embedder", "must return one vector per text")
    return [
        pack(checked_vector("embedder", vector, space.dimensions, space.normalized))
        for vector in vectors
    ]


def _row(
    scope: Scope, memory_id: str, space_id: int, space: Space, content: str, blob: bytes
) -> VectorRow:
    row = VectorRow(scope_key(scope), memory_id, space_id, policy.content_hash(content), blob, "")
    digest = records.vector_digest(row, space.identity, space.dimensions, space.normalized)
    sketch = sketch_of(blob)
    assert sketch is not None  # a checked, packed vector is finite
    return VectorRow(row.scope, memory_id, space_id, row.content_hash, blob, digest, *sketch)


def pending(
    uow: UnitOfWork, space: Space, targets: Sequence[tuple[Scope, str]]
) -> list[MemoryRecord]:
    """Those of ``targets`` (scope and memory ID pairs) that are active in their scope
    and lack a vector of the current space computed from their content, verified, in the
    order of ``targets`` (a repeated pair counts once)."""
    store = vectors_of(uow)
    current = store.current_space()
    current_id = current.space_id if current is not None and space.matches(current) else None
    order = list(dict.fromkeys(targets))
    found: dict[tuple[Scope, str], MemoryRecord] = {}
    for scope in sorted({scope for scope, _ in order}, key=scope_key):
        key = scope_key(scope)
        rows = uow.memories.get_many(key, sorted({m for s, m in order if s == scope}))
        rows.sort(key=lambda r: str(r.memory_id))
        edges = loading.edges_by_memory(uow.memories.edges(key, [r.memory_id for r in rows]))
        have = store.keys(key, [r.memory_id for r in rows])
        for row in rows:
            if row.status != MemoryStatus.ACTIVE.value:
                continue
            memory = loading.memory(row, edges[row.memory_id], scope, "invalid memory record")
            if have.get(memory.memory_id) != (current_id, policy.content_hash(memory.content)):
                found[(scope, memory.memory_id)] = memory
    return [found[target] for target in order if target in found]


def compute(embedder: Embedder, space: Space, todo: Sequence[MemoryRecord]) -> list[bytes]:
    """The packed vectors of ``todo`` (outside any transaction), from ONE call of the
    embedder's ``embed_documents`` with their contents in order. Raises
    ``SemanticProjectionError`` naming the first memory when the embedder fails or
    breaks its contract."""
    try:
        return embed_documents(embedder, space, [m.content for m in todo])
    except EmbedderMismatch as error:
        # The space no longer matches (its own fixed text says how): not the answer.
        why = str(error).removeprefix("embedder mismatch: ")
        raise SemanticProjectionError(todo[0].memory_id, why) from error
    except TrueHeartError as error:
        raise SemanticProjectionError(
            todo[0].memory_id, "the embedder's answer was refused"
        ) from error
    except Exception as error:
        raise SemanticProjectionError(todo[0].memory_id, "the embedder failed") from error


def store(
    uow: UnitOfWork,
    space: Space,
    todo: Sequence[MemoryRecord],
    blobs: Sequence[bytes],
) -> int:
    """In a writing unit: store the computed vectors of the memories that are still
    active with the same content (one forgotten or sealed meanwhile gets none); returns
    how many were stored. Raises ``EmbedderMismatch`` when another space is current: a
    space is replaced only when a service opens, never by storing vectors."""
    vectors = vectors_of(uow)
    space_id = _registered(vectors, space, False)
    stored = 0
    for scope in sorted({m.scope for m in todo}, key=scope_key):
        mine = [(m, b) for m, b in zip(todo, blobs, strict=True) if m.scope == scope]
        key = scope_key(scope)
        still = {r.memory_id: r for r in uow.memories.get_many(key, [m.memory_id for m, _ in mine])}
        for memory, blob in mine:
            now = still.get(memory.memory_id)
            if now is None or now.status != MemoryStatus.ACTIVE.value:
                continue
            if now.content != memory.content:
                continue
            vectors.put(_row(scope, memory.memory_id, space_id, space, memory.content, blob))
            stored += 1
    return stored


def status(uow: UnitOfWork, scope: Scope, space: Space | None) -> SemanticStatus:
    """The projection status of the scope's active memories (see :class:`SemanticStatus`)."""
    store = vectors_of(uow)
    key = scope_key(scope)
    current = store.current_space()
    registered = current is not None if space is None else space.matches(current)
    current_id = current.space_id if registered and current is not None else None
    missing: dict[bool, list[str]] = {False: [], True: []}
    stale: dict[bool, list[str]] = {False: [], True: []}
    total = indexed = 0
    after: str | None = None
    while page := store.states(key, after, _PAGE):
        for state in page:
            if not isinstance(state.memory_id, str) or not isinstance(state.content, str):
                loading.corrupt("invalid memory record")
            # Pages are in ID order after the cursor: a damaged index that repeats or
            # goes back would page forever.
            if after is not None and not state.memory_id > after:
                loading.corrupt("invalid memory record")
            after = state.memory_id
            total += 1
            is_claim = state.kind == CLAIM_KIND
            if state.space_id is None:
                missing[is_claim].append(state.memory_id)
            elif state.space_id != current_id or state.content_hash != policy.content_hash(
                state.content
            ):
                stale[is_claim].append(state.memory_id)
            else:
                indexed += 1
    return SemanticStatus(
        scope,
        None if space is None else space.identity,
        registered,
        total,
        indexed,
        tuple(missing[False]),
        tuple(stale[False]),
        tuple(missing[True]),
        tuple(stale[True]),
    )


def repair_ids(before: SemanticStatus) -> list[str]:
    """The IDs a repair must project: every missing or stale memory and claim."""
    return sorted(
        before.missing_memory_ids
        + before.stale_memory_ids
        + before.missing_claim_ids
        + before.stale_claim_ids
    )


def check_vectors(
    uow: UnitOfWork,
    key: tuple[str, str, str] | None,
    add: Callable[[str, object, object, str], None],
) -> int:
    """Verify every stored vector (of one scope, or all); report problems through
    ``add(entity_type, entity_id, scope, code)``; returns how many rows were checked."""
    vectors = uow.vectors
    if vectors is None:
        return 0
    spaces = {space.space_id: space for space in vectors.iter_spaces()}
    checked = 0
    for row in vectors.iter(key):
        checked += 1
        problem = _problem(row, spaces)
        if problem is not None:
            add("vector", row.memory_id, row.scope, problem)
    for scope, memory_id in vectors.disagreeing(key):
        add("vector", memory_id, scope, "vector_disagrees_with_memory")
    return checked


def remove_damaged(uow: UnitOfWork) -> int:
    """Remove every vector of an existing memory that fails its digest, has a size its
    space does not give, or names no known space: only the embedder can compute it
    again (``sync_semantic`` does, the memory now missing its vector), and until then
    the scan would use it or fail on it. Returns how many rows went."""
    vectors = uow.vectors
    if vectors is None:
        return 0
    spaces = {space.space_id: space for space in vectors.iter_spaces()}
    # Listed first: no read of the table is open while its rows go.
    damaged = [
        (row.scope, row.memory_id)
        for row in vectors.iter(None)
        if row.memory_id and _unusable(row, spaces) is not None
    ]
    return sum(vectors.discard(scope, memory_id) for scope, memory_id in damaged)


def _problem(row: VectorRow, spaces: Mapping[int, SpaceRow]) -> str | None:
    """The integrity code of what is wrong with a vector row on its own, if anything."""
    if not row.memory_id:
        return "vector_without_memory"
    unusable = _unusable(row, spaces)
    if unusable is None and not _sketch_agrees(row):
        return "vector_sketch_mismatch"
    return unusable


def _unusable(row: VectorRow, spaces: Mapping[int, SpaceRow]) -> str | None:
    """The integrity code of what no rewrite of a vector row repairs (its space, its
    digest, its size), if anything: only the embedder can compute such a vector again."""
    found = spaces.get(row.space_id)
    if found is None:
        return "vector_space_unknown"
    expected = records.vector_digest(row, found.identity, found.dimensions, bool(found.normalized))
    if not expected or row.digest != expected:
        return "digest_mismatch"
    if len(row.vector) != 4 * found.dimensions:
        return "vector_size_invalid"
    return None


def _sketch_agrees(row: VectorRow) -> bool:
    """Whether the row's sketch is the one its vector gives, or absent altogether (a
    vector stored before sketches existed, which the scan compares exactly)."""
    stored = (row.sketch, row.sketch_scale, row.sketch_error)
    if stored == (None, None, None):
        return True
    expected = sketch_of(row.vector)
    return expected is not None and all(
        type(a) is type(b) and a == b for a, b in zip(stored, expected, strict=True)
    )
