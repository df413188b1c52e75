"""Subclasses of ``str``, ``int`` and ``float`` are taken as the plain values they hold:
their own methods cannot tell the checks, the digests or the store something else."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from trueheart_core import (
    ClaimDraft,
    ClaimProvenance,
    ClaimQuery,
    ClaimStatus,
    ExtractionDiagnostic,
    HashingEmbedder,
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RerankCandidate,
    RerankResult,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    ValidationError,
)

NOW = datetime(2026, 8, 13, 12, tzinfo=UTC)
SCOPE = Scope("t", "o", "s")
SOURCE = SourceRef("src", "chat", NOW, TrustLevel.OBSERVED)
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=3))
_PLUS_2 = timezone(timedelta(hours=2))


class Short(str):
    """Says it is one ASCII character long, whatever it holds."""

    __slots__ = ()

    def __len__(self) -> int:
        return 1

    def isascii(self) -> bool:
        return True


class Recoded(str):
    """Encodes to other bytes than it holds."""

    __slots__ = ()

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return b"something else"


_counter = itertools.count()


class NeverEqual(str):
    __slots__ = ()

    def __hash__(self) -> int:
        return next(_counter)

    def __eq__(self, other: object) -> bool:
        return False


def test_a_body_that_lies_about_its_size_is_refused() -> None:
    with pytest.raises(ValidationError, match="content: must be at most 256 KiB UTF-8"):
        MemoryDraft("m", SCOPE, Short("y" * 300_000), ("e",), "fact", TrustLevel.OBSERVED, NOW)
    with pytest.raises(ValidationError, match="content: must be at most 256 KiB UTF-8"):
        RawEventDraft("e", SCOPE, SOURCE, Short("z" * 300_000), RETENTION)
    with pytest.raises(ValidationError, match="content: must be valid UTF-8") as caught:
        RawEventDraft("e", SCOPE, SOURCE, Short("secret \ud800"), RETENTION)
    assert caught.value.__context__ is None
    with pytest.raises(ValidationError, match="tenant_id: must be valid UTF-8"):
        Scope(Short("t\ud800"), "o", "s")


def test_ids_that_lie_about_equality_are_compared_as_text() -> None:
    with pytest.raises(ValidationError, match="source_event_ids: must not contain duplicates"):
        MemoryDraft(
            "m", SCOPE, "body", (NeverEqual("e"), NeverEqual("e")), "fact", TrustLevel.OBSERVED, NOW
        )
    draft = MemoryDraft("m", SCOPE, "body", (NeverEqual("e"),), "fact", TrustLevel.OBSERVED, NOW)
    assert type(draft.source_event_ids) is tuple
    assert [type(i) for i in draft.source_event_ids] == [str]


def test_fields_hold_plain_values() -> None:
    class Tuple(tuple[str, ...]):
        __slots__ = ()

    draft = MemoryDraft(
        Recoded("m"),
        Scope(Recoded("t"), "o", "s"),
        Recoded("body"),
        Tuple([Recoded("e")]),
        Recoded("fact"),
        TrustLevel.OBSERVED,
        NOW,
        {Recoded("key"): [Recoded("v"), _Int(3), _Float(0.5)]},
    )
    assert type(draft.memory_id) is str and type(draft.content) is str
    assert type(draft.kind) is str and type(draft.scope.tenant_id) is str
    assert type(draft.source_event_ids) is tuple
    key, values = next(iter(draft.metadata.items()))
    assert type(key) is str and [type(v) for v in values] == [str, int, float]
    claim = ClaimDraft(
        Recoded("c"),
        SCOPE,
        Recoded("ada"),
        Recoded("likes"),
        Recoded("tea"),
        ("e",),
        TrustLevel.OBSERVED,
        NOW,
    )
    assert {type(claim.claim_id), type(claim.subject), type(claim.value)} == {str}


class _Int(int):
    def bit_length(self) -> int:
        return 1


class _Float(float):
    pass


def test_a_stored_memory_of_a_recoding_body_reads_back(tmp_path: Path) -> None:
    with TrueHeart(SQLiteRepository(tmp_path / "m.db"), clock=lambda: NOW) as service:
        service.ingest_event(RawEventDraft(Recoded("e"), SCOPE, SOURCE, Recoded("body"), RETENTION))
        service.materialize_once(
            MemoryDraft(
                Recoded("m"), SCOPE, Recoded("the body"), ("e",), "fact", TrustLevel.OBSERVED, NOW
            )
        )
        assert [i.memory.content for i in service.recall(RecallQuery(SCOPE, NOW))] == ["the body"]
        assert service.verify_integrity().ok


def test_times_hold_plain_datetimes() -> None:
    class Moment(datetime):
        def __lt__(self, other: object) -> bool:
            raise RuntimeError("compared")

        def astimezone(self, tz: object = None) -> datetime:  # type: ignore[override]
            raise KeyError("converted")

    for moment in (Moment(2026, 8, 13, 12, tzinfo=UTC), Moment(2026, 8, 13, 14, tzinfo=_PLUS_2)):
        source = SourceRef("src", "chat", moment, TrustLevel.OBSERVED)
        assert type(source.occurred_at) is datetime and source.occurred_at == NOW
        assert source.occurred_at.tzinfo is UTC


def test_a_batch_is_read_once() -> None:
    class Shifting(list[RawEventDraft]):
        passes = 0

        def __iter__(self) -> Iterator[RawEventDraft]:
            Shifting.passes += 1
            return iter(["not a draft"] if Shifting.passes > 1 else list.__iter__(self))  # type: ignore[list-item]

    drafts = Shifting([RawEventDraft("e", SCOPE, SOURCE, "body", RETENTION)])
    with TrueHeart(SQLiteRepository(":memory:"), clock=lambda: NOW) as service:
        (receipt,) = service.ingest_events(drafts)
    assert receipt.event_id == "e" and Shifting.passes == 0


class _Blank(str):
    """Says it is not blank, whatever it holds."""

    __slots__ = ()

    def strip(self, chars: str | None = None) -> str:
        return "x"


def test_a_query_that_lies_about_its_length_or_blankness_is_refused() -> None:
    with pytest.raises(ValidationError, match="text: must be at most 4096 characters"):
        SearchQuery(SCOPE, Short("tea " * 250_000), NOW)
    with pytest.raises(ValidationError, match="text: must be a non-blank string"):
        SearchQuery(SCOPE, _Blank("   "), NOW)
    query = SearchQuery(SCOPE, Recoded("green tea"), NOW)
    assert type(query.text) is str and query.text == "green tea"


def test_a_claims_cursor_is_held_as_plain_text() -> None:
    with pytest.raises(ValidationError, match="cursor: must be a cursor returned by the same"):
        ClaimQuery(SCOPE, NOW, limit=5, cursor=Short(""))
    query = ClaimQuery(SCOPE, NOW, limit=5, cursor=Recoded("abc"))
    assert type(query.cursor) is str and query.cursor == "abc"


class Unhashable(str):
    """Cannot be hashed, and encodes to other bytes than it holds."""

    __slots__ = ()

    def __hash__(self) -> int:
        raise TypeError("no hash")

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return b"something else"


class Huge(int):
    """Compares as no page size would."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True


