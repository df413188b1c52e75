"""``Runner.run`` with a TrueHeart session: the second run's model input holds the
first run's items, across a restart of the store, and together with the memory tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner
from agents_scripted import ScriptedModel, call, output_of, reply
from agents_support import SCOPE, Clock

from trueheart_core import SQLiteRepository, TrueHeart
from trueheart_core.integrations.openai_agents import TrueHeartSession, memory_tools
from trueheart_core.integrations.openai_agents._common import to_json

NO_TRACING = RunConfig(tracing_disabled=True)


def run_turn(agent: Agent[Any], prompt: str, session: TrueHeartSession) -> Any:
    return asyncio.run(Runner.run(agent, prompt, session=session, run_config=NO_TRACING))


def _with_memory(model: ScriptedModel, memory: TrueHeart, clock: Clock) -> Agent[Any]:
    """An agent of ``model`` with the memory tools of ``SCOPE``."""
    return Agent(
        name="assistant",
        instructions="Use your memory.",
        model=model,
        tools=memory_tools(memory, SCOPE, clock=clock),
    )


def user_texts(items: list[dict[str, Any]]) -> list[str]:
    return [item["content"] for item in items if item.get("role") == "user"]


def test_a_second_run_sees_the_first_runs_items_after_a_restart(
    store_path: Path, clock: Clock
) -> None:
    model = ScriptedModel([reply("Hello Ada.", "msg-a"), reply("Your name is Ada.", "msg-b")])
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    with TrueHeart(SQLiteRepository(store_path), clock=clock) as memory:
        session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
        first = run_turn(agent, "My name is Ada.", session)
        assert first.final_output == "Hello Ada."
        stored_after_first = asyncio.run(session.get_items())
    assert user_texts(stored_after_first) == ["My name is Ada."]
    assert stored_after_first[-1]["id"] == "msg-a"

    with TrueHeart(SQLiteRepository(store_path), clock=clock) as memory:
        session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
        second = run_turn(agent, "What is my name?", session)
        assert second.final_output == "Your name is Ada."
        history = asyncio.run(session.get_items())

    first_input, second_input = model.inputs
    assert user_texts(first_input) == ["My name is Ada."]
    # The second call to the model starts with everything the first run stored.
    assert second_input[: len(stored_after_first)] == stored_after_first
    assert user_texts(second_input) == ["My name is Ada.", "What is my name?"]
    assert [item.get("id") for item in second_input if item.get("type") == "message"] == ["msg-a"]
    assert history[: len(stored_after_first)] == stored_after_first
    assert user_texts(history) == ["My name is Ada.", "What is my name?"]
    assert history[-1]["id"] == "msg-b"


def test_tools_and_session_together(memory: TrueHeart, clock: Clock) -> None:
    tea = "Prefers green tea in the morning."
    model = ScriptedModel(
        [
            call("remember", {"content": tea, "trust": None}, "c1"),
            reply("Noted.", "msg-a"),
            call("search_memory", {"query": "morning tea", "limit": 5}, "c2"),
            reply("Green tea.", "msg-b"),
        ]
    )
    agent = _with_memory(model, memory, clock)
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    run_turn(agent, "Remember that I like green tea in the morning.", session)
    run_turn(agent, "What do I drink in the morning?", session)
    history = asyncio.run(session.get_items())
    kinds = [item.get("type", item.get("role")) for item in history]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "message",
        "user",
        "function_call",
        "function_call_output",
        "message",
    ]
    # The search found the memory, and not the history that quotes the same words.
    found = output_of(model.inputs[-1], "c2")
    assert [m["content"] for m in found["memories"]] == [tea]
    assert found["matched"] == 1
    assert output_of(history, "c2") == found


def test_a_tool_call_whose_arguments_escape_past_a_body_s_size_is_kept_in_history(
    memory: TrueHeart, clock: Clock
) -> None:
    # Content the tool accepts (under 256 KiB) grows past 256 KiB as the history item's
    # JSON: quotes are escaped once in the call's arguments and again in the item, and a
    # control character takes seven bytes. The turn is stored whole, in parts.
    contents = ['"' * (100 * 1024), "\x01" * (40 * 1024)]
    model = ScriptedModel(
        [
            step
            for number, content in enumerate(contents)
            for step in (
                call("remember", {"content": content, "trust": None}, f"c{number}"),
                reply("Noted.", f"msg-{number}"),
            )
        ]
    )
    agent = _with_memory(model, memory, clock)
    session = TrueHeartSession("conv-1", memory, SCOPE, clock=clock)
    for _ in contents:
        run_turn(agent, "Remember this.", session)
    history = asyncio.run(session.get_items())
    assert [item.get("type", item.get("role")) for item in history] == [
        "user",
        "function_call",
        "function_call_output",
        "message",
    ] * 2
    calls = [item for item in history if item.get("type") == "function_call"]
    assert [json.loads(item["arguments"])["content"] for item in calls] == contents
    assert all(len(to_json(item).encode()) > 256 * 1024 for item in calls)
    stored = {m.content for m in memory.list_memories(SCOPE, kinds=("agent_note",)).items}
    assert stored == set(contents)
    assert memory.verify_integrity().ok
