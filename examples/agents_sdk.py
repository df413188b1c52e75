"""An OpenAI Agents SDK agent with TrueHeart memory tools and a TrueHeart session.

Run it from anywhere: ``python examples/agents_sdk.py``. It needs the ``openai-agents``
extra (``pip install "trueheart-core[openai-agents]"``); without it, it prints one line
saying so and exits 0. It calls no model service and needs no API key: the model is a
script of prepared responses. Two runs share one session: in the first the agent
remembers a preference, in the second it finds it again and its model sees the first
run's history. Then the subject is erased. The store is a temporary file, removed at
the end.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueheart_core import Scope, SQLiteRepository, TrueHeart

try:
    from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from trueheart_core.integrations.openai_agents import TrueHeartSession, memory_tools
except ImportError:
    SDK_INSTALLED = False
else:
    SDK_INSTALLED = True

MISSING = (
    "agents_sdk example skipped: the OpenAI Agents SDK is not installed "
    '(pip install "trueheart-core[openai-agents]")'
)

Items = list[dict[str, Any]]


def main(*, temporary_root: Path | None = None) -> None:
    """Run the example in a temporary directory (under ``temporary_root`` if given)."""
    if not SDK_INSTALLED:
        print(MISSING)
        return
    with tempfile.TemporaryDirectory(dir=temporary_root) as directory:
        asyncio.run(_conversation(Path(directory) / "memory.db"))


def _tool_call(name: str, arguments: dict[str, Any], call_id: str) -> ModelResponse:
    call = ResponseFunctionToolCall(
        type="function_call",
        id=f"fc-{call_id}",
        call_id=call_id,
        name=name,
        arguments=json.dumps(arguments),
        status="completed",
    )
    return ModelResponse(output=[call], usage=Usage(), response_id=None)


def _message(text: str, message_id: str) -> ModelResponse:
    content = ResponseOutputText(type="output_text", text=text, annotations=[])
    message = ResponseOutputMessage(
        type="message", id=message_id, role="assistant", status="completed", content=[content]
    )
    return ModelResponse(output=[message], usage=Usage(), response_id=None)


def _tool_output(items: Items, call_id: str) -> Any:
    for item in items:
        if item.get("type") == "function_call_output" and item.get("call_id") == call_id:
            return json.loads(item["output"])
    raise LookupError(call_id)


if TYPE_CHECKING:
    Step = ModelResponse | Callable[[Items], ModelResponse]

if SDK_INSTALLED:

    class ScriptedModel(Model):
        """A model that answers each call with the next prepared step (a response, or a
        function of the input that returns one) and keeps every input it was given."""

        def __init__(self, steps: Sequence[Step]) -> None:
            self.steps = list(steps)
            self.inputs: list[Items] = []

        async def get_response(
            self,
            system_instructions: str | None,
            input: str | list[Any],
            model_settings: Any,
            tools: list[Any],
            output_schema: Any,
            handoffs: list[Any],
            tracing: Any,
            *,
            previous_response_id: str | None,
            conversation_id: str | None,
            prompt: Any,
        ) -> ModelResponse:
            items: Items = (
                [{"role": "user", "content": input}]
                if isinstance(input, str)
                else [item if isinstance(item, dict) else item.model_dump() for item in input]
            )
            self.inputs.append(items)
            step = self.steps.pop(0)
            return step(items) if callable(step) else step

        def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise NotImplementedError("this model does not stream")


def _answer(items: Items) -> ModelResponse:
    found = _tool_output(items, "find-1")["memories"]
    return _message(f"You said: {found[0]['content']}", "msg-2")


async def _conversation(path: Path) -> None:
    now = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)

    def clock() -> datetime:
        return now

    scope = Scope("synthetic-tenant", "synthetic-agent", "synthetic-user")
    model = ScriptedModel(
        [
            _tool_call(
                "remember", {"content": "Takes tea without sugar.", "trust": None}, "keep-1"
            ),
            _message("I will remember that.", "msg-1"),
            _tool_call("search_memory", {"query": "tea sugar", "limit": 3}, "find-1"),
            _answer,
        ]
    )
    config = RunConfig(tracing_disabled=True)
    with TrueHeart(SQLiteRepository(path), clock=clock) as memory:
        agent = Agent(
            name="assistant",
            instructions="Remember what the user tells you and use it.",
            model=model,
            tools=memory_tools(memory, scope, clock=clock),
        )
        session = TrueHeartSession("conversation-1", memory, scope, clock=clock)
        first = await Runner.run(
            agent, "I take my tea without sugar.", session=session, run_config=config
        )
        print(f"run 1: {first.final_output}")
        after_first = await session.get_items()
        second = await Runner.run(
            agent, "How do I take my tea?", session=session, run_config=config
        )
        print(f"run 2: {second.final_output}")
        seen = model.inputs[2][: len(after_first)] == after_first
        print(f"run 2's model input began with the {len(after_first)} items of run 1: {seen}")
        history = await session.get_items()
        print(f"session history: {len(history)} items, {len(memory.audit(scope))} audit records")
        receipt = memory.erase_subject(scope, occurred_at=now)
        print(f"erase_subject verified: {receipt.verified}")
        left = await session.get_items()
        print(f"after erasure: {len(left)} history items, {memory.stats(scope).memories} memories")


if __name__ == "__main__":
    main()
