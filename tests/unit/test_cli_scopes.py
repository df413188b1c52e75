"""The command line's scope syntax: tenant/owner/subject with %XX byte escapes."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trueheart_core import Scope
from trueheart_core.cli.scopes import ScopeSyntaxError, format_scope, parse_scope


@pytest.mark.parametrize(
    ("text", "scope"),
    [
        ("acme/agent/user-1", Scope("acme", "agent", "user-1")),
        ("a%2Fb/c%25d/e", Scope("a/b", "c%d", "e")),
        ("a%2fb/c/%252F", Scope("a/b", "c", "%2F")),
        ("t/o/ä 漢", Scope("t", "o", "ä 漢")),
        ("t/o/user%0Aname", Scope("t", "o", "user\nname")),
        ("t/o/%C3%A4%e6%bc%a2", Scope("t", "o", "ä漢")),
        ("a/b/%41", Scope("a", "b", "A")),
    ],
)
def test_parse(text: str, scope: Scope) -> None:
    assert parse_scope(text) == scope


@pytest.mark.parametrize(
    "text",
    [
        *("a/b", "a/b/c/d", "", "a/b/%", "a/b/%2", "a/b/%G1", "a//c", "a/ /c", "a/b/" + "x" * 129),
        *("a/b/%C3", "a/b/%FF", "a/b/%ED%A0%80", "a/b/%20"),  # not UTF-8, a surrogate, blank
    ],
)
def test_malformed(text: str) -> None:
    with pytest.raises(ScopeSyntaxError):
        parse_scope(text)


parts = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=20).filter(
    lambda part: part.strip() != ""
)


@given(parts, parts, parts)
def test_format_then_parse_is_the_identity(tenant: str, owner: str, subject: str) -> None:
    scope = Scope(tenant, owner, subject)
    text = format_scope(scope)
    assert text.count("/") == 2
    assert parse_scope(text) == scope


@pytest.mark.parametrize(
    ("shown", "scope"),
    [
        ("t/o/user%0Aname", Scope("t", "o", "user\nname")),
        ("t/o/user\\nname", Scope("t", "o", "user\\nname")),
        ("t/o/z%00", Scope("t", "o", "z\x00")),
        ("t/o/z\\x00", Scope("t", "o", "z\\x00")),
        ("t/o/a%E2%80%8Bb", Scope("t", "o", "a\u200bb")),
        # Scopes that would look alike: spaces at the ends, an accent composed or not.
        ("t/o/bob", Scope("t", "o", "bob")),
        ("t/o/bob%20", Scope("t", "o", "bob ")),
        ("t/%20o/bob  %20", Scope("t", " o", "bob   ")),
        ("t/o/a b", Scope("t", "o", "a b")),
        ("t/o/caf\u00e9", Scope("t", "o", "caf\u00e9")),
        ("t/o/cafe%CC%81", Scope("t", "o", "cafe\u0301")),
        ("t/o/%E2%84%AB", Scope("t", "o", "\u212b")),
        ("t/o/\u00c5", Scope("t", "o", "\u00c5")),
        ("t/o/\u0915\u093f", Scope("t", "o", "\u0915\u093f")),
    ],
)
def test_output_names_exactly_one_scope(shown: str, scope: Scope) -> None:
    # A control character is escaped as its bytes, not as a backslash escape that a
    # part holding a literal backslash would print the same as.
    assert format_scope(scope) == shown
    assert parse_scope(shown) == scope
    assert shown.isprintable()


@given(parts, parts, parts)
def test_formatted_scopes_are_printable(tenant: str, owner: str, subject: str) -> None:
    assert format_scope(Scope(tenant, owner, subject)).isprintable()


variants = st.sampled_from(
    [
        lambda part: part,
        lambda part: unicodedata.normalize("NFD", part),
        lambda part: unicodedata.normalize("NFC", part),
        lambda part: part + " ",
        lambda part: " " + part,
    ]
)


@given(parts, parts, parts, variants, st.integers(0, 2))
def test_look_alike_scopes_are_shown_distinctly(
    tenant: str, owner: str, subject: str, variant: Callable[[str], str], changed: int
) -> None:
    first = Scope(tenant, owner, subject)
    texts = [tenant, owner, subject]
    texts[changed] = variant(texts[changed])
    second = Scope(*texts)
    assert (format_scope(first) == format_scope(second)) == (first == second)
    for scope in (first, second):
        shown = format_scope(scope)
        assert shown == shown.strip()
        assert unicodedata.is_normalized("NFC", shown)
        assert parse_scope(shown) == scope
