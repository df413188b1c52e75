"""Claim extraction without a database: DTOs, the canonical grammar and the span check."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core import ValidationError
from trueheart_core.domain.extraction import (
    CANONICAL_CLAIM_MALFORMED,
    MAX_EXTRACTED_CLAIMS,
    CanonicalClaimExtractor,
    ClaimExtraction,
    ClaimExtractor,
    ClaimProvenance,
    ExtractedClaim,
    ExtractionDiagnostic,
    check_extraction,
)

T0 = datetime(2026, 4, 18, 9, 30, tzinfo=UTC)
EXAMPLE = (
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark; "
    "valid_from=2026-04-18T09:30:00Z; confidence=1.000; authority=application."
)
SPAN = ClaimProvenance(0, 10)


def _msg(text: str) -> str:
    return "^" + re.escape(text) + "$"


def claim(**changes: Any) -> ExtractedClaim:
    fields: dict[str, Any] = {
        "subject": "user:ada",
        "predicate": "prefers_theme",
        "value": "dark",
        "provenance": SPAN,
    }
    fields.update(changes)
    return ExtractedClaim(**fields)


def extract(text: str) -> ClaimExtraction:
    return CanonicalClaimExtractor().extract(text)


def malformed(start: int, end: int) -> ExtractionDiagnostic:
    return ExtractionDiagnostic(CANONICAL_CLAIM_MALFORMED, start, end)


def only_claim(text: str) -> ExtractedClaim:
    result = extract(text)
    assert result.diagnostics == ()
    assert len(result.claims) == 1
    return result.claims[0]


def refused(text: str) -> None:
    """``text`` is one malformed sentence: no claim, one diagnostic over all of it."""
    assert extract(text) == ClaimExtraction((), (malformed(0, len(text)),))


# --- ClaimProvenance ------------------------------------------------------------------------


def test_provenance_accepts_a_non_empty_span() -> None:
    span = ClaimProvenance(0, 1)
    assert (span.start, span.end) == (0, 1)
    assert ClaimProvenance(7, 300).end == 300


@pytest.mark.parametrize("start", [-1, True, False, 1.0, "0", None])
def test_provenance_start_must_be_a_non_negative_int(start: object) -> None:
    with pytest.raises(ValidationError, match=_msg("start: must be a non-negative int")):
        ClaimProvenance(start, 5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("start", "end"), [(3, 3), (3, 2), (0, 0), (0, True), (0, 1.0), (0, None)])
def test_provenance_end_must_be_greater_than_start(start: int, end: object) -> None:
    with pytest.raises(ValidationError, match=_msg("end: must be greater than start")):
        ClaimProvenance(start, end)  # type: ignore[arg-type]


def test_provenance_start_is_checked_before_end() -> None:
    with pytest.raises(ValidationError, match=_msg("start: must be a non-negative int")):
        ClaimProvenance(-1, -2)


# --- ExtractionDiagnostic -------------------------------------------------------------------


def test_diagnostic_with_and_without_a_span() -> None:
    assert ExtractionDiagnostic("code") == ExtractionDiagnostic("code", None, None)
    spanned = ExtractionDiagnostic("code", 2, 9)
    assert (spanned.code, spanned.start, spanned.end) == ("code", 2, 9)
    assert ExtractionDiagnostic("code", 4, 4).end == 4  # an empty span marks a position


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("", "code: must be a non-blank string"),
        ("  ", "code: must be a non-blank string"),
        (None, "code: must be a non-blank string"),
        ("c" * 129, "code: must be at most 128 characters"),
        ("bad\ud800", "code: must be valid UTF-8"),
    ],
)
def test_diagnostic_code_is_text(code: object, message: str) -> None:
    with pytest.raises(ValidationError, match=_msg(message)):
        ExtractionDiagnostic(code)  # type: ignore[arg-type]


@pytest.mark.parametrize("start", [-1, True, 1.0, "1"])
def test_diagnostic_start_must_be_a_non_negative_int_or_none(start: object) -> None:
    with pytest.raises(ValidationError, match=_msg("start: must be a non-negative int or None")):
        ExtractionDiagnostic("code", start, 5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("start", "end"), [(1, None), (None, 1), (None, 0)])
def test_diagnostic_span_is_both_or_neither(start: int | None, end: int | None) -> None:
    with pytest.raises(ValidationError, match=_msg("end: must be given exactly when start is")):
        ExtractionDiagnostic("code", start, end)


@pytest.mark.parametrize("end", [4, -1, True, 6.0, "6"])
def test_diagnostic_end_must_be_at_least_start(end: object) -> None:
    with pytest.raises(ValidationError, match=_msg("end: must be at least start")):
        ExtractionDiagnostic("code", 5, end)  # type: ignore[arg-type]


def test_diagnostic_code_is_checked_first() -> None:
    with pytest.raises(ValidationError, match=_msg("code: must be a non-blank string")):
        ExtractionDiagnostic("", -1, None)


# --- ExtractedClaim -------------------------------------------------------------------------


def test_claim_defaults() -> None:
    made = claim()
    assert (made.subject, made.predicate, made.value) == ("user:ada", "prefers_theme", "dark")
    assert made.provenance == SPAN
    assert made.valid_from is None
    assert made.valid_to is None
    assert made.confidence == 1.0
    assert made.authority == "application"
    assert made.supersedes_source is None


@pytest.mark.parametrize("field", ["subject", "predicate"])
@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("", "must be a non-blank string"),
        (" \t", "must be a non-blank string"),
        (7, "must be a non-blank string"),
        ("x" * 129, "must be at most 128 characters"),
        ("x\udfff", "must be valid UTF-8"),
    ],
)
def test_claim_subject_and_predicate_are_text(field: str, value: object, rule: str) -> None:
    with pytest.raises(ValidationError, match=_msg(f"{field}: {rule}")):
        claim(**{field: value})


def test_claim_subject_and_predicate_may_have_128_characters() -> None:
    made = claim(subject="s" * 128, predicate="p" * 128)
    assert len(made.subject) == len(made.predicate) == 128


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "value: must be a non-blank string"),
        ("   ", "value: must be a non-blank string"),
        (None, "value: must be a non-blank string"),
        (b"dark", "value: must be a non-blank string"),
        ("v" * 1025, "value: must be at most 1024 characters"),
        ("dark\ud800", "value: must be valid UTF-8"),
    ],
)
def test_claim_value_rules(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=_msg(message)):
        claim(value=value)


def test_claim_value_may_have_1024_characters_of_any_script() -> None:
    assert len(claim(value="é" * 1024).value) == 1024
    assert claim(value="東京 ☀").value == "東京 ☀"


@pytest.mark.parametrize("provenance", [(0, 10), None, ExtractionDiagnostic("c", 0, 1)])
def test_claim_provenance_must_be_a_provenance(provenance: object) -> None:
    with pytest.raises(ValidationError, match=_msg("provenance: must be a ClaimProvenance")):
        claim(provenance=provenance)


@pytest.mark.parametrize("field", ["valid_from", "valid_to"])
@pytest.mark.parametrize("value", [datetime(2026, 1, 1), "2026-01-01T00:00:00Z", 0])
def test_claim_times_must_be_aware(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=_msg(f"{field}: must be timezone-aware")):
        claim(**{field: value})


def test_claim_times_are_normalised_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    made = claim(
        valid_from=datetime(2026, 4, 18, 11, 30, tzinfo=plus_two),
        valid_to=datetime(2026, 4, 18, 12, 30, tzinfo=plus_two),
    )
    assert made.valid_from == T0
    assert made.valid_from is not None and made.valid_from.tzinfo is UTC
    assert made.valid_to == T0 + timedelta(hours=1)
    assert made.valid_to is not None and made.valid_to.tzinfo is UTC


def test_claim_times_may_be_open_on_either_side() -> None:
    assert claim(valid_to=T0).valid_from is None
    assert claim(valid_from=T0).valid_to is None


@pytest.mark.parametrize("valid_to", [T0, T0 - timedelta(microseconds=1)])
def test_claim_valid_to_must_be_later_than_valid_from(valid_to: datetime) -> None:
    with pytest.raises(ValidationError, match=_msg("valid_to: must be later than valid_from")):
        claim(valid_from=T0, valid_to=valid_to)


def test_claim_order_of_times_is_compared_in_utc() -> None:
    # 10:00+02:00 is 08:00Z: earlier than T0 although its wall clock is later.
    earlier = datetime(2026, 4, 18, 10, 0, tzinfo=timezone(timedelta(hours=2)))
    with pytest.raises(ValidationError, match=_msg("valid_to: must be later than valid_from")):
        claim(valid_from=T0, valid_to=earlier)


@pytest.mark.parametrize(
    ("given", "stored"), [(0, 0.0), (1, 1.0), (0.25, 0.25), (1.0, 1.0), (-0.0, 0.0)]
)
def test_claim_confidence_is_stored_as_float(given: float, stored: float) -> None:
    made = claim(confidence=given)
    assert type(made.confidence) is float
    assert made.confidence == stored
    assert str(made.confidence) == str(stored)


@pytest.mark.parametrize(
    "confidence",
    [True, False, -0.01, 1.0001, 2, -1, 10**400, float("nan"), float("inf"), "0.5", None],
)
def test_claim_confidence_must_be_a_number_from_0_through_1(confidence: object) -> None:
    with pytest.raises(
        ValidationError, match=_msg("confidence: must be a number from 0 through 1")
    ):
        claim(confidence=confidence)


@pytest.mark.parametrize(
    ("authority", "message"),
    [
        ("", "authority: must be a non-blank string"),
        (None, "authority: must be a non-blank string"),
        ("a" * 129, "authority: must be at most 128 characters"),
    ],
)
def test_claim_authority_is_text(authority: object, message: str) -> None:
    with pytest.raises(ValidationError, match=_msg(message)):
        claim(authority=authority)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("", "supersedes_source: must be a non-blank string"),
        (3, "supersedes_source: must be a non-blank string"),
        ("s" * 129, "supersedes_source: must be at most 128 characters"),
    ],
)
def test_claim_supersedes_source_is_text_or_none(source: object, message: str) -> None:
    assert claim(supersedes_source="claim-7").supersedes_source == "claim-7"
    with pytest.raises(ValidationError, match=_msg(message)):
        claim(supersedes_source=source)


def test_claim_first_invalid_field_wins() -> None:
    everything_wrong: dict[str, Any] = {
        "subject": "",
        "predicate": "",
        "value": "",
        "provenance": None,
        "valid_from": T0,
        "valid_to": T0,
        "confidence": 2,
        "authority": "",
        "supersedes_source": "",
    }
    expected = [
        "subject: must be a non-blank string",
        "predicate: must be a non-blank string",
        "value: must be a non-blank string",
        "provenance: must be a ClaimProvenance",
        "valid_to: must be later than valid_from",
        "confidence: must be a number from 0 through 1",
        "authority: must be a non-blank string",
        "supersedes_source: must be a non-blank string",
    ]
    valid: dict[str, Any] = {
        "subject": "s",
        "predicate": "p",
        "value": "v",
        "provenance": SPAN,
        "valid_from": T0,
        "valid_to": T0 + timedelta(days=1),
        "confidence": 0.5,
        "authority": "a",
        "supersedes_source": "x",
    }
    for message in expected:
        with pytest.raises(ValidationError, match=_msg(message)):
            ExtractedClaim(**everything_wrong)
        field = message.split(":")[0]
        everything_wrong[field] = valid[field]
    assert ExtractedClaim(**everything_wrong) == ExtractedClaim(**valid)


def test_claim_is_frozen() -> None:
    made = claim()
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.value = "light"  # type: ignore[misc]


# --- ClaimExtraction ------------------------------------------------------------------------


def test_extraction_defaults_to_nothing() -> None:
    empty = ClaimExtraction()
    assert empty.claims == ()
    assert empty.diagnostics == ()


@pytest.mark.parametrize("claims", [[claim()], (claim(), "claim"), (SPAN,), None])
def test_extraction_claims_must_be_a_tuple_of_claims(claims: object) -> None:
    with pytest.raises(ValidationError, match=_msg("claims: must be a tuple of ExtractedClaim")):
        ClaimExtraction(claims)  # type: ignore[arg-type]


@pytest.mark.parametrize("diagnostics", [[ExtractionDiagnostic("c")], ("c",), (claim(),), None])
def test_extraction_diagnostics_must_be_a_tuple_of_diagnostics(diagnostics: object) -> None:
    with pytest.raises(
        ValidationError, match=_msg("diagnostics: must be a tuple of ExtractionDiagnostic")
    ):
        ClaimExtraction((claim(),), diagnostics)  # type: ignore[arg-type]


# --- copying --------------------------------------------------------------------------------


def _samples() -> list[object]:
    full = claim(
        valid_from=T0,
        valid_to=T0 + timedelta(days=2),
        confidence=0.75,
        authority="user",
        supersedes_source="claim-1",
    )
    return [
        SPAN,
        ExtractionDiagnostic("code"),
        ExtractionDiagnostic("code", 3, 4),
        claim(),
        full,
        ClaimExtraction((claim(), full), (ExtractionDiagnostic("code", 0, 0),)),
    ]


@pytest.mark.parametrize("sample", _samples(), ids=lambda sample: type(sample).__name__)
def test_dtos_survive_pickle_deepcopy_and_replace(sample: Any) -> None:
    restored = pickle.loads(pickle.dumps(sample))
    assert restored == sample
    assert type(restored) is type(sample)
    assert copy.deepcopy(sample) == sample
    assert dataclasses.replace(sample) == sample


def test_replace_revalidates() -> None:
    with pytest.raises(ValidationError, match=_msg("valid_to: must be later than valid_from")):
        dataclasses.replace(claim(valid_from=T0), valid_to=T0)


# --- the protocol ---------------------------------------------------------------------------


class OffsetExtractor:
    """Claims the example's fields but points at the wrong span: it misses the value."""

    @property
    def identity(self) -> str:
        return "test.offset/1"

    def extract(self, content: str) -> ClaimExtraction:
        end = content.index("value=")
        return ClaimExtraction((claim(provenance=ClaimProvenance(0, end)),))


