"""The memory writer: memories and claims read from a message by a chat model, each
checked against the message before anything is stored (the ``writer`` extra).

:class:`MemoryWriter` asks any OpenAI-compatible chat-completions endpoint (a hosted
service or a local server, :class:`ChatSettings`) for the memories and claims of one
message, each with a quoted passage; it keeps only items whose quote is in the message
and whose text passes the library's span check, skips facts the scope already holds,
supersedes only claims of the same scope, and stores the event, the memories, the
claims and the extraction record in one transaction. :class:`ModelClaimExtractor` is the
claims-only part, a :class:`~trueheart_core.ClaimExtractor` for
:meth:`~trueheart_core.TrueHeart.ingest_extracted`.

TrueHeart Core never calls a model on its own: this is code the host chooses to run.
``import trueheart_core`` does not import this package, and importing it does not import
``openai``: the client is imported when a :class:`ChatClient` is made (by the writer or
the extractor), and without the extra that raises
:class:`~trueheart_core.errors.ProviderError`.
"""

from trueheart_core.integrations.writer.chat import ChatClient, ChatSettings, first_json_object
from trueheart_core.integrations.writer.extractor import (
    DEFAULT_AUTHORITY,
    ModelClaimExtractor,
    model_identity,
)
from trueheart_core.integrations.writer.reading import (
    ALREADY_STORED,
    CLAIMS_PROMPT,
    INVALID_ITEM,
    MAX_MEMORIES,
    NOT_IN_SPAN,
    PROMPT_VERSION,
    QUOTE_AMBIGUOUS,
    QUOTE_NOT_FOUND,
    REPEATED_IN_ANSWER,
    SUPERSESSION_AMBIGUOUS,
    TOO_MANY,
    WRITER_PROMPT,
    WriteIssue,
    normalised,
)
from trueheart_core.integrations.writer.writer import (
    DEFAULT_MEMORY_KIND,
    MemoryWriter,
    WriteReport,
    memory_id_for,
)

__all__ = [
    "ALREADY_STORED",
    "CLAIMS_PROMPT",
    "DEFAULT_AUTHORITY",
    "DEFAULT_MEMORY_KIND",
    "INVALID_ITEM",
    "MAX_MEMORIES",
    "NOT_IN_SPAN",
    "PROMPT_VERSION",
    "QUOTE_AMBIGUOUS",
    "QUOTE_NOT_FOUND",
    "REPEATED_IN_ANSWER",
    "SUPERSESSION_AMBIGUOUS",
    "TOO_MANY",
    "WRITER_PROMPT",
    "ChatClient",
    "ChatSettings",
    "MemoryWriter",
    "ModelClaimExtractor",
    "WriteIssue",
    "WriteReport",
    "first_json_object",
    "memory_id_for",
    "model_identity",
    "normalised",
]
