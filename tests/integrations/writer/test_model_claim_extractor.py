"""ModelClaimExtractor: the ClaimExtractor protocol, through ingest_extracted."""

from __future__ import annotations

import json

import pytest
from writer_stub import NOW, RETENTION, SCOPE, Reply, Stub, completion

from trueheart_core import (
    ClaimExtraction,
    ClaimExtractor,
    EntityNotFound,
    ProviderError,
    RawEventDraft,
    SourceRef,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.domain.extraction import check_extraction
from trueheart_core.integrations.writer import (
    CLAIMS_PROMPT,
    INVALID_ITEM,
    NOT_IN_SPAN,
    QUOTE_NOT_FOUND,
    ChatClient,
    ChatSettings,
    ModelClaimExtractor,
    model_identity,
)

MESSAGE = "Ada joined Acme in 2024. Ada lives in Porto."


def _claims(*claims: dict[str, object]) -> Reply:
    return Reply(body=completion(json.dumps({"claims": list(claims)})))


def _draft(content: str = MESSAGE) -> RawEventDraft:
    source = SourceRef("chat", "message", NOW, TrustLevel.OBSERVED)
    return RawEventDraft("turn-1", SCOPE, source, content, RETENTION)


def test_it_is_a_claim_extractor_with_a_versioned_identity(settings: ChatSettings) -> None:
    with ModelClaimExtractor(settings) as extractor:
        assert isinstance(extractor, ClaimExtractor)
        assert extractor.identity == "trueheart.writer.claims/1:stub-model"
    long_name = "m" * 200
    identity = model_identity("trueheart.writer.claims/1", long_name)
    assert len(identity) <= 128 and identity.startswith("trueheart.writer.claims/1:sha256-")


def test_extracted_claims_pass_the_span_check_and_are_stored_in_one_transaction(
    stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(
        _claims(
            {
                "subject": "Ada",
                "predicate": "joined",
                "value": "Acme",
                "quote": "Ada joined Acme",
                "valid_from": "2024-01-01T00:00:00Z",
            },
            {
                "subject": "Ada",
                "predicate": "lives in",
                "value": "Porto",
                "quote": "Ada lives in Porto.",
            },
        )
    )
    extractor = ModelClaimExtractor(settings, authority="assistant-model")
    result = service.ingest_extracted(_draft(), extractor)

    assert [(c.subject, c.predicate, c.value) for c in result.claims] == [
        ("Ada", "joined", "Acme"),
        ("Ada", "lives in", "Porto"),
    ]
    assert result.claims[0].valid_from is not None
    assert {c.authority for c in result.claims} == {"assistant-model"}
    spans = [MESSAGE[span.start : span.end] for span in result.extraction.spans]
    assert spans == ["Ada joined Acme", "Ada lives in Porto."]
    assert result.extraction.extractor == extractor.identity
    assert service.get_extraction(SCOPE, "turn-1") == result.extraction
    (request,) = stub.requests
    assert request["messages"][0] == {"role": "system", "content": CLAIMS_PROMPT}
    assert request["messages"][1] == {"role": "user", "content": MESSAGE}


def test_claims_that_fail_a_check_become_diagnostics(stub: Stub, settings: ChatSettings) -> None:
    stub.script(
        _claims(
            {
                "subject": "Ada",
                "predicate": "works at",
                "value": "Acme",
                "quote": "Ada works at Acme.",
            },
            {
                "subject": "Ada",
                "predicate": "joined",
                "value": "Globex",
                "quote": "Ada joined Acme",
            },
            {
                "subject": "Ada",
                "predicate": "joined",
                "value": "Acme",
                "quote": "Ada joined Acme",
                "valid_from": "2024-01-01",
            },
            {
                "subject": "Ada",
                "predicate": "lives in",
                "value": "Porto",
                "quote": "Ada lives in Porto.",
            },
        )
    )
    extraction = ModelClaimExtractor(settings).extract(MESSAGE)
    assert isinstance(extraction, ClaimExtraction)
    assert check_extraction(MESSAGE, extraction) is extraction
    assert [c.value for c in extraction.claims] == ["Porto"]
    assert [(d.code, d.start, d.end) for d in extraction.diagnostics] == [
        (QUOTE_NOT_FOUND, None, None),
        (NOT_IN_SPAN, 0, 15),
        (INVALID_ITEM, 0, 15),
    ]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=503, body={"error": {"message": "overloaded"}}),
        Reply(body=completion("no JSON here")),
        Reply(body=completion(json.dumps({"facts": []}))),
        Reply(body=completion(None, refusal="I won't")),
    ],
    ids=["HTTP 503", "not JSON", "wrong schema", "refusal"],
)
def test_a_model_failure_stores_nothing_not_even_the_event(
    reply: Reply, stub: Stub, settings: ChatSettings, service: TrueHeart
) -> None:
    stub.script(reply)
    with pytest.raises(ProviderError) as raised:
        service.ingest_extracted(_draft(), ModelClaimExtractor(settings))
    assert raised.value.__cause__ is None
    with pytest.raises(EntityNotFound):
        service.get_receipt(SCOPE, "turn-1")
    assert service.stats(SCOPE).events == 0 and service.audit(SCOPE) == ()


def test_a_shared_client_is_not_closed_by_the_extractor(stub: Stub, settings: ChatSettings) -> None:
    client = ChatClient(settings)
    ModelClaimExtractor(client).close()
    stub.script(_claims())
    assert ModelClaimExtractor(client).extract(MESSAGE) == ClaimExtraction()
    client.close()


def test_arguments_are_checked(settings: ChatSettings) -> None:
    with pytest.raises(ValidationError, match="model: must be a ChatSettings or a ChatClient"):
        ModelClaimExtractor("stub-model")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="authority"):
        ModelClaimExtractor(settings, authority="")
    with pytest.raises(ValidationError, match="content: must be a string"):
        ModelClaimExtractor(settings).extract(b"x")  # type: ignore[arg-type]


def test_client_errors_carry_no_chain(stub: Stub, settings: ChatSettings) -> None:
    client = ChatClient(settings)
    stub.script(Reply(body={"choices": [{"message": "not a message"}]}))
    with pytest.raises(ProviderError, match="malformed") as raised:
        client.ask("system", "message")
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    client.close()
