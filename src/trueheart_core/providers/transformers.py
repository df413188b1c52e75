"""A dense embedder over a local Hugging Face ``transformers`` encoder.

:class:`TransformersEmbedder` implements the :class:`~trueheart_core.domain.semantic.Embedder`
protocol with a transformer encoder (BERT-like) and its tokenizer: it tokenises each text
(with an optional query or document prefix), runs the encoder on the CPU (or the device
given) in evaluation mode without gradients, pools the last hidden state (``"cls"``: the
first token; ``"mean"``: the mean over the attention mask) and, by default, scales each
vector to unit length.

It needs the ``local-transformers`` extra (``torch`` and ``transformers``). They are
imported when an embedder is constructed, never by ``import trueheart_core`` nor by
``import trueheart_core.providers``; without them the constructor raises
:class:`~trueheart_core.errors.ProviderError`.

Offline rules:

- Loading passes ``local_files_only`` (``True`` unless the host passes ``False``) to every
  ``from_pretrained`` call, so by default nothing is fetched: the model must be a local
  directory or already be in the local Hugging Face cache. ``trust_remote_code`` is
  always ``False``.
- A model that is not an existing directory is a hub name and must be pinned to a commit:
  ``revision`` of exactly 40 lowercase hexadecimal characters.
- A local directory is identified by :func:`local_transformers_artifact_sha256`, computed
  when the embedder is constructed; ``local_artifact_sha256``, when given, must equal it.

Input longer than ``max_length`` tokens (special tokens and prefix included) is refused
with :class:`~trueheart_core.errors.ValidationError` unless ``overflow_policy`` is
``"truncate"``; it is never truncated silently.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import re
import stat
from collections.abc import Sequence
from typing import Any, Literal

from trueheart_core.domain.semantic.embedders import MAX_DIMENSIONS
from trueheart_core.domain.validation import utf8_size
from trueheart_core.errors import ProviderError, ValidationError

__all__ = ["TransformersEmbedder", "local_transformers_artifact_sha256"]

MAX_IDENTITY_CHARS = 128
MAX_LENGTH_LIMIT = 1_000_000
MAX_BATCH_SIZE = 4096

_REVISION = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# A hub name: "name" or "owner/name", ASCII letters, digits, ".", "_" and "-".
_HUB_NAME = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*")
_MAX_HUB_NAME_CHARS = 96
# Tokenizers that do not know their limit report this huge placeholder instead.
_UNKNOWN_LIMIT = 1_000_000_000
_CHUNK = 1 << 20


def local_transformers_artifact_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 digest (lowercase hex) of a local model directory.

    The rule, exactly: list every regular file under the directory, at any depth, by its
    path relative to the directory with ``/`` between components, encoded as the file
    system encodes names (UTF-8 on POSIX); sort the files by those bytes; then feed one
    SHA-256 with, for each file in that order,

    1. the length of the path bytes, as 8 bytes big-endian,
    2. the path bytes,
    3. the size of the file in bytes, as 8 bytes big-endian,
    4. the file's bytes.

    Nothing else is hashed: directories count only through the paths of their files
    (an empty directory adds nothing), and names, times and permissions of the directory
    itself do not count. ``path`` itself may be a symbolic link to a directory, but a
    symbolic link anywhere under it raises :class:`ValidationError`, and so does any entry
    that is neither a regular file nor a directory. A file whose size changes while it is
    read, or that cannot be read, raises :class:`ProviderError`.
    """
    root = _directory(path)
    files: list[tuple[bytes, str]] = []
    try:
        _collect(root, b"", files)
        files.sort()
        digest = hashlib.sha256()
        for relative, absolute in files:
            _hash_file(digest, relative, absolute)
    except OSError as exc:
        raise ProviderError("local model artifact could not be read") from exc
    return digest.hexdigest()


def _directory(path: object) -> str:
    root = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    if not isinstance(root, str) or not root:
        raise ValidationError("path", "must be a directory path")
    if not os.path.isdir(root):
        raise ValidationError("path", "must be a directory")
    return root


def _collect(directory: str, prefix: bytes, files: list[tuple[bytes, str]]) -> None:
    with os.scandir(directory) as entries:
        for entry in entries:
            relative = prefix + os.fsencode(entry.name)
            if entry.is_symlink():
                raise ValidationError("path", "must not contain symbolic links")
            if entry.is_dir(follow_symlinks=False):
                _collect(entry.path, relative + b"/", files)
            elif entry.is_file(follow_symlinks=False):
                files.append((relative, entry.path))
            else:
                raise ValidationError("path", "must contain only regular files and directories")


