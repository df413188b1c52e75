"""MemoryWriter against a chat-completions stub: what is written, dropped and refused."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from writer_stub import NOW, OTHER_SCOPE, RETENTION, SCOPE, Reply, Stub, answer, completion

from trueheart_core import (
    ClaimDraft,
    ClaimQuery,
    ClaimStatus,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    IdempotencyConflict,
    MemoryDraft,
    ProviderError,
    RawEventDraft,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.integrations.writer import (
    ALREADY_STORED,
    NOT_IN_SPAN,
    QUOTE_AMBIGUOUS,
    QUOTE_NOT_FOUND,
    SUPERSESSION_AMBIGUOUS,
    WRITER_PROMPT,
    ChatClient,
    ChatSettings,
    MemoryWriter,
    WriteReport,
    memory_id_for,
)

MESSAGE = (
    "Hi, I'm Ada. I moved to Lisbon in May. I prefer green tea to coffee. "
    "My favourite colour is teal."
)
GOOD_MEMORIES: list[dict[str, Any]] = [
    {"content": "I moved to Lisbon in May", "quote": "I moved to Lisbon in May."},
    {"content": "I prefer green tea to coffee", "quote": "I prefer green tea to coffee."},
]
GOOD_CLAIMS: list[dict[str, Any]] = [
    {
        "subject": "I",
        "predicate": "prefer",
        "value": "green tea",
        "quote": "I prefer green tea to coffee.",
        "valid_from": None,
        "valid_to": None,
    },
    {
        "subject": "My favourite colour",
        "predicate": "is",
        "value": "teal",
        "quote": "My favourite colour is teal.",
    },
]
SECRET = "a passage the server echoed back"


def _writer(service: TrueHeart, settings: ChatSettings, **options: Any) -> MemoryWriter:
    return MemoryWriter(service, settings, retention=RETENTION, clock=lambda: NOW, **options)


def _colour(value: str) -> dict[str, Any]:
    sentence = f"My favourite colour is {value}."
    return {"subject": "My favourite colour", "predicate": "is", "value": value, "quote": sentence}


def _current_colours(
    service: TrueHeart, scope: Scope
) -> list[tuple[str, ClaimStatus, tuple[str, ...]]]:
    answer = service.claims(
        ClaimQuery(
            scope, as_of=NOW + timedelta(days=1), subject="My favourite colour", predicate="is"
        )
    )
    return [(view.claim.value, view.status, view.superseded_by) for view in answer.claims]


def _nothing_stored(service: TrueHeart, scope: Scope = SCOPE) -> None:
    stats = service.stats(scope)
    assert (stats.events, stats.memories, stats.claims, stats.extraction_records) == (0, 0, 0, 0)
    assert stats.audit_records == 0
    assert service.audit(scope) == ()
    assert service.stats().events == 0


# --- a good answer --------------------------------------------------------------------------


def test_a_good_answer_is_written_with_lineage_spans_and_an_extraction_record(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer(GOOD_MEMORIES, GOOD_CLAIMS))
    with _writer(service, settings) as writer:
        report = writer.write(SCOPE, MESSAGE, event_id="turn-1")

    assert isinstance(report, WriteReport)
    assert report.receipt.event_id == "turn-1"
    assert report.receipt.source.occurred_at == NOW
    assert (report.proposed_memories, report.proposed_claims) == (2, 2)
    assert report.dropped == () and report.notes == ()
    assert [memory.content for memory in report.memories] == [
        "I moved to Lisbon in May",
        "I prefer green tea to coffee",
    ]
    for position, memory in enumerate(report.memories):
        assert memory.memory_id == memory_id_for(SCOPE, "turn-1", position)
        assert memory.source_event_ids == ("turn-1",)
        assert memory.kind == "memory"
        assert memory.trust is TrustLevel.OBSERVED
        assert memory.created_at == NOW
        start, end = memory.metadata["span_start"], memory.metadata["span_end"]
        assert memory.content in MESSAGE[start:end]
        assert MESSAGE[start:end] == GOOD_MEMORIES[position]["quote"]
        assert memory.metadata["writer"] == writer.identity == "trueheart.writer/1:stub-model"
        assert service.get_memory(SCOPE, memory.memory_id) == memory

    assert [(c.subject, c.predicate, c.value) for c in report.claims] == [
        ("I", "prefer", "green tea"),
        ("My favourite colour", "is", "teal"),
    ]
    for claim in report.claims:
        assert claim.memory.source_event_ids == ("turn-1",)
        assert claim.authority == "memory-writer"
        assert claim.supersedes is None

    record = service.get_extraction(SCOPE, "turn-1")
    assert record == report.extraction
    assert record.extractor == writer.identity
    assert record.claim_ids == tuple(claim.claim_id for claim in report.claims)
    assert [MESSAGE[span.start : span.end] for span in record.spans] == [
        "I prefer green tea to coffee.",
        "My favourite colour is teal.",
    ]
    assert record.diagnostics == ()

    stats = service.stats(SCOPE)
    assert (stats.events, stats.memories, stats.claims, stats.extraction_records) == (1, 4, 2, 1)
    assert service.verify_integrity(SCOPE).problems == ()
    audit = service.audit(SCOPE)
    assert {(row.action, row.entity_id) for row in audit} >= {("ingest", "turn-1")}


def test_the_request_is_one_chat_completion_at_temperature_zero_asking_for_json(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer([], []))
    _writer(service, settings).write(SCOPE, MESSAGE)
    assert stub.paths == ["/v1/chat/completions"]
    (request,) = stub.requests
    assert request["model"] == "stub-model"
    assert request["temperature"] == 0
    assert request["response_format"] == {"type": "json_object"}
    assert request["messages"] == [
        {"role": "system", "content": WRITER_PROMPT},
        {"role": "user", "content": MESSAGE},
    ]


def test_an_empty_answer_stores_the_event_and_an_empty_record(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer([], []))
    report = _writer(service, settings).write(SCOPE, MESSAGE, event_id="turn-1")
    assert report.memories == () and report.claims == ()
    assert report.extraction.claim_ids == () and report.extraction.diagnostics == ()
    stats = service.stats(SCOPE)
    assert (stats.events, stats.memories, stats.extraction_records) == (1, 0, 1)


# --- invented spans -------------------------------------------------------------------------


def test_invented_spans_are_dropped_and_reported_and_the_rest_is_written(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    invented_memory = {"content": "Ada owns a boat", "quote": "I own a boat named Teal."}
    paraphrase = {"content": "Ada lives in Lisbon", "quote": "I moved to Lisbon in May."}
    invented_claim = {
        "subject": "I",
        "predicate": "own",
        "value": "a boat",
        "quote": "I own a boat.",
    }
    outside_span = {
        "subject": "My favourite colour",
        "predicate": "is",
        "value": "crimson",
        "quote": "My favourite colour is teal.",
    }
    stub.script(
        answer(
            [invented_memory, GOOD_MEMORIES[1], paraphrase],
            [invented_claim, GOOD_CLAIMS[1], outside_span],
        )
    )
    report = _writer(service, settings).write(SCOPE, MESSAGE, event_id="turn-1")

    assert [memory.content for memory in report.memories] == ["I prefer green tea to coffee"]
    assert [claim.value for claim in report.claims] == ["teal"]
    colour = MESSAGE.index("My favourite colour")
    lisbon = MESSAGE.index("I moved")
    assert [(i.item, i.index, i.code, i.start, i.end) for i in report.dropped] == [
        ("memory", 0, QUOTE_NOT_FOUND, None, None),
        ("memory", 2, NOT_IN_SPAN, lisbon, lisbon + len(paraphrase["quote"])),
        ("claim", 0, QUOTE_NOT_FOUND, None, None),
        ("claim", 2, NOT_IN_SPAN, colour, len(MESSAGE)),
    ]
    assert report.dropped_counts() == {NOT_IN_SPAN: 2, QUOTE_NOT_FOUND: 2}
    record = service.get_extraction(SCOPE, "turn-1")
    assert [(d.code, d.start, d.end) for d in record.diagnostics] == [
        (QUOTE_NOT_FOUND, None, None),
        (NOT_IN_SPAN, colour, len(MESSAGE)),
    ]
    shown = repr(report) + repr(record)
    for invented in ("boat", "crimson", "Ada lives"):
        assert invented not in shown


def test_a_quote_found_twice_takes_the_first_free_occurrence_and_is_noted(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    message = "Tea is fine. Later, again: Tea is fine."
    second = message.rindex("Tea is fine")
    stub.script(
        answer(
            [
                {"content": "Tea is fine", "quote": "Tea is fine"},
                {"content": "Tea", "quote": "Tea is fine"},
            ],
            [],
        )
    )
    report = _writer(service, settings).write(SCOPE, message)
    spans = [(m.metadata["span_start"], m.metadata["span_end"]) for m in report.memories]
    assert spans == [(0, 11), (second, second + 11)]
    assert [(n.index, n.code) for n in report.notes] == [(0, QUOTE_AMBIGUOUS), (1, QUOTE_AMBIGUOUS)]


def test_an_answer_wrapped_in_prose_is_read(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    body = json.dumps({"memories": GOOD_MEMORIES[:1], "claims": []})
    stub.script(Reply(body=completion(f"Sure! Here it is:\n```json\n{body}\n```\nDone.")))
    report = _writer(service, settings).write(SCOPE, MESSAGE)
    assert [memory.content for memory in report.memories] == ["I moved to Lisbon in May"]


def test_a_server_refusing_response_format_is_asked_again_without_it(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(
        Reply(status=400, body={"error": {"message": "response_format is not supported"}}),
        answer(GOOD_MEMORIES[:1], []),
        answer([], []),
    )
    writer = _writer(service, settings)
    assert len(writer.write(SCOPE, MESSAGE).memories) == 1
    writer.write(SCOPE, "Nothing to keep.")
    assert ["response_format" in request for request in stub.requests] == [True, False, False]


# --- failures store nothing -----------------------------------------------------------------

FAILURES = {
    "malformed JSON": (
        Reply(body=completion('{"memories": [{"content": "I moved", "quote": ')),
        "is not a JSON object",
    ),
    "no JSON at all": (Reply(body=completion("I cannot help with that.")), "is not a JSON object"),
    "memories not a list": (
        Reply(body=completion(json.dumps({"memories": "I moved", "claims": []}))),
        "does not match the schema",
    ),
    "claims missing": (
        Reply(body=completion(json.dumps({"memories": GOOD_MEMORIES}))),
        "does not match the schema",
    ),
    "a claim without its quote": (
        Reply(
            body=completion(
                json.dumps(
                    {
                        "memories": GOOD_MEMORIES,
                        "claims": [{"subject": "I", "predicate": "prefer", "value": "tea"}],
                    }
                )
            )
        ),
        "does not match the schema",
    ),
    "a value that is not text": (
        Reply(
            body=completion(json.dumps({"memories": [{"content": 3, "quote": "x"}], "claims": []}))
        ),
        "does not match the schema",
    ),
    "HTTP 500": (
        Reply(status=500, body={"error": {"message": SECRET}}),
        "answered HTTP 500",
    ),
    "HTTP 401": (
        Reply(status=401, body={"error": {"message": SECRET}}),
        "answered HTTP 401",
    ),
    "a refusal": (Reply(body=completion(None, refusal=SECRET)), "refused"),
    "a content filter": (
        Reply(body=completion(SECRET, finish_reason="content_filter")),
        "refused",
    ),
    "cut short": (Reply(body=completion('{"memories": [', finish_reason="length")), "cut short"),
    "a tool call": (
        Reply(body=completion(None, finish_reason="tool_calls")),
        "did not answer with text",
    ),
    "an empty answer": (Reply(body=completion("")), "is empty"),
    "content that is not text": (
        Reply(
            body={
                **completion(""),
                "choices": [
                    {**completion("")["choices"][0], "message": {"role": "assistant", "content": 3}}
                ],
            }
        ),
        "is malformed",
    ),
    "no choices": (Reply(body={"id": "x", "object": "chat.completion"}), "is malformed"),
    "a body that is not JSON": (Reply(body=b"<html>" + SECRET.encode() + b"</html>"), "malformed"),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_a_model_failure_raises_provider_error_and_stores_nothing(
    case: str, stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    reply, phrase = FAILURES[case]
    stub.script(reply)
    with pytest.raises(ProviderError) as raised:
        _writer(service, settings).write(SCOPE, MESSAGE, event_id="turn-1")
    message = str(raised.value)
    assert message.startswith("provider error: ") and phrase in message
    assert SECRET not in message and "Lisbon" not in message
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    _nothing_stored(service)
    with pytest.raises(EntityNotFound):
        service.get_receipt(SCOPE, "turn-1")


class _FailingClient(ChatClient):
    """A host's client whose ``ask`` raises an error quoting the message."""

    __slots__ = ()

    def ask(self, system: str, message: str) -> dict[str, Any]:
        raise ValueError(f"could not send: {message}")


