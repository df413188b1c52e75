"""What the tools and the session share: the clock, the checks of the host's settings,
and the JSON the model reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from trueheart_core import Scope, TrueHeart, ValidationError
from trueheart_core.integrations._clock import clock_time

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock: the current time in UTC."""
    return datetime.now(UTC)


def checked_host(service: object, scope: object, clock: object) -> None:
    """Refuse a service, scope or clock of the wrong type, with a library error."""
    if not isinstance(service, TrueHeart):
        raise ValidationError("service", "must be a TrueHeart")
    if not isinstance(scope, Scope):
        raise ValidationError("scope", "must be a Scope")
    if not callable(clock):
        raise ValidationError("clock", "must be callable")


def now(clock: Clock) -> datetime:
    """The clock's time in UTC, which must be timezone-aware."""
    return clock_time(clock)


def to_json(value: Any) -> str:
    """Compact JSON, non-ASCII text kept as it is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
