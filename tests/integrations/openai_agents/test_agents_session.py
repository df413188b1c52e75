"""The session: exact round trips in order, restarts, pop, clear, retention, subject
erasure down to the file's bytes, isolation, audit and serialised calls."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from agents import Agent, RunConfig, Runner, Session, SessionSettings
from agents_scripted import ScriptedModel, call, output_of, reply
from agents_support import OTHER_SCOPE, SCOPE, Clock

from trueheart_core import (
    EntityDeleted,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    MemoryPage,
    MemoryRecord,
    RawEventDraft,
    RetentionPolicy,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.integrations.mcp_server import MemoryTools
from trueheart_core.integrations.openai_agents import TrueHeartSession, memory_tools
from trueheart_core.integrations.openai_agents._common import to_json

_T = TypeVar("_T")

ITEMS: list[Any] = [
    {"role": "user", "content": "Plan a trip to Kyoto in April."},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg-1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "京都の桜は四月です。", "annotations": []}],
    },
    {"type": "function_call", "call_id": "c1", "name": "search_memory", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": 'nested "quotes" \\ and \n'},
    {"numbers": [0, -1, 2.5, 1e300, 12345678901234567890], "flags": [True, False, None]},
]


def wait(awaitable: Awaitable[_T]) -> _T:
    async def main() -> _T:
        return await awaitable

    return asyncio.run(main())


def contents(session: TrueHeartSession) -> list[Any]:
    return wait(session.get_items())


def test_items_round_trip_exactly_and_in_order(memory: TrueHeart, clock: Clock) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    assert isinstance(session, Session)
    wait(session.add_items(ITEMS[:2]))
    clock.advance(timedelta(seconds=1))
    wait(session.add_items(ITEMS[2:]))
    items = contents(session)
    assert items == ITEMS
    assert [list(item) for item in items] == [list(item) for item in ITEMS]  # key order too
    assert wait(session.get_items(limit=2)) == ITEMS[-2:]
    assert wait(session.get_items(limit=100)) == ITEMS
    assert wait(session.get_items(limit=0)) == []
    items[0]["content"] = "changed"  # the caller's copy
    assert contents(session) == ITEMS


def test_each_item_is_an_event_and_a_derived_memory(memory: TrueHeart, clock: Clock) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    wait(session.add_items(ITEMS[:2]))
    page = memory.list_memories(SCOPE, kinds=(session.kind,))
    assert [m.memory_id[:26] for m in page.items] == [
        "agent-session-000000000001",
        "agent-session-000000000002",
    ]
    first = page.items[0]
    assert first.source_event_ids == (first.memory_id,)
    assert first.kind == "agent_session:conv-1"
    receipt = memory.get_receipt(SCOPE, first.memory_id)
    assert (receipt.source.source_id, receipt.source.source_type) == (
        "conv-1",
        "openai-agents-session",
    )
    assert receipt.raw_expires_at == clock.now + timedelta(days=30)
    trail = [(r.action, r.entity_id) for r in memory.audit(SCOPE)]
    second = page.items[1].memory_id
    assert trail == [
        ("materialize", second),
        ("ingest", second),
        ("materialize", first.memory_id),
        ("ingest", first.memory_id),
    ]


def test_history_survives_a_restart(store_path: Path, clock: Clock) -> None:
    with TrueHeart(SQLiteRepository(store_path), clock=clock) as first:
        wait(TrueHeartSession("conv-1", first, SCOPE, clock=clock).add_items(ITEMS[:3]))
    with TrueHeart(SQLiteRepository(store_path), clock=clock) as second:
        session = TrueHeartSession("conv-1", second, SCOPE, clock=clock)
        assert contents(session) == ITEMS[:3]
        wait(session.add_items(ITEMS[3:]))
    with TrueHeart(SQLiteRepository(store_path), clock=clock) as third:
        assert contents(TrueHeartSession("conv-1", third, SCOPE, clock=clock)) == ITEMS


def test_pop_removes_and_tombstones_the_last_item(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    marker = {"role": "user", "content": "zanzibar-pop-marker"}
    wait(session.add_items([ITEMS[0], marker]))
    [_, last] = memory.list_memories(SCOPE, kinds=(session.kind,)).items
    assert repository.residue([b"zanzibar-pop-marker"]) == {b"zanzibar-pop-marker"}
    assert wait(session.pop_item()) == marker
    assert contents(session) == [ITEMS[0]]
    with pytest.raises(EntityDeleted):
        memory.get_memory(SCOPE, last.memory_id)
    with pytest.raises(EntityDeleted):
        memory.get_receipt(SCOPE, last.memory_id)
    assert [(r.action, r.entity_id) for r in memory.audit(SCOPE, limit=1)] == [
        ("delete", last.memory_id)
    ]
    assert repository.residue([b"zanzibar-pop-marker"]) == frozenset()
    # The next item takes the free position under a fresh ID and is read in order.
    wait(session.add_items([ITEMS[1]]))
    assert contents(session) == ITEMS[:2]
    [_, replacement] = memory.list_memories(SCOPE, kinds=(session.kind,)).items
    assert replacement.memory_id[:26] == last.memory_id[:26]
    assert replacement.memory_id != last.memory_id
    assert wait(session.pop_item()) == ITEMS[1]
    assert wait(session.pop_item()) == ITEMS[0]
    assert wait(session.pop_item()) is None
    assert contents(session) == []


def test_clear_removes_every_item_of_the_session_only(memory: TrueHeart, clock: Clock) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    other = TrueHeartSession("conv-2", memory, SCOPE, clock=clock)
    wait(session.add_items(ITEMS))
    wait(other.add_items(ITEMS[:1]))
    wait(session.clear_session())
    assert contents(session) == []
    assert contents(other) == ITEMS[:1]
    deletes = [r for r in memory.audit(SCOPE) if r.action == "delete"]
    assert len(deletes) == len(ITEMS)
    assert memory.stats(SCOPE).events == 1
    wait(session.add_items(ITEMS[1:2]))
    assert contents(session) == ITEMS[1:2]


def test_an_item_forgotten_through_the_mcp_server_leaves_no_text(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    """The MCP server's tools (which need no SDK in process) forget an item found among
    the scope's memories: its event goes too, which ``clear_session`` could no longer
    find; an item the host forgot is finished the same way."""
    secret = "my card number is 4111-1111-1111-1111"
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    wait(session.add_items([{"role": "user", "content": secret}, ITEMS[0], ITEMS[2]]))
    first, second, third = memory.list_memories(SCOPE).items
    tools = MemoryTools(memory, SCOPE, clock=clock)
    forgot = tools.call("forget_memory", {"memory_id": first.memory_id, "reason": "asked"})
    assert forgot["affected_ids"] == [first.memory_id]
    assert {"raw_event", "raw_body", "memory"} <= set(forgot["removed"])
    assert repository.residue([b"4111-1111"]) == frozenset()
    assert contents(session) == [ITEMS[0], ITEMS[2]]
    memory.govern(
        GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, second.memory_id, clock(), "host"
        )
    )
    finished = tools.call("forget_memory", {"memory_id": second.memory_id, "reason": "asked"})
    assert finished["affected_ids"] == [second.memory_id]
    assert finished["removed"] == ["raw_event", "raw_body"]
    wait(session.clear_session())
    for item in (first, second, third):
        with pytest.raises(EntityDeleted):
            memory.get_receipt(SCOPE, item.memory_id)
    assert repository.residue([b"Kyoto"]) == frozenset()


def test_a_sealed_item_is_hidden_keeps_its_position_and_is_cleared(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    sealed_item = {"role": "user", "content": "zanzibar-sealed-marker"}
    wait(session.add_items([ITEMS[0], sealed_item]))
    [_, sealed] = memory.list_memories(SCOPE, kinds=(session.kind,)).items

    def govern(action: GovernanceAction) -> None:
        memory.govern(
            GovernanceCommand(SCOPE, action, EntityType.MEMORY, sealed.memory_id, clock(), "hold")
        )

    govern(GovernanceAction.SEAL)
    assert contents(session) == [ITEMS[0]]
    # The next item goes after the sealed one, which keeps its place in the order.
    wait(session.add_items([ITEMS[1]]))
    positions = [m.memory_id[:26] for m in memory.list_memories(SCOPE).items]
    assert len(set(positions)) == 3
    assert wait(session.pop_item()) == ITEMS[1]  # a sealed item is never popped
    wait(session.add_items([ITEMS[2]]))
    govern(GovernanceAction.RESTORE)
    assert contents(session) == [ITEMS[0], sealed_item, ITEMS[2]]
    govern(GovernanceAction.SEAL)
    wait(session.clear_session())
    assert memory.list_memories(SCOPE, kinds=(session.kind,)).items == ()
    with pytest.raises(EntityDeleted):
        memory.get_memory(SCOPE, sealed.memory_id)
    assert repository.residue([b"zanzibar-sealed-marker"]) == frozenset()


def test_get_items_reads_its_default_limit_from_the_session_settings(
    memory: TrueHeart, clock: Clock
) -> None:
    session = TrueHeartSession(
        "conv-1", memory, SCOPE, clock=clock, session_settings=SessionSettings(limit=2)
    )
    wait(session.add_items(ITEMS))
    assert contents(session) == ITEMS[-2:]
    assert wait(session.get_items(limit=4)) == ITEMS[-4:]  # an explicit limit wins
    from_dict = TrueHeartSession(
        "conv-1", memory, SCOPE, clock=clock, session_settings={"limit": 3}
    )
    assert from_dict.session_settings == SessionSettings(limit=3)
    assert contents(from_dict) == ITEMS[-3:]
    unlimited = TrueHeartSession(
        "conv-1", memory, SCOPE, clock=clock, session_settings=SessionSettings()
    )
    assert contents(unlimited) == ITEMS


def test_sessions_and_scopes_are_isolated(memory: TrueHeart, clock: Clock) -> None:
    one = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    two = TrueHeartSession("conv-2", memory, SCOPE, clock=clock)
    elsewhere = TrueHeartSession("conv-1", memory, OTHER_SCOPE, clock=clock)
    wait(one.add_items(ITEMS[:2]))
    wait(two.add_items(ITEMS[2:3]))
    wait(elsewhere.add_items(ITEMS[3:]))
    assert contents(one) == ITEMS[:2]
    assert contents(two) == ITEMS[2:3]
    assert contents(elsewhere) == ITEMS[3:]
    assert wait(two.pop_item()) == ITEMS[2]
    assert contents(one) == ITEMS[:2]


def test_items_expire_with_their_retention(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    retention = RetentionPolicy(
        raw_ttl=timedelta(hours=1), clear_for=timedelta(days=1), recall_for=timedelta(days=1)
    )
    session = TrueHeartSession("conv-1", memory, SCOPE, retention=retention, clock=clock)
    old = {"role": "user", "content": "quokka-expiry-marker"}
    wait(session.add_items([old]))
    clock.advance(timedelta(hours=12))
    wait(session.add_items(ITEMS[:1]))
    # The events' copies expire with raw_ttl; the items are still history.
    clock.advance(timedelta(hours=1))
    assert memory.expire_raw_content(as_of=clock.now) == 2
    assert contents(session) == [old, ITEMS[0]]
    # Past its recall deadline, an item is no longer history, nor can it be popped.
    clock.advance(timedelta(hours=11, minutes=1))
    assert contents(session) == [ITEMS[0]]
    assert wait(session.get_items(limit=5)) == [ITEMS[0]]
    assert repository.residue([b"quokka-expiry-marker"]) == {b"quokka-expiry-marker"}
    assert wait(session.delete_expired()) == 1
    assert repository.residue([b"quokka-expiry-marker"]) == frozenset()
    assert wait(session.delete_expired()) == 0
    assert [a.action for a in memory.audit(SCOPE, limit=1)] == ["delete"]
    clock.advance(timedelta(days=1))
    assert wait(session.pop_item()) is None
    assert contents(session) == []


def test_subject_erasure_empties_the_session_and_the_file(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    kept = TrueHeartSession("conv-1", memory, OTHER_SCOPE, clock=clock)
    secrets = [
        {"role": "user", "content": "My passport number is walrus-4471."},
        {"role": "assistant", "content": "Noted: walrus-4471, renew by pelican-2031."},
    ]
    wait(session.add_items(secrets))
    wait(kept.add_items(ITEMS[:1]))
    needles = [b"walrus-4471", b"pelican-2031"]
    assert repository.residue(needles) == set(needles)
    receipt = memory.erase_subject(SCOPE, occurred_at=clock.now)
    assert receipt.verified is True
    assert len(receipt.memory_ids) == 2
    assert contents(session) == []
    assert repository.residue(needles) == frozenset()
    assert contents(kept) == ITEMS[:1]
    # The session can be used again; the erased IDs stay tombstoned.
    wait(session.add_items(ITEMS[1:2]))
    assert contents(session) == ITEMS[1:2]
    for memory_id in receipt.memory_ids:
        with pytest.raises(EntityDeleted):
            memory.get_memory(SCOPE, memory_id)


ROUND_TRIP = "items: must be a list of JSON objects that survive a JSON round trip"


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([("role", "user")], ROUND_TRIP),
        ([{"content": ("a", "tuple")}], ROUND_TRIP),
        ([{1: "a non-string key"}], ROUND_TRIP),
        ([{"score": float("nan")}], ROUND_TRIP),
        (["a string"], ROUND_TRIP),
        ([{"ok": True}, {"bad": {1, 2}}], ROUND_TRIP),
        ([{"ok": True}, {"role": "user", "content": "x\ud800"}], "items: must be valid UTF-8"),
        (
            [{"ok": True}, {"content": "x" * (16 * 1024 * 1024)}],
            "items: must be at most 16 MiB UTF-8 as JSON",
        ),
    ],
)
def test_items_that_cannot_be_stored_exactly_are_refused_before_anything_is_stored(
    memory: TrueHeart, clock: Clock, items: list[Any], message: str
) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    with pytest.raises(ValidationError) as raised:
        wait(session.add_items(items))
    assert str(raised.value) == message
    assert memory.stats(SCOPE).events == 0


PART = 256 * 1024


def _large_items() -> list[Any]:
    """Items over a body's 256 KiB as JSON: plain text, escapes that grow it, and
    characters of two to four bytes, so that parts are cut next to (never inside) a
    multi-byte character."""
    return [
        {"role": "user", "content": "a" * (PART + 1)},
        {
            "type": "function_call",
            "call_id": "c9",
            "name": "remember",
            "arguments": json.dumps({"content": '"\x01' * 40_000}),
        },
        {"role": "assistant", "content": "é" * PART + "漢" * 1000 + "\U0001f600" * 70_000},
    ]


def test_an_item_over_a_body_s_size_is_stored_in_parts_and_read_back_whole(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    large = _large_items()
    items = [ITEMS[0], large[0], ITEMS[1], large[1], large[2], ITEMS[2]]
    wait(session.add_items(items))
    assert contents(session) == items
    assert wait(session.get_items(limit=2)) == items[-2:]
    assert wait(session.get_items(limit=3)) == items[-3:]
    # Each part is a memory of at most 256 KiB derived from the item's one event, under
    # the item's ID and then that ID followed by the part's number.
    page = memory.list_memories(SCOPE, kinds=(session.kind,), limit=100)
    by_item: dict[str, list[MemoryRecord]] = {}
    for record in page.items:
        by_item.setdefault(record.memory_id[:43], []).append(record)
    assert len(by_item) == len(items)
    for item, (item_id, parts) in zip(items, by_item.items(), strict=True):
        text = to_json(item)
        assert "".join(part.content for part in parts) == text
        assert all(len(part.content.encode()) <= PART for part in parts)
        # Each cut is as late as a whole character allows (a character is 1 to 4 bytes).
        assert all(len(part.content.encode()) > PART - 4 for part in parts[:-1])
        assert [part.memory_id for part in parts] == [item_id] + [
            f"{item_id}-{number:03d}" for number in range(1, len(parts))
        ]
        assert all(part.source_event_ids == (item_id,) for part in parts)
        assert dict(parts[0].metadata) == ({"parts": len(parts)} if len(parts) > 1 else {})
    assert [len(parts) > 1 for parts in by_item.values()] == [False, True, False, True, True, False]
    # One transaction per item: its event's ingest and one materialize per part.
    trail = [r.action for r in memory.audit(SCOPE, limit=100)]
    assert trail.count("ingest") == len(items)
    assert trail.count("materialize") == len(page.items)
    # Pop returns the large item whole and deletes every part with its event.
    assert wait(session.pop_item()) == items[-1]
    assert wait(session.pop_item()) == large[2]
    assert contents(session) == items[:-2]
    wait(session.clear_session())
    assert contents(session) == []
    assert memory.list_memories(SCOPE, kinds=(session.kind,)).items == ()
    assert repository.residue([b"a" * 1000, "é".encode() * 1000]) == frozenset()
    assert memory.verify_integrity().ok


def _second_item_in_parts(
    session: TrueHeartSession, memory: TrueHeart, before: Sequence[Any], after: Sequence[Any] = ()
) -> list[str]:
    """Add ``before``, an item stored in four parts, and ``after``; the memory IDs of the
    parts of that item (the session's second), in order."""
    wait(session.add_items([*before, _large_items()[2], *after]))
    return [
        m.memory_id
        for m in memory.list_memories(SCOPE, kinds=(session.kind,)).items
        if m.memory_id.startswith("agent-session-000000000002")
    ]


def test_an_item_missing_a_part_is_hidden_and_cleared_whole(
    memory: TrueHeart, clock: Clock
) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    parts = _second_item_in_parts(session, memory, [ITEMS[0]], [ITEMS[1]])
    assert len(parts) == 4
    # The host forgets one part: the item is no longer whole, so it is not returned.
    memory.govern(
        GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, parts[2], clock(), "host"
        )
    )
    assert contents(session) == [ITEMS[0], ITEMS[1]]
    assert wait(session.pop_item()) == ITEMS[1]
    assert wait(session.pop_item()) == ITEMS[0]  # the broken item is passed over
    assert wait(session.pop_item()) is None
    assert wait(session.delete_expired()) == 0
    wait(session.clear_session())  # its event goes, and every part left with it
    assert memory.list_memories(SCOPE, kinds=(session.kind,)).items == ()
    with pytest.raises(EntityDeleted):
        memory.get_receipt(SCOPE, parts[0])
    assert memory.verify_integrity().ok