def test_extractors_conform_to_the_protocol() -> None:
    assert isinstance(CanonicalClaimExtractor(), ClaimExtractor)
    assert isinstance(OffsetExtractor(), ClaimExtractor)
    assert not isinstance(object(), ClaimExtractor)
    assert CanonicalClaimExtractor().identity == "trueheart.canonical-claim/1"


# --- the canonical grammar ------------------------------------------------------------------


def test_the_canonical_example() -> None:
    result = extract(EXAMPLE)
    assert result.diagnostics == ()
    assert len(result.claims) == 1
    found = result.claims[0]
    assert found.subject == "user:ada"
    assert found.predicate == "prefers_theme"
    assert found.value == "dark"
    assert found.valid_from == datetime(2026, 4, 18, 9, 30, tzinfo=UTC)
    assert found.valid_from is not None and found.valid_from.utcoffset() == timedelta(0)
    assert found.valid_to is None
    assert found.confidence == 1.0
    assert found.authority == "application"
    assert found.supersedes_source is None
    assert found.provenance == ClaimProvenance(0, len(EXAMPLE))
    assert check_extraction(EXAMPLE, result) is result


def test_the_canonical_example_inside_a_longer_text() -> None:
    prefix = "Ada selected dark mode. She said so twice. "
    suffix = " The setting was saved. Nothing else changed."
    text = prefix + EXAMPLE + suffix
    found = only_claim(text)
    assert found == dataclasses.replace(
        only_claim(EXAMPLE), provenance=ClaimProvenance(len(prefix), len(prefix) + len(EXAMPLE))
    )
    assert text[found.provenance.start : found.provenance.end] == EXAMPLE
    assert check_extraction(text, extract(text)).claims == (found,)


