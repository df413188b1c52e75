"""The command line's scope syntax: ``tenant/owner/subject``.

A part may hold any character: a literal ``/`` is written ``%2F`` and a literal ``%`` is
written ``%25`` (``%2f`` is accepted too). Any other ``%`` sequence, a part count other
than three, or a part the library refuses (blank, too long) is malformed.
"""

from __future__ import annotations

import re

from trueheart_core.domain.model import Scope
from trueheart_core.errors import ValidationError

__all__ = ["format_scope", "parse_scope"]

_ESCAPE = re.compile(r"%(2[Ff]|25)")
_BAD_ESCAPE = re.compile(r"%(?!2[Ff]|25)")


class ScopeSyntaxError(ValueError):
    """A scope argument that does not follow the syntax; the message is fixed."""


def _decode(part: str) -> str:
    if _BAD_ESCAPE.search(part):
        raise ScopeSyntaxError("a '%' must start %2F (for '/') or %25 (for '%')")
    return _ESCAPE.sub(lambda m: "/" if m.group(1) in ("2F", "2f") else "%", part)


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
    """``tenant/owner/subject`` with ``%`` and ``/`` escaped, the inverse of
    :func:`parse_scope`."""
    return "/".join(
        part.replace("%", "%25").replace("/", "%2F")
        for part in (scope.tenant_id, scope.owner_id, scope.subject_id)
    )