def test_exact_reads_take_ids_as_the_plain_text_they_hold(tmp_path: Path) -> None:
    claim = ClaimDraft("c", SCOPE, "ada", "likes", "tea", ("e",), TrustLevel.OBSERVED, NOW)
    with TrueHeart(SQLiteRepository(tmp_path / "plain.db"), clock=lambda: NOW) as service:
        service.ingest_derived(
            RawEventDraft("e", SCOPE, SOURCE, "Ada likes tea.", RETENTION),
            memories=[MemoryDraft("m", SCOPE, "tea", ("e",), "fact", TrustLevel.OBSERVED, NOW)],
            claims=[claim],
        )
        page = service.list_memories(SCOPE, limit=1)
        assert service.get_memory(SCOPE, Unhashable("m")) == service.get_memory(SCOPE, "m")
        assert service.get_receipt(SCOPE, Unhashable("e")) == service.get_receipt(SCOPE, "e")
        assert service.derived_memories(SCOPE, Unhashable("e")) == ("c", "m")
        assert service.get_claims(SCOPE, [Unhashable("c")], as_of=NOW) == service.get_claims(
            SCOPE, ["c"], as_of=NOW
        )
        with pytest.raises(ValidationError, match="claim_ids"):
            service.get_claims(SCOPE, [Unhashable(" ")], as_of=NOW)
        assert service.list_memories(SCOPE, kinds=(Unhashable("fact"),)) == service.list_memories(
            SCOPE, kinds=("fact",)
        )
        assert service.scopes(tenant_id=Unhashable("t"), owner_id=Unhashable("o")) == (SCOPE,)
        assert page.next_cursor is not None
        assert service.list_memories(
            SCOPE, limit=1, cursor=Unhashable(page.next_cursor)
        ) == service.list_memories(SCOPE, limit=1, cursor=page.next_cursor)
        for read in (
            lambda: service.list_memories(SCOPE, limit=Huge(1000)),
            lambda: service.audit(SCOPE, limit=Huge(0)),
        ):
            with pytest.raises(ValidationError, match="limit: must be from 1 through 100"):
                read()