def test_required_fields_only() -> None:
    text = "Canonical claim: subject=s; predicate=p; value=v."
    assert only_claim(text) == ExtractedClaim("s", "p", "v", ClaimProvenance(0, len(text)))


def test_every_optional_field() -> None:
    text = (
        "Canonical claim: subject=s; predicate=p; value=v; valid_from=2026-04-18T09:30:00Z; "
        "valid_to=2026-05-01T00:00:00+00:00; confidence=0.25; authority=user; supersedes=old-1."
    )
    assert only_claim(text) == ExtractedClaim(
        "s",
        "p",
        "v",
        ClaimProvenance(0, len(text)),
        valid_from=T0,
        valid_to=datetime(2026, 5, 1, tzinfo=UTC),
        confidence=0.25,
        authority="user",
        supersedes_source="old-1",
    )


def test_optional_fields_in_any_order() -> None:
    forward = "valid_from=2026-04-18T09:30:00Z; confidence=0.5; authority=user; supersedes=k"
    backward = "supersedes=k; authority=user; confidence=0.5; valid_from=2026-04-18T09:30:00Z"
    base = "Canonical claim: subject=s; predicate=p; value=v; "
    first = only_claim(base + forward + ".")
    second = only_claim(base + backward + ".")
    assert first == second
    assert (first.valid_from, first.confidence, first.authority) == (T0, 0.5, "user")
    assert first.supersedes_source == "k"


