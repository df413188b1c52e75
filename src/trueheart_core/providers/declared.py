"""What a model saved by sentence-transformers declares about its own use, read and checked.

A model saved by sentence-transformers carries its configuration in three files:
``sentence_bert_config.json`` (``max_seq_length``, ``do_lower_case``), ``modules.json``
(Transformer, Pooling, optional Normalize) and the Pooling module's ``config.json``.
:func:`read_declared` reads them through a reader (:func:`directory_reader` for a local
directory, :func:`hub_reader` for a hub model in the local Hugging Face cache) and returns
what they say as a :class:`Declared`, so that the embedder reproduces the model as it was
meant to be used. A configuration the embedder cannot reproduce exactly is refused with
:class:`~trueheart_core.errors.ProviderError` naming the file and the rule, never a path or
a value.

Only the standard library is imported here; ``huggingface_hub`` (installed with
``transformers``) is imported when a hub reader is made.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from trueheart_core.errors import ProviderError

__all__ = [
    "MAX_LENGTH_LIMIT",
    "SBERT_CONFIG",
    "Declared",
    "directory_reader",
    "hub_reader",
    "read_declared",
    "refused",
]

MAX_LENGTH_LIMIT = 1_000_000

# The sentence-transformers files read from a model directory, and their limits.
SBERT_CONFIG = "sentence_bert_config.json"
_MODULES = "modules.json"
_DEFAULT_POOLING_PATH = "1_Pooling"
_MAX_CONFIG_BYTES = 1 << 20
_MODULE_KINDS = ("Transformer", "Pooling", "Normalize")
_MODULE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
# Each pooling flag of a sentence-transformers Pooling config: its mode and its default
# there when the key is missing.
_POOLING_FLAGS = {
    "pooling_mode_cls_token": ("cls", False),
    "pooling_mode_mean_tokens": ("mean", True),
    "pooling_mode_max_tokens": ("max", False),
    "pooling_mode_mean_sqrt_len_tokens": ("mean_sqrt_len", False),
}
_UNSUPPORTED_POOLING_FLAGS = ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")
_POOLING_KEYS = frozenset(
    {*_POOLING_FLAGS, *_UNSUPPORTED_POOLING_FLAGS, "word_embedding_dimension", "include_prompt"}
)
_SBERT_KEYS = frozenset({"max_seq_length", "do_lower_case"})
_UNREADABLE = "the sentence-transformers configuration could not be read"


@dataclass(frozen=True, slots=True)
class Declared:
    """What a model's sentence-transformers files say (``None``: they do not say)."""

    pooling: str | None = None
    dimension: int | None = None
    max_seq_length: int | None = None
    lowercase: bool = False
    normalize: bool | None = None


def refused(label: str, rule: str) -> ProviderError:
    return ProviderError(f"sentence-transformers {label}: {rule}")


def read_declared(read: Callable[[str], bytes | None]) -> Declared:
    """Read and check the sentence-transformers files through ``read`` (which returns a
    file's bytes by its relative path, or ``None`` when it is absent)."""
    max_seq_length, lowercase = _sbert_settings(_json(read, SBERT_CONFIG, SBERT_CONFIG))
    modules = _json(read, _MODULES, _MODULES)
    normalize: bool | None = None
    if modules is None:
        pooling_config = _json(read, f"{_DEFAULT_POOLING_PATH}/config.json", "pooling config.json")
    else:
        pooling_path, normalize = _module_layout(modules)
        pooling_config = _json(read, f"{pooling_path}/config.json", "pooling config.json")
        if pooling_config is None:
            raise refused(_MODULES, "names a Pooling module without a config.json")
    if pooling_config is None:
        return Declared(None, None, max_seq_length, lowercase, normalize)
    pooling, dimension = _pooling_settings(pooling_config)
    return Declared(pooling, dimension, max_seq_length, lowercase, normalize)


def _json(read: Callable[[str], bytes | None], relative: str, label: str) -> object:
    data = read(relative)
    if data is None:
        return None
    if len(data) > _MAX_CONFIG_BYTES:
        raise refused(label, "is too large")

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        result = dict(pairs)
        if len(result) != len(pairs):
            raise refused(label, "repeats a key")
        return result

    def constant(name: str) -> object:
        raise refused(label, "is not valid JSON")

    try:
        parsed: object = json.loads(
            data.decode("utf-8"), object_pairs_hook=unique, parse_constant=constant
        )
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise refused(label, "is not valid JSON") from None
    if parsed is None:
        raise refused(label, "must not be null")
    return parsed