def test_forgetting_one_part_of_an_item_through_the_mcp_server_hides_the_item(
    memory: TrueHeart, clock: Clock
) -> None:
    """A tool forgets the memory it is given: one part of an item stored in parts goes,
    and the event stays while the other parts come from it. The item is then hidden,
    and ``clear_session`` deletes its event and every part left."""
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    parts = _second_item_in_parts(session, memory, [ITEMS[0]])
    tools = MemoryTools(memory, SCOPE, clock=clock)
    forgot = tools.call("forget_memory", {"memory_id": parts[0], "reason": "asked"})
    assert forgot["affected_ids"] == [parts[0]]
    assert "raw_event" not in forgot["removed"]
    assert memory.get_receipt(SCOPE, parts[0]).event_id == parts[0]
    assert contents(session) == [ITEMS[0]]
    assert len(memory.derived_memories(SCOPE, parts[0])) == len(parts) - 1
    wait(session.clear_session())
    assert memory.list_memories(SCOPE, kinds=(session.kind,)).items == ()
    with pytest.raises(EntityDeleted):
        memory.get_receipt(SCOPE, parts[0])


def _forget_through(surface: str, memory: TrueHeart, clock: Clock) -> Any:
    """A function that forgets one memory the way ``surface`` does: the MCP server's
    ``forget_memory``, or the Agents ``forget_memory`` tool (its kinds including the
    session's) called by a scripted model; it returns the tool's answer."""
    if surface == "mcp":
        tools = MemoryTools(memory, SCOPE, clock=clock)
        return lambda memory_id: tools.call(
            "forget_memory", {"memory_id": memory_id, "reason": "asked"}
        )
    agent_tools = memory_tools(
        memory, SCOPE, clock=clock, search_kinds=["agent_note", "agent_session:conv-1"]
    )

    def forget(memory_id: str) -> Any:
        model = ScriptedModel([call("forget_memory", {"memory_id": memory_id}, "f1"), reply("ok")])
        agent = Agent(name="assistant", instructions="Forget.", model=model, tools=agent_tools)
        asyncio.run(Runner.run(agent, "Go.", run_config=RunConfig(tracing_disabled=True)))
        return output_of(model.inputs[-1], "f1")

    return forget