@pytest.mark.parametrize(
    "body",
    [
        "predicate=p; subject=s; value=v",
        "subject=s; value=v; predicate=p",
        "value=v; subject=s; predicate=p",
        "subject=s; predicate=p; authority=a; value=v",
        "confidence=1; subject=s; predicate=p; value=v",
    ],
)
def test_required_fields_come_first_in_order(body: str) -> None:
    refused(f"Canonical claim: {body}.")


@pytest.mark.parametrize(
    "body",
    ["subject=s; predicate=p", "subject=s", "", "subject=s; value=v", "predicate=p; value=v"],
)
def test_missing_required_fields(body: str) -> None:
    refused(f"Canonical claim: {body}.")


@pytest.mark.parametrize(
    "extra",
    [
        "; subject=t",
        "; value=w",
        "; authority=a; authority=b",
        "; confidence=0.5; confidence=0.5",
        "; supersedes=a; supersedes=a",
        "; valid_from=2026-04-18T09:30:00Z; valid_from=2026-04-18T09:30:00Z",
        "; valid_to=2026-04-18T09:30:00Z; valid_to=2026-04-18T09:30:00Z",
    ],
)
def test_duplicate_fields(extra: str) -> None:
    refused(f"Canonical claim: subject=s; predicate=p; value=v{extra}.")


@pytest.mark.parametrize(
    "extra",
    [
        "; colour=blue",
        "; Authority=a",
        "; supersedes_source=k",
        "; authority =a",
        "; note",
        ";",
        "; ",
        ";; authority=a",
    ],
)
def test_unknown_keys_and_empty_fields(extra: str) -> None:
    refused(f"Canonical claim: subject=s; predicate=p; value=v{extra}.")


