"""The MCP server in process, through the SDK's own client: the tools listed, a memory's
life from ``remember`` to ``forget`` and the replay that does not bring it back, the trust
ceiling, tool errors, scope isolation, claims and the audit trail of every write."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import pytest
from mcp_support import (
    OTHER,
    SCOPE,
    START,
    Client,
    Clock,
    MCPError,
    connector,
    error_text,
    run,
    structured,
)

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    MemoryDraft,
    RawEventDraft,
    RepositoryBusy,
    RetentionPolicy,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.integrations.mcp_server import READING_TOOLS, WRITING_TOOLS

Connect = Any
SECRET = "The vault code is 4417."


def _text(result: Any) -> str:
    return " ".join(block.text for block in result.content)


async def _remember(client: Client, content: str, **options: Any) -> dict[str, Any]:
    return structured(await client.call_tool("remember", {"content": content, **options}))


async def _search(client: Client, query: str, **options: Any) -> list[str]:
    found = structured(await client.call_tool("search_memory", {"query": query, **options}))
    return [item["memory_id"] for item in found["items"]]


# --- listing -----------------------------------------------------------------------------


def test_the_tools_and_their_schemas(connect: Connect) -> None:
    async def body() -> None:
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == set(READING_TOOLS) | set(WRITING_TOOLS)
        for tool in tools.values():
            assert tool.description
            assert tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            assert "scope" not in tool.input_schema["properties"]  # bound, never an argument
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (tool.name in READING_TOOLS)
            assert tool.annotations.open_world_hint is False
        assert tools["remember"].input_schema["required"] == ["content"]
        assert tools["remember"].input_schema["properties"]["trust"]["enum"] == [
            "untrusted",
            "observed",
        ]
        assert tools["forget_memory"].annotations.destructive_hint is True
        assert tools["forget_memory"].input_schema["required"] == ["memory_id", "reason"]
        assert tools["remember_claim"].input_schema["required"] == [
            "subject",
            "predicate",
            "value",
        ]

    run(body)


def test_a_read_only_server_offers_only_the_reading_tools(
    store: Path, service: TrueHeart, clock: Clock, connect: Connect
) -> None:
    async def body() -> None:
        async with connect() as client:
            stored = await _remember(client, "Prefers green tea in the morning.")
        with TrueHeart(SQLiteRepository(store, read_only=True), clock=clock) as reader:
            async with connect(over=reader, read_only=True) as client:
                listed = sorted(tool.name for tool in (await client.list_tools()).tools)
                assert listed == sorted(READING_TOOLS)
                assert await _search(client, "green tea") == [stored["memory"]["memory_id"]]
                with pytest.raises(MCPError, match="unknown tool"):
                    await client.call_tool("remember", {"content": "Something new."})
                with pytest.raises(MCPError, match="unknown tool"):
                    await client.call_tool(
                        "forget_memory",
                        {"memory_id": stored["memory"]["memory_id"], "reason": "asked"},
                    )
            assert reader.get_memory(SCOPE, stored["memory"]["memory_id"]).content

    run(body)


def test_the_handshake_era_client_sees_the_same_tools(connect: Connect) -> None:
    async def body() -> None:
        async with connect(mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "trueheart"
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == set(READING_TOOLS) | set(WRITING_TOOLS)
            stored = await _remember(client, "Keeps a paper diary.")
            assert await _search(client, "paper diary") == [stored["memory"]["memory_id"]]

    run(body)


# --- a memory's life ---------------------------------------------------------------------


def test_remember_search_get_forget_and_no_resurrection(
    service: TrueHeart, repository: SQLiteRepository, connect: Connect
) -> None:
    async def body() -> None:
        async with connect() as client:
            first = await _remember(
                client,
                "Prefers window seats on long flights.",
                kind="preference",
                metadata={"topic": "travel", "tags": ["flights"]},
                idempotency_key="seat-preference",
            )
            memory = first["memory"]
            memory_id = memory["memory_id"]
            assert first["replayed"] is False
            assert memory["kind"] == "preference"
            assert memory["trust"] == "observed"
            assert memory["status"] == "active"
            assert memory["created_at"] == "2026-05-04T09:00:00Z"
            assert memory["clear_until"] == "2026-08-02T09:00:00Z"  # 90 days by default
            assert memory["recall_until"] == "2027-05-04T09:00:00Z"  # 365 days by default
            assert memory["metadata"] == {"topic": "travel", "tags": ["flights"]}
            assert memory["source_event_ids"] == [first["event_id"]]

            found = structured(await client.call_tool("search_memory", {"query": "window seats"}))
            (item,) = found["items"]
            assert item["memory_id"] == memory_id and item["rank"] == 1
            assert item["content"] == "Prefers window seats on long flights."
            assert item["score"] > 0 and item["created_at"] == memory["created_at"]
            assert item["kind"] == "preference" and item["claim"] is None
            assert found["matched"] == 1 and found["used_tokens"] == item["tokens"]
            # the text content is the same document, for clients that read only text
            as_text = _text(await client.call_tool("get_memory", {"memory_id": memory_id}))
            assert json.loads(as_text)["memory_id"] == memory_id

            got = structured(await client.call_tool("get_memory", {"memory_id": memory_id}))
            assert got == memory
            recalled = structured(await client.call_tool("recall_memories", {}))
            assert [i["memory_id"] for i in recalled["items"]] == [memory_id]
            assert recalled["items"][0]["clarity"] == 1.0

            forgot = structured(
                await client.call_tool(
                    "forget_memory", {"memory_id": memory_id, "reason": "user asked"}
                )
            )
            # remember's own event goes too, with the text of its body
            assert forgot["affected_ids"] == sorted([first["event_id"], memory_id])
            assert set(forgot["removed"]) >= {"memory", "search_entry", "raw_event", "raw_body"}
            assert repository.residue([b"window seats"]) == frozenset()
            assert [(r.action, r.entity_id) for r in service.audit(SCOPE, limit=2)] == [
                ("delete", first["event_id"]),
                ("forget", memory_id),
            ]

            assert await _search(client, "window seats") == []
            assert structured(await client.call_tool("recall_memories", {}))["items"] == []
            gone = await client.call_tool("get_memory", {"memory_id": memory_id})
            assert error_text(gone) == f"entity deleted: {memory_id}"

            # the same key again: the tombstone wins, nothing comes back
            again = await client.call_tool(
                "remember",
                {
                    "content": "Prefers window seats on long flights.",
                    "kind": "preference",
                    "metadata": {"topic": "travel", "tags": ["flights"]},
                    "idempotency_key": "seat-preference",
                },
            )
            assert error_text(again) == f"entity deleted: {memory_id}"
            assert await _search(client, "window seats") == []
            twice = await client.call_tool(
                "forget_memory", {"memory_id": memory_id, "reason": "again"}
            )
            assert error_text(twice) == f"entity deleted: {memory_id}"
        assert service.stats(SCOPE).memories == 0

    run(body)


def test_a_replay_returns_what_the_first_call_stored(
    service: TrueHeart, clock: Clock, connect: Connect
) -> None:
    async def body() -> None:
        async with connect() as client:
            first = await _remember(client, "Allergic to peanuts.", idempotency_key="k-1")
            clock.advance(timedelta(hours=3))
            second = await _remember(client, "Allergic to peanuts.", idempotency_key="k-1")
            assert second["replayed"] is True
            assert second["memory"] == first["memory"]  # created at the first call's time
            assert second["event_id"] == first["event_id"]
            different = await client.call_tool(
                "remember", {"content": "Allergic to walnuts.", "idempotency_key": "k-1"}
            )
            assert error_text(different) == f"idempotency conflict: {first['event_id']}"
            other_kind = await client.call_tool(
                "remember",
                {"content": "Allergic to peanuts.", "kind": "health", "idempotency_key": "k-1"},
            )
            assert error_text(other_kind) == f"idempotency conflict: {first['memory']['memory_id']}"
            # without a key, every call stores a new memory
            one = await _remember(client, "Walks to work.")
            two = await _remember(client, "Walks to work.")
            assert one["memory"]["memory_id"] != two["memory"]["memory_id"]
        assert service.stats(SCOPE).memories == 3
        assert service.stats(SCOPE).events == 3
        assert len(service.audit(SCOPE)) == 6  # a replay writes no audit row

    run(body)


def test_the_injected_clock_dates_writes_and_reads(clock: Clock, connect: Connect) -> None:
    async def body() -> None:
        async with connect() as client:
            stored = await _remember(client, "Runs on Tuesdays.")
            clock.advance(timedelta(days=100))  # past clear_until: clarity fades
            recalled = structured(await client.call_tool("recall_memories", {"limit": 5}))
            assert recalled["as_of"] == "2026-08-12T09:00:00Z"
            assert 0 < recalled["items"][0]["clarity"] < 1
            clock.advance(timedelta(days=300))  # past recall_until: not recalled
            assert structured(await client.call_tool("recall_memories", {}))["items"] == []
            assert await _search(client, "Tuesdays") == []
            still = structured(
                await client.call_tool("get_memory", {"memory_id": stored["memory"]["memory_id"]})
            )
            assert still["status"] == "active"

    run(body)


class _BusyBetween(TrueHeart):
    """A service whose first DELETE of an event is refused as busy: another process
    held the store between the two transactions of ``forget_memory``."""

    refused = False

    def govern(self, command: GovernanceCommand) -> GovernanceResult:
        if command.action is GovernanceAction.DELETE and not self.refused:
            self.refused = True
            raise RepositoryBusy("governance transaction failed")
        return super().govern(command)


def test_a_forget_cut_short_between_its_transactions_is_finished_by_a_retry(
    tmp_path: Path, clock: Any
) -> None:
    repository = SQLiteRepository(tmp_path / "busy.db")
    with _BusyBetween(repository, clock=clock) as busy:
        connect = connector(busy, clock)

        async def body() -> None:
            async with connect() as client:
                first = await _remember(client, SECRET)
                memory_id, event_id = first["memory"]["memory_id"], first["event_id"]
                arguments = {"memory_id": memory_id, "reason": "user asked"}
                refused = await client.call_tool("forget_memory", arguments)
                assert "repository busy" in error_text(refused)
                # the FORGET committed, the DELETE of the event did not
                assert repository.residue([b"vault code"]) == frozenset({b"vault code"})
                retried = structured(await client.call_tool("forget_memory", arguments))
                assert retried["affected_ids"] == [event_id]
                assert set(retried["removed"]) == {"raw_event", "raw_body"}
                assert repository.residue([b"vault code"]) == frozenset()
                # once all is gone, the memory is reported as deleted, as before
                gone = await client.call_tool("forget_memory", arguments)
                assert "entity deleted" in error_text(gone)

        run(body)


def test_forget_deletes_the_event_of_a_memory_the_host_forgot(
    service: TrueHeart, repository: SQLiteRepository, connect: Connect, clock: Any
) -> None:
    async def body() -> None:
        async with connect() as client:
            first = await _remember(client, SECRET)
            memory_id, event_id = first["memory"]["memory_id"], first["event_id"]
            service.govern(
                GovernanceCommand(
                    SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, memory_id, clock(), "host"
                )
            )
            forgot = structured(
                await client.call_tool(
                    "forget_memory", {"memory_id": memory_id, "reason": "user asked"}
                )
            )
            assert forgot["affected_ids"] == [event_id]
            assert repository.residue([b"vault code"]) == frozenset()

    run(body)


def test_forget_keeps_the_event_while_a_host_memory_comes_from_it(
    service: TrueHeart, repository: SQLiteRepository, connect: Connect, clock: Any
) -> None:
    async def body() -> None:
        async with connect() as client:
            first = await _remember(client, SECRET, idempotency_key="k-vault")
            memory_id, event_id = first["memory"]["memory_id"], first["event_id"]
            service.materialize_once(
                MemoryDraft(
                    "host-summary",
                    SCOPE,
                    "Has a vault.",
                    (event_id,),
                    "crm",
                    TrustLevel.OBSERVED,
                    START,
                )
            )
            arguments = {"memory_id": memory_id, "reason": "user asked"}
            forgot = structured(await client.call_tool("forget_memory", arguments))
            assert forgot["affected_ids"] == [memory_id]
            assert "raw_event" not in forgot["removed"]
            assert service.get_memory(SCOPE, "host-summary").kind == "crm"
            assert service.derived_memories(SCOPE, event_id) == ("host-summary",)
            assert repository.residue([b"vault code"]) == frozenset({b"vault code"})
            # The kept text cannot be guessed through a replay of the key: a wrong guess
            # and the right one get the same answer.
            for guess in ("The vault code is 0000.", SECRET):
                replay = await client.call_tool(
                    "remember", {"content": guess, "idempotency_key": "k-vault"}
                )
                assert error_text(replay) == f"entity deleted: {memory_id}"
            again = await client.call_tool("forget_memory", arguments)
            assert "entity deleted" in error_text(again)
            service.govern(
                GovernanceCommand(
                    SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "host-summary", clock(), "h"
                )
            )
            last = structured(await client.call_tool("forget_memory", arguments))
            assert last["affected_ids"] == [event_id]
            assert repository.residue([b"vault code"]) == frozenset()

    run(body)


def _host_records(service: TrueHeart, token: str, source_type: str, *memory_ids: str) -> None:
    """An event of the host's own, ``evt-TOKEN``, and memories derived from it, named
    the way ``remember`` names its records."""
    week = RetentionPolicy(timedelta(days=7), timedelta(days=7), timedelta(days=7))
    source = SourceRef("crm", source_type, START, TrustLevel.OBSERVED)
    service.ingest_derived(
        RawEventDraft(f"evt-{token}", SCOPE, source, "CRM record of Ada.", week),
        memories=[
            MemoryDraft(
                memory_id,
                SCOPE,
                f"Ada, record {number}.",
                (f"evt-{token}",),
                "crm",
                TrustLevel.OBSERVED,
                START,
            )
            for number, memory_id in enumerate(memory_ids)
        ],
    )


def test_forget_never_deletes_an_event_this_server_did_not_store(
    service: TrueHeart, connect: Connect, clock: Any
) -> None:
    """The host names its records as ``remember`` does: the receipt, not the ID, says
    whose event it is, and the host's event (with what else it derived) stays."""
    kept, live = "a" * 32, "b" * 32

    def forget_command(memory_id: str) -> GovernanceCommand:
        return GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, memory_id, clock(), "host"
        )

    async def body() -> None:
        # another source type, then the server's own type under another source ID
        _host_records(service, kept, "crm", f"mem-{kept}", "crm-profile")
        _host_records(service, live, "mcp", f"mem-{live}")
        service.govern(forget_command(f"mem-{kept}"))
        async with connect() as client:
            refused = await client.call_tool(
                "forget_memory", {"memory_id": f"mem-{kept}", "reason": "user asked"}
            )
            assert error_text(refused) == f"entity deleted: mem-{kept}"
            forgot = structured(
                await client.call_tool(
                    "forget_memory", {"memory_id": f"mem-{live}", "reason": "user asked"}
                )
            )
            assert forgot["affected_ids"] == [f"mem-{live}"]  # the memory alone
            # an event of this server that a memory of the host's is derived from
            stored = structured(
                await client.call_tool(
                    "remember_claim", {"subject": "ada", "predicate": "tier", "value": "gold"}
                )
            )
            token = stored["event_id"].removeprefix("evt-")
            service.materialize_once(
                MemoryDraft(
                    f"mem-{token}",
                    SCOPE,
                    "Ada is a gold customer.",
                    (stored["event_id"],),
                    "crm",
                    TrustLevel.OBSERVED,
                    clock(),
                )
            )
            service.govern(forget_command(f"mem-{token}"))
            shared = await client.call_tool(
                "forget_memory", {"memory_id": f"mem-{token}", "reason": "user asked"}
            )
            assert error_text(shared) == f"entity deleted: mem-{token}"
        assert service.get_memory(SCOPE, "crm-profile").kind == "crm"
        assert service.get_receipt(SCOPE, f"evt-{kept}").content_available
        assert service.get_receipt(SCOPE, f"evt-{live}").content_available
        assert service.get_memory(SCOPE, stored["claim"]["claim_id"]).kind == "claim"
        assert [r.action for r in service.audit(SCOPE)].count("delete") == 0

    run(body)


