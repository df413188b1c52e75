"""Semantic projection: vector spaces, computing and storing vectors, status and repair.

Service-layer functions. The embedder is called only outside transactions: a write
commits first and is projected afterwards (so a failing model never loses a write), and
a vector is stored only if its memory is still active with the content it was computed
from. Forget, delete and cascade remove vectors through ``UnitOfWork.delete_memory``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trueheart_core import loading, policy, records
from trueheart_core import validation as v
from trueheart_core.claims import CLAIM_KIND
from trueheart_core.domain import MemoryStatus, Scope
from trueheart_core.errors import (
    EmbedderMismatch,
    RepositoryReadOnly,
    SemanticProjectionError,
    TrueHeartError,
    ValidationError,
)
from trueheart_core.ports import Repository, UnitOfWork
from trueheart_core.ports_vectors import SpaceRow, SupportsVectors, VectorRow
from trueheart_core.records import scope_key
from trueheart_core.semantic.embedders import MAX_DIMENSIONS, Embedder
from trueheart_core.semantic.model import SemanticStatus
from trueheart_core.semantic.vectors import checked_vector, pack

__all__ = [
    "Space",
    "check_unchanged",
    "check_vectors",
    "embed_documents",
    "open_space",
    "project",
    "snapshot",
    "status",
    "sync",
    "vectors_of",
]

_PAGE = 1000

Progress = Callable[[int, int], object]


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
    """The space of an embedder, after checking that it is one."""
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
    try:
        now = snapshot(embedder)
    except ValidationError:
        now = None
    if now != space:
        raise EmbedderMismatch("the embedder changed since the service opened")


def vectors_of(uow: UnitOfWork) -> SupportsVectors:
    """The unit of work's vector capability."""
    if not isinstance(uow, SupportsVectors):
        raise ValidationError("embedder", "needs a repository that stores vectors")
    return uow


def open_space(repository: Repository, space: Space, replace: bool) -> None:
    """At service open: refuse a store whose current space is another embedder's
    (unless ``replace``), and register this one if it is not current. A read-only
    store is only checked."""
    with repository.unit_of_work("read", write=False) as uow:
        current = vectors_of(uow).current_space()
    if space.matches(current):
        return
    if current is not None and not replace:
        raise EmbedderMismatch("the store holds vectors of another embedder")
    try:
        with repository.unit_of_work("index", write=True) as uow:
            _registered(vectors_of(uow), space, replace)
            uow.commit()
    except RepositoryReadOnly:
        if current is not None:
            raise
        # Nothing can be projected into a read-only store; searches stay lexical.


def _registered(uow: SupportsVectors, space: Space, replace: bool) -> int:
    """The current space's ID, registering ``space`` if no space is current (or if
    ``replace`` allows replacing another one)."""
    current = uow.current_space()
    if space.matches(current):
        assert current is not None
        return current.space_id
    if current is not None and not replace:
        raise EmbedderMismatch("the store holds vectors of another embedder")
    return uow.register_space(space.identity, space.dimensions, space.normalized)


def current_space_id(uow: SupportsVectors, space: Space) -> int | None:
    """The ID of ``space`` if it is the store's current space (else searches have no
    vectors to scan); a store re-registered to another space since opening is refused."""
    current = uow.current_space()
    if current is None:
        return None
    if not space.matches(current):
        raise EmbedderMismatch("the store holds vectors of another embedder")
    return current.space_id


def embed_documents(embedder: Embedder, space: Space, contents: Sequence[str]) -> list[bytes]:
    """The packed vectors of ``contents``, after checking the embedder's answer."""
    check_unchanged(embedder, space)
    answer = embedder.embed_documents(list(contents))
    check_unchanged(embedder, space)
    if isinstance(answer, str | bytes) or not isinstance(answer, Sequence):
        raise ValidationError("embedder", "must return one vector per text")
    if len(answer) != len(contents):
        raise ValidationError("embedder", "must return one vector per text")
    return [
        pack(checked_vector("embedder", vector, space.dimensions, space.normalized))
        for vector in answer
    ]


def _row(
    scope: Scope, memory_id: str, space_id: int, space: Space, content: str, blob: bytes
) -> VectorRow:
    row = VectorRow(scope_key(scope), memory_id, space_id, policy.content_hash(content), blob, "")
    digest = records.vector_digest(row, space.identity, space.dimensions, space.normalized)
    return VectorRow(row.scope, memory_id, space_id, row.content_hash, blob, digest)


