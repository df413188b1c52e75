"""The command line's scope syntax: ``tenant/owner/subject``.

A part may hold any character. ``%`` followed by two hex digits stands for a byte of the
part's UTF-8 text: a literal ``/`` is written ``%2F``, a literal ``%`` ``%25``, a newline
``%0A``. Any other ``%``, escapes that do not spell UTF-8, a part count other than three,
or a part the library refuses (blank, too long) is malformed.

Output writes a scope the same way, with every character that is not printable
escaped too, and so are a space that begins or ends a part, every non-ASCII character
of a part that is not in Unicode normal form C, and every character that standard
output's encoding cannot hold (whose stream would otherwise write a backslash escape,
which a scope may hold literally): the text shown for a scope names that scope and no
other, and two scopes never look alike (``bob`` and ``bob ``, a composed ``é`` and an
``e`` followed by a combining accent, ``ü`` on an ASCII terminal and ``\xfc``).
"""

from __future__ import annotations

import codecs
import re
import sys
import unicodedata

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
    """``tenant/owner/subject`` with ``%``, ``/``, every unprintable character, a space
    at either end of a part, the non-ASCII characters of a part not in normal form C and
    those standard output's encoding cannot hold escaped: the inverse of
    :func:`parse_scope`."""
    held = _held_by(getattr(sys.stdout, "encoding", None))
    return "/".join(
        _escaped(part, held) if _needs_escapes(part, held) else part
        for part in (scope.tenant_id, scope.owner_id, scope.subject_id)
    )


def _held_by(encoding: object) -> str | None:
    """The encoding to check characters against; None when it holds every one."""
    try:
        name = codecs.lookup(encoding).name if isinstance(encoding, str) else "utf-8"
    except LookupError:
        return None
    return None if name in ("utf-8", "utf-16", "utf-32", "gb18030") else name


def _unheld(c: str, encoding: str | None) -> bool:
    if encoding is None or c.isascii():
        return False
    try:
        c.encode(encoding)
    except UnicodeEncodeError:
        return True
    return False


def _needs_escapes(part: str, encoding: str | None) -> bool:
    return (
        "%" in part
        or "/" in part
        or not part.isprintable()
        or part.startswith(" ")
        or part.endswith(" ")
        or not unicodedata.is_normalized("NFC", part)
        or any(_unheld(c, encoding) for c in part)
    )


def _escaped(part: str, encoding: str | None) -> str:
    # A part that is not in normal form C may look exactly like one that is (an accent
    # composed or not): its non-ASCII characters are shown as their bytes.
    decomposed = not unicodedata.is_normalized("NFC", part)
    last = len(part) - 1
    return "".join(
        "".join(f"%{byte:02X}" for byte in c.encode("utf-8"))
        if c in "%/"
        or not c.isprintable()
        or (decomposed and not c.isascii())
        or (c == " " and i in (0, last))
        or _unheld(c, encoding)
        else c
        for i, c in enumerate(part)
    )