def test_forget_deletes_a_session_item_s_event_only_when_a_session_wrote_it(
    service: TrueHeart, repository: SQLiteRepository, connect: Connect
) -> None:
    """An ID shaped as a session item's: its event goes with it when its receipt shows a
    session's source and the memory is of that session's kind, and stays otherwise."""
    week = RetentionPolicy(timedelta(days=7), timedelta(days=7), timedelta(days=7))
    items = {
        "agent-session-000000000001-00000000000000a1": ("openai-agents-session", "conv-1"),
        "agent-session-000000000002-00000000000000a2": ("import", "conv-1"),
        "agent-session-000000000003-00000000000000a3": ("openai-agents-session", "conv-2"),
    }
    for item_id, (source_type, session_id) in items.items():
        service.ingest_derived(
            RawEventDraft(
                item_id,
                SCOPE,
                SourceRef(session_id, source_type, START, TrustLevel.UNTRUSTED),
                f'{{"content": "Item {item_id[-2:]}."}}',
                week,
            ),
            memories=[
                MemoryDraft(
                    item_id,
                    SCOPE,
                    f'{{"content": "Item {item_id[-2:]}."}}',
                    (item_id,),
                    "agent_session:conv-1",
                    TrustLevel.UNTRUSTED,
                    START,
                )
            ],
        )

    async def body() -> None:
        async with connect() as client:
            for item_id in items:
                await client.call_tool("forget_memory", {"memory_id": item_id, "reason": "r"})

    run(body)
    deleted, *kept = items
    assert [r.entity_id for r in service.audit(SCOPE) if r.action == "delete"] == [deleted]
    assert repository.residue([b"Item a1"]) == frozenset()
    assert all(service.get_receipt(SCOPE, item_id).content_available for item_id in kept)


