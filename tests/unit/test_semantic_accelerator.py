"""The numpy accelerator's own bookkeeping, without a store: which copies make room for
a new one. Skipped without numpy, unless ``TRUEHEART_REQUIRE_NUMPY=1``."""

from __future__ import annotations

import os

import pytest

from trueheart_core.service.search import accelerated

if os.environ.get("TRUEHEART_REQUIRE_NUMPY") == "1":
    import numpy as np
else:
    np = pytest.importorskip("numpy")


def _held(size: int) -> object:
    empty = np.zeros(0)
    return accelerated._Copy(1, empty, (), 0.0, empty, empty, empty, empty, empty, {}, size)


def test_the_least_recently_used_copies_make_room() -> None:
    scratch: dict[object, object] = {
        "a": _held(40),
        "other": "kept",
        "b": _held(30),
        "c": _held(20),
    }
    accelerated._make_room(scratch, 55)
    assert list(scratch) == ["other", "b", "c"]
    accelerated._make_room(scratch, 0)
    assert list(scratch) == ["other"]


def test_the_switch_turns_numpy_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(accelerated.SWITCH, raising=False)
    assert accelerated.enabled()
    for value in ("python", "Python", " python "):
        monkeypatch.setenv(accelerated.SWITCH, value)
        assert not accelerated.enabled()
    monkeypatch.setenv(accelerated.SWITCH, "auto")
    assert accelerated.enabled()