@pytest.mark.parametrize("surface", ["mcp", "agents"])
def test_forgetting_every_part_of_an_item_deletes_its_event_with_the_last(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock, surface: str
) -> None:
    """Each part forgotten through a tool, the first first: the event stays while other
    parts come from it, and goes with the last, so the item's text leaves the store
    (``clear_session`` finds items by their memories and could no longer reach it)."""
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    parts = _second_item_in_parts(session, memory, [ITEMS[0]])
    assert len(parts) == 4
    forget = _forget_through(surface, memory, clock)
    for number, part in enumerate(parts):
        forget(part)
        if number < len(parts) - 1:
            assert memory.get_receipt(SCOPE, parts[0]).event_id == parts[0]
    with pytest.raises(EntityDeleted):
        memory.get_receipt(SCOPE, parts[0])
    assert contents(session) == [ITEMS[0]]
    wait(session.clear_session())
    assert repository.residue(["é".encode() * 1000, "漢".encode() * 100]) == frozenset()
    assert memory.verify_integrity().ok


def test_concurrent_calls_are_serialised(memory: TrueHeart, clock: Clock) -> None:
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    batches = [[{"batch": b, "index": i} for i in range(5)] for b in range(4)]

    async def main() -> None:
        await asyncio.gather(*(session.add_items(batch) for batch in batches))

    asyncio.run(main())
    items = contents(session)
    assert len(items) == 20
    positions = [m.memory_id[:26] for m in memory.list_memories(SCOPE).items]
    assert len(set(positions)) == 20  # no position was handed out twice
    # Each call appended its batch whole: the batches are not interleaved.
    runs = [items[start : start + 5] for start in range(0, 20, 5)]
    assert sorted(runs, key=lambda run: run[0]["batch"]) == batches


