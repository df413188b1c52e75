"""The memory tools in agent runs with a scripted model: remember, search, forget,
claims, the trust ceiling, scope isolation and body-free tool errors."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner
from agents_scripted import Items, ScriptedModel, Step, call, output_of, reply, tool_outputs
from agents_support import OTHER_SCOPE, SCOPE, Clock

from trueheart_core import (
    ClaimDraft,
    EntityDeleted,
    EntityNotFound,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.integrations.openai_agents import (
    TrueHeartSession,
    memory_tools,
    tool_error_message,
)
from trueheart_core.integrations.openai_agents.tools import DEFAULT_MEMORY_RETENTION

TEA = "The user prefers green tea over coffee in the morning."


def run(
    steps: Sequence[Step], tools: list[FunctionTool], prompt: str = "Go."
) -> tuple[ScriptedModel, Any]:
    model = ScriptedModel(steps)
    agent = Agent(name="assistant", instructions="Use your memory.", model=model, tools=tools)
    result = asyncio.run(Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True)))
    assert model.remaining == 0
    return model, result


def test_the_tools_and_their_parameters_name_no_scope(memory: TrueHeart, clock: Clock) -> None:
    tools = memory_tools(memory, SCOPE, clock=clock)
    assert [tool.name for tool in tools] == [
        "search_memory",
        "remember",
        "forget_memory",
        "claims",
        "remember_claim",
    ]
    parameters = {tool.name: set(tool.params_json_schema["properties"]) for tool in tools}
    assert parameters == {
        "search_memory": {"query", "limit"},
        "remember": {"content", "trust"},
        "forget_memory": {"memory_id"},
        "claims": {"subject", "predicate"},
        "remember_claim": {"subject", "predicate", "value", "trust", "supersedes"},
    }
    without_claims = memory_tools(memory, SCOPE, clock=clock, claim_tools=False)
    assert [tool.name for tool in without_claims] == ["search_memory", "remember", "forget_memory"]


def test_an_agent_remembers_finds_forgets_and_no_longer_finds(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    def forget(items: Items) -> Any:
        assert repository.residue([TEA.encode()]) == {TEA.encode()}  # stored, before forget
        return call("forget_memory", {"memory_id": output_of(items, "c1")["memory_id"]}, "c3")

    model, result = run(
        [
            call("remember", {"content": TEA, "trust": None}, "c1"),
            call("search_memory", {"query": "green tea", "limit": 5}, "c2"),
            forget,
            call("search_memory", {"query": "green tea", "limit": 5}, "c4"),
            reply("Forgotten."),
        ],
        memory_tools(memory, SCOPE, clock=clock),
        "Remember my tea, then forget it.",
    )
    assert result.final_output == "Forgotten."
    last_input = model.inputs[-1]
    remembered = output_of(last_input, "c1")
    memory_id = remembered["memory_id"]
    assert remembered["trust"] == "observed"
    assert (
        remembered["recall_until"] == (clock.now + DEFAULT_MEMORY_RETENTION.recall_for).isoformat()
    )
    found = output_of(last_input, "c2")
    assert found["matched"] == 1
    [hit] = found["memories"]
    assert (hit["memory_id"], hit["content"], hit["kind"]) == (memory_id, TEA, "agent_note")
    assert hit["sources"] == [memory_id]  # lineage to the event remember recorded
    assert output_of(last_input, "c3") == {"forgotten": memory_id}
    assert output_of(last_input, "c4") == {"matched": 0, "memories": []}
    # Governed: the memory and its source event are tombstoned and audited, and the
    # text is gone from the database file.
    with pytest.raises(EntityDeleted):
        memory.get_memory(SCOPE, memory_id)
    with pytest.raises(EntityDeleted):
        memory.get_receipt(SCOPE, memory_id)
    trail = [(r.action, r.entity_type.value, r.entity_id) for r in memory.audit(SCOPE)]
    assert trail[:4] == [
        ("delete", "raw_event", memory_id),
        ("forget", "memory", memory_id),
        ("materialize", "memory", memory_id),
        ("ingest", "raw_event", memory_id),
    ]
    assert repository.residue([TEA.encode()]) == frozenset()


def test_what_remember_stores_is_an_event_and_a_derived_memory(
    memory: TrueHeart, clock: Clock
) -> None:
    retention = RetentionPolicy(
        raw_ttl=DEFAULT_MEMORY_RETENTION.raw_ttl,
        clear_for=DEFAULT_MEMORY_RETENTION.clear_for,
        recall_for=DEFAULT_MEMORY_RETENTION.recall_for,
    )
    model, _ = run(
        [call("remember", {"content": TEA, "trust": "untrusted"}, "c1"), reply("ok")],
        memory_tools(memory, SCOPE, clock=clock, retention=retention, source_id="assistant-1"),
    )
    memory_id = output_of(model.inputs[-1], "c1")["memory_id"]
    stored = memory.get_memory(SCOPE, memory_id)
    assert (stored.content, stored.kind, stored.trust) == (TEA, "agent_note", TrustLevel.UNTRUSTED)
    assert stored.source_event_ids == (memory_id,)
    receipt = memory.get_receipt(SCOPE, memory_id)
    assert (receipt.source.source_id, receipt.source.source_type) == (
        "assistant-1",
        "openai-agents",
    )
    assert receipt.source.trust is TrustLevel.OBSERVED  # the ceiling
    assert receipt.raw_expires_at == clock.now + retention.raw_ttl
    assert receipt.metadata == {"kind": "agent_note"}  # kept once the memory is forgotten


def test_trust_above_the_ceiling_is_a_tool_error_and_stores_nothing(
    memory: TrueHeart, clock: Clock
) -> None:
    model, result = run(
        [
            call("remember", {"content": TEA, "trust": "confirmed"}, "c1"),
            call(
                "remember_claim",
                {
                    "subject": "user:42",
                    "predicate": "prefers_drink",
                    "value": "green tea",
                    "trust": "confirmed",
                    "supersedes": None,
                },
                "c2",
            ),
            reply("I could not."),
        ],
        memory_tools(memory, SCOPE, clock=clock, max_trust=TrustLevel.OBSERVED),
    )
    assert result.final_output == "I could not."
    outputs = tool_outputs(model.inputs[-1])
    assert outputs["c1"].startswith("error: trust escalation: agent-memory-")
    assert outputs["c2"].startswith("error: trust escalation: agent-claim-")
    assert TEA not in outputs["c1"] and "green tea" not in outputs["c2"]
    assert memory.scopes() == ()  # the event was rolled back with the memory
    assert memory.stats(SCOPE).events == 0


def test_a_confirmed_ceiling_lets_the_model_store_confirmed_memories(
    memory: TrueHeart, clock: Clock
) -> None:
    model, _ = run(
        [call("remember", {"content": TEA, "trust": "confirmed"}, "c1"), reply("ok")],
        memory_tools(memory, SCOPE, clock=clock, max_trust=TrustLevel.CONFIRMED),
    )
    assert output_of(model.inputs[-1], "c1")["trust"] == "confirmed"


def test_two_scopes_are_isolated(memory: TrueHeart, clock: Clock) -> None:
    model, _ = run(
        [call("remember", {"content": TEA, "trust": None}, "a1"), reply("ok")],
        memory_tools(memory, SCOPE, clock=clock),
    )
    memory_id = output_of(model.inputs[-1], "a1")["memory_id"]
    other, _ = run(
        [
            call("search_memory", {"query": "green tea", "limit": 5}, "b1"),
            call("forget_memory", {"memory_id": memory_id}, "b2"),
            reply("nothing here"),
        ],
        memory_tools(memory, OTHER_SCOPE, clock=clock),
    )
    assert output_of(other.inputs[-1], "b1") == {"matched": 0, "memories": []}
    # The ID exists only in the other scope; the model is not told so.
    assert tool_outputs(other.inputs[-1])["b2"] == f"error: entity not found: {memory_id}"
    assert memory.get_memory(SCOPE, memory_id).content == TEA
    back, _ = run(
        [call("search_memory", {"query": "green tea", "limit": 5}, "a2"), reply("found")],
        memory_tools(memory, SCOPE, clock=clock),
    )
    assert [m["memory_id"] for m in output_of(back.inputs[-1], "a2")["memories"]] == [memory_id]


def _host_memory(memory: TrueHeart, clock: Clock, scope: Scope, kind: str) -> str:
    source = SourceRef("crm", "import", clock.now, TrustLevel.CONFIRMED)
    memory.ingest_derived(
        RawEventDraft("crm-1", scope, source, "Imported green tea note.", DEFAULT_MEMORY_RETENTION),
        memories=[
            MemoryDraft(
                "host-1",
                scope,
                "Green tea is on the host's list.",
                ("crm-1",),
                kind,
                TrustLevel.CONFIRMED,
                clock.now,
            )
        ],
    )
    return "host-1"


def test_the_model_sees_and_forgets_only_the_kinds_it_is_given(
    memory: TrueHeart, clock: Clock
) -> None:
    host_id = _host_memory(memory, clock, SCOPE, "crm_note")
    model, _ = run(
        [
            call("search_memory", {"query": "green tea", "limit": 5}, "c1"),
            call("forget_memory", {"memory_id": host_id}, "c2"),
            reply("ok"),
        ],
        memory_tools(memory, SCOPE, clock=clock),
    )
    assert output_of(model.inputs[-1], "c1")["matched"] == 0
    assert tool_outputs(model.inputs[-1])["c2"] == (
        "error: memory_id: names a memory these tools do not manage"
    )
    assert memory.get_memory(SCOPE, host_id).kind == "crm_note"
    # Named by the host, the kind is searchable and forgettable; the host's event stays.
    shown, _ = run(
        [
            call("search_memory", {"query": "green tea", "limit": 5}, "c1"),
            call("forget_memory", {"memory_id": host_id}, "c2"),
            reply("ok"),
        ],
        memory_tools(memory, SCOPE, clock=clock, search_kinds=["crm_note"]),
    )
    assert [m["memory_id"] for m in output_of(shown.inputs[-1], "c1")["memories"]] == [host_id]
    assert output_of(shown.inputs[-1], "c2") == {"forgotten": host_id}
    with pytest.raises(EntityDeleted):
        memory.get_memory(SCOPE, host_id)
    assert memory.get_receipt(SCOPE, "crm-1").content_available


def test_claims_are_remembered_superseded_and_listed(memory: TrueHeart, clock: Clock) -> None:
    def supersede(items: Items) -> Any:
        return call(
            "remember_claim",
            {
                "subject": "user:42",
                "predicate": "prefers_theme",
                "value": "light",
                "trust": None,
                "supersedes": output_of(items, "c1")["claim_id"],
            },
            "c3",
        )

    claim = {"subject": "user:42", "predicate": "prefers_theme", "value": "dark"}
    model, _ = run(
        [
            call("remember_claim", {**claim, "trust": None, "supersedes": None}, "c1"),
            call("claims", {"subject": "user:42", "predicate": None}, "c2"),
            supersede,
            call("claims", {"subject": None, "predicate": "prefers_theme"}, "c4"),
            call("search_memory", {"query": "prefers_theme light", "limit": 5}, "c5"),
            reply("ok"),
        ],
        memory_tools(memory, SCOPE, clock=clock),
    )
    items = model.inputs[-1]
    first, second = output_of(items, "c1")["claim_id"], output_of(items, "c3")["claim_id"]
    before = output_of(items, "c2")
    assert [(c["claim_id"], c["value"], c["status"]) for c in before["claims"]] == [
        (first, "dark", "current")
    ]
    after = output_of(items, "c4")
    assert {c["claim_id"]: (c["status"], c["superseded_by"]) for c in after["claims"]} == {
        first: ("superseded", [second]),
        second: ("current", []),
    }
    assert after["conflicts"] == [] and after["truncated"] is False
    hits = output_of(items, "c5")["memories"]
    assert hits[0]["memory_id"] == second
    assert hits[0]["claim"]["value"] == "light"


def test_the_claims_tool_answers_one_page_of_fifty(memory: TrueHeart, clock: Clock) -> None:
    # 26 subjects with two conflicting values each: 52 claims, one page short.
    source = SourceRef("src", "chat", clock(), TrustLevel.OBSERVED)
    memory.ingest_derived(
        RawEventDraft("evt-claims", SCOPE, source, "what they drink", DEFAULT_MEMORY_RETENTION),
        claims=[
            ClaimDraft(
                f"c-{n:02d}-{value}",
                SCOPE,
                f"user:{n:02d}",
                "drinks",
                value,
                ("evt-claims",),
                TrustLevel.OBSERVED,
                clock(),
            )
            for n in range(26)
            for value in ("tea", "coffee")
        ],
    )
    model, _ = run(
        [
            call("claims", {"subject": None, "predicate": None}, "all"),
            call("claims", {"subject": "user:25", "predicate": None}, "one"),
            reply("ok"),
        ],
        memory_tools(memory, SCOPE, clock=clock),
    )
    items = model.inputs[-1]
    page, one = output_of(items, "all"), output_of(items, "one")
    assert len(page["claims"]) == 50 and page["truncated"] is True
    # 25 subjects' claims are all listed, each a conflict; the last subject's are not
    assert len(page["conflicts"]) == 25
    assert {c["subject"] for c in page["claims"]} == {f"user:{n:02d}" for n in range(25)}
    assert len(one["claims"]) == 2 and one["truncated"] is False
    assert len(one["conflicts"]) == 1


def test_tool_errors_carry_library_messages_and_never_the_content(
    memory: TrueHeart, clock: Clock
) -> None:
    huge = "secret " * 40_000  # over 256 KiB
    model, _ = run(
        [
            call("remember", {"content": huge, "trust": None}, "c1"),
            call("remember", {"content": "secret plans", "trust": "supreme"}, "c2"),
            call("forget_memory", {"memory_id": "agent-memory-unknown"}, "c3"),
            call("search_memory", {"query": "   ", "limit": 5}, "c4"),
            call("forget_memory", {"memory_id": " "}, "c5"),
            call("search_memory", {"query": "secret " * 1000, "limit": 5}, "c6"),
            reply("ok"),
        ],
        memory_tools(memory, SCOPE, clock=clock),
    )
    outputs = tool_outputs(model.inputs[-1])
    assert outputs == {
        "c1": "error: content: must be at most 256 KiB UTF-8",
        "c2": "error: the arguments do not match the tool's parameters",
        "c3": "error: entity not found: agent-memory-unknown",
        # each refusal names the argument the model sent
        "c4": "error: query: must be a non-blank string",
        "c5": "error: memory_id: must be a non-blank string",
        "c6": "error: query: must be at most 4096 characters",
    }
    assert memory.stats(SCOPE).events == 0


def test_a_failure_outside_the_library_is_one_fixed_message() -> None:
    assert tool_error_message(RuntimeError("the secret body")) == "error: the memory tool failed"
    assert tool_error_message(EntityNotFound("m-1")) == "error: entity not found: m-1"


class _Anything(int):
    """An int whose comparisons say yes to any bound."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True