@pytest.mark.parametrize(
    "body",
    [
        "subject=; predicate=p; value=v",
        "subject=s; predicate=  ; value=v",
        "subject=s; predicate=p; value=",
        "subject=s; predicate=p; value=v; authority=",
        "subject=s; predicate=p; value=v; supersedes= ",
        "subject=s; predicate=p; value=v; confidence=",
    ],
)
def test_empty_values(body: str) -> None:
    refused(f"Canonical claim: {body}.")


def test_whitespace_around_fields_and_values() -> None:
    text = "Canonical claim:subject=  s t ;predicate=p;\t value=v   ;   authority= a b ."
    found = only_claim(text)
    assert (found.subject, found.predicate, found.value, found.authority) == (
        "s t",
        "p",
        "v",
        "a b",
    )
    assert found.provenance == ClaimProvenance(0, len(text))


def test_values_may_hold_equals_signs_colons_and_other_scripts() -> None:
    found = only_claim("Canonical claim: subject=user:ada; predicate=says; value=a=b: 東京 ☀.")
    assert found.value == "a=b: 東京 ☀"


@pytest.mark.parametrize("value", ["3.14", "v1.2.3", "e.g.this", "dark.", "..."])
def test_decimal_points_in_values_do_not_end_the_claim(value: str) -> None:
    # Only a "." followed by whitespace or the end of the text ends a claim.
    text = f"Canonical claim: subject=s; predicate=p; value={value}."
    found = only_claim(text)
    assert found.value == value
    assert found.provenance.end == len(text)


def test_a_decimal_point_before_a_semicolon_does_not_end_the_claim() -> None:
    found = only_claim("Canonical claim: subject=s; predicate=p; value=v.; authority=a.")
    assert (found.value, found.authority) == ("v.", "a")


def test_a_point_followed_by_a_space_ends_the_claim() -> None:
    text = "Canonical claim: subject=s; predicate=p; value=e. g.; authority=a."
    end = text.index(". g") + 1
    assert extract(text) == ClaimExtraction(
        (ExtractedClaim("s", "p", "e", ClaimProvenance(0, end)),)
    )


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-04-18T09:30:00Z", T0),
        ("2026-04-18T09:30:00+00:00", T0),
        ("2026-04-18T11:30:00+02:00", T0),
        ("2026-04-18T04:00:00-05:30", T0),
        ("2026-04-18T09:30:00.250000Z", T0 + timedelta(milliseconds=250)),
        ("2026-04-18 09:30Z", T0),
        ("2026-04-19T00:30:00+15:00", T0),
    ],
)
def test_times_are_parsed_and_normalised_to_utc(stamp: str, expected: datetime) -> None:
    for key in ("valid_from", "valid_to"):
        found = only_claim(f"Canonical claim: subject=s; predicate=p; value=v; {key}={stamp}.")
        parsed = getattr(found, key)
        assert parsed == expected
        assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-04-18T09:30:00",  # no timezone
        "2026-04-18",  # a date has no timezone
        "yesterday",
        "2026-02-30T00:00:00Z",
        "2026-04-18T25:00:00Z",
        "0001-01-01T00:00:00+01:00",  # not representable in UTC
    ],
)
def test_bad_times(stamp: str) -> None:
    refused(f"Canonical claim: subject=s; predicate=p; value=v; valid_from={stamp}.")
    refused(f"Canonical claim: subject=s; predicate=p; value=v; valid_to={stamp}.")


@pytest.mark.parametrize(
    ("valid_from", "valid_to"),
    [
        ("2026-04-18T09:30:00Z", "2026-04-18T09:30:00Z"),
        ("2026-04-18T09:30:00Z", "2026-04-18T09:29:59Z"),
        ("2026-04-18T09:30:00Z", "2026-04-18T10:30:00+02:00"),
    ],
)
def test_valid_to_must_be_later_than_valid_from(valid_from: str, valid_to: str) -> None:
    refused(
        "Canonical claim: subject=s; predicate=p; value=v; "
        f"valid_from={valid_from}; valid_to={valid_to}."
    )


@pytest.mark.parametrize(
    ("written", "confidence"),
    [("0", 0.0), ("1", 1.0), ("1.000", 1.0), ("0.5", 0.5), ("00.125", 0.125), ("0.0", 0.0)],
)
def test_confidence_decimals(written: str, confidence: float) -> None:
    found = only_claim(f"Canonical claim: subject=s; predicate=p; value=v; confidence={written}.")
    assert found.confidence == confidence
    assert type(found.confidence) is float