# --- trust, arguments and errors --------------------------------------------------------


def test_trust_above_the_ceiling_is_refused(
    service: TrueHeart, connect: Connect, clock: Clock
) -> None:
    async def body() -> None:
        async with connect() as client:
            refused = await client.call_tool(
                "remember", {"content": "Is the account owner.", "trust": "confirmed"}
            )
            assert error_text(refused) == (
                "trust: must be at most observed, the server's trust ceiling"
            )
            claim = await client.call_tool(
                "remember_claim",
                {"subject": "user", "predicate": "role", "value": "owner", "trust": "confirmed"},
            )
            assert error_text(claim) == error_text(refused)
            lower = await _remember(client, "Might be the owner.", trust="untrusted")
            assert lower["memory"]["trust"] == "untrusted"
        async with connect(max_trust=TrustLevel.CONFIRMED) as client:
            higher = await _remember(client, "Is the account owner.", trust="confirmed")
            assert higher["memory"]["trust"] == "confirmed"
            default = await _remember(client, "Likes jazz.")
            assert default["memory"]["trust"] == "observed"
        async with connect(max_trust=TrustLevel.UNTRUSTED) as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "remember")
            assert tool.input_schema["properties"]["trust"]["enum"] == ["untrusted"]
            assert (await _remember(client, "Maybe vegan."))["memory"]["trust"] == "untrusted"
        assert service.stats(SCOPE).memories == 4  # nothing of the refused calls

    run(body)