class _LibraryErrorClient(ChatClient):
    """A host's client whose ``ask`` raises a library error quoting the message."""

    __slots__ = ()

    def ask(self, system: str, message: str) -> dict[str, Any]:
        raise ValidationError("answer", message)


@pytest.mark.parametrize("failing", [_FailingClient, _LibraryErrorClient])
def test_a_client_that_raises_is_a_provider_error_without_a_chain(
    settings: ChatSettings, service: TrueHeart, failing: type[ChatClient]
) -> None:
    """Whatever a host's client raises, a library error other than ``ProviderError``
    included (its message could quote the message), is the model's failure."""
    client = failing(settings)
    try:
        with pytest.raises(ProviderError, match="the writer model failed") as raised:
            MemoryWriter(service, client, retention=RETENTION, clock=lambda: NOW).write(
                SCOPE, MESSAGE, event_id="turn-1"
            )
    finally:
        client.close()
    assert SECRET not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    _nothing_stored(service)


def _broken_clock() -> Any:
    raise RuntimeError("the host clock broke")


@pytest.mark.parametrize(
    ("clock", "error", "phrase"),
    [
        (_broken_clock, ProviderError, "the clock failed"),
        (lambda: NOW.replace(tzinfo=None), ValidationError, "clock: must be timezone-aware"),
    ],
)
def test_a_writer_clock_that_raises_or_is_naive_is_refused_before_the_model(
    stub: Stub, settings: ChatSettings, service: TrueHeart, clock: Any, error: type, phrase: str
) -> None:
    writer = MemoryWriter(service, settings, retention=RETENTION, clock=clock)
    try:
        with pytest.raises(error, match=phrase):
            writer.write(SCOPE, MESSAGE, event_id="turn-1")
    finally:
        writer.close()
    assert stub.requests == []
    _nothing_stored(service)


