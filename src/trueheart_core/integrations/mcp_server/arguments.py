"""The arguments of one tool call, checked one by one before the call reaches the
library.

Every refusal is a :class:`~trueheart_core.ValidationError` naming the argument, with a
fixed message that never quotes the value given, as every error of the library is
body-free: a client's text could hold anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from typing import Any

from trueheart_core import TrustLevel, ValidationError
from trueheart_core.integrations.mcp_server.trust import TRUST_LEVELS, trust_name

__all__ = ["Arguments", "checked_key", "parse_instant"]


class Arguments:
    """The arguments of one call, checked one by one with fixed messages. A JSON
    ``null`` counts as an absent argument."""

    def __init__(self, given: Mapping[str, Any] | None, allowed: tuple[str, ...]) -> None:
        values = {} if given is None else dict(given)
        unexpected = [name for name in values if name not in allowed]
        if unexpected:
            accepted = ", ".join(allowed) or "none"
            raise ValidationError("arguments", f"only these are accepted: {accepted}")
        self._values = {name: value for name, value in values.items() if value is not None}

    def text(self, name: str, *, default: str | None = None) -> str:
        value = self._values.get(name, default)
        if value is None:
            raise ValidationError(name, "is required")
        if not isinstance(value, str):
            raise ValidationError(name, "must be a string")
        return value

    def optional_text(self, name: str) -> str | None:
        return self.text(name) if name in self._values else None

    def whole(self, name: str, low: int, high: int, default: int) -> int:
        value = self._values.get(name, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValidationError(name, f"must be a whole number from {low} through {high}")
        return value

    def kinds(self) -> tuple[str, ...]:
        value = self._values.get("kinds", [])
        if not isinstance(value, list) or not all(isinstance(kind, str) for kind in value):
            raise ValidationError("kinds", "must be a list of strings")
        return tuple(value)

    def metadata(self) -> Mapping[str, Any]:
        value = self._values.get("metadata", {})
        if not isinstance(value, dict):
            raise ValidationError("metadata", "must be a JSON object")
        return value

    def trust(self, ceiling: TrustLevel, default: TrustLevel) -> TrustLevel:
        value = self._values.get("trust")
        if value is None:
            return default
        level = TRUST_LEVELS.get(value) if isinstance(value, str) else None
        if level is None:
            raise ValidationError("trust", "must be untrusted, observed or confirmed")
        if level > ceiling:
            raise ValidationError(
                "trust", f"must be at most {trust_name(ceiling)}, the server's trust ceiling"
            )
        return level

    def instant(self, name: str) -> datetime | None:
        if name not in self._values:
            return None
        return parse_instant(name, self._values[name])


def parse_instant(name: str, value: object) -> datetime:
    """An ISO 8601 date (midnight UTC) or time with a UTC offset, in UTC."""
    if not isinstance(value, str):
        raise ValidationError(name, "must be an ISO 8601 date or time")
    try:
        # A date alone, in any form ISO 8601 gives one ("2026-01-05", "20260105",
        # "2026-W02-1"): its first instant in UTC.
        day = date.fromisoformat(value)
    except ValueError:
        pass
    else:
        return datetime.combine(day, time(), UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(name, "must be an ISO 8601 date or time") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValidationError(name, "must have a UTC offset, such as Z or +02:00")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # a local time whose UTC instant is outside years 1 to 9999
        raise ValidationError(name, "must be a time from year 1 through 9999 in UTC") from None


def checked_key(key: str | None) -> str | None:
    """An idempotency key: non-blank, at most 128 characters (the rules of an ID)."""
    if key is None:
        return None
    if not key.strip():
        raise ValidationError("idempotency_key", "must be a non-blank string")
    if len(key) > 128:
        raise ValidationError("idempotency_key", "must be at most 128 characters")
    try:
        key.encode()
    except UnicodeEncodeError:
        raise ValidationError("idempotency_key", "must be valid UTF-8") from None
    return key