def _sbert_settings(config: object) -> tuple[int | None, bool]:
    """``max_seq_length`` (``None``: not set) and ``do_lower_case``."""
    if config is None:
        return None, False
    if not isinstance(config, dict):
        raise refused(SBERT_CONFIG, "must be a JSON object")
    if not set(config) <= _SBERT_KEYS:
        raise refused(SBERT_CONFIG, "holds a setting other than max_seq_length and do_lower_case")
    max_seq_length = config.get("max_seq_length")
    if max_seq_length is not None and (
        isinstance(max_seq_length, bool)
        or not isinstance(max_seq_length, int)
        or not 1 <= max_seq_length <= MAX_LENGTH_LIMIT
    ):
        raise refused(
            SBERT_CONFIG, f"max_seq_length must be an integer from 1 through {MAX_LENGTH_LIMIT}"
        )
    lowercase = config.get("do_lower_case", False)
    if not isinstance(lowercase, bool):
        raise refused(SBERT_CONFIG, "do_lower_case must be true or false")
    return max_seq_length, lowercase


def _module_layout(modules: object) -> tuple[str, bool]:
    """The Pooling module's path and whether a Normalize module follows it."""
    if not isinstance(modules, list) or not modules:
        raise refused(_MODULES, "must be a non-empty list of modules")
    kinds: list[str] = []
    paths: list[str] = []
    for entry in modules:
        kind = entry.get("type") if isinstance(entry, dict) else None
        if not isinstance(kind, str):
            raise refused(_MODULES, "must give every module a type")
        package, _, kind = kind.rpartition(".")
        if not package.startswith("sentence_transformers") or kind not in _MODULE_KINDS:
            raise refused(_MODULES, "lists a module other than Transformer, Pooling and Normalize")
        path = entry.get("path", "")
        if not isinstance(path, str):
            raise refused(_MODULES, "must give every module's path as a string")
        kinds.append(kind)
        paths.append(path)
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise refused(
            _MODULES, "must list Transformer, Pooling and optionally Normalize, in that order"
        )
    if paths[0] != "":
        raise refused(_MODULES, "must keep the Transformer module in the model directory")
    if _MODULE_PATH.fullmatch(paths[1]) is None:
        raise refused(_MODULES, "must keep the Pooling module in a subdirectory of the model")
    return paths[1], len(kinds) == 3


def _pooling_settings(config: object) -> tuple[str, int | None]:
    """The one pooling mode and the declared ``word_embedding_dimension``."""
    label = "pooling config.json"
    if not isinstance(config, dict):
        raise refused(label, "must be a JSON object")
    if not set(config) <= _POOLING_KEYS:
        raise refused(label, "holds a setting this embedder does not know")
    for key in (*_POOLING_FLAGS, *_UNSUPPORTED_POOLING_FLAGS, "include_prompt"):
        if key in config and not isinstance(config[key], bool):
            raise refused(label, f"{key} must be true or false")
    for key in _UNSUPPORTED_POOLING_FLAGS:
        if config.get(key, False):
            raise refused(label, f"{key} is not supported")
    if not config.get("include_prompt", True):
        raise refused(label, "include_prompt false is not supported")
    modes = [mode for key, (mode, default) in _POOLING_FLAGS.items() if config.get(key, default)]
    if not modes:
        raise refused(label, "enables no pooling mode")
    if len(modes) > 1:
        raise refused(label, "enables more than one pooling mode, which is not supported")
    dimension = config.get("word_embedding_dimension")
    if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int)):
        raise refused(label, "word_embedding_dimension must be an integer")
    return modes[0], dimension


def _read_file(path: str) -> bytes | None:
    """A small file's bytes (at most one byte past the limit), or ``None`` if absent."""
    try:
        with open(path, "rb") as handle:
            return handle.read(_MAX_CONFIG_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ProviderError(_UNREADABLE) from exc


def directory_reader(root: str) -> Callable[[str], bytes | None]:
    def read(relative: str) -> bytes | None:
        return _read_file(os.path.join(root, *relative.split("/")))

    return read


def hub_reader(
    repo_id: str, revision: str, local_files_only: bool
) -> Callable[[str], bytes | None]:
    """Read a hub model's files from the local cache, fetching them only when
    ``local_files_only`` is false; a file the hub does not hold is absent."""
    try:
        hub = importlib.import_module("huggingface_hub")
        hub_utils = importlib.import_module("huggingface_hub.utils")
    except ImportError:
        raise ProviderError("the local-transformers extra is not installed") from None

    def read(relative: str) -> bytes | None:
        try:
            path = hub.try_to_load_from_cache(repo_id, relative, revision=revision)
            if path is None and not local_files_only:
                path = hub.hf_hub_download(repo_id, relative, revision=revision)
        except hub_utils.LocalEntryNotFoundError as exc:
            raise ProviderError(_UNREADABLE) from exc
        except hub_utils.EntryNotFoundError:
            return None
        except Exception as exc:
            raise ProviderError(_UNREADABLE) from exc
        return _read_file(path) if isinstance(path, str) else None

    return read
