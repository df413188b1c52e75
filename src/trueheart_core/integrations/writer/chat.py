"""One chat-completions call that must come back as one JSON object.

:class:`ChatSettings` says which OpenAI-compatible endpoint to ask (a hosted service or
a local server) and how long to wait. The client of the ``openai`` package (the
``writer`` extra) is imported when a :class:`ChatClient` is constructed, never when this
module is imported.

Every failure becomes a :class:`~trueheart_core.errors.ProviderError` whose message is a
fixed phrase (with the HTTP status, when there is one) and which carries no exception
chain: what a server sends back with an error can quote the message it was given.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trueheart_core.domain import validation as v
from trueheart_core.errors import ProviderError, ValidationError, body_free_errors

__all__ = ["MAX_ANSWER_CHARS", "ChatClient", "ChatSettings", "first_json_object"]

MAX_ANSWER_CHARS = 1_000_000
"""The longest answer text read; a longer one is refused."""

_MAX_TIMEOUT = 3600.0
_MAX_RETRIES = 10
_MAX_OBJECT_STARTS = 64
# Statuses with which a server may refuse ``response_format`` it does not support.
_FORMAT_REFUSED = frozenset({400, 422})
# What ``_create`` returns when the server refused ``response_format``.
_FORMAT_REFUSED_MARK = object()


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """Where and how to ask an OpenAI-compatible chat-completions endpoint.

    ``model`` is the model name the server knows. ``base_url`` is the API root (for a
    local server, for example ``"http://127.0.0.1:8000/v1"``); ``None`` lets the client
    use ``OPENAI_BASE_URL`` or OpenAI's own. ``api_key`` may be any non-empty string for
    a server that checks none; ``None`` lets the client read ``OPENAI_API_KEY``. It is
    never shown by ``repr``. ``timeout`` is in seconds per request and ``max_retries``
    the client's own retries of connection errors, timeouts, 429 and 5xx answers.
    ``json_response`` asks for JSON output with ``response_format`` (a server that refuses
    the field with HTTP 400 or 422 is asked once more without it, and not again by the
    same client); the answer is read as JSON either way (see :func:`first_json_object`).
    Sampling temperature is always 0.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 30.0
    max_retries: int = 2
    json_response: bool = True

    def __post_init__(self) -> None:
        v.text("model", self.model)
        if self.base_url is not None and (
            not isinstance(self.base_url, str) or not self.base_url.strip()
        ):
            raise ValidationError("base_url", "must be a non-blank string or None")
        if self.api_key is not None and (not isinstance(self.api_key, str) or not self.api_key):
            raise ValidationError("api_key", "must be a non-empty string or None")
        timeout = v.real(self.timeout)
        if timeout is None or not 0 < timeout <= _MAX_TIMEOUT:
            raise ValidationError("timeout", "must be a number of seconds from 0 through 3600")
        object.__setattr__(self, "timeout", timeout)
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or not 0 <= self.max_retries <= _MAX_RETRIES
        ):
            raise ValidationError("max_retries", "must be an int from 0 through 10")
        if not isinstance(self.json_response, bool):
            raise ValidationError("json_response", "must be a bool")