def test_a_cancelled_change_returns_only_once_it_is_done(memory: TrueHeart, clock: Clock) -> None:
    # The thread of a change cannot be stopped: a cancelled pop still deletes its item,
    # and the cancelled caller hears of the cancellation only once the delete is done.
    wait(TrueHeartSession("conv-1", memory, SCOPE, clock=clock).add_items(ITEMS[:2]))
    reached, release = threading.Event(), threading.Event()
    reads = 0

    def gated() -> Any:
        nonlocal reads
        reads += 1
        if reads == 2:  # a pop reads the clock to pick its item, then to delete it
            reached.set()
            release.wait(10)
        return clock()

    session = TrueHeartSession("conv-1", memory, SCOPE, clock=gated)

    async def main() -> None:
        task = asyncio.create_task(session.pop_item())
        assert await asyncio.to_thread(reached.wait, 10)
        task.cancel()
        await asyncio.sleep(0.1)
        assert not task.done()  # the delete has not run yet: the caller waits for it
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        # when the cancellation reached the caller, the item was gone
        assert len(memory.list_memories(SCOPE).items) == 1

    asyncio.run(main())
    assert contents(session) == ITEMS[:1]


def test_the_session_checks_its_settings(memory: TrueHeart) -> None:
    with pytest.raises(ValidationError, match="session_id: must be at most 114 characters"):
        TrueHeartSession("x" * 115, memory, SCOPE)
    with pytest.raises(ValidationError, match="session_id: must be a non-blank string"):
        TrueHeartSession(" ", memory, SCOPE)
    with pytest.raises(ValidationError, match="scope: must be a Scope"):
        TrueHeartSession("conv-1", memory, "acme/agent/user")  # type: ignore[arg-type]
    session = TrueHeartSession("x" * 114, memory, SCOPE)
    assert session.kind == "agent_session:" + "x" * 114
    with pytest.raises(ValidationError, match="limit: must be None or an int"):
        wait(session.get_items(limit=True))
    for settings in ({1: 2}, {"limit": "two"}, {"limit": 2.5}, [("limit", 2)], "limit=2"):
        with pytest.raises(ValidationError, match="session_settings: must be None, a Sess"):
            TrueHeartSession("conv-1", memory, SCOPE, session_settings=settings)  # type: ignore[arg-type]
    changed = SessionSettings()
    changed.limit = "2"  # type: ignore[assignment]
    with pytest.raises(ValidationError, match="session_settings: limit must be None or"):
        TrueHeartSession("conv-1", memory, SCOPE, session_settings=changed)
    assert repr(session) == f"TrueHeartSession(session_id={'x' * 114!r})"