def test_unknown_ids_are_tool_errors_with_the_library_message(connect: Connect) -> None:
    async def body() -> None:
        async with connect() as client:
            missing = await client.call_tool("get_memory", {"memory_id": "mem-nope"})
            assert error_text(missing) == "entity not found: mem-nope"
            forget = await client.call_tool(
                "forget_memory", {"memory_id": "mem-nope", "reason": "cleanup"}
            )
            assert error_text(forget) == "entity not found: mem-nope"

    run(body)


def test_refused_arguments_never_quote_what_was_sent(connect: Connect) -> None:
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("remember", {"content": SECRET, "kind": " "}, "kind: must be a non-blank string"),
        ("remember", {"content": SECRET, "metadata": SECRET}, "metadata: must be a JSON object"),
        ("remember", {"content": SECRET, "trust": SECRET}, "trust: must be untrusted, "),
        ("remember", {"content": SECRET, SECRET: 1}, "arguments: only these are accepted: "),
        ("remember", {"content": 4417}, "content: must be a string"),
        ("remember", {}, "content: is required"),
        ("remember", {"content": "x" * (256 * 1024 + 1)}, "content: must be at most 256 KiB"),
        ("remember", {"content": SECRET, "idempotency_key": "k" * 129}, "idempotency_key: "),
        ("search_memory", {"query": SECRET, "limit": 0}, "limit: must be a whole number"),
        ("search_memory", {"query": SECRET, "kinds": SECRET}, "kinds: must be a list"),
        ("search_memory", {"query": SECRET, "budget_tokens": True}, "budget_tokens: must be"),
        ("get_memory", {"memory_id": SECRET * 10}, "memory_id: must be at most 128 characters"),
        ("forget_memory", {"memory_id": "m", "reason": ""}, "reason: must be a non-blank"),
        # each refused argument under the tool's own name for it
        ("search_memory", {"query": " \t "}, "query: must be a non-blank string"),
        ("search_memory", {"query": SECRET * 200}, "query: must be at most 4096 characters"),
        ("forget_memory", {"memory_id": " ", "reason": "r"}, "memory_id: must be a non-blank"),
        ("forget_memory", {"memory_id": SECRET * 6, "reason": "r"}, "memory_id: must be at most"),
        # times whose UTC instant falls outside years 1 to 9999
        ("claims", {"as_of": "0001-01-01T00:00:00+01:00"}, "as_of: must be a time from year 1"),
        (
            "remember_claim",
            {
                "subject": "s",
                "predicate": "p",
                "value": SECRET,
                "valid_to": "9999-12-31T23:00-02:00",
            },
            "valid_to: must be a time from year 1 through 9999 in UTC",
        ),
        (
            "remember_claim",
            {"subject": "s", "predicate": "p", "value": SECRET, "valid_from": SECRET},
            "valid_from: must be an ISO 8601 date or time",
        ),
        (
            "remember_claim",
            {"subject": "s", "predicate": "p", "value": "v", "valid_from": "2026-05-01T10:00"},
            "valid_from: must have a UTC offset",
        ),
        (
            "remember_claim",
            {
                "subject": "s",
                "predicate": "p",
                "value": SECRET,
                "valid_from": "2026-05-02",
                "valid_to": "2026-05-01",
            },
            "valid_to: must be later than valid_from",
        ),
        ("claims", {"as_of": SECRET}, "as_of: must be an ISO 8601 date or time"),
        # a week date with an hour is a time, whatever its length
        ("claims", {"as_of": "2026W01T10"}, "as_of: must have a UTC offset"),
    ]

    async def body() -> None:
        async with connect() as client:
            for name, arguments, message in calls:
                text = error_text(await client.call_tool(name, arguments))
                assert text.startswith(message), (name, text)
                assert "4417" not in text and "vault" not in text, (name, text)
                assert "Traceback" not in text

    run(body)