def first_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` is, or else the first JSON object that starts at one of
    its first 64 ``{`` (so an answer wrapped in prose or a code fence is still read);
    ``None`` when there is none."""
    decoder = json.JSONDecoder()
    stripped = text.strip()
    try:
        whole = decoder.decode(stripped)
    except (ValueError, RecursionError):  # RecursionError: nested too deep to read
        whole = None
    if isinstance(whole, dict):
        return whole
    position = text.find("{")
    starts = 0
    while position >= 0 and starts < _MAX_OBJECT_STARTS:
        try:
            found, _ = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            found = None
        if isinstance(found, dict):
            return found
        starts += 1
        position = text.find("{", position + 1)
    return None


def _openai() -> Any:
    try:
        return importlib.import_module("openai")
    except ImportError:
        raise ProviderError(
            "the memory writer needs the writer extra: pip install 'trueheart-core[writer]'"
        ) from None


@body_free_errors
class ChatClient:
    """Asks one model for one JSON object per call, through the ``openai`` client."""

    __slots__ = ("_client", "_json_response", "_module", "settings")

    def __init__(self, settings: ChatSettings) -> None:
        if not isinstance(settings, ChatSettings):
            raise ValidationError("settings", "must be a ChatSettings")
        self.settings = settings
        self._module = _openai()
        try:
            self._client = self._module.OpenAI(
                base_url=settings.base_url,
                api_key=settings.api_key,
                timeout=float(settings.timeout),
                max_retries=settings.max_retries,
                # The message goes to the configured endpoint only: a redirect is an
                # HTTP error, never a second request to wherever it points.
                http_client=self._module.DefaultHttpxClient(follow_redirects=False),
            )
        except Exception:
            raise ProviderError(
                "the chat client could not be configured (is an API key set?)"
            ) from None
        self._json_response = settings.json_response

    def close(self) -> None:
        """Close the underlying HTTP client (idempotent)."""
        self._client.close()

    def ask(self, system: str, message: str) -> dict[str, Any]:
        """The JSON object the model answers to ``message`` under the ``system`` prompt.

        :raises ProviderError: the endpoint could not be reached or timed out, answered
            with an HTTP error, refused, stopped early, or answered something that is not
            one JSON object.
        """
        text = self._answer_text(system, message)
        answer = first_json_object(text)
        if answer is None:
            raise ProviderError("the writer model's answer is not a JSON object")
        return answer

    def _answer_text(self, system: str, message: str) -> str:
        arguments: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": message},
            ],
            "temperature": 0,
        }
        if self._json_response:
            arguments["response_format"] = {"type": "json_object"}
        completion = self._create(arguments)
        if completion is _FORMAT_REFUSED_MARK:
            # Asked again outside any handler, so no refused request is in a chain.
            self._json_response = False
            del arguments["response_format"]
            completion = self._create(arguments, retrying=True)
        return _text_of(completion)

    def _create(self, arguments: Mapping[str, Any], *, retrying: bool = False) -> Any:
        module = self._module
        try:
            return self._client.chat.completions.create(**arguments)
        except module.APITimeoutError:
            failure = "the writer model timed out"
        except module.APIConnectionError:
            failure = "the writer model could not be reached"
        except module.APIStatusError as error:
            status = getattr(error, "status_code", None)
            if not retrying and "response_format" in arguments and status in _FORMAT_REFUSED:
                return _FORMAT_REFUSED_MARK
            failure = f"the writer model answered HTTP {status if isinstance(status, int) else '?'}"
        except ValueError:
            failure = "the writer model's response is malformed"
        except Exception:
            failure = "the writer model failed"
        raise ProviderError(failure)


def asked(client: ChatClient, system: str, message: str) -> dict[str, Any]:
    """``client.ask(system, message)``: what a client (a host's subclass, say) raises
    other than a ``ProviderError`` (the client's own failures, with fixed messages) is
    ``ProviderError("the writer model failed")``, raised outside any handler, since its
    arguments, and another library error's message, can quote the message."""
    try:
        return client.ask(system, message)
    except ProviderError:
        raise
    except Exception:
        pass
    raise ProviderError("the writer model failed")


def _fields_of(completion: Any) -> tuple[Any, Any, Any] | None:
    """``(finish_reason, refusal, content)`` of a chat completion's first choice;
    ``None`` when reading them fails in any way (a response object can raise anything,
    with the message's text in its arguments)."""
    try:
        choice = completion.choices[0]
        message = choice.message
        return choice.finish_reason, getattr(message, "refusal", None), message.content
    except Exception:
        return None


def _text_of(completion: Any) -> str:
    fields = _fields_of(completion)
    # Raised outside any handler: no exception that could quote the message is chained.
    if fields is None:
        raise ProviderError("the writer model's response is malformed")
    finish, refusal, content = fields
    if finish is not None and not isinstance(finish, str):
        raise ProviderError("the writer model's response is malformed")
    if content is not None and not isinstance(content, str):
        raise ProviderError("the writer model's response is malformed")
    if (isinstance(refusal, str) and refusal.strip()) or finish == "content_filter":
        raise ProviderError("the writer model refused")
    if finish == "length":
        raise ProviderError("the writer model's answer was cut short")
    if finish in ("tool_calls", "function_call"):
        raise ProviderError("the writer model did not answer with text")
    if not isinstance(content, str) or not content.strip():
        raise ProviderError("the writer model's answer is empty")
    if len(content) > MAX_ANSWER_CHARS:
        raise ProviderError("the writer model's answer is too long")
    return content
