"""The host's clock as the integrations read it: a timezone-aware datetime, in UTC, and
nothing else (no framework is imported here)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path

import pytest

from trueheart_core import Scope, SQLiteRepository, TrueHeart, ValidationError
from trueheart_core.integrations._clock import clock_time
from trueheart_core.integrations.mcp_server.tools import MemoryTools, ToolFailure

AWARE = "clock: must return timezone-aware datetimes"
REPRESENTABLE = "clock: must be a representable datetime"


class _NoOffset(tzinfo):
    """Gives no offset: a naive time, which ``astimezone`` reads in the machine's zone."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


class _Dividing(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return timedelta(hours=1 // 0)

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


REFUSED = [
    (datetime(2026, 1, 1, 12), AWARE),
    (datetime(2026, 1, 1, 12, tzinfo=_NoOffset()), AWARE),
    ("2026-01-01T12:00:00Z", AWARE),
    (None, AWARE),
    (datetime(2026, 1, 1, 12, tzinfo=_Dividing()), REPRESENTABLE),
    (datetime.max.replace(tzinfo=timezone(-timedelta(hours=1))), REPRESENTABLE),
]
REFUSED_IDS = ["naive", "no-offset", "text", "none", "broken-tzinfo", "after-9999"]


@pytest.mark.parametrize(("value", "message"), REFUSED, ids=REFUSED_IDS)
def test_clock_time_refuses_what_is_not_an_aware_instant(value: object, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        clock_time(lambda: value)
    assert str(info.value) == message
    error = info.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_clock_time_is_a_plain_utc_datetime() -> None:
    class Later(datetime):
        pass

    local = Later(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=9)))
    value = clock_time(lambda: local)
    assert type(value) is datetime
    assert value == datetime(2026, 1, 1, 3, tzinfo=UTC) and value.tzinfo is UTC


@pytest.mark.parametrize(("value", "message"), REFUSED, ids=REFUSED_IDS)
def test_mcp_tools_refuse_the_clock_as_clock_time_does(
    tmp_path: Path, value: datetime, message: str
) -> None:
    with TrueHeart(SQLiteRepository(tmp_path / "m.db")) as service:
        tools = MemoryTools(service, Scope("t", "o", "s"), clock=lambda: value)
        with pytest.raises(ToolFailure) as info:
            tools.call("recall_memories", {})
    assert (info.value.error, info.value.message) == ("ValidationError", message)