def test_remember_refuses_the_kinds_of_claims_and_session_items(
    service: TrueHeart, connect: Connect
) -> None:
    # A plain memory of kind "claim" would pass for a claim with no claim behind it (to
    # the evicortex face, for one); one of a session's kind would sit among its items.
    async def body() -> None:
        async with connect() as client:
            for kind, message in (
                ("claim", "kind: is reserved for claims"),
                ("agent_session:chat-1", "kind: is reserved for agent session items"),
                ("agent_session:", "kind: is reserved for agent session items"),
            ):
                result = await client.call_tool("remember", {"content": SECRET, "kind": kind})
                assert error_text(result) == message
            # kinds that only look alike are plain kinds
            for kind in ("claims", "Claim", "agent_sessions", "note:agent_session:x"):
                stored = await _remember(client, f"Fact of kind {kind}.", kind=kind)
                assert stored["memory"]["kind"] == kind
        kinds = sorted(memory.kind for memory in service.list_memories(SCOPE).items)
        assert kinds == sorted(["claims", "Claim", "agent_sessions", "note:agent_session:x"])

    run(body)


# --- isolation -----------------------------------------------------------------------------


def test_two_servers_on_one_store_never_see_each_others_memories(
    service: TrueHeart, connect: Connect
) -> None:
    async def body() -> None:
        async with connect(SCOPE) as one, connect(OTHER) as two:
            mine = await _remember(one, "Takes black coffee.", idempotency_key="coffee")
            theirs = await _remember(two, "Takes sweet coffee.", idempotency_key="coffee")
            my_id, their_id = mine["memory"]["memory_id"], theirs["memory"]["memory_id"]
            assert my_id == their_id  # the same key: the same ID, in each scope its own memory
            assert theirs["replayed"] is False
            extra = await _remember(one, "Owns a grey cat.")
            cat_id = extra["memory"]["memory_id"]

            assert await _search(two, "grey cat") == []
            assert await _search(two, "coffee") == [their_id]
            recalled = structured(await two.call_tool("recall_memories", {}))
            assert [i["content"] for i in recalled["items"]] == ["Takes sweet coffee."]
            # an ID only the other scope holds is not found here (no "scope mismatch")
            peek = await two.call_tool("get_memory", {"memory_id": cat_id})
            assert error_text(peek) == f"entity not found: {cat_id}"
            forget = await two.call_tool(
                "forget_memory", {"memory_id": cat_id, "reason": "not mine"}
            )
            assert error_text(forget) == f"entity not found: {cat_id}"
            assert await _search(one, "grey cat") == [cat_id]
            structured(
                await two.call_tool("forget_memory", {"memory_id": their_id, "reason": "asked"})
            )
            assert await _search(one, "coffee") == [my_id]
            assert structured(await one.call_tool("claims", {}))["claims"] == []
        assert service.get_memory(SCOPE, my_id).content == "Takes black coffee."

    run(body)


