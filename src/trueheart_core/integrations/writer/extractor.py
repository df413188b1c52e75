"""A :class:`~trueheart_core.ClaimExtractor` backed by a chat model.

Pass it to :meth:`TrueHeart.ingest_extracted` like any extractor: the service calls
:meth:`ModelClaimExtractor.extract` on the event's content before its transaction, checks
the spans again and stores the event, the claims and the extraction record together,
or nothing. A model failure raises :class:`~trueheart_core.errors.ProviderError` from
``extract``, so nothing is stored, not even the event.
"""

from __future__ import annotations

import hashlib

from trueheart_core.domain import validation as v
from trueheart_core.domain.extraction import ClaimExtraction
from trueheart_core.errors import ValidationError, body_free_errors
from trueheart_core.integrations.writer.chat import ChatClient, ChatSettings, asked
from trueheart_core.integrations.writer.reading import (
    CLAIMS_PROMPT,
    PROMPT_VERSION,
    diagnostics,
    proposals,
    read,
)

__all__ = ["DEFAULT_AUTHORITY", "ModelClaimExtractor", "model_identity"]

DEFAULT_AUTHORITY = "memory-writer"
"""The ``authority`` of the claims a model proposed, unless the host names another."""

_MAX_IDENTITY_CHARS = 128


def model_identity(prefix: str, model: str) -> str:
    """``f"{prefix}:{model}"``, or, when that is longer than 128 characters,
    ``f"{prefix}:sha256-"`` and the first 32 hexadecimal digits of the SHA-256 of the
    model name (UTF-8)."""
    identity = f"{prefix}:{model}"
    if len(identity) <= _MAX_IDENTITY_CHARS:
        return identity
    return f"{prefix}:sha256-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:32]}"


def _client(model: object) -> tuple[ChatClient, bool]:
    if isinstance(model, ChatClient):
        return model, False
    if isinstance(model, ChatSettings):
        return ChatClient(model), True
    raise ValidationError("model", "must be a ChatSettings or a ChatClient")


@body_free_errors
class ModelClaimExtractor:
    """Reads claims out of a message with a chat model, each with the exact span of the
    message it was read from.

    ``model`` is a :class:`ChatSettings` (the extractor makes its own client, and
    :meth:`close` closes it) or a :class:`ChatClient` to share (never closed here). The
    model is asked for claims whose subject, predicate and value are copied from a quoted
    passage; each quote is located in the content exactly, and each claim must then pass
    the library's span check, or it is left out with a diagnostic code
    (``quote_not_found``, ``not_in_span``, ``invalid_item``, ``repeated_in_answer``,
    ``too_many``; a quote found more than once adds ``quote_ambiguous``). Diagnostics
    carry codes and spans, never text.

    ``identity`` is ``"trueheart.writer.claims/1:<model>"``: the prompt's version and the
    model's name. A model can answer differently at temperature 0 too, so a replay of
    ``ingest_extracted`` with this extractor can raise ``IdempotencyConflict``.
    """

    __slots__ = ("_authority", "_client", "_identity", "_owns_client")

    def __init__(
        self, model: ChatSettings | ChatClient, *, authority: str = DEFAULT_AUTHORITY
    ) -> None:
        self._client, self._owns_client = _client(model)
        self._authority = v.text("authority", authority)
        self._identity = model_identity(
            f"trueheart.writer.claims/{PROMPT_VERSION}", self._client.settings.model
        )

    @property
    def identity(self) -> str:
        """The prompt version and the model name."""
        return self._identity

    @property
    def client(self) -> ChatClient:
        """The chat client this extractor asks (a writer built on the extractor shares it)."""
        return self._client

    def extract(self, content: str) -> ClaimExtraction:
        """The claims the model finds in ``content`` that pass every check, and the
        diagnostics of those that do not.

        :raises ProviderError: the model could not be asked, or its answer is not one
            JSON object of the documented shape.
        """
        if not isinstance(content, str):
            raise ValidationError("content", "must be a string")
        answer = asked(self._client, CLAIMS_PROMPT, content)
        _, proposed = proposals(answer, memories=False)
        reading = read(content, (), proposed, self._authority)
        return ClaimExtraction(
            tuple(item.claim for item in reading.claims),
            diagnostics([*reading.dropped, *reading.notes]),
        )

    def close(self) -> None:
        """Close the client this extractor made (idempotent)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> ModelClaimExtractor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
