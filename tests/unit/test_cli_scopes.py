"""The command line's scope syntax: tenant/owner/subject with %2F and %25 escapes."""

from __future__ import annotations

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
    ],
)
def test_parse(text: str, scope: Scope) -> None:
    assert parse_scope(text) == scope


@pytest.mark.parametrize(
    "text",
    ["a/b", "a/b/c/d", "", "a/b/%", "a/b/%2", "a/b/%41", "a//c", "a/ /c", "a/b/" + "x" * 129],
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
