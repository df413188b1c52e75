"""The host's clock, as every integration reads it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from trueheart_core.domain import validation as v
from trueheart_core.errors import ValidationError


def clock_time(clock: Callable[[], object]) -> datetime:
    """The clock's time in UTC, as a plain ``datetime``.

    A value that is not a timezone-aware datetime (naive, or with a ``tzinfo`` whose
    offset is ``None``) is refused with ``clock: must return timezone-aware
    datetimes``; one whose ``tzinfo`` raises, or whose UTC instant falls outside years
    1 to 9999, with ``clock: must be a representable datetime``."""
    value = clock()
    converted = v.aware_utc("clock", value) if isinstance(value, datetime) else None
    if converted is None:
        raise ValidationError("clock", "must return timezone-aware datetimes")
    return converted
