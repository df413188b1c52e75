"""A scripted model for the Agents SDK: no network, no API key.

``ScriptedModel`` is a subclass of the SDK's ``Model`` that answers each call with the
next step of its script: a prepared ``ModelResponse``, or a function of the input the
model received that returns one (so a step can use what an earlier tool returned). It
records every input it received, as plain JSON-like items, and the names of the tools
it was offered.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agents import Model, ModelResponse, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

Items = list[dict[str, Any]]
Step = ModelResponse | Callable[[Items], ModelResponse]


def _plain(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return copy.deepcopy(item)
    dumped: dict[str, Any] = item.model_dump(exclude_unset=True)
    return dumped


class ScriptedModel(Model):
    """Answers with its steps, in order; a call beyond the script fails the test."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self._steps = list(steps)
        self.inputs: list[Items] = []
        self.tool_names: list[list[str]] = []

    @property
    def remaining(self) -> int:
        return len(self._steps)

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
        items = (
            [{"role": "user", "content": input}]
            if isinstance(input, str)
            else [_plain(item) for item in input]
        )
        self.inputs.append(items)
        self.tool_names.append([tool.name for tool in tools])
        assert self._steps, "the model was called more often than scripted"
        step = self._steps.pop(0)
        return step(copy.deepcopy(items)) if callable(step) else step

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def _response(output: list[Any]) -> ModelResponse:
    return ModelResponse(output=output, usage=Usage(), response_id=None)


def call(name: str, arguments: dict[str, Any], call_id: str) -> ModelResponse:
    """A response that calls one function tool."""
    return _response(
        [
            ResponseFunctionToolCall(
                type="function_call",
                id=f"fc-{call_id}",
                call_id=call_id,
                name=name,
                arguments=json.dumps(arguments),
                status="completed",
            )
        ]
    )


def reply(text: str, message_id: str = "msg-1") -> ModelResponse:
    """A final assistant message."""
    return _response(
        [
            ResponseOutputMessage(
                type="message",
                id=message_id,
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
        ]
    )


def tool_outputs(items: Items) -> dict[str, str]:
    """The tool outputs in a model input, by call ID."""
    return {
        item["call_id"]: item["output"]
        for item in items
        if item.get("type") == "function_call_output"
    }


def output_of(items: Items, call_id: str) -> Any:
    """The JSON a tool returned for ``call_id``, decoded; a string if it is not JSON."""
    text = tool_outputs(items)[call_id]
    try:
        return json.loads(text)
    except ValueError:
        return text