def test_query_sizes_are_held_as_plain_ints() -> None:
    """A subclass of ``int`` whose comparisons say yes to any bound is refused, and an
    accepted one is held as the plain number it is."""
    for make in (
        lambda n: RecallQuery(SCOPE, NOW, limit=n),
        lambda n: SearchQuery(SCOPE, "tea", NOW, limit=n),
        lambda n: ClaimQuery(SCOPE, NOW, limit=n),
    ):
        with pytest.raises(ValidationError, match="limit: must be from 1 through"):
            make(Huge(5000))
        with pytest.raises(ValidationError, match="limit: must be from 1 through"):
            make(Huge(0))
        assert type(make(_Int(3)).limit) is int
    query = SearchQuery(SCOPE, "tea", NOW, budget_tokens=_Int(64))
    assert type(query.budget_tokens) is int


def test_sync_semantic_refuses_a_batch_size_that_lies_about_its_bounds(tmp_path: Path) -> None:
    with (
        TrueHeart(
            SQLiteRepository(tmp_path / "sync.db"), clock=lambda: NOW, embedder=HashingEmbedder(8)
        ) as service,
        pytest.raises(ValidationError, match="batch_size: must be from 1 through"),
    ):
        service.sync_semantic(SCOPE, batch_size=Huge(0))


class Liar(int):
    """Answers no to every comparison."""

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return False

    def __ge__(self, other: object) -> bool:
        return False


def test_spans_are_checked_and_held_as_plain_ints() -> None:
    with pytest.raises(ValidationError, match="end: must be greater than start"):
        ClaimProvenance(Liar(5), Liar(3))
    with pytest.raises(ValidationError, match="start: must be a non-negative int"):
        ClaimProvenance(Liar(-1), Liar(3))
    span = ClaimProvenance(_Int(0), Liar(4))
    assert (type(span.start), type(span.end)) == (int, int)
    with pytest.raises(ValidationError, match="end: must be at least start"):
        ExtractionDiagnostic("code", Liar(5), Liar(3))


class _FixedReranker:
    """Scores every candidate alike."""

    identity = "fixed-reranker"

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[RerankResult]:
        return [RerankResult(c.memory_id, 1.0) for c in candidates]


def test_a_rerank_limit_that_lies_about_its_bounds_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="rerank_limit: must be from 1 through 100"):
        TrueHeart(
            SQLiteRepository(tmp_path / "rerank.db"),
            embedder=HashingEmbedder(8),
            reranker=_FixedReranker(),
            rerank_limit=Huge(5000),
        )


class Denying(tuple[ClaimStatus, ...]):
    """Says it holds nothing, and cannot be iterated through its own method."""

    def __contains__(self, item: object) -> bool:
        return False

    def __iter__(self) -> Iterator[ClaimStatus]:
        raise RuntimeError("host")


def test_claim_statuses_are_held_as_plain_tuples(tmp_path: Path) -> None:
    statuses = (ClaimStatus.CURRENT,)
    query = ClaimQuery(SCOPE, NOW, statuses=Denying(statuses))
    search = SearchQuery(SCOPE, "tea", NOW, claim_statuses=Denying(statuses))
    assert type(query.statuses) is tuple and query.statuses == statuses
    assert type(search.claim_statuses) is tuple and search.claim_statuses == statuses
    claim = ClaimDraft("c", SCOPE, "ada", "likes", "tea", ("e",), TrustLevel.OBSERVED, NOW)
    with TrueHeart(SQLiteRepository(tmp_path / "plain.db"), clock=lambda: NOW) as service:
        service.ingest_derived(
            RawEventDraft("e", SCOPE, SOURCE, "Ada likes tea.", RETENTION), claims=[claim]
        )
        found = service.claims(query)
        assert [view.claim.claim_id for view in found.claims] == ["c"]
        assert found == service.claims(ClaimQuery(SCOPE, NOW, statuses=statuses))
        paged = ClaimQuery(SCOPE, NOW, statuses=Denying(statuses), limit=5)
        assert service.claims(paged) == service.claims(
            ClaimQuery(SCOPE, NOW, statuses=statuses, limit=5)
        )
        capsule = service.search(search)
        assert [item.memory.memory_id for item in capsule.items] == ["c"]


def test_index_semantic_reads_its_ids_once(tmp_path: Path) -> None:
    class Shifting(list[str]):
        def __iter__(self) -> Iterator[str]:
            raise RuntimeError("host")

    repository = SQLiteRepository(tmp_path / "ids.db")
    with TrueHeart(
        repository, clock=lambda: NOW, embedder=HashingEmbedder(), auto_index=False
    ) as service:
        service.ingest_derived(
            RawEventDraft("e", SCOPE, SOURCE, "Ada likes tea.", RETENTION),
            memories=[MemoryDraft("m", SCOPE, "tea", ("e",), "fact", TrustLevel.OBSERVED, NOW)],
        )
        assert service.index_semantic(SCOPE, Shifting(["m"])) == 1
        assert service.semantic_status(SCOPE).complete