# --- claims ----------------------------------------------------------------------------------


def test_claims_round_trip(service: TrueHeart, clock: Clock, connect: Connect) -> None:
    async def body() -> None:
        async with connect() as client:
            dark = structured(
                await client.call_tool(
                    "remember_claim",
                    {
                        "subject": "user",
                        "predicate": "prefers_theme",
                        "value": "dark",
                        "valid_from": "2026-01-01",
                        "idempotency_key": "theme-1",
                    },
                )
            )["claim"]
            assert dark["valid_from"] == "2026-01-01T00:00:00Z" and dark["valid_to"] is None
            assert dark["created_at"] == "2026-05-04T09:00:00Z"
            clock.advance(timedelta(days=10))
            light = structured(
                await client.call_tool(
                    "remember_claim",
                    {
                        "subject": "user",
                        "predicate": "prefers_theme",
                        "value": "light",
                        "valid_from": "2026-05-14T09:00:00+02:00",
                        "supersedes": dark["claim_id"],
                    },
                )
            )["claim"]
            assert light["valid_from"] == "2026-05-14T07:00:00Z"
            assert light["supersedes"] == dark["claim_id"]

            now = structured(
                await client.call_tool("claims", {"subject": "user", "predicate": "prefers_theme"})
            )
            statuses = {c["value"]: c["status"] for c in now["claims"]}
            assert statuses == {"dark": "superseded", "light": "current"}
            assert now["conflicts"] == []
            old = next(c for c in now["claims"] if c["value"] == "dark")
            assert old["superseded_by"] == [light["claim_id"]]

            before = structured(await client.call_tool("claims", {"as_of": "2026-05-10"}))
            assert {c["value"]: c["status"] for c in before["claims"]} == {
                "dark": "superseded",  # supersession counts from when it was made, as known now
                "light": "not_yet_valid",
            }
            found = structured(await client.call_tool("search_memory", {"query": "theme light"}))
            (item,) = [i for i in found["items"] if i["memory_id"] == light["claim_id"]]
            assert item["kind"] == "claim" and item["content"] == "user prefers_theme light"
            assert item["claim"]["status"] == "current" and item["claim"]["value"] == "light"

            replay = structured(
                await client.call_tool(
                    "remember_claim",
                    {
                        "subject": "user",
                        "predicate": "prefers_theme",
                        "value": "dark",
                        "valid_from": "2026-01-01",
                        "idempotency_key": "theme-1",
                    },
                )
            )
            assert replay["replayed"] is True and replay["claim"] == dark
            conflicting = structured(
                await client.call_tool(
                    "remember_claim",
                    {"subject": "user", "predicate": "prefers_theme", "value": "sepia"},
                )
            )["claim"]
            later = structured(await client.call_tool("claims", {"predicate": "prefers_theme"}))
            assert later["conflicts"] == [sorted([light["claim_id"], conflicting["claim_id"]])]
            forgot = structured(
                await client.call_tool(
                    "forget_memory", {"memory_id": conflicting["claim_id"], "reason": "wrong"}
                )
            )
            assert "claim" in forgot["removed"]
        (kept,) = service.get_claims(SCOPE, [dark["claim_id"]], as_of=clock())
        assert (kept.claim.value, kept.status.value) == ("dark", "superseded")

    run(body)