def test_the_factory_checks_the_host_settings(memory: TrueHeart) -> None:
    for arguments, message in (
        ({"budget_tokens": _Anything(0)}, "budget_tokens: must be from 1 through 1048576"),
        ({"scope": "acme/agent/user"}, "scope: must be a Scope"),
        ({"max_trust": 2}, "max_trust: must be a TrustLevel"),
        ({"budget_tokens": 0}, "budget_tokens: must be from 1 through 1048576"),
        ({"search_kinds": []}, "search_kinds: must name at least one kind"),
        ({"search_kinds": "agent_note"}, "search_kinds: must be a sequence of kinds or None"),
        ({"clock": "now"}, "clock: must be callable"),
        # claims and session items are written by their own tools, never as plain memories
        ({"kind": "claim"}, "kind: is reserved for claims"),
        ({"kind": "agent_session:chat-1"}, "kind: is reserved for agent session items"),
    ):
        settings: dict[str, Any] = {"scope": SCOPE, **arguments}
        scope = settings.pop("scope")
        with pytest.raises(ValidationError) as raised:
            memory_tools(memory, scope, **settings)
        assert str(raised.value) == message


def test_forget_finishes_a_forget_whose_event_delete_did_not_follow(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    """The memory was forgotten and its event not deleted (a busy store between the two
    transactions, or the host's own FORGET): forget_memory deletes the event."""

    def host_forgets(items: Items) -> Any:
        memory_id = output_of(items, "c1")["memory_id"]
        memory.govern(
            GovernanceCommand(
                SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, memory_id, clock(), "host"
            )
        )
        assert repository.residue([TEA.encode()]) == {TEA.encode()}  # in the event's body
        return call("forget_memory", {"memory_id": memory_id}, "c2")

    model, _ = run(
        [
            call("remember", {"content": TEA, "trust": None}, "c1"),
            host_forgets,
            call("forget_memory", {"memory_id": "agent-memory-0"}, "c3"),
            reply("ok"),
        ],
        memory_tools(memory, SCOPE, clock=clock),
    )
    memory_id = output_of(model.inputs[-1], "c1")["memory_id"]
    assert output_of(model.inputs[-1], "c2") == {"forgotten": memory_id}
    with pytest.raises(EntityDeleted):
        memory.get_receipt(SCOPE, memory_id)
    assert repository.residue([TEA.encode()]) == frozenset()
    assert tool_outputs(model.inputs[-1])["c3"] == "error: entity not found: agent-memory-0"


def test_forget_keeps_the_event_while_a_host_memory_comes_from_it(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    """The host derived a memory of its own from the event ``remember`` wrote: forgetting
    the model's memory leaves the event, which deleting would take the host's memory
    with it; once the host's memory is gone, forgetting again deletes the event."""

    def host_derives(items: Items) -> Any:
        memory_id = output_of(items, "c1")["memory_id"]
        memory.materialize_once(
            MemoryDraft(
                "host-profile",
                SCOPE,
                "Likes tea.",
                (memory_id,),
                "profile",
                TrustLevel.OBSERVED,
                clock.now,
            )
        )
        return call("forget_memory", {"memory_id": memory_id}, "c2")

    model, _ = run(
        [call("remember", {"content": TEA, "trust": None}, "c1"), host_derives, reply("ok")],
        memory_tools(memory, SCOPE, clock=clock),
    )
    memory_id = output_of(model.inputs[-1], "c1")["memory_id"]
    assert output_of(model.inputs[-1], "c2") == {"forgotten": memory_id}
    with pytest.raises(EntityDeleted):
        memory.get_memory(SCOPE, memory_id)
    assert memory.get_memory(SCOPE, "host-profile").kind == "profile"
    assert memory.get_receipt(SCOPE, memory_id).content_available
    assert memory.derived_memories(SCOPE, memory_id) == ("host-profile",)
    assert [record.action for record in memory.audit(SCOPE)].count("delete") == 0
    again, _ = run(
        [call("forget_memory", {"memory_id": memory_id}, "c1"), reply("ok")],
        memory_tools(memory, SCOPE, clock=clock),
    )
    assert tool_outputs(again.inputs[-1])["c1"] == f"error: entity deleted: {memory_id}"
    assert memory.get_memory(SCOPE, "host-profile").kind == "profile"
    memory.govern(
        GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "host-profile", clock(), "host"
        )
    )
    last, _ = run(
        [call("forget_memory", {"memory_id": memory_id}, "c1"), reply("ok")],
        memory_tools(memory, SCOPE, clock=clock),
    )
    assert output_of(last.inputs[-1], "c1") == {"forgotten": memory_id}
    with pytest.raises(EntityDeleted):
        memory.get_receipt(SCOPE, memory_id)
    assert repository.residue([TEA.encode()]) == frozenset()


def test_forgetting_a_session_item_deletes_its_event_within_the_tools_reach(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    secret = "my passport number is X1234567"
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    asyncio.run(session.add_items([{"role": "user", "content": secret}]))
    (item,) = memory.list_memories(SCOPE).items
    tools = memory_tools(memory, SCOPE, clock=clock, search_kinds=["agent_note", session.kind])
    model, _ = run([call("forget_memory", {"memory_id": item.memory_id}, "c1"), reply("ok")], tools)
    assert output_of(model.inputs[-1], "c1") == {"forgotten": item.memory_id}
    asyncio.run(session.clear_session())
    assert repository.residue([b"X1234567"]) == frozenset()
    # An item the host forgot keeps its event from tools whose kinds leave the session out.
    asyncio.run(session.add_items([{"role": "user", "content": secret}]))
    (item,) = memory.list_memories(SCOPE).items
    memory.govern(
        GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, item.memory_id, clock(), "host"
        )
    )
    model, _ = run(
        [call("forget_memory", {"memory_id": item.memory_id}, "c1"), reply("ok")],
        memory_tools(memory, SCOPE, clock=clock),
    )
    assert tool_outputs(model.inputs[-1])["c1"] == f"error: entity deleted: {item.memory_id}"
    assert memory.get_receipt(SCOPE, item.memory_id).content_available


def test_a_forgotten_memory_s_event_is_deleted_only_within_the_tools_reach(
    memory: TrueHeart, repository: SQLiteRepository, clock: Clock
) -> None:
    """Two tool sets share the scope: one may delete the event of a forgotten memory
    only when it could forget the memory itself, its kind (as the event's receipt tells
    it) among its kinds."""
    vault = memory_tools(
        memory, SCOPE, clock=clock, kind="vault", search_kinds=("vault",), claim_tools=False
    )
    model, _ = run([call("remember", {"content": TEA, "trust": None}, "c1"), reply("ok")], vault)
    memory_id = output_of(model.inputs[-1], "c1")["memory_id"]
    memory.govern(
        GovernanceCommand(
            SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, memory_id, clock(), "host"
        )
    )
    notes, _ = run(
        [call("forget_memory", {"memory_id": memory_id}, "c1"), reply("ok")],
        memory_tools(memory, SCOPE, clock=clock),
    )
    assert tool_outputs(notes.inputs[-1])["c1"] == f"error: entity deleted: {memory_id}"
    assert memory.get_receipt(SCOPE, memory_id).content_available
    assert [record.action for record in memory.audit(SCOPE)].count("delete") == 0
    again, _ = run([call("forget_memory", {"memory_id": memory_id}, "c1"), reply("ok")], vault)
    assert output_of(again.inputs[-1], "c1") == {"forgotten": memory_id}
    assert repository.residue([TEA.encode()]) == frozenset()


def test_forget_keeps_an_event_these_tools_did_not_write(memory: TrueHeart, clock: Clock) -> None:
    """An event named as the tools name theirs, but another writer's (another source
    type), or one whose receipt does not name its memory's kind, stays."""
    week = RetentionPolicy(
        DEFAULT_MEMORY_RETENTION.raw_ttl,
        DEFAULT_MEMORY_RETENTION.clear_for,
        DEFAULT_MEMORY_RETENTION.recall_for,
    )
    for memory_id, source_type in (
        ("agent-memory-host", "import"),
        ("agent-memory-unnamed", "openai-agents"),
    ):
        source = SourceRef("crm", source_type, clock.now, TrustLevel.OBSERVED)
        memory.ingest_derived(
            RawEventDraft(memory_id, SCOPE, source, "Host note.", week),
            memories=[
                MemoryDraft(
                    memory_id,
                    SCOPE,
                    "Host note.",
                    (memory_id,),
                    "agent_note",
                    TrustLevel.OBSERVED,
                    clock.now,
                )
            ],
        )
    memory.govern(
        GovernanceCommand(
            SCOPE,
            GovernanceAction.FORGET,
            EntityType.MEMORY,
            "agent-memory-unnamed",
            clock(),
            "host",
        )
    )
    model, _ = run(
        [
            call("forget_memory", {"memory_id": "agent-memory-host"}, "c1"),
            call("forget_memory", {"memory_id": "agent-memory-unnamed"}, "c2"),
            reply("ok"),
        ],
        memory_tools(memory, SCOPE, clock=clock),
    )
    outputs = tool_outputs(model.inputs[-1])
    assert output_of(model.inputs[-1], "c1") == {"forgotten": "agent-memory-host"}
    assert outputs["c2"] == "error: entity deleted: agent-memory-unnamed"
    assert memory.get_receipt(SCOPE, "agent-memory-host").content_available
    assert memory.get_receipt(SCOPE, "agent-memory-unnamed").content_available
