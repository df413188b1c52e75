"""purge_memory: a purged record and its claims are gone from recall, expand, the engine's
index and the bytes of the store's files; its idempotency key cannot bring it back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from evicortex_builders import NS, OTHER, T0, T1, record_id, scope, store_bytes

from evicortex import ClaimInput, EviCortex, MemoryRecord
from evicortex.errors import EviCortexError, PurgedError
from trueheart_core import (
    ClaimQuery,
    EntityDeleted,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
)

# Needles that occur only in the purged record: its content, its metadata and the
# subject and value of its claim. Queries use only terms of these needles (the subject's
# prefix "pet" is no term of the kept record).
CONTENT_NEEDLE = "zanzibarquokka"
METADATA_NEEDLE = "vermilionpangolin"
SUBJECT_TERM = "ochreaxolotl"
CLAIM_SUBJECT = f"pet:{SUBJECT_TERM}"
CLAIM_VALUE = "ultramarinenarwhal"
NEEDLES = [n.encode("utf-8") for n in (CONTENT_NEEDLE, METADATA_NEEDLE, CLAIM_SUBJECT, CLAIM_VALUE)]


def remember_secret(memory: EviCortex, namespace: str = NS) -> MemoryRecord:
    return memory.remember(
        namespace=namespace,
        content=f"The door code is {CONTENT_NEEDLE}.",
        occurred_at=T0,
        metadata={"note": METADATA_NEEDLE},
        idempotency_key="secret",
        claims=[ClaimInput(CLAIM_SUBJECT, "door_code", CLAIM_VALUE)],
    )


def remember_kept(memory: EviCortex) -> MemoryRecord:
    return memory.remember(
        namespace=NS,
        content="The kept note mentions a door.",
        occurred_at=T1,
        claims=[ClaimInput("user:ada", "has", "door")],
    )


def recalled_ids(memory: EviCortex, query: str) -> set[str]:
    return {item.id for item in memory.recall(namespace=NS, query=query).items}


@pytest.fixture
def file_store(store_path: Path, open_store: Callable[..., EviCortex]) -> tuple[EviCortex, Path]:
    return open_store(store_path), store_path


def test_a_purged_record_is_gone_from_recall_and_expand(
    file_store: tuple[EviCortex, Path],
) -> None:
    memory, _ = file_store
    secret = remember_secret(memory)
    kept = remember_kept(memory)
    (claim,) = secret.claims
    assert {secret.id, claim.id} <= recalled_ids(memory, f"{CONTENT_NEEDLE} {CLAIM_VALUE}")

    assert memory.purge_memory(namespace=NS, memory_id=secret.id) is True

    assert recalled_ids(memory, f"{CONTENT_NEEDLE} {CLAIM_VALUE} {SUBJECT_TERM}") == set()
    assert recalled_ids(memory, "door") == {kept.id, kept.claims[0].id}
    with pytest.raises(KeyError):
        memory.expand(namespace=NS, memory_id=secret.id)
    with pytest.raises(KeyError):
        memory.expand(namespace=NS, memory_id=claim.id)
    assert memory.expand(namespace=NS, memory_id=kept.id) == kept
    stats = memory.stats(NS)
    assert (stats.memories, stats.claims) == (1, 1)
    assert memory.verify_integrity().problems == ()


def test_a_purged_record_is_gone_from_the_engine_index(
    file_store: tuple[EviCortex, Path],
) -> None:
    memory, path = file_store
    secret = remember_secret(memory)
    kept = remember_kept(memory)
    assert memory.purge_memory(namespace=NS, memory_id=secret.id) is True
    memory.close()
    now = datetime.now(UTC)
    with TrueHeart(SQLiteRepository(str(path))) as engine:
        for text in (CONTENT_NEEDLE, CLAIM_VALUE, SUBJECT_TERM, METADATA_NEEDLE):
            capsule = engine.search(SearchQuery(scope(NS), text, now))
            assert capsule.items == ()
            assert capsule.matched == 0
        for entity_id in (secret.id, secret.claims[0].id):
            with pytest.raises(EntityDeleted):
                engine.get_memory(scope(NS), entity_id)
        claims = engine.claims(ClaimQuery(scope(NS), now))
        assert [view.claim.claim_id for view in claims.claims] == [kept.claims[0].id]
        assert engine.get_memory(scope(NS), kept.id).content == kept.content


def test_a_purged_record_is_gone_from_the_file_bytes(file_store: tuple[EviCortex, Path]) -> None:
    memory, path = file_store
    secret = remember_secret(memory)
    remember_kept(memory)
    before = store_bytes(path)
    assert all(needle in before for needle in NEEDLES)

    assert memory.purge_memory(namespace=NS, memory_id=secret.id) is True

    after = store_bytes(path)
    assert [needle for needle in NEEDLES if needle in after] == []
    assert b"The kept note mentions a door." in after
    memory.close()
    after_close = store_bytes(path)
    assert [needle for needle in NEEDLES if needle in after_close] == []


def test_the_key_of_a_purged_record_raises_purged_error(
    file_store: tuple[EviCortex, Path],
) -> None:
    memory, path = file_store
    secret = remember_secret(memory)
    assert memory.purge_memory(namespace=NS, memory_id=secret.id) is True
    with pytest.raises(PurgedError) as caught:
        remember_secret(memory)
    assert isinstance(caught.value, EviCortexError)
    assert CONTENT_NEEDLE not in str(caught.value)
    with pytest.raises(PurgedError):
        memory.remember(namespace=NS, content="something else", idempotency_key="secret")
    with pytest.raises(KeyError):
        memory.expand(namespace=NS, memory_id=secret.id)
    assert recalled_ids(memory, CONTENT_NEEDLE) == set()
    assert memory.stats(NS).memories == 0
    assert [needle for needle in NEEDLES if needle in store_bytes(path)] == []
    # The key is free in another namespace.
    elsewhere = remember_secret(memory, OTHER)
    assert elsewhere.id == record_id(OTHER, "secret")


def test_purge_returns_true_once_then_false(memory: EviCortex) -> None:
    secret = remember_secret(memory)
    assert memory.purge_memory(namespace=NS, memory_id=secret.id) is True
    assert memory.purge_memory(namespace=NS, memory_id=secret.id) is False
    assert memory.purge_memory(namespace=NS, memory_id="mem-" + "0" * 32) is False


def test_purging_another_namespace_s_record_removes_nothing(memory: EviCortex) -> None:
    foreign = remember_secret(memory, OTHER)
    assert memory.purge_memory(namespace=NS, memory_id=foreign.id) is False
    assert memory.expand(namespace=OTHER, memory_id=foreign.id) == foreign
    assert {item.id for item in memory.recall(namespace=OTHER, query=CONTENT_NEEDLE).items} == {
        foreign.id
    }
    assert memory.stats(OTHER).memories == 1


def test_purging_a_claim_id_removes_nothing(memory: EviCortex) -> None:
    secret = remember_secret(memory)
    assert memory.purge_memory(namespace=NS, memory_id=secret.claims[0].id) is False
    assert memory.expand(namespace=NS, memory_id=secret.id) == secret
    assert memory.stats(NS).claims == 1