@pytest.mark.parametrize(
    "written",
    [
        "1.0000000000000000001",
        "1.5",
        "2",
        "-0.5",
        "+0.5",
        ".5",
        "5e-1",
        "nan",
        "inf",
        "high",
        "0,5",
        "0.5.1",
        "½",
        "\u0660.\u0665",  # Arabic-Indic digits
    ],
)
def test_bad_confidence(written: str) -> None:
    refused(f"Canonical claim: subject=s; predicate=p; value=v; confidence={written}.")


@pytest.mark.parametrize(
    "body",
    [
        "subject=" + "s" * 129 + "; predicate=p; value=v",
        "subject=s; predicate=" + "p" * 129 + "; value=v",
        "subject=s; predicate=p; value=" + "v" * 1025,
        "subject=s; predicate=p; value=v; authority=" + "a" * 129,
        "subject=s; predicate=p; value=v; supersedes=" + "k" * 129,
        "subject=s; predicate=p; value=v\ud800",
        "subject=s\udc00; predicate=p; value=v",
    ],
)
def test_values_breaking_the_claim_rules(body: str) -> None:
    refused(f"Canonical claim: {body}.")


def test_longest_values_are_accepted() -> None:
    found = only_claim(
        f"Canonical claim: subject={'s' * 128}; predicate={'p' * 128}; value={'v' * 1024}."
    )
    assert (len(found.subject), len(found.predicate), len(found.value)) == (128, 128, 1024)


def test_missing_terminator_covers_the_rest_of_the_line() -> None:
    first = "Canonical claim: subject=s; predicate=p; value=v"
    text = first + "\nA next line. " + EXAMPLE
    start = text.index(EXAMPLE)
    assert extract(text) == ClaimExtraction(
        (dataclasses.replace(only_claim(EXAMPLE), provenance=ClaimProvenance(start, len(text))),),
        (malformed(0, len(first)),),
    )


@pytest.mark.parametrize(
    "text",
    [
        "Canonical claim: subject=s; predicate=p; value=v",
        "Canonical claim: subject=s; predicate=p; value=v.x",
        "Canonical claim: subject=s; predicate=p; value=v.;",
        "Canonical claim:",
        "Canonical claim: ",
    ],
)
def test_missing_terminator_at_the_end_of_the_text(text: str) -> None:
    refused(text)


def test_a_claim_does_not_continue_on_the_next_line() -> None:
    text = "Canonical claim: subject=s; predicate=p;\nvalue=v."
    assert extract(text) == ClaimExtraction((), (malformed(0, text.index("\n")),))


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r", "\u2028"])
def test_a_terminator_at_the_end_of_a_line(newline: str) -> None:
    sentence = "Canonical claim: subject=s; predicate=p; value=v."
    text = f"Notes{newline}{sentence}{newline}more"
    found = only_claim(text)
    assert text[found.provenance.start : found.provenance.end] == sentence


def test_several_claims_in_one_text() -> None:
    sentences = [
        "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark.",
        "Canonical claim: subject=user:ada; predicate=language; value=en; confidence=0.9.",
        "Canonical claim: subject=user:bob; predicate=prefers_theme; value=light.",
    ]
    text = f"Start. {sentences[0]} Between.\n{sentences[1]}\nThen {sentences[2]} End."
    result = extract(text)
    assert result.diagnostics == ()
    assert [(c.subject, c.predicate, c.value) for c in result.claims] == [
        ("user:ada", "prefers_theme", "dark"),
        ("user:ada", "language", "en"),
        ("user:bob", "prefers_theme", "light"),
    ]
    assert [text[c.provenance.start : c.provenance.end] for c in result.claims] == sentences
    assert result.claims[1].confidence == 0.9
    assert check_extraction(text, result) is result


def test_back_to_back_claims() -> None:
    one = "Canonical claim: subject=a; predicate=p; value=1."
    two = "Canonical claim: subject=b; predicate=p; value=2."
    result = extract(one + " " + two)
    assert [c.provenance for c in result.claims] == [
        ClaimProvenance(0, len(one)),
        ClaimProvenance(len(one) + 1, len(one) + 1 + len(two)),
    ]


def test_a_malformed_claim_next_to_a_valid_one() -> None:
    bad = "Canonical claim: subject=s; predicate=p; value=v; colour=blue."
    good = "Canonical claim: subject=s; predicate=p; value=w."
    text = bad + " " + good
    result = extract(text)
    assert result.claims == (
        ExtractedClaim("s", "p", "w", ClaimProvenance(len(bad) + 1, len(text))),
    )
    assert result.diagnostics == (malformed(0, len(bad)),)
    assert check_extraction(text, result) is result

    reversed_text = good + " " + bad
    reversed_result = extract(reversed_text)
    assert reversed_result.claims == (ExtractedClaim("s", "p", "w", ClaimProvenance(0, len(good))),)
    assert reversed_result.diagnostics == (malformed(len(good) + 1, len(reversed_text)),)


