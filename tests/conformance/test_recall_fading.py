"""Recall ranks fading memories exactly, whatever the length of their fade.

Fades shorter than 2**53 microseconds are ranked by the repository, longer ones by the
service; both must agree with the 0.1 definition (``timedelta`` division) to the last bit,
including around that threshold and when the ratio rounds to 1.0.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from trueheart_core import (
    MemoryDraft,
    RawEventDraft,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.ports import Repository

SCOPE = Scope("tenant", "owner", "fading")
CREATED = datetime(2000, 1, 1, tzinfo=UTC)
THRESHOLD = 1 << 53
CLEAR_FOR = timedelta(days=1)
FADES_US = [
    86_400_000_000,  # one day
    THRESHOLD - 1,
    THRESHOLD,
    THRESHOLD + 1,
    (1 << 56) + 12_345,  # long enough to round to 1.0 just after clear_until
    3 * THRESHOLD,
]


def _clarity(as_of: datetime, clear_until: datetime, recall_until: datetime) -> float:
    if as_of <= clear_until:
        return 1.0
    return (recall_until - as_of) / (recall_until - clear_until)


@pytest.mark.parametrize(
    "after_clear_us", [1, 4, 5, 17, 3_600_000_000, 86_399_999_999, 10**15, 2 * 10**15]
)
@pytest.mark.parametrize("limit", [1, 3, 20])
def test_fading_order_matches_the_definition(
    repository: Repository, after_clear_us: int, limit: int
) -> None:
    service = TrueHeart(repository, clock=lambda: CREATED)
    expected = []
    for index, fade_us in enumerate(FADES_US):
        for copy in range(2):
            event_id = f"e{index}-{copy}"
            retention = RetentionPolicy(
                timedelta(days=1), CLEAR_FOR, CLEAR_FOR + timedelta(microseconds=fade_us)
            )
            source = SourceRef("s", "t", CREATED, TrustLevel.OBSERVED)
            service.ingest_event(RawEventDraft(event_id, SCOPE, source, "body", retention))
            created = CREATED + timedelta(microseconds=copy)
            record = service.materialize_once(
                MemoryDraft(
                    f"m{index}-{copy}",
                    SCOPE,
                    "memory",
                    (event_id,),
                    "fact",
                    TrustLevel.OBSERVED,
                    created,
                )
            )
            expected.append(record)
    as_of = CREATED + CLEAR_FOR + timedelta(microseconds=after_clear_us)
    eligible = [m for m in expected if m.created_at <= as_of < m.recall_until]
    eligible.sort(key=lambda m: m.memory_id)
    eligible.sort(key=lambda m: m.created_at, reverse=True)
    eligible.sort(key=lambda m: _clarity(as_of, m.clear_until, m.recall_until), reverse=True)
    want = [(m.memory_id, _clarity(as_of, m.clear_until, m.recall_until)) for m in eligible]
    got = [
        (i.memory.memory_id, i.clarity) for i in service.recall(RecallQuery(SCOPE, as_of, limit))
    ]
    assert got == want[:limit]
    assert got, "the scenario must recall something"
