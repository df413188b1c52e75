"""The pure rules of the writer: locating quotes, normalising, reading JSON, the schema."""

from __future__ import annotations

import pytest

from trueheart_core import ProviderError
from trueheart_core.domain.extraction import MAX_EXTRACTED_CLAIMS
from trueheart_core.integrations.writer import (
    INVALID_ITEM,
    MAX_MEMORIES,
    NOT_IN_SPAN,
    QUOTE_AMBIGUOUS,
    QUOTE_NOT_FOUND,
    REPEATED_IN_ANSWER,
    TOO_MANY,
    first_json_object,
    normalised,
)
from trueheart_core.integrations.writer.reading import (
    MAX_EXAMINED,
    ProposedClaim,
    ProposedMemory,
    diagnostics,
    proposals,
    read,
)


def _memories(text: str, *pairs: tuple[str, str]) -> list[tuple[int, int, int]]:
    reading = read(text, [ProposedMemory(c, q) for c, q in pairs], [], "writer")
    return [(m.index, m.start, m.end) for m in reading.memories]


def test_quotes_are_located_exactly_and_take_the_first_free_occurrence() -> None:
    text = "ab ab ab"
    assert _memories(text, ("ab", "ab"), ("a", "ab"), ("b", "ab"), ("ab b", "ab")) == [
        (0, 0, 2),
        (1, 3, 5),
        (2, 6, 8),
    ]
    # Every occurrence taken: the first again (and "ab b" is not within "ab").
    reading = read(text, [ProposedMemory("ab", "ab")] * 2, [], "writer")
    # The note is on the kept item only: the second says the same and is dropped.
    assert [(i.index, i.code) for i in reading.notes] == [(0, QUOTE_AMBIGUOUS)]
    assert [(i.index, i.code) for i in reading.dropped] == [(1, "repeated_in_answer")]


def test_a_quote_is_matched_code_point_for_code_point() -> None:
    reading = read(
        "Ada\u2019s cat is \u201cMochi\u201d.",
        [ProposedMemory("Ada's cat", "Ada's cat"), ProposedMemory("x", "")],
        [ProposedClaim("Ada\u2019s cat", "is", "Mochi", 'Ada\u2019s cat is "Mochi"')],
        "writer",
    )
    assert reading.memories == [] and reading.claims == []
    assert [(i.item, i.code) for i in reading.dropped] == [
        ("memory", QUOTE_NOT_FOUND),
        ("memory", QUOTE_NOT_FOUND),
        ("claim", QUOTE_NOT_FOUND),
    ]


def test_claim_fields_must_lie_in_the_span_and_obey_the_claim_rules() -> None:
    text = "Bo likes jazz. Bo left on 2026-03-01."
    reading = read(
        text,
        [],
        [
            ProposedClaim("Bo", "likes", "jazz", "Bo likes jazz."),
            ProposedClaim("Bo", "likes", "blues", "Bo likes jazz."),
            ProposedClaim("Bo", "left", "on", "Bo left on", valid_to="2026-03-01"),
            ProposedClaim(
                "Bo",
                "left",
                "on",
                "Bo left on",
                valid_from="2026-03-02T00:00:00Z",
                valid_to="2026-03-01T00:00:00Z",
            ),
            ProposedClaim("Bo", "", "jazz", "Bo likes jazz."),
            ProposedClaim("Bo", "likes", "JAZZ ", "Bo likes jazz."),
        ],
        "writer",
    )
    assert [c.index for c in reading.claims] == [0]
    assert reading.claims[0].claim.authority == "writer"
    assert [(i.index, i.code) for i in reading.dropped] == [
        (1, NOT_IN_SPAN),
        (2, INVALID_ITEM),
        (3, INVALID_ITEM),
        (4, INVALID_ITEM),
        (5, NOT_IN_SPAN),
    ]


def test_a_repeated_fact_and_anything_past_the_limits_is_dropped() -> None:
    text = "x" * 200
    memories = [ProposedMemory("x" * (n % 150 + 1), "x" * 150) for n in range(MAX_MEMORIES + 5)]
    reading = read(text, memories, [], "writer")
    assert len(reading.memories) == MAX_MEMORIES
    codes = [i.code for i in reading.dropped]
    assert codes.count(REPEATED_IN_ANSWER) == 0 and codes.count(TOO_MANY) == 5
    claims = [
        ProposedClaim("x", "x", "x" * n, "x" * 150) for n in range(1, MAX_EXTRACTED_CLAIMS + 3)
    ]
    claims.append(ProposedClaim("x", "x", "x", "x"))
    reading = read(text, [], claims, "writer")
    assert len(reading.claims) == MAX_EXTRACTED_CLAIMS
    assert [i.code for i in reading.dropped] == [TOO_MANY, TOO_MANY, REPEATED_IN_ANSWER]