def test_a_marker_inside_a_value_is_part_of_the_value() -> None:
    text = "Canonical claim: subject=s; predicate=quotes; value=Canonical claim: x."
    assert only_claim(text).value == "Canonical claim: x"


def test_the_marker_is_case_sensitive_and_exact() -> None:
    for text in [
        "canonical claim: subject=s; predicate=p; value=v.",
        "CANONICAL CLAIM: subject=s; predicate=p; value=v.",
        "Canonical Claim: subject=s; predicate=p; value=v.",
        "Canonical claim subject=s; predicate=p; value=v.",
        "Canonical  claim: subject=s; predicate=p; value=v.",
    ]:
        assert extract(text) == ClaimExtraction()


def test_text_without_claims() -> None:
    assert extract("") == ClaimExtraction()
    assert extract("Ada selected dark mode. subject=s; predicate=p; value=v.") == ClaimExtraction()


def test_the_marker_may_follow_other_text_directly() -> None:
    text = "Note:Canonical claim: subject=s; predicate=p; value=v."
    assert only_claim(text).provenance == ClaimProvenance(5, len(text))


def test_extract_refuses_what_is_not_a_string() -> None:
    with pytest.raises(ValidationError, match=_msg("content: must be a string")):
        CanonicalClaimExtractor().extract(b"Canonical claim:")  # type: ignore[arg-type]


def test_extraction_is_deterministic() -> None:
    text = "x. " + EXAMPLE + " Canonical claim: subject=s."
    assert extract(text) == extract(text) == CanonicalClaimExtractor().extract(text)


# --- check_extraction -----------------------------------------------------------------------


def test_check_accepts_an_empty_extraction() -> None:
    empty = ClaimExtraction()
    assert check_extraction("", empty) is empty
    assert check_extraction("anything", empty) is empty


@pytest.mark.parametrize("extraction", [None, (), {"claims": ()}, claim()])
def test_check_requires_a_claim_extraction(extraction: object) -> None:
    with pytest.raises(ValidationError, match=_msg("extraction: must be a ClaimExtraction")):
        check_extraction("text", extraction)


def test_check_refuses_content_that_is_not_a_string() -> None:
    with pytest.raises(ValidationError, match=_msg("content: must be a string")):
        check_extraction(None, ClaimExtraction())  # type: ignore[arg-type]


def test_check_allows_at_most_100_claims() -> None:
    sentence = "Canonical claim: subject=s; predicate=p; value=v."
    hundred = " ".join([sentence] * MAX_EXTRACTED_CLAIMS)
    result = extract(hundred)
    assert len(result.claims) == MAX_EXTRACTED_CLAIMS == 100
    assert check_extraction(hundred, result) is result

    more = hundred + " " + sentence
    with pytest.raises(ValidationError, match=_msg("extraction: must hold at most 100 claims")):
        check_extraction(more, extract(more))


def test_check_claim_span_must_lie_within_the_content() -> None:
    text = "user:ada prefers_theme dark"
    inside = ClaimExtraction((claim(provenance=ClaimProvenance(0, len(text))),))
    assert check_extraction(text, inside) is inside
    outside = ClaimExtraction((claim(provenance=ClaimProvenance(0, len(text) + 1)),))
    with pytest.raises(
        ValidationError, match=_msg("extraction: claim span must lie within the content")
    ):
        check_extraction(text, outside)


@pytest.mark.parametrize(
    "text",
    [
        "user:ada prefers_theme",  # no value
        "prefers_theme dark",  # no subject
        "user:ada dark",  # no predicate
        "User:Ada Prefers_Theme Dark",  # substrings are matched exactly
    ],
)
def test_check_claim_span_must_contain_its_fields(text: str) -> None:
    extraction = ClaimExtraction((claim(provenance=ClaimProvenance(0, len(text))),))
    with pytest.raises(
        ValidationError,
        match=_msg("extraction: claim span must contain its subject, predicate and value"),
    ):
        check_extraction(text, extraction)


def test_check_looks_only_inside_the_span() -> None:
    text = "dark. user:ada prefers_theme"
    start = text.index("user")
    extraction = ClaimExtraction((claim(provenance=ClaimProvenance(start, len(text))),))
    with pytest.raises(
        ValidationError,
        match=_msg("extraction: claim span must contain its subject, predicate and value"),
    ):
        check_extraction(text, extraction)


def test_check_counts_code_points_not_bytes() -> None:
    text = "東京 user:ada prefers_theme dark"
    start = text.index("user")
    extraction = ClaimExtraction((claim(provenance=ClaimProvenance(start, len(text))),))
    assert check_extraction(text, extraction) is extraction