def project(
    repository: Repository,
    embedder: Embedder,
    space: Space,
    scope: Scope,
    memory_ids: Sequence[str],
    *,
    replace: bool = False,
) -> int:
    """Compute and store the vectors of those of ``memory_ids`` (in ``scope``) that are
    active and lack a current vector; returns how many were stored. Raises
    ``SemanticProjectionError`` (naming the first memory of the batch) when the embedder
    fails or breaks its contract; vectors stored by earlier calls stay."""
    key = scope_key(scope)
    wanted = sorted(set(memory_ids))
    with repository.unit_of_work("read", write=False) as uow:
        store = vectors_of(uow)
        current = store.current_space()
        current_id = current.space_id if space.matches(current) and current else None
        rows = uow.get_memories(key, wanted)
        edges = loading.edges_by_memory(uow.get_edges(key, [r.memory_id for r in rows]))
        have = store.vector_keys(key, [r.memory_id for r in rows])
        todo = []
        for row in rows:
            if row.status != MemoryStatus.ACTIVE.value:
                continue
            memory = loading.memory(row, edges[row.memory_id], scope, "invalid memory record")
            stored = have.get(memory.memory_id)
            fresh = (current_id, policy.content_hash(memory.content))
            if stored != fresh:
                todo.append(memory)
    if not todo:
        return 0
    first = todo[0].memory_id
    try:
        blobs = embed_documents(embedder, space, [m.content for m in todo])
    except TrueHeartError as error:
        raise SemanticProjectionError(first, "the embedder's answer was refused") from error
    except Exception as error:
        raise SemanticProjectionError(first, "the embedder failed") from error
    try:
        with repository.unit_of_work("index", write=True) as uow:
            store = vectors_of(uow)
            space_id = _registered(store, space, replace)
            still = {r.memory_id: r for r in uow.get_memories(key, [m.memory_id for m in todo])}
            stored_count = 0
            for memory, blob in zip(todo, blobs, strict=True):
                now = still.get(memory.memory_id)
                # Forgotten, sealed or deleted meanwhile: its vector must not appear.
                if now is None or now.status != MemoryStatus.ACTIVE.value:
                    continue
                if now.content != memory.content:
                    continue
                store.put_vector(
                    _row(scope, memory.memory_id, space_id, space, memory.content, blob)
                )
                stored_count += 1
            uow.commit()
    except TrueHeartError as error:
        raise SemanticProjectionError(first, "the vectors could not be stored") from error
    return stored_count


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
    while page := store.vector_states(key, after, _PAGE):
        for state in page:
            if not isinstance(state.memory_id, str) or not isinstance(state.content, str):
                loading.corrupt("invalid memory record")
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
        after = page[-1].memory_id
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


def sync(
    repository: Repository,
    embedder: Embedder,
    space: Space,
    scope: Scope,
    batch_size: int,
    progress: Progress | None,
) -> SemanticStatus:
    """Project every missing or stale active memory of the scope, ``batch_size`` per
    embedder call and per transaction, reporting ``progress(done, total)`` after each
    batch; returns the status afterwards."""
    check_unchanged(embedder, space)
    with repository.unit_of_work("read", write=False) as uow:
        before = status(uow, scope, space)
    todo = sorted(
        before.missing_memory_ids
        + before.stale_memory_ids
        + before.missing_claim_ids
        + before.stale_claim_ids
    )
    done = 0
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        project(repository, embedder, space, scope, batch)
        done += len(batch)
        if progress is not None:
            progress(done, len(todo))
    with repository.unit_of_work("read", write=False) as uow:
        return status(uow, scope, space)


def check_vectors(
    uow: UnitOfWork,
    key: tuple[str, str, str] | None,
    add: Callable[[str, object, object, str], None],
) -> int:
    """Verify every stored vector (of one scope, or all); report problems through
    ``add(entity_type, entity_id, scope, code)``; returns how many rows were checked."""
    if not isinstance(uow, SupportsVectors):
        return 0
    spaces = {space.space_id: space for space in uow.iter_spaces()}
    checked = 0
    for row in uow.iter_vectors(key):
        checked += 1
        found = spaces.get(row.space_id)
        if not row.memory_id:
            add("vector", "", row.scope, "vector_without_memory")
            continue
        if found is None:
            add("vector", row.memory_id, row.scope, "vector_space_unknown")
            continue
        expected = records.vector_digest(
            row, found.identity, found.dimensions, bool(found.normalized)
        )
        if not expected or row.digest != expected:
            add("vector", row.memory_id, row.scope, "digest_mismatch")
        elif len(row.vector) != 4 * found.dimensions:
            add("vector", row.memory_id, row.scope, "vector_size_invalid")
    return checked
