"""The frameworks' side of the embedder: importing, loading and pooling.

``torch`` and ``transformers`` (the ``local-transformers`` extra) are imported by
:func:`frameworks`, which the embedder calls when it is constructed, so that importing
this package never loads them. :func:`load` loads a tokenizer and an encoder offline by
default and never with remote code; :func:`input_limit` is the most tokens they take;
:func:`pool` turns the encoder's last hidden state into one vector per text.
"""

from __future__ import annotations

import importlib
from typing import Any

from trueheart_core.errors import ProviderError
from trueheart_core.providers.declared import MAX_LENGTH_LIMIT

__all__ = ["frameworks", "input_limit", "load", "pool"]

# Tokenizers that do not know their limit report this huge placeholder instead.
_UNKNOWN_LIMIT = 1_000_000_000


def frameworks() -> tuple[Any, Any]:
    """``torch`` and ``transformers``, imported on first use."""
    try:
        torch = importlib.import_module("torch")
        transformers = importlib.import_module("transformers")
    except ImportError:
        raise ProviderError("the local-transformers extra is not installed") from None
    return torch, transformers


def load(
    transformers: Any, source: str, revision: str | None, local_files_only: bool, device: str
) -> tuple[Any, Any]:
    """The tokenizer and the encoder of ``source`` (float32, in evaluation mode, on
    ``device``); ``trust_remote_code`` is always false, so loading runs no code of the
    model's own."""
    options = {
        "revision": revision,
        "local_files_only": local_files_only,
        "trust_remote_code": False,
    }
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, **options)
        encoder = transformers.AutoModel.from_pretrained(source, **options)
        encoder = encoder.to(device).float()
        encoder.eval()
    except Exception as exc:
        raise ProviderError("the model could not be loaded") from exc
    return tokenizer, encoder


def input_limit(tokenizer: Any, encoder: Any) -> int:
    """The most tokens the model takes: the smallest limit its tokenizer or config states."""
    limits = [MAX_LENGTH_LIMIT]
    for value in (
        getattr(tokenizer, "model_max_length", None),
        getattr(encoder.config, "max_position_embeddings", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < _UNKNOWN_LIMIT:
            limits.append(value)
    return min(limits)


def pool(pooling: str, hidden: Any, attention_mask: Any) -> Any:
    """One vector per text from the last hidden state (batch, tokens, hidden), over the
    tokens of ``attention_mask`` (padding never counts)."""
    if pooling == "cls":
        return hidden[:, 0]
    mask = attention_mask.unsqueeze(-1)
    if pooling == "max":
        return hidden.masked_fill(mask == 0, -1e9).amax(dim=1)
    weights = mask.to(hidden.dtype)
    summed = (hidden * weights).sum(dim=1)
    counts = weights.sum(dim=1).clamp(min=1.0)
    return summed / (counts.sqrt() if pooling == "mean_sqrt_len" else counts)
