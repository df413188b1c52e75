"""A dense embedder over a local Hugging Face ``transformers`` encoder.

:class:`TransformersEmbedder` implements the :class:`~trueheart_core.domain.semantic.Embedder`
protocol with a transformer encoder (BERT-like) and its tokenizer: it tokenises each text
(with an optional query or document prefix), runs the encoder on the CPU (or the device
given) in evaluation mode without gradients, pools the last hidden state (``"cls"``: the
first token; ``"mean"``: the mean over the attention mask; ``"max"``: the maximum of each
component over the attention mask; ``"mean_sqrt_len"``: the masked sum divided by the
square root of the number of tokens) and, by default, scales each vector to unit length.

A model saved by sentence-transformers carries its own configuration, and the embedder
reads it (see :class:`TransformersEmbedder`; the files are read and checked by
:mod:`trueheart_core.providers.declared`): ``sentence_bert_config.json``
(``max_seq_length``, ``do_lower_case``), ``modules.json`` (Transformer, Pooling, optional
Normalize) and the Pooling module's ``config.json``. Arguments given to the constructor
win over the files; a configuration the embedder cannot reproduce exactly is refused
with :class:`~trueheart_core.errors.ProviderError`.

It needs the ``local-transformers`` extra (``torch`` and ``transformers``). They are
imported when an embedder is constructed (by :mod:`trueheart_core.providers.encoder`,
which also loads and pools), never by ``import trueheart_core`` nor by
``import trueheart_core.providers``; without them the constructor raises
:class:`~trueheart_core.errors.ProviderError`.

Offline rules:

- Loading passes ``local_files_only`` (``True`` unless the host passes ``False``) to every
  ``from_pretrained`` call, so by default nothing is fetched: the model must be a local
  directory or already be in the local Hugging Face cache. ``trust_remote_code`` is
  always ``False``.
- A model that is not an existing directory is a hub name and must be pinned to a commit:
  ``revision`` of exactly 40 lowercase hexadecimal characters.
- A local directory is identified by :func:`local_transformers_artifact_sha256` (in
  :mod:`trueheart_core.providers.artifact`), computed when the embedder is constructed;
  ``local_artifact_sha256``, when given, must equal it.

Input longer than ``max_length`` tokens (special tokens and prefix included) is refused
with :class:`~trueheart_core.errors.ValidationError` unless ``overflow_policy`` is
``"truncate"``, which it is by default only when the model's ``sentence_bert_config.json``
sets ``max_seq_length`` (sentence-transformers truncates there); the identity says which.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Sequence
from typing import Literal

from trueheart_core.domain.semantic.embedders import MAX_DIMENSIONS
from trueheart_core.domain.validation import utf8_size
from trueheart_core.errors import ProviderError, ValidationError
from trueheart_core.providers.artifact import local_transformers_artifact_sha256
from trueheart_core.providers.declared import (
    MAX_LENGTH_LIMIT,
    SBERT_CONFIG,
    directory_reader,
    hub_reader,
    read_declared,
    refused,
)
from trueheart_core.providers.encoder import frameworks, input_limit, load, pool

__all__ = ["TransformersEmbedder", "local_transformers_artifact_sha256"]

MAX_IDENTITY_CHARS = 128
MAX_BATCH_SIZE = 4096

_REVISION = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# A hub name: "name" or "owner/name", ASCII letters, digits, ".", "_" and "-".
_HUB_NAME = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*")
_MAX_HUB_NAME_CHARS = 96

_Pooling = Literal["cls", "mean", "max", "mean_sqrt_len"]
_POOLINGS = ("cls", "mean", "max", "mean_sqrt_len")
_DEFAULT_POOLING = "mean"
_DEFAULT_MAX_LENGTH = 512


def _bounded_int(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(field, f"must be an integer from {low} through {high}")
    return value


def _string(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(field, "must be a string")
    if utf8_size(value) is None:
        raise ValidationError(field, "must be valid UTF-8")
    return value


def _framed(*parts: bytes) -> bytes:
    return b"".join(len(part).to_bytes(8, "big") + part for part in parts)


def _is_directory(model: object) -> bool:
    if not isinstance(model, str) or not model:
        raise ValidationError("model", "must be a non-empty string")
    return os.path.isdir(model)


class TransformersEmbedder:
    """An :class:`~trueheart_core.domain.semantic.Embedder` over a local transformer encoder.

    ``model`` is a local directory or a hub name pinned by ``revision`` (a 40-character
    lowercase hex commit).

    ``pooling``, ``max_length``, ``overflow_policy``, ``normalize`` and ``lowercase`` are
    taken, in this order of precedence, from the argument when it is given (not
    ``None``), from the model's sentence-transformers files when they say, and otherwise
    from the defaults ``"mean"``, ``512``, ``"error"``, ``True`` and ``False``:

    - ``sentence_bert_config.json``: ``max_seq_length`` gives ``max_length`` and makes
      ``overflow_policy`` default to ``"truncate"``; ``do_lower_case`` gives
      ``lowercase`` (every input, prefix included, is lowercased before it is
      tokenised). No other key is accepted.
    - ``modules.json``, when present, must list a Transformer module (in the directory
      itself), a Pooling module and optionally a Normalize module, in that order; the
      Pooling module's ``config.json`` (in its ``path``) is then required, and
      ``normalize`` is true exactly when Normalize is listed. Without ``modules.json``,
      ``1_Pooling/config.json`` is read when present and ``normalize`` keeps its default.
    - The Pooling ``config.json`` must enable exactly one of ``pooling_mode_cls_token``,
      ``pooling_mode_mean_tokens``, ``pooling_mode_max_tokens`` and
      ``pooling_mode_mean_sqrt_len_tokens`` (a missing key takes its sentence-transformers
      default: mean on, the others off); the weighted-mean and last-token modes,
      ``include_prompt: false``, other keys, and a ``word_embedding_dimension`` other than
      the model's hidden size are refused.

    For a hub model the files are read from the local Hugging Face cache (and, with
    ``local_files_only=False``, fetched when missing there); one absent from the cache
    counts as absent. Any file that cannot be read, is not JSON, or says something the
    embedder cannot reproduce raises :class:`ProviderError` naming the file and the rule,
    never a path or a value.

    ``identity`` is
    ``transformers:<name>@<version>:<pooling>:<max_length>:<overflow_policy>:<unit|raw>:<p>``
    followed by ``:lower`` when inputs are lowercased, where ``<name>`` is the hub name (or
    ``sha256-`` and the first 16 hex characters of its SHA-256 when the whole identity
    would exceed 128 characters) or ``local`` for a directory, ``<version>`` the revision
    or the first 16 hex characters of the directory's artifact digest, ``unit`` or ``raw``
    the effective ``normalize``, and ``<p>`` the first 8 hex characters of the SHA-256 of
    the query prefix then the document prefix, each as its UTF-8 length (8 bytes
    big-endian) and bytes. It names the effective configuration, wherever each part came
    from, and never contains a path. ``dimensions`` is the model's hidden size;
    ``normalized`` is the effective ``normalize``.

    Vectors are deterministic for the same texts in the same batches; because padding
    changes the shape of the computation, a text's vector can differ in its last bits
    between batches of different texts (use ``batch_size=1`` for bit-identical vectors
    per text).
    """

    __slots__ = (
        "_batch_size",
        "_device",
        "_dimensions",
        "_document_prefix",
        "_identity",
        "_lowercase",
        "_max_length",
        "_model",
        "_normalize",
        "_pooling",
        "_query_prefix",
        "_tokenizer",
        "_torch",
        "_truncate",
    )

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        pooling: _Pooling | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        max_length: int | None = None,
        overflow_policy: Literal["error", "truncate"] | None = None,
        local_files_only: bool = True,
        local_artifact_sha256: str | None = None,
        batch_size: int = 32,
        normalize: bool | None = None,
        lowercase: bool | None = None,
        device: str = "cpu",
    ) -> None:
        if pooling is not None and pooling not in _POOLINGS:
            raise ValidationError("pooling", 'must be "cls", "mean", "max" or "mean_sqrt_len"')
        if overflow_policy is not None and overflow_policy not in ("error", "truncate"):
            raise ValidationError("overflow_policy", 'must be "error" or "truncate"')
        prefixes = _framed(
            _string("query_prefix", query_prefix).encode("utf-8"),
            _string("document_prefix", document_prefix).encode("utf-8"),
        )
        if max_length is not None:
            max_length = _bounded_int("max_length", max_length, 1, MAX_LENGTH_LIMIT)
        batch_size = _bounded_int("batch_size", batch_size, 1, MAX_BATCH_SIZE)
        if not isinstance(local_files_only, bool):
            raise ValidationError("local_files_only", "must be a bool")
        if normalize is not None and not isinstance(normalize, bool):
            raise ValidationError("normalize", "must be a bool")
        if lowercase is not None and not isinstance(lowercase, bool):
            raise ValidationError("lowercase", "must be a bool")
        if not isinstance(device, str) or not device:
            raise ValidationError("device", "must be a non-empty string")
        if local_artifact_sha256 is not None and (
            not isinstance(local_artifact_sha256, str)
            or _SHA256.fullmatch(local_artifact_sha256) is None
        ):
            raise ValidationError("local_artifact_sha256", "must be 64 lowercase hex characters")
        if revision is not None and (
            not isinstance(revision, str) or _REVISION.fullmatch(revision) is None
        ):
            raise ValidationError("revision", "must be a commit: 40 lowercase hex characters")
        local = _is_directory(model)
        if not local:
            if len(model) > _MAX_HUB_NAME_CHARS or _HUB_NAME.fullmatch(model) is None:
                raise ValidationError("model", "must be an existing directory or a hub name")
            if ".." in model or "--" in model:
                raise ValidationError("model", "must be an existing directory or a hub name")
            if revision is None:
                raise ValidationError("revision", "must be a commit: 40 lowercase hex characters")
            if local_artifact_sha256 is not None:
                raise ValidationError("local_artifact_sha256", "applies only to a directory")

        torch, transformers = frameworks()
        if local:
            source = os.path.realpath(model)
            digest = local_transformers_artifact_sha256(source)
            if local_artifact_sha256 is not None and digest != local_artifact_sha256:
                raise ProviderError("local model artifact digest mismatch")
            name, version = "local", digest[:16]
            declared = read_declared(directory_reader(source))
        else:
            source = model
            name, version = model, str(revision)
            declared = read_declared(hub_reader(source, str(revision), local_files_only))

        chosen: str = pooling or declared.pooling or _DEFAULT_POOLING
        if normalize is None:
            normalize = True if declared.normalize is None else declared.normalize
        if overflow_policy is None:
            overflow_policy = "error" if declared.max_seq_length is None else "truncate"
        if lowercase is None:
            lowercase = declared.lowercase
        max_length_declared = max_length is None and declared.max_seq_length is not None
        if max_length is None:
            max_length = declared.max_seq_length or _DEFAULT_MAX_LENGTH

        tokenizer, encoder = load(transformers, source, revision, local_files_only, device)
        dimensions = getattr(encoder.config, "hidden_size", None)
        if isinstance(dimensions, bool) or not isinstance(dimensions, int):
            raise ProviderError("the model does not declare its hidden size")
        if not 1 <= dimensions <= MAX_DIMENSIONS:
            raise ProviderError("the model's hidden size is not supported")
        if declared.dimension is not None and declared.dimension != dimensions:
            raise refused(
                "pooling config.json", "word_embedding_dimension is not the model's hidden size"
            )
        if max_length > input_limit(tokenizer, encoder):
            if max_length_declared:
                raise refused(
                    SBERT_CONFIG, "max_seq_length exceeds the model's maximum input length"
                )
            raise ValidationError("max_length", "exceeds the model's maximum input length")
        if max_length <= int(tokenizer.num_special_tokens_to_add(pair=False)):
            if max_length_declared:
                raise refused(SBERT_CONFIG, "max_seq_length leaves no room for text")
            raise ValidationError("max_length", "leaves no room for text")

        options = (
            f"{chosen}:{max_length}:{overflow_policy}:{'unit' if normalize else 'raw'}:"
            f"{hashlib.sha256(prefixes).hexdigest()[:8]}{':lower' if lowercase else ''}"
        )
        identity = f"transformers:{name}@{version}:{options}"
        if len(identity) > MAX_IDENTITY_CHARS:
            hashed = "sha256-" + hashlib.sha256(name.encode("ascii")).hexdigest()[:16]
            identity = f"transformers:{hashed}@{version}:{options}"

        self._torch = torch
        self._tokenizer = tokenizer
        self._model = encoder
        self._device = device
        self._identity = identity
        self._dimensions = dimensions
        self._pooling = chosen
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._max_length = max_length
        self._truncate = overflow_policy == "truncate"
        self._batch_size = batch_size
        self._normalize = normalize
        self._lowercase = lowercase

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def normalized(self) -> bool:
        return self._normalize

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text (each preceded by ``document_prefix``), in order."""
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise ValidationError("texts", "must be a sequence of strings")
        inputs = [self._input(self._document_prefix, text) for text in texts]
        vectors: list[list[float]] = []
        for start in range(0, len(inputs), self._batch_size):
            vectors.extend(self._embed(inputs[start : start + self._batch_size]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search text (preceded by ``query_prefix``)."""
        return self._embed([self._input(self._query_prefix, text)])[0]

    def _input(self, prefix: str, text: object) -> str:
        """What is tokenised for ``text``: the prefix and the text, lowercased when the
        model's configuration says so."""
        joined = prefix + _string("text", text)
        return joined.lower() if self._lowercase else joined

    def _embed(self, batch: list[str]) -> list[list[float]]:
        torch = self._torch
        if self._truncate:
            encoded = self._tokenizer(
                batch,
                padding=True,
                truncation=True,
                max_length=self._max_length,
                return_tensors="pt",
            )
        else:
            encoded = self._tokenizer(
                batch, padding=True, truncation=False, return_tensors="pt", verbose=False
            )
            if int(encoded["attention_mask"].sum(dim=1).max()) > self._max_length:
                raise ValidationError("text", "is longer than max_length tokens")
        encoded = {key: value.to(self._device) for key, value in encoded.items()}
        with torch.no_grad():
            hidden = self._model(**encoded)[0]
            pooled = pool(self._pooling, hidden, encoded["attention_mask"])
            pooled = pooled.to(device="cpu", dtype=torch.float64)
            if self._normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2.0, dim=1)
        vectors: list[list[float]] = pooled.tolist()
        if not all(math.isfinite(x) for vector in vectors for x in vector):
            raise ProviderError("the model returned a non-finite vector")
        return vectors

    def __repr__(self) -> str:
        return f"TransformersEmbedder(identity={self._identity!r})"