def test_diagnostics_hold_claim_issues_only_in_answer_order() -> None:
    reading = read(
        "Cy is here.",
        [ProposedMemory("gone", "gone")],
        [ProposedClaim("Cy", "is", "away", "Cy is here."), ProposedClaim("Cy", "is", "x", "zz")],
        "writer",
    )
    found = diagnostics([*reading.dropped, *reading.notes])
    assert [(d.code, d.start, d.end) for d in found] == [
        (NOT_IN_SPAN, 0, 11),
        (QUOTE_NOT_FOUND, None, None),
    ]


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("I moved to Lisbon.", "i moved   to lisbon"),
        ("\uff34\uff45\uff41\uff01", "tea"),  # full-width "Tea!"
        ("Straße", "STRASSE"),
        ("東京に住んでいる。", "東京に住んでいる"),
    ],
)
def test_normalised_forms_match(left: str, right: str) -> None:
    assert normalised(left) == normalised(right)


def test_normalised_forms_keep_different_facts_apart() -> None:
    assert normalised("tea") != normalised("green tea")
    assert normalised("...") == "..."


def test_a_list_past_the_items_examined_is_dropped_unread() -> None:
    """A model repeating itself: past the first items of a list, the rest is dropped as
    too many without being located (each quote is located once, whatever repeats it)."""
    text = "tea " * 3
    memories = [ProposedMemory("tea", "tea")] * (MAX_EXAMINED + 7)
    reading = read(text, memories, [], "writer")
    assert [(m.index, m.start) for m in reading.memories] == [(0, 0)]
    codes = [(i.index, i.code) for i in reading.dropped]
    assert codes[: MAX_EXAMINED - 1] == [(n, REPEATED_IN_ANSWER) for n in range(1, MAX_EXAMINED)]
    assert codes[MAX_EXAMINED - 1 :] == [(n, TOO_MANY) for n in range(MAX_EXAMINED, 1007)]
    # The occurrences are taken in order, then the first again.
    spans = [(i.start, i.end) for i in reading.dropped[:4]]
    assert spans == [(4, 7), (8, 11), (0, 3), (0, 3)]


def test_an_answer_nested_too_deep_is_no_object() -> None:
    deep = '{"memories": [], "claims": [], "note": ' + "[" * 5000 + "]" * 5000 + "}"
    assert first_json_object(deep) is None


def test_the_first_json_object_is_read_from_the_text() -> None:
    assert first_json_object('{"a": 1}') == {"a": 1}
    assert first_json_object('  {"a": 1}\n') == {"a": 1}
    assert first_json_object('Here: ```json\n{"a": {"b": 2}}\n``` and {"c": 3}') == {"a": {"b": 2}}
    assert first_json_object('[1, 2] then {"a": 1}') == {"a": 1}
    assert first_json_object('{broken {"a": 1}') == {"a": 1}
    assert first_json_object("no object [1]") is None
    assert first_json_object('{"a": ') is None


def test_the_schema_is_enforced_on_the_whole_answer() -> None:
    good = {"memories": [{"content": "c", "quote": "q"}], "claims": []}
    assert proposals(good, memories=True)[0] == (ProposedMemory("c", "q"),)
    assert proposals({"claims": [], "other": 1}, memories=False) == ((), ())
    bad: object
    for bad in (
        [],
        {"claims": []},
        {"memories": [], "claims": {}},
        {"memories": ["c"], "claims": []},
        {"memories": [{"content": "c"}], "claims": []},
        {"memories": [], "claims": [{"subject": "s", "predicate": "p", "value": 1, "quote": "q"}]},
        {
            "memories": [],
            "claims": [
                {"subject": "s", "predicate": "p", "value": "v", "quote": "q", "valid_from": 2026}
            ],
        },
    ):
        with pytest.raises(ProviderError, match="does not match the schema"):
            proposals(bad, memories=True)


def test_proposals_never_show_their_text() -> None:
    shown = repr(ProposedMemory("secret memory", "secret quote")) + repr(
        ProposedClaim("secret", "secret", "secret", "secret")
    )
    assert "secret" not in shown
