"""The face at its edges: evidence of any date, concurrent replays, arguments refused
under their own names, purged claims and records, a service closed underneath, and a
reranker whose identity changes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo

import pytest
from evicortex_builders import NS, HashingEmbedder, RecordingReranker, record_id

from evicortex import CanonicalClaimExtractor, ClaimInput, EviCortex
from evicortex._mapping import scope_of
from evicortex.errors import PurgedError, StorageClosedError, ValidationError
from trueheart_core import EntityType, GovernanceAction, GovernanceCommand


@pytest.mark.parametrize("year", [1016, 1, 9500])
def test_evidence_of_any_date_is_recalled_now_and_never_expires(
    memory: EviCortex, year: int
) -> None:
    """Evidence neither fades nor expires, however long ago (or far ahead) it occurred;
    it is recalled from the time it occurred on (so not now, when that is ahead)."""
    occurred = datetime(year, 10, 18, tzinfo=UTC)
    stored = memory.remember(namespace=NS, content="The battle at Assandun", occurred_at=occurred)
    later = datetime(9999, 12, 30, tzinfo=UTC)
    for as_of in (occurred, later) if year > 2026 else (None, occurred, later):
        capsule = memory.recall(namespace=NS, query="battle Assandun", as_of=as_of)
        assert [item.id for item in capsule.items] == [stored.id], as_of
    assert memory.engine.expire_raw_content(as_of=later) == 0
    assert memory.expand(namespace=NS, memory_id=stored.id).content == stored.content


def test_evidence_is_recalled_at_the_last_instant_a_datetime_holds(memory: EviCortex) -> None:
    """Every deadline of evidence is that instant; recall there answers as at the one
    before, and reports the instant asked for."""
    stored = memory.remember(
        namespace=NS, content="The battle at Assandun", occurred_at=datetime(2000, 1, 1, tzinfo=UTC)
    )
    last = datetime.max.replace(tzinfo=UTC)
    for as_of in (last - timedelta(microseconds=1), last, "9999-12-31T23:59:59.999999Z"):
        capsule = memory.recall(namespace=NS, query="battle Assandun", as_of=as_of)
        assert [item.id for item in capsule.items] == [stored.id], as_of
    assert capsule.as_of == last


def test_evidence_may_occur_until_the_last_microsecond_of_the_year_9999(
    memory: EviCortex,
) -> None:
    """Every deadline is the last instant a datetime holds: evidence that occurred on
    the year's last day is kept and recalled, and only that instant itself is refused,
    by the bound the message states."""
    end = datetime.max.replace(tzinfo=UTC)
    late = datetime(9999, 12, 31, 6, tzinfo=UTC)
    stored = memory.remember(namespace=NS, content="The last battle", occurred_at=late)
    almost = memory.remember(
        namespace=NS, content="The very last battle", occurred_at="9999-12-31T23:59:59.999998Z"
    )
    as_of = end - timedelta(microseconds=1)
    capsule = memory.recall(namespace=NS, query="last battle", as_of=as_of)
    assert {item.id for item in capsule.items} == {stored.id, almost.id}
    assert memory.engine.expire_raw_content(as_of=as_of) == 0
    with pytest.raises(ValidationError) as info:
        memory.remember(namespace=NS, content="After the end", occurred_at=end)
    assert str(info.value) == "occurred_at: must be before 9999-12-31T23:59:59.999999Z"


class _Offset(tzinfo):
    """A tzinfo giving a fixed offset, even one ``datetime`` refuses (beyond a day)."""

    def __init__(self, offset: timedelta) -> None:
        self.offset = offset

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return self.offset

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


class _Raising(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        raise KeyError("offset")

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


@pytest.mark.parametrize(
    "zone", [_Offset(timedelta(hours=25)), _Raising()], ids=["offset-25h", "raising"]
)
@pytest.mark.parametrize("argument", ["occurred_at", "recorded_at", "as_of"])
def test_a_datetime_whose_offset_cannot_be_read_is_refused_by_name(
    memory: EviCortex, zone: tzinfo, argument: str
) -> None:
    when = datetime(2026, 1, 1, tzinfo=zone)
    with pytest.raises(ValidationError) as info:
        if argument == "as_of":
            memory.recall(namespace=NS, query="battle", as_of=when)
        else:
            memory.remember(namespace=NS, content="A battle", **{argument: when})
    assert str(info.value) == f"{argument}: must be a representable datetime"
    error = info.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_identical_keyed_requests_at_the_same_time_return_one_record(
    open_store: Callable[..., EviCortex],
) -> None:
    """The request that loses the race is a replay of the one that won (it takes the
    stored times), not a conflict."""
    store = open_store(":memory:")

    def write(key: str, start: threading.Barrier, results: list[object]) -> None:
        start.wait()
        try:
            results.append(store.remember(namespace=NS, content="same", idempotency_key=key))
        except Exception as error:  # reported below
            results.append(error)

    for round_ in range(40):
        results: list[object] = []
        start = threading.Barrier(2)
        threads = [
            threading.Thread(target=write, args=(f"key-{round_}", start, results)) for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(results) == 2 and results[0] == results[1], results


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.recall(namespace=NS, query=" "), "query: must be a non-blank string"),
        (lambda m: m.recall(namespace=NS, query="q" * 4097), "query: must be at most 4096"),
        (lambda m: m.remember(namespace=NS, content="x", source="s" * 129), "source: must be at"),
        (lambda m: m.remember(namespace=NS, content="x", source="\ud800"), "source: must be valid"),
        (
            lambda m: m.remember(namespace=NS, content="x", idempotency_key="\ud800"),
            "idempotency_key: must be valid UTF-8",
        ),
        (
            lambda m: m.remember(namespace=NS, content="x", idempotency_key="k" * 20_000),
            "idempotency_key: must serialize to at most 16 KiB",
        ),
        (
            lambda m: m.remember(
                namespace=NS,
                content="x",
                claims=[ClaimInput("ada", "likes", f"v{n}") for n in range(400)],
            ),
            "claims: must serialize to at most 16 KiB",
        ),
    ],
)
def test_a_refused_argument_is_named_as_the_face_names_it(
    memory: EviCortex, call: Callable[[EviCortex], object], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        call(memory)
    assert str(caught.value).startswith(message)
    assert memory.stats().memories == 0


def test_ids_no_record_can_have_are_not_purged(memory: EviCortex) -> None:
    assert memory.purge_memory(namespace=NS, memory_id="x" * 129) is False
    assert memory.purge_memory(namespace=NS, memory_id="mem-\ud800") is False


def test_superseding_a_purged_claim_is_a_bad_argument(memory: EviCortex) -> None:
    old = memory.remember(
        namespace=NS, content="Ada likes tea", claims=[ClaimInput("ada", "likes", "tea")]
    )
    assert memory.purge_memory(namespace=NS, memory_id=old.id) is True
    superseding = ClaimInput("ada", "likes", "coffee", supersedes=old.claims[0].id)
    with pytest.raises(ValidationError, match="supersedes: must not name a purged claim"):
        memory.remember(
            namespace=NS, content="Ada likes coffee", claims=[superseding], idempotency_key="k"
        )
    # The record's own key was never written, let alone purged.
    fresh = memory.remember(namespace=NS, content="Ada likes coffee", idempotency_key="k")
    assert fresh.id == record_id(NS, "k")
    memory.purge_memory(namespace=NS, memory_id=fresh.id)
    with pytest.raises(PurgedError):
        memory.remember(namespace=NS, content="Ada likes coffee", idempotency_key="k")


def test_a_service_closed_underneath_is_a_closed_store(
    open_store: Callable[..., EviCortex],
) -> None:
    memory = open_store(":memory:")
    memory.engine.close()
    with pytest.raises(StorageClosedError):
        memory.remember(namespace=NS, content="x")
    with pytest.raises(StorageClosedError):
        memory.recall(namespace=NS, query="x")
    # IDs no record can have would be "missing" on an open store: closed, it says so.
    for odd in ("\ud800", 5, "x" * 1000):
        with pytest.raises(StorageClosedError):
            memory.expand(namespace=NS, memory_id=odd)  # type: ignore[arg-type]
    with pytest.raises(StorageClosedError):
        memory.get_extraction(NS, "x" * 1000)
    for odd in ("", "x" * 1000):
        with pytest.raises(StorageClosedError):
            memory.purge_memory(namespace=NS, memory_id=odd)


def test_a_purged_record_is_not_indexed(open_store: Callable[..., EviCortex]) -> None:
    memory = open_store(":memory:", embedder=HashingEmbedder(64))
    stored = memory.remember(namespace=NS, content="quokka sighting")
    memory.purge_memory(namespace=NS, memory_id=stored.id)
    with pytest.raises(KeyError):
        memory.index_semantic(stored)


def test_a_reranker_whose_identity_changed_is_refused(
    open_store: Callable[..., EviCortex],
) -> None:
    reranker = RecordingReranker("cross-encoder@rev-A")
    memory = open_store(":memory:", embedder=HashingEmbedder(64), reranker=reranker)
    memory.remember(namespace=NS, content="quokka sighting")
    capsule = memory.recall(namespace=NS, query="quokka")
    assert capsule.semantic is not None and capsule.semantic.reranker == "cross-encoder@rev-A"
    reranker._identity = "cross-encoder@rev-B"
    with pytest.raises(ValidationError, match="reranker: its identity changed"):
        memory.recall(namespace=NS, query="quokka")


def test_replaying_a_record_whose_claim_was_purged_is_purged_not_a_bad_argument(
    memory: EviCortex,
) -> None:
    """A record's own claim ID under a tombstone makes the replay a write of something
    purged; no ``supersedes`` was given, so none is blamed."""
    request = {
        "namespace": NS,
        "content": "Ada likes tea",
        "idempotency_key": "k1",
        "claims": [ClaimInput("ada", "likes", "tea")],
    }
    stored = memory.remember(**request)  # type: ignore[arg-type]
    claim = stored.claims[0].id
    memory.engine.govern(
        GovernanceCommand(
            scope_of(NS),
            GovernanceAction.FORGET,
            EntityType.MEMORY,
            claim,
            datetime.now(UTC),
            "erase the claim",
        )
    )
    with pytest.raises(PurgedError):
        memory.remember(**request)  # type: ignore[arg-type]


@pytest.mark.parametrize("extracted", [False, True])
def test_a_record_of_later_evidence_lists_its_claims_and_projects_them(
    open_store: Callable[..., EviCortex], extracted: bool
) -> None:
    """Claims are known from their evidence's time on: a record whose evidence occurs
    later than now lists them (with their status then), and ``index_semantic`` projects
    them."""
    store = open_store(":memory:", embedder=HashingEmbedder(dimensions=64), auto_index=False)
    later = "2030-01-01T00:00:00Z"
    if extracted:
        text = (
            "Ada plans a trip. Canonical claim: subject=user:ada; predicate=plans; "
            "value=trip; valid_from=2030-01-01T00:00:00Z; confidence=1.000; "
            "authority=application."
        )
        record = store.remember_extracted(
            namespace=NS, content=text, occurred_at=later, extractor=CanonicalClaimExtractor()
        )
    else:
        record = store.remember(
            namespace=NS,
            content="Ada plans a trip",
            occurred_at=later,
            claims=[ClaimInput("user:ada", "plans", "trip")],
        )
    assert [claim.status for claim in record.claims] == ["current"]
    assert store.expand(namespace=NS, memory_id=record.id).claims == record.claims
    assert store.index_semantic(record).embedded == 2
    assert store.semantic_status(NS).claim_missing_ids == ()


class _RaisingText(str):
    """Text whose own methods raise: the face reads the text it holds instead."""

    __slots__ = ()

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("host text method")

    def endswith(self, *args: object) -> bool:
        raise RuntimeError("host text method")

    def __hash__(self) -> int:
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("host text method")


def test_text_whose_own_methods_raise_is_read_as_the_text_it_holds(memory: EviCortex) -> None:
    namespace = _RaisingText(NS)
    stored = memory.remember(
        namespace=namespace,
        content=_RaisingText("Reads the paper at breakfast"),
        kind=_RaisingText("habit"),
        source=_RaisingText("chat"),
        occurred_at=_RaisingText("2026-03-01T08:00:00Z"),
        idempotency_key=_RaisingText("paper"),
    )
    assert type(stored.namespace) is str and stored.namespace == NS
    again = memory.remember(
        namespace=NS,
        content="Reads the paper at breakfast",
        kind="habit",
        source="chat",
        occurred_at="2026-03-01T08:00:00Z",
        idempotency_key="paper",
    )
    assert again.id == stored.id
    assert memory.expand(namespace=namespace, memory_id=_RaisingText(stored.id)).id == stored.id
    assert memory.stats(namespace).memories == 1
    assert memory.purge_memory(namespace=namespace, memory_id=_RaisingText(stored.id))
    assert memory.stats(NS).memories == 0
