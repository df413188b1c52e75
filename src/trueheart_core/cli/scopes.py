"""The command line's scope syntax: ``tenant/owner/subject``.

A part may hold any character. ``%`` followed by two hex digits stands for a byte of the
part's UTF-8 text: a literal ``/`` is written ``%2F``, a literal ``%`` ``%25``, a newline
``%0A``. Any other ``%``, escapes that do not spell UTF-8, a part count other than three,
or a part the library refuses (blank, too long) is malformed.

Output writes a scope the same way, with every character that is not printable
escaped too, so the text shown for a scope names that scope and no other.
"""

from __future__ import annotations

import re

from trueheart_core.domain.model import Scope
from trueheart_core.errors import ValidationError

__all__ = ["format_scope", "parse_scope"]

_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class ScopeSyntaxError(ValueError):
    """A scope argument that does not follow the syntax; the message is fixed."""


def _decode(part: str) -> str:
    if _BAD_ESCAPE.search(part):
        raise ScopeSyntaxError("a '%' must start a byte escape such as %2F ('/') or %25 ('%')")
    return _ESCAPES.sub(_bytes, part)


def _bytes(match: re.Match[str]) -> str:
    try:
        return bytes.fromhex(match.group().replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        raise ScopeSyntaxError("'%' escapes must spell UTF-8 text") from None


def parse_scope(text: str) -> Scope:
    """The :class:`Scope` written as ``tenant/owner/subject``."""
    parts = text.split("/")
    if len(parts) != 3:
        raise ScopeSyntaxError("must be tenant/owner/subject (write a '/' in a part as %2F)")
    tenant, owner, subject = (_decode(part) for part in parts)
    try:
        return Scope(tenant, owner, subject)
    except ValidationError as error:
        raise ScopeSyntaxError(str(error)) from None


def format_scope(scope: Scope) -> str:
    """``tenant/owner/subject`` with ``%``, ``/`` and every unprintable character
    escaped, the inverse of :func:`parse_scope`."""
    return "/".join(
        "".join(_escaped(c) for c in part) if _needs_escapes(part) else part
        for part in (scope.tenant_id, scope.owner_id, scope.subject_id)
    )


def _needs_escapes(part: str) -> bool:
    return "%" in part or "/" in part or not part.isprintable()


def _escaped(c: str) -> str:
    if c in "%/" or not c.isprintable():
        return "".join(f"%{byte:02X}" for byte in c.encode("utf-8"))
    return c