def test_claims_answer_one_bounded_page(service: TrueHeart, connect: Connect) -> None:
    # Five subjects, each with two conflicting current values: ten claims.
    async def body() -> None:
        async with connect() as client:
            for n in range(5):
                for value in ("tea", "coffee"):
                    structured(
                        await client.call_tool(
                            "remember_claim",
                            {"subject": f"user:{n}", "predicate": "drinks", "value": value},
                        )
                    )
            every = structured(await client.call_tool("claims", {"limit": 100}))
            page = structured(await client.call_tool("claims", {"limit": 3}))
            bad = await client.call_tool("claims", {"limit": 101})
        assert len(every["claims"]) == 10 and every["truncated"] is False
        assert len(every["conflicts"]) == 5
        assert page["truncated"] is True
        assert page["claims"] == every["claims"][:3]
        # the first subject's two claims are on the page, the second's only one
        listed = {c["claim_id"] for c in page["claims"]}
        assert page["conflicts"] == [c for c in every["conflicts"] if set(c) <= listed]
        assert len(page["conflicts"]) == 1
        assert "limit" in error_text(bad)

    run(body)


# --- audit ------------------------------------------------------------------------------------


def test_every_write_is_audited(service: TrueHeart, clock: Clock, connect: Connect) -> None:
    async def body() -> None:
        async with connect() as client:
            stored = await _remember(client, SECRET)
            claim = structured(
                await client.call_tool(
                    "remember_claim", {"subject": "vault", "predicate": "code", "value": "4417"}
                )
            )["claim"]
            clock.advance(timedelta(minutes=5))
            memory_id = stored["memory"]["memory_id"]
            await client.call_tool("forget_memory", {"memory_id": memory_id, "reason": SECRET})
            await client.call_tool("search_memory", {"query": "vault"})  # reads are not audited
            await client.call_tool("remember", {"content": "x", "trust": "confirmed"})  # refused
        records = service.audit(SCOPE, limit=100)
        trail = sorted((r.action, r.entity_type, r.entity_id) for r in records)
        assert trail == sorted(
            [
                ("ingest", EntityType.RAW_EVENT, stored["event_id"]),
                ("materialize", EntityType.MEMORY, memory_id),
                ("ingest", EntityType.RAW_EVENT, claim["source_event_ids"][0]),
                ("materialize", EntityType.MEMORY, claim["claim_id"]),
                ("forget", EntityType.MEMORY, memory_id),
                ("delete", EntityType.RAW_EVENT, stored["event_id"]),
            ]
        )
        forget = next(r for r in records if r.action == "forget")
        assert forget.occurred_at == START + timedelta(minutes=5)
        assert all("4417" not in r.reason and "vault" not in r.reason for r in records)
        receipt = service.get_receipt(SCOPE, claim["source_event_ids"][0])
        assert receipt.source.source_type == "mcp"
        assert service.verify_integrity().ok

    run(body)


class _NoOffset(tzinfo):
    """A ``tzinfo`` that gives no offset: a naive time, which Python would read as the
    machine's local time."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


class _BrokenOffset(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        raise KeyError("offset")

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


@pytest.mark.parametrize(
    ("tz", "message"),
    [
        (None, "clock: must return timezone-aware datetimes"),
        (_NoOffset(), "clock: must return timezone-aware datetimes"),
        (_BrokenOffset(), "clock: must be a representable datetime"),
    ],
    ids=["naive", "no-offset", "broken"],
)
def test_the_clock_must_be_aware(
    service: TrueHeart, connect: Connect, clock: Clock, tz: tzinfo | None, message: str
) -> None:
    async def body() -> None:
        clock.now = datetime(2026, 5, 4, 9, 0, tzinfo=tz)
        async with connect() as client:
            result = await client.call_tool("recall_memories", {})
            assert error_text(result) == message
        clock.now = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)

    run(body)