def test_a_timeout_raises_provider_error_and_stores_nothing(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(Reply(body=completion(json.dumps({"memories": [], "claims": []})), hang=True))
    try:
        with pytest.raises(ProviderError, match="timed out"):
            _writer(service, settings).write(SCOPE, MESSAGE)
    finally:
        stub.release.set()
    _nothing_stored(service)


def test_an_unreachable_server_raises_provider_error_and_stores_nothing(
    service: TrueHeart,
) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = ChatSettings(
        model="stub-model",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key="dummy",
        timeout=0.5,
        max_retries=0,
    )
    with pytest.raises(ProviderError, match="could not be reached"):
        _writer(service, settings).write(SCOPE, MESSAGE)
    _nothing_stored(service)


# --- what the scope already holds -----------------------------------------------------------


def test_a_second_write_of_the_same_message_skips_the_facts_already_stored(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer(GOOD_MEMORIES, GOOD_CLAIMS), answer(GOOD_MEMORIES, GOOD_CLAIMS))
    writer = _writer(service, settings)
    first = writer.write(SCOPE, MESSAGE, event_id="turn-1")
    second = writer.write(SCOPE, MESSAGE, event_id="turn-2", occurred_at=NOW + timedelta(hours=1))

    assert len(first.memories) == 2 and len(first.claims) == 2
    assert second.memories == () and second.claims == ()
    assert [(i.item, i.index, i.code) for i in second.dropped] == [
        ("memory", 0, ALREADY_STORED),
        ("memory", 1, ALREADY_STORED),
        ("claim", 0, ALREADY_STORED),
        ("claim", 1, ALREADY_STORED),
    ]
    assert [d.code for d in service.get_extraction(SCOPE, "turn-2").diagnostics] == [
        ALREADY_STORED,
        ALREADY_STORED,
    ]
    stats = service.stats(SCOPE)
    assert (stats.events, stats.memories, stats.claims, stats.extraction_records) == (2, 4, 2, 2)


def test_duplicates_are_found_in_normalised_form_and_within_one_answer(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer(GOOD_MEMORIES[:1], [_colour("teal")]))
    writer = _writer(service, settings)
    writer.write(SCOPE, "I moved to Lisbon in May. My favourite colour is teal.")
    message = (
        "i moved to  LISBON in May!  My favourite colour is Teal. My favourite colour is Teal."
    )
    stub.script(
        answer(
            [{"content": "i moved to  LISBON in May!", "quote": "i moved to  LISBON in May!"}],
            [_colour("Teal"), _colour("Teal")],
        )
    )
    report = writer.write(SCOPE, message, occurred_at=NOW + timedelta(hours=1))
    assert report.memories == () and report.claims == ()
    assert [(i.item, i.index, i.code) for i in report.dropped] == [
        ("memory", 0, ALREADY_STORED),
        ("claim", 0, ALREADY_STORED),
        ("claim", 1, "repeated_in_answer"),
    ]


class _CountingReads(TrueHeart):
    """A service that counts the memories its listings return."""

    read = 0

    def list_memories(self, *args: Any, **kwargs: Any) -> Any:
        page = super().list_memories(*args, **kwargs)
        self.read += len(page.items)
        return page


def test_the_scope_is_read_only_until_every_fact_is_found(
    stub: Stub, settings: ChatSettings, tmp_path: Path
) -> None:
    with _CountingReads(SQLiteRepository(tmp_path / "held.db"), clock=lambda: NOW) as service:
        source = SourceRef("notes", "note", NOW, TrustLevel.OBSERVED)
        held = [
            MemoryDraft(
                f"a-{n:03d}", SCOPE, f"note {n}", ("notes",), "note", TrustLevel.OBSERVED, NOW
            )
            for n in range(1, 250)
        ]
        lisbon = MemoryDraft(
            "a-000", SCOPE, "I moved to Lisbon in May", ("notes",), "note", TrustLevel.OBSERVED, NOW
        )
        service.ingest_derived(
            RawEventDraft("notes", SCOPE, source, "notes", RETENTION), memories=[lisbon, *held]
        )
        writer = _writer(service, settings)
        stub.script(answer(GOOD_MEMORIES[:1], []), answer(GOOD_MEMORIES, []))
        report = writer.write(SCOPE, MESSAGE, event_id="turn-1")
        assert report.memories == ()
        assert [(i.item, i.code) for i in report.dropped] == [("memory", ALREADY_STORED)]
        assert service.read == 100  # the first page held it: the other 150 were not read
        service.read = 0
        report = writer.write(SCOPE, MESSAGE, event_id="turn-2")
        assert [m.content for m in report.memories] == ["I prefer green tea to coffee"]
        assert service.read == 250  # a new fact is looked for in every memory


def test_a_fact_held_only_in_another_scope_is_written_again(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer(GOOD_MEMORIES, GOOD_CLAIMS), answer(GOOD_MEMORIES, GOOD_CLAIMS))
    writer = _writer(service, settings)
    writer.write(OTHER_SCOPE, MESSAGE)
    report = writer.write(SCOPE, MESSAGE)
    assert len(report.memories) == 2 and len(report.claims) == 2 and report.dropped == ()


# --- supersession ---------------------------------------------------------------------------


def test_a_new_value_supersedes_the_current_claim_of_its_own_scope_only(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    writer = _writer(service, settings)
    stub.script(answer([], [_colour("teal")]), answer([], [_colour("teal")]))
    other = writer.write(OTHER_SCOPE, "My favourite colour is teal.", event_id="bob-1")
    mine = writer.write(SCOPE, "My favourite colour is teal.", event_id="ada-1")
    stub.script(answer([], [_colour("orange")]))
    later = NOW + timedelta(days=1)
    report = writer.write(
        SCOPE, "My favourite colour is orange.", event_id="ada-2", occurred_at=later
    )

    (new,) = report.claims
    assert new.supersedes == mine.claims[0].claim_id
    assert report.superseded == (mine.claims[0].claim_id,)
    assert _current_colours(service, SCOPE) == [
        ("teal", ClaimStatus.SUPERSEDED, (new.claim_id,)),
        ("orange", ClaimStatus.CURRENT, ()),
    ]
    assert _current_colours(service, OTHER_SCOPE) == [("teal", ClaimStatus.CURRENT, ())]
    assert other.claims[0].claim_id != mine.claims[0].claim_id


def test_a_claim_of_another_scope_is_never_superseded(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    writer = _writer(service, settings)
    stub.script(answer([], [_colour("teal")]), answer([], [_colour("orange")]))
    writer.write(OTHER_SCOPE, "My favourite colour is teal.")
    report = writer.write(SCOPE, "My favourite colour is orange.")
    assert report.claims[0].supersedes is None and report.notes == ()
    assert _current_colours(service, OTHER_SCOPE) == [("teal", ClaimStatus.CURRENT, ())]


def test_several_current_values_are_not_resolved(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    event = RawEventDraft(
        "crm", SCOPE, SourceRef("crm", "import", NOW, TrustLevel.OBSERVED), "imported", RETENTION
    )
    service.ingest_event(event)
    for value in ("teal", "navy"):
        service.materialize_claim(
            ClaimDraft(
                f"claim-{value}",
                SCOPE,
                "My favourite colour",
                "is",
                value,
                ("crm",),
                TrustLevel.OBSERVED,
                NOW,
            )
        )
    stub.script(answer([], [_colour("orange")]))
    report = _writer(service, settings).write(
        SCOPE, "My favourite colour is orange.", occurred_at=NOW + timedelta(hours=1)
    )
    assert report.claims[0].supersedes is None
    assert [(n.item, n.index, n.code) for n in report.notes] == [
        ("claim", 0, SUPERSESSION_AMBIGUOUS)
    ]
    assert [d.code for d in report.extraction.diagnostics] == [SUPERSESSION_AMBIGUOUS]


def test_supersession_can_be_turned_off(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    writer = _writer(service, settings, supersede=False)
    stub.script(answer([], [_colour("teal")]), answer([], [_colour("orange")]))
    writer.write(SCOPE, "My favourite colour is teal.")
    report = writer.write(
        SCOPE, "My favourite colour is orange.", occurred_at=NOW + timedelta(hours=1)
    )
    assert report.claims[0].supersedes is None
    statuses = [status for _, status, _ in _current_colours(service, SCOPE)]
    assert statuses == [ClaimStatus.CURRENT, ClaimStatus.CURRENT]


# --- events and arguments -------------------------------------------------------------------


def test_an_event_already_written_is_refused_before_the_model_is_asked(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer(GOOD_MEMORIES, []))
    writer = _writer(service, settings)
    writer.write(SCOPE, MESSAGE, event_id="turn-1")
    with pytest.raises(IdempotencyConflict):
        writer.write(SCOPE, MESSAGE, event_id="turn-1")
    assert len(stub.requests) == 1


def test_a_deleted_event_id_is_refused_before_the_model_is_asked(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer([], []))
    writer = _writer(service, settings)
    writer.write(SCOPE, MESSAGE, event_id="turn-1")
    service.govern(
        GovernanceCommand(
            SCOPE, GovernanceAction.DELETE, EntityType.RAW_EVENT, "turn-1", NOW, "user request"
        )
    )
    with pytest.raises(EntityDeleted):
        writer.write(SCOPE, MESSAGE, event_id="turn-1")
    assert len(stub.requests) == 1


def test_a_redirect_is_an_http_error_and_the_message_goes_nowhere_else(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    elsewhere = f"{stub.url}/elsewhere/chat/completions"
    stub.script(Reply(status=307, body={}, headers={"location": elsewhere}))
    stub.script(answer(GOOD_MEMORIES, []))
    with pytest.raises(ProviderError, match="the writer model answered HTTP 307"):
        _writer(service, settings).write(SCOPE, MESSAGE, event_id="turn-1")
    assert len(stub.requests) == 1 and all("elsewhere" not in path for path in stub.paths)
    assert service.stats(SCOPE).events == 0


def test_a_closed_service_is_refused_before_the_model_is_asked(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(answer(GOOD_MEMORIES, []))
    writer = _writer(service, settings)
    service.close()
    with pytest.raises(ValidationError, match="repository: is closed"):
        writer.write(SCOPE, MESSAGE, event_id="turn-1")
    assert stub.requests == []


def test_an_event_stored_without_extraction_can_be_written(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    draft = RawEventDraft(
        "turn-1", SCOPE, SourceRef("chat", "message", NOW, TrustLevel.CONFIRMED), MESSAGE, RETENTION
    )
    service.ingest_event(draft)
    stub.script(answer(GOOD_MEMORIES, GOOD_CLAIMS))
    report = _writer(service, settings).write(SCOPE, draft)
    assert report.receipt == service.get_receipt(SCOPE, "turn-1")
    assert {memory.trust for memory in report.memories} == {TrustLevel.CONFIRMED}
    assert service.stats(SCOPE).events == 1


def test_argument_errors_are_raised_before_the_model_is_asked(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    writer = _writer(service, settings)
    draft = RawEventDraft(
        "turn-1", SCOPE, SourceRef("chat", "message", NOW, TrustLevel.OBSERVED), MESSAGE, RETENTION
    )
    with pytest.raises(ValidationError, match="message: must be a RawEventDraft of the scope"):
        writer.write(OTHER_SCOPE, draft)
    with pytest.raises(ValidationError, match="event_id: applies only to a text message"):
        writer.write(SCOPE, draft, event_id="other")
    with pytest.raises(ValidationError, match="message: must be a string"):
        writer.write(SCOPE, b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="retention: must be given"):
        MemoryWriter(service, settings).write(SCOPE, MESSAGE)
    with pytest.raises(ValidationError, match="content"):
        writer.write(SCOPE, "")
    with pytest.raises(ValidationError, match="service: must be a TrueHeart"):
        MemoryWriter(object(), settings)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="model: must be"):
        MemoryWriter(service, "gpt")  # type: ignore[arg-type]
    assert stub.requests == []
    _nothing_stored(service)


def test_settings_are_validated_and_never_show_the_key() -> None:
    settings = ChatSettings(model="m", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(settings)
    for bad in (
        {"model": ""},
        {"model": "m", "timeout": 0},
        {"model": "m", "timeout": float("nan")},
        {"model": "m", "timeout": 10**400},
        {"model": "m", "max_retries": -1},
        {"model": "m", "api_key": ""},
        {"model": "m", "base_url": " "},
        {"model": "m", "json_response": 1},
    ):
        with pytest.raises(ValidationError):
            ChatSettings(**bad)


def test_a_client_without_an_api_key_is_refused_when_the_writer_is_made(
    service: TrueHeart, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="could not be configured") as raised:
        MemoryWriter(service, ChatSettings(model="m", base_url="http://127.0.0.1:9/v1"))
    assert raised.value.__cause__ is None and raised.value.__context__ is None


# --- counting, codes and failures at the edges -----------------------------------------------


def test_facts_already_held_take_no_place_among_the_hundred_kept(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    sentences = [f"Fact number {n} is true." for n in range(101)]
    text = " ".join(sentences)
    memories = [{"content": s, "quote": s} for s in sentences]
    claims = [
        {"subject": f"Fact number {n}", "predicate": "is", "value": "true", "quote": sentence}
        for n, sentence in enumerate(sentences)
    ]
    stub.script(answer(memories[:100], claims[:100]), answer(memories, claims))
    writer = _writer(service, settings)
    first = writer.write(SCOPE, text, event_id="turn-1")
    assert (len(first.memories), len(first.claims)) == (100, 100)
    second = writer.write(SCOPE, text, event_id="turn-2", occurred_at=NOW + timedelta(hours=1))
    # The hundred already held are dropped as such; the new one at position 100 is kept.
    assert [m.content for m in second.memories] == [sentences[100]]
    assert [c.subject for c in second.claims] == ["Fact number 100"]
    assert {i.code for i in second.dropped} == {ALREADY_STORED}
    assert len(second.dropped) == 200


def test_a_blank_memory_is_an_invalid_item_and_a_note_is_only_on_a_kept_item(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    text = "Tea.  Tea."
    stub.script(
        answer(
            [
                {"content": "  ", "quote": "  "},
                {"content": "Tea", "quote": "Tea."},
                {"content": "Coffee", "quote": "Tea."},
            ],
            [],
        )
    )
    report = _writer(service, settings).write(SCOPE, text, event_id="turn-1")
    assert [(i.index, i.code) for i in report.dropped] == [(0, "invalid_item"), (2, "not_in_span")]
    assert [(i.index, i.code) for i in report.notes] == [(1, "quote_ambiguous")]


def test_a_bad_event_id_is_named_as_such(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    writer = _writer(service, settings)
    for bad, message in ((5, "must be a non-blank string"), ("   ", "must be a non-blank string")):
        with pytest.raises(ValidationError, match=rf"^event_id: {message}"):
            writer.write(SCOPE, MESSAGE, event_id=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"^event_id: must be at most 128 characters"):
        writer.write(SCOPE, MESSAGE, event_id="e" * 129)
    assert stub.requests == []


class _Racing(TrueHeart):
    """A service on which another write of the same event commits while the model
    answers this one: between the check before the model call and the read of the
    current claims."""

    other: MemoryWriter | None = None
    message = ""

    def claims(self, query: Any) -> Any:
        other, self.other = self.other, None
        if other is not None:
            other.write(SCOPE, self.message, event_id="turn-1")
        return super().claims(query)


def test_a_retry_overlapping_its_first_attempt_is_an_idempotency_conflict(
    stub: Stub, settings: ChatSettings, tmp_path: Path
) -> None:
    with SQLiteRepository(tmp_path / "race.db") as repository:
        racing = _Racing(repository, clock=lambda: NOW)
        first = TrueHeart(repository, clock=lambda: NOW)
        # The retry is answered "blue", the first attempt (which commits meanwhile)
        # "teal": the retry's claim has the first one's ID, and would supersede it.
        stub.script(answer([], [_colour("blue")]), answer([], [_colour("teal")]))
        racing.message = "My favourite colour is teal. My favourite colour is blue."
        racing.other = _writer(first, settings)
        with pytest.raises(IdempotencyConflict):
            _writer(racing, settings).write(SCOPE, racing.message, event_id="turn-1")
        assert [value for value, _, _ in _current_colours(first, SCOPE)] == ["teal"]
        assert first.verify_integrity().ok


def test_a_claim_the_host_made_from_the_event_being_written_counts_as_held(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    """Only the claims an extraction of the event gives are left out as an overlapping
    write's: the host's own claim from the event is held, and superseded."""
    text = "My favourite colour was teal. My favourite colour is navy."
    draft = RawEventDraft(
        "turn-1", SCOPE, SourceRef("turn-1", "message", NOW, TrustLevel.OBSERVED), text, RETENTION
    )
    service.ingest_event(draft)
    host = ClaimDraft(
        "claim-host",
        SCOPE,
        "My favourite colour",
        "is",
        "teal",
        ("turn-1",),
        TrustLevel.OBSERVED,
        NOW,
    )
    service.materialize_claim(host)
    navy = {**_colour("navy"), "quote": "My favourite colour is navy."}
    stub.script(answer([], [navy]))
    report = _writer(service, settings).write(SCOPE, draft)
    assert [c.supersedes for c in report.claims] == ["claim-host"]
    assert _current_colours(service, SCOPE) == [
        ("navy", ClaimStatus.CURRENT, ()),
        ("teal", ClaimStatus.SUPERSEDED, (report.claims[0].claim_id,)),
    ]
