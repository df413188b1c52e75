"""The times the MCP tools take as text (``as_of``, ``valid_from``, ``valid_to``): an
ISO 8601 date, taken as midnight UTC, or a time with a UTC offset. The module that checks
the tools' arguments does not import the SDK, so these run without it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from trueheart_core import ValidationError
from trueheart_core.integrations.mcp_server.arguments import parse_instant

OFFSET = "as_of: must have a UTC offset, such as Z or +02:00"


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("2026-01-05", datetime(2026, 1, 5, tzinfo=UTC)),
        ("20260105", datetime(2026, 1, 5, tzinfo=UTC)),
        ("2026-W02-1", datetime(2026, 1, 5, tzinfo=UTC)),
        ("2026W021", datetime(2026, 1, 5, tzinfo=UTC)),
        ("2026-W02", datetime(2026, 1, 5, tzinfo=UTC)),
        ("2026W02", datetime(2026, 1, 5, tzinfo=UTC)),
        ("2026W01", datetime(2025, 12, 29, tzinfo=UTC)),
        ("0001-01-01", datetime(1, 1, 1, tzinfo=UTC)),
        ("9999-12-31", datetime(9999, 12, 31, tzinfo=UTC)),
    ],
)
def test_a_date_alone_is_its_first_instant_in_utc(text: str, day: datetime) -> None:
    value = parse_instant("as_of", text)
    assert value == day and value.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2026W01T10",  # a week date and an hour: ten characters, like a date
        "2026-W01-1T10",
        "20260105T10",
        "2026-01-05T10",
        "2026-01-05T10:00",
        "2026-01-05 10:00:00",
    ],
)
def test_a_time_without_an_offset_is_refused(text: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_instant("as_of", text)
    assert str(info.value) == OFFSET


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2026W01T10Z", datetime(2025, 12, 29, 10, tzinfo=UTC)),
        ("2026-01-05T10:00+02:00", datetime(2026, 1, 5, 8, tzinfo=UTC)),
    ],
)
def test_a_time_with_an_offset_is_that_instant(text: str, instant: datetime) -> None:
    value = parse_instant("as_of", text)
    assert value == instant and value.tzinfo is UTC
