"""Fixtures of the provider tests.

Tests that need a model framework take the ``frameworks`` fixture (or ``tiny_model``).
A missing framework skips them, unless ``TRUEHEART_REQUIRE_PROVIDERS=1`` is set, as in the
CI step that installs the ``local-transformers`` extra: there it fails them.

Every test here runs with ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1``, and the
only model is a tiny, randomly initialised BERT written into a temporary directory.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REQUIRE_VARIABLE = "TRUEHEART_REQUIRE_PROVIDERS"

VOCABULARY = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "ran",
    "on",
    "mat",
    "rug",
    "hello",
    "world",
    "query",
    "passage",
    ":",
    ",",
    ".",
    "##s",
]


def require(name: str) -> ModuleType:
    """Import ``name``; skip the test when it is missing, or fail it when the environment
    variable ``TRUEHEART_REQUIRE_PROVIDERS`` is ``1``."""
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        try:
            return importlib.import_module(name)
        except ImportError:
            pytest.fail(f"{name} is required ({REQUIRE_VARIABLE}=1) but cannot be imported")
    return pytest.importorskip(name)


@pytest.fixture(scope="session", autouse=True)
def _offline() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


@pytest.fixture
def require_module() -> Callable[[str], ModuleType]:
    """The import-or-skip (or fail) helper, as a fixture."""
    return require


@pytest.fixture(scope="session")
def frameworks(_offline: None) -> tuple[Any, Any]:
    """``torch`` and ``transformers``, imported once the offline variables are set."""
    return require("torch"), require("transformers")


def save_tiny_model(
    directory: Path, frameworks: tuple[Any, Any], *, seed: int = 0, lowercase: bool = True
) -> Path:
    """Write a tiny random BERT encoder and its WordPiece tokenizer into ``directory``
    (the tokenizer lowercases its input unless ``lowercase`` is false; the weights depend
    on ``seed`` only)."""
    torch, transformers = frameworks
    directory.mkdir(parents=True, exist_ok=True)
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(
        str(vocab_file), do_lower_case=lowercase, model_max_length=512
    )
    tokenizer.save_pretrained(str(directory))
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        vocab_size=len(VOCABULARY),
    )
    transformers.BertModel(config).save_pretrained(str(directory))
    return directory


@pytest.fixture(scope="session")
def model_factory(
    tmp_path_factory: pytest.TempPathFactory, frameworks: tuple[Any, Any]
) -> Callable[[int], Path]:
    """Builds a fresh tiny model directory from a seed."""

    def build(seed: int) -> Path:
        return save_tiny_model(tmp_path_factory.mktemp(f"tiny-bert-{seed}"), frameworks, seed=seed)

    return build


@pytest.fixture(scope="session")
def tiny_model(model_factory: Callable[[int], Path]) -> Path:
    """One tiny model directory shared by the tests that do not change it."""
    return model_factory(0)


@pytest.fixture(scope="session")
def cased_model(tmp_path_factory: pytest.TempPathFactory, frameworks: tuple[Any, Any]) -> Path:
    """The weights of ``tiny_model`` with a tokenizer that does not lowercase (so that
    upper-case words are unknown to it)."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert-cased"), frameworks, lowercase=False)
