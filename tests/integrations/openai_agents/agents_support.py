"""What the integration tests share that needs no SDK: scopes, times and a clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from trueheart_core import Scope

START = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("acme", "agent-7", "user-42")
OTHER_SCOPE = Scope("acme", "agent-7", "user-43")


class Clock:
    """A settable clock, shared by the service, the tools and the session."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta
