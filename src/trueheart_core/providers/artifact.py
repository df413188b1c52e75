"""The digest that identifies a local model directory.

:func:`local_transformers_artifact_sha256` hashes every file of the directory by a fixed,
documented rule, so that a host can pin a model's exact bytes (``local_artifact_sha256``
of :class:`~trueheart_core.providers.TransformersEmbedder`) and the embedder's identity
changes whenever its weights, tokenizer or configuration do. Only the standard library is
used.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Any

from trueheart_core.domain.validation import fspath_of
from trueheart_core.errors import ProviderError, ValidationError

__all__ = ["local_transformers_artifact_sha256"]

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
    root = fspath_of(path)
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
