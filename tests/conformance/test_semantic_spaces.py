"""A vector space is replaced only when a service opens with
``replace_semantic_space=True``; a service whose space was replaced since it opened is
refused, whatever it was opened with."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conformance_builders import NOW, SCOPE, CountingClock, materialize_all, memory, msg
from semantic_builders import ConceptEmbedder

from trueheart_core import (
    EmbedderMismatch,
    SearchQuery,
    SemanticProjectionError,
    TrueHeart,
)
from trueheart_core.ports import Capability, Repository

pytestmark = pytest.mark.requires(Capability.VECTORS)

LATER = NOW + timedelta(seconds=1)
MISMATCH = msg("embedder mismatch: the store holds vectors of another embedder")


def _open(repository: Repository, identity: str, **options: object) -> TrueHeart:
    return TrueHeart(
        repository,
        clock=CountingClock(),
        embedder=ConceptEmbedder(identity=identity),
        **options,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("replaced_on_open", [True, False], ids=["replacing", "plain"])
def test_a_service_whose_space_was_replaced_is_refused_and_changes_nothing(
    repository: Repository, replaced_on_open: bool
) -> None:
    old = _open(repository, "model-a", replace_semantic_space=replaced_on_open)
    materialize_all(old, {"mem-1": "concise answers"})
    new = _open(repository, "model-b", replace_semantic_space=True)
    assert new.sync_semantic(SCOPE).complete

    with pytest.raises(EmbedderMismatch, match=MISMATCH):
        old.search(SearchQuery(SCOPE, "brief replies", LATER))
    with pytest.raises(EmbedderMismatch, match=MISMATCH):
        old.sync_semantic(SCOPE)
    with pytest.raises(EmbedderMismatch, match=MISMATCH):
        old.index_semantic(SCOPE, ["mem-1"])
    # A write stays committed; its projection is refused.
    with pytest.raises(SemanticProjectionError) as caught:
        old.materialize_once(memory("mem-2", content="brief tea"))
    assert isinstance(caught.value.__cause__, EmbedderMismatch)
    assert caught.value.evidence_committed
    assert old.get_memory(SCOPE, "mem-2").memory_id == "mem-2"

    # The new space is still current: only the memory written meanwhile lacks a vector.
    status = new.semantic_status(SCOPE)
    assert status.registered
    assert (status.missing_memory_ids, status.stale_memory_ids) == (("mem-2",), ())
    assert new.sync_semantic(SCOPE).complete
    capsule = new.search(SearchQuery(SCOPE, "brief replies", LATER))
    assert capsule.items[0].memory.memory_id == "mem-1"


def test_a_replacing_service_opened_again_replaces_the_space_again(
    repository: Repository,
) -> None:
    old = _open(repository, "model-a", replace_semantic_space=True)
    materialize_all(old, {"mem-1": "concise answers"})
    _open(repository, "model-b", replace_semantic_space=True)
    again = _open(repository, "model-a", replace_semantic_space=True)
    assert again.semantic_status(SCOPE).registered
    assert again.semantic_status(SCOPE).stale_memory_ids == ("mem-1",)
    assert again.sync_semantic(SCOPE).complete


def test_a_write_never_takes_the_store_back_to_an_earlier_space(repository: Repository) -> None:
    old = _open(repository, "model-a", replace_semantic_space=True)
    materialize_all(old, {"mem-1": "concise answers"})
    new = _open(repository, "model-b", replace_semantic_space=True)
    assert new.sync_semantic(SCOPE).complete
    with pytest.raises(SemanticProjectionError):
        old.materialize_once(memory("mem-2", content="brief tea"))
    status = new.semantic_status(SCOPE)
    assert status.registered and status.stale_memory_ids == ()
    assert new.search(SearchQuery(SCOPE, "brief replies", LATER)).semantic is not None
