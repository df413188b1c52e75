"""Body-free ``repr`` of frozen dataclass DTOs (pure, standard library only).

A DTO that holds a body declares ``@dataclass(..., repr=False)`` and sets
``__repr__ = body_free_repr("content")``: the named body fields show as their length,
``<23 chars>``, and every ``metadata`` mapping as its number of keys, ``<2 keys>``.
Every other field shows as its own ``repr()``, so nested DTOs follow their own rules.
Equality, hashing and pickling are untouched; ``str()`` falls back to ``repr()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields

__all__ = ["body_free_repr"]

_COUNTED = frozenset({"metadata"})
"""Fields shown as their number of keys: metadata may hold user text too."""


def _size(count: int, unit: str) -> str:
    return f"<{count} {unit}{'' if count == 1 else 's'}>"


def _body(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, str):
        return _size(len(value), "char")
    return "<hidden>"


def _keys(value: object) -> str:
    if isinstance(value, Mapping):
        return _size(len(value), "key")
    return "<hidden>"


def body_free_repr(*bodies: str) -> Callable[[object], str]:
    """A ``__repr__`` for a dataclass that shows the fields named in ``bodies`` as their
    length in characters (``None`` as ``None``, any other non-string as ``<hidden>``),
    ``metadata`` as its number of keys, and every other field (with ``repr=True``) as
    the dataclass's own ``repr`` would, in declaration order."""
    hidden = frozenset(bodies)

    def body_free(self: object) -> str:
        shown: list[str] = []
        for item in fields(self):  # type: ignore[arg-type]
            if not item.repr:
                continue
            value = getattr(self, item.name)
            if item.name in hidden:
                text = _body(value)
            elif item.name in _COUNTED:
                text = _keys(value)
            else:
                text = repr(value)
            shown.append(f"{item.name}={text}")
        return f"{type(self).__qualname__}({', '.join(shown)})"

    return body_free