class _CountingReads(TrueHeart):
    """A service that counts the memories its listings return."""

    read = 0

    def list_memories(self, *args: Any, **kwargs: Any) -> MemoryPage:
        page = super().list_memories(*args, **kwargs)
        self.read += len(page.items)
        return page


def test_the_latest_items_are_read_without_reading_the_whole_history(
    repository: SQLiteRepository, clock: Clock
) -> None:
    service = _CountingReads(repository, clock=clock)
    session = TrueHeartSession("conv-1", service, SCOPE, clock=clock)
    history = [{"role": "user", "content": f"turn {n}"} for n in range(240)]
    wait(session.add_items(history[:200]))
    wait(session.add_items(history[200:]))
    # The host's own memories of the scope are not history.
    service.ingest_event(
        RawEventDraft(
            "host-1",
            SCOPE,
            SourceRef("host", "note", clock(), TrustLevel.OBSERVED),
            "x",
            RetentionPolicy(timedelta(days=1), timedelta(days=1), timedelta(days=1)),
        )
    )
    for n in range(30):
        service.materialize_once(
            MemoryDraft(
                f"zz-{n}", SCOPE, "host note", ("host-1",), "note", TrustLevel.OBSERVED, clock()
            )
        )
    latest = service.list_memories(SCOPE, kinds=(session.kind,), limit=3, descending=True)
    for record in latest.items:  # the three latest items, sealed by the host
        service.govern(
            GovernanceCommand(
                SCOPE, GovernanceAction.SEAL, EntityType.MEMORY, record.memory_id, clock(), "hold"
            )
        )
    visible = history[:-3]

    def reads(call: Awaitable[_T]) -> tuple[_T, int]:
        service.read = 0
        result = wait(call)
        return result, service.read

    assert reads(session.get_items()) == (visible, 240)  # the whole history, read whole
    items, read = reads(session.get_items(limit=5))
    assert items == visible[-5:] and read <= 16  # 3 sealed + 5: pages of 5 and 10 items
    popped, read = reads(session.pop_item())
    assert popped == visible[-1] and read <= 7  # pages of 1, 2 and 4 items
    _, read = reads(session.add_items([{"role": "user", "content": "next"}]))
    assert read == 1  # the latest item, sealed or not, gives the next position
    assert wait(session.get_items(limit=2)) == [visible[-2], {"role": "user", "content": "next"}]
    assert len(contents(session)) == len(visible)
    positions = [
        m.memory_id[len("agent-session-") :][:12]
        for m in service.list_memories(SCOPE, kinds=(session.kind,), descending=True).items[:5]
    ]
    assert positions == [
        "000000000241",  # after the sealed 240
        "000000000240",
        "000000000239",
        "000000000238",
        "000000000236",  # 237 was popped
    ]