def _hash_file(digest: Any, relative: bytes, absolute: str) -> None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(absolute, flags)
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValidationError("path", "must contain only regular files and directories")
        size = info.st_size
        digest.update(len(relative).to_bytes(8, "big"))
        digest.update(relative)
        digest.update(size.to_bytes(8, "big"))
        remaining = size
        while remaining:
            chunk = handle.read(min(_CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            remaining -= len(chunk)
        if remaining or handle.read(1):
            raise ProviderError("local model artifact changed while it was read")


def _frameworks() -> tuple[Any, Any]:
    """``torch`` and ``transformers``, imported on first use."""
    try:
        torch = importlib.import_module("torch")
        transformers = importlib.import_module("transformers")
    except ImportError:
        raise ProviderError("the local-transformers extra is not installed") from None
    return torch, transformers


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


class TransformersEmbedder:
    """An :class:`~trueheart_core.domain.semantic.Embedder` over a local transformer encoder.

    ``model`` is a local directory or a hub name pinned by ``revision`` (a 40-character
    lowercase hex commit). ``identity`` is
    ``transformers:<name>@<version>:<pooling>:<max_length>:<overflow_policy>:<unit|raw>:<p>``
    where ``<name>`` is the hub name (or ``sha256-`` and the first 16 hex characters of
    its SHA-256 when the whole identity would exceed 128 characters) or ``local`` for a
    directory, ``<version>`` the revision or the first 16 hex characters of the
    directory's artifact digest, ``unit`` or ``raw`` the ``normalize`` flag, and ``<p>`` the
    first 8 hex characters of the SHA-256 of the query prefix then the document prefix,
    each as its UTF-8 length (8 bytes big-endian) and bytes. It never contains a path.
    ``dimensions`` is the model's hidden size; ``normalized`` is ``normalize``.

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
        pooling: Literal["cls", "mean"] = "mean",
        query_prefix: str = "",
        document_prefix: str = "",
        max_length: int = 512,
        overflow_policy: Literal["error", "truncate"] = "error",
        local_files_only: bool = True,
        local_artifact_sha256: str | None = None,
        batch_size: int = 32,
        normalize: bool = True,
        device: str = "cpu",
    ) -> None:
        if pooling not in ("cls", "mean"):
            raise ValidationError("pooling", 'must be "cls" or "mean"')
        if overflow_policy not in ("error", "truncate"):
            raise ValidationError("overflow_policy", 'must be "error" or "truncate"')
        prefixes = _framed(
            _string("query_prefix", query_prefix).encode("utf-8"),
            _string("document_prefix", document_prefix).encode("utf-8"),
        )
        max_length = _bounded_int("max_length", max_length, 1, MAX_LENGTH_LIMIT)
        batch_size = _bounded_int("batch_size", batch_size, 1, MAX_BATCH_SIZE)
        if not isinstance(local_files_only, bool):
            raise ValidationError("local_files_only", "must be a bool")
        if not isinstance(normalize, bool):
            raise ValidationError("normalize", "must be a bool")
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

        torch, transformers = _frameworks()
        if local:
            source = os.path.realpath(model)
            digest = local_transformers_artifact_sha256(source)
            if local_artifact_sha256 is not None and digest != local_artifact_sha256:
                raise ProviderError("local model artifact digest mismatch")
            name, version = "local", digest[:16]
        else:
            source = model
            name, version = model, str(revision)

        tokenizer, encoder = _load(transformers, source, revision, local_files_only, device)
        dimensions = getattr(encoder.config, "hidden_size", None)
        if isinstance(dimensions, bool) or not isinstance(dimensions, int):
            raise ProviderError("the model does not declare its hidden size")
        if not 1 <= dimensions <= MAX_DIMENSIONS:
            raise ProviderError("the model's hidden size is not supported")
        if max_length > _input_limit(tokenizer, encoder):
            raise ValidationError("max_length", "exceeds the model's maximum input length")
        if max_length <= int(tokenizer.num_special_tokens_to_add(pair=False)):
            raise ValidationError("max_length", "leaves no room for text")

        options = (
            f"{pooling}:{max_length}:{overflow_policy}:{'unit' if normalize else 'raw'}:"
            f"{hashlib.sha256(prefixes).hexdigest()[:8]}"
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
        self._pooling = pooling
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._max_length = max_length
        self._truncate = overflow_policy == "truncate"
        self._batch_size = batch_size
        self._normalize = normalize

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
        inputs = [self._document_prefix + _string("text", text) for text in texts]
        vectors: list[list[float]] = []
        for start in range(0, len(inputs), self._batch_size):
            vectors.extend(self._embed(inputs[start : start + self._batch_size]))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search text (preceded by ``query_prefix``)."""
        return self._embed([self._query_prefix + _string("text", text)])[0]

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
            if self._pooling == "cls":
                pooled = hidden[:, 0]
            else:
                mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            pooled = pooled.to(device="cpu", dtype=torch.float64)
            if self._normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2.0, dim=1)
        vectors: list[list[float]] = pooled.tolist()
        if not all(math.isfinite(x) for vector in vectors for x in vector):
            raise ProviderError("the model returned a non-finite vector")
        return vectors

    def __repr__(self) -> str:
        return f"TransformersEmbedder(identity={self._identity!r})"


def _is_directory(model: object) -> bool:
    if not isinstance(model, str) or not model:
        raise ValidationError("model", "must be a non-empty string")
    return os.path.isdir(model)


def _load(
    transformers: Any, source: str, revision: str | None, local_files_only: bool, device: str
) -> tuple[Any, Any]:
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


def _input_limit(tokenizer: Any, encoder: Any) -> int:
    """The most tokens the model takes: the smallest limit its tokenizer or config states."""
    limits = [MAX_LENGTH_LIMIT]
    for value in (
        getattr(tokenizer, "model_max_length", None),
        getattr(encoder.config, "max_position_embeddings", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < _UNKNOWN_LIMIT:
            limits.append(value)
    return min(limits)