def test_check_refuses_an_extractor_pointing_at_the_wrong_span() -> None:
    extractor = OffsetExtractor()
    with pytest.raises(
        ValidationError,
        match=_msg("extraction: claim span must contain its subject, predicate and value"),
    ):
        check_extraction(EXAMPLE, extractor.extract(EXAMPLE))


@pytest.mark.parametrize(
    ("diagnostic", "ok"),
    [
        (ExtractionDiagnostic("code"), True),
        (ExtractionDiagnostic("code", 4, 4), True),
        (ExtractionDiagnostic("code", 0, 4), True),
        (ExtractionDiagnostic("code", 5, 5), False),
        (ExtractionDiagnostic("code", 2, 5), False),
    ],
)
def test_check_diagnostic_span_must_lie_within_the_content(
    diagnostic: ExtractionDiagnostic, ok: bool
) -> None:
    extraction = ClaimExtraction((), (diagnostic,))
    if ok:
        assert check_extraction("four", extraction) is extraction
    else:
        with pytest.raises(
            ValidationError, match=_msg("extraction: diagnostic span must lie within the content")
        ):
            check_extraction("four", extraction)


def test_check_messages_never_include_the_content() -> None:
    secret = "the secret body"
    bad = ClaimExtraction((claim(provenance=ClaimProvenance(0, 3)),))
    with pytest.raises(ValidationError) as caught:
        check_extraction(secret, bad)
    assert "secret" not in str(caught.value)
    assert caught.value.args == (
        "extraction: claim span must contain its subject, predicate and value",
    )


# --- property: render, extract, check -------------------------------------------------------

_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def _fits_the_grammar(value: str) -> bool:
    return (
        value == value.strip()
        and bool(value)
        and ";" not in value
        and not any(ch in _LINE_BREAKS for ch in value)
        and re.search(r"\.\s", value) is None
    )


_CHARS = st.characters(codec="utf-8", exclude_characters=";" + _LINE_BREAKS)


def _values(max_size: int) -> st.SearchStrategy[str]:
    return st.text(_CHARS, min_size=1, max_size=max_size).filter(_fits_the_grammar)


_ZONES = st.builds(
    timezone, st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timedelta(minutes=m))
)
_TIMES = st.datetimes(
    min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=_ZONES
)
_CONFIDENCES = st.decimals(min_value=0, max_value=1, places=6)


@st.composite
def _sentences(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    fields: dict[str, Any] = {
        "subject": draw(_values(40)),
        "predicate": draw(_values(40)),
        "value": draw(_values(80)),
    }
    parts = [f"subject={fields['subject']}", f"predicate={fields['predicate']}"]
    parts.append(f"value={fields['value']}")
    optional: list[str] = []
    valid_from = draw(st.none() | _TIMES)
    valid_to = draw(st.none() | _TIMES)
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        valid_to = valid_from + timedelta(seconds=draw(st.integers(1, 10**6)))
    if valid_from is not None:
        fields["valid_from"] = valid_from
        optional.append(f"valid_from={valid_from.isoformat()}")
    if valid_to is not None:
        fields["valid_to"] = valid_to
        optional.append(f"valid_to={valid_to.isoformat()}")
    confidence: Decimal | None = draw(st.none() | _CONFIDENCES)
    if confidence is not None:
        fields["confidence"] = float(confidence)
        optional.append(f"confidence={format(confidence, 'f')}")
    authority = draw(st.none() | _values(30))
    if authority is not None:
        fields["authority"] = authority
        optional.append(f"authority={authority}")
    supersedes = draw(st.none() | _values(30))
    if supersedes is not None:
        fields["supersedes_source"] = supersedes
        optional.append(f"supersedes={supersedes}")
    parts += draw(st.permutations(optional))
    separators = draw(st.lists(st.sampled_from(["; ", ";", ";  ", "; \t"]), min_size=len(parts)))
    body = parts[0] + "".join(sep + part for sep, part in zip(separators, parts[1:], strict=False))
    return f"Canonical claim: {body}.", fields


@settings(max_examples=150, deadline=None)
@given(
    sentence=_sentences(),
    prefix=st.sampled_from(["", "Ada chose. ", "Line one.\n", "x "]),
    suffix=st.sampled_from(["", " Done.", "\nNext line.", "  "]),
)
def test_rendered_sentences_extract_to_their_fields(
    sentence: tuple[str, dict[str, Any]], prefix: str, suffix: str
) -> None:
    rendered, fields = sentence
    text = prefix + rendered + suffix
    span = ClaimProvenance(len(prefix), len(prefix) + len(rendered))
    result = extract(text)
    assert result == ClaimExtraction((ExtractedClaim(provenance=span, **fields),))
    assert text[span.start : span.end] == rendered
    assert check_extraction(text, result) is result
