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


class _Emptied(dict[object, object]):
    """A repository's scratch space that another thread empties (an erasure committed,
    the repository closed) right after each look-up made without the accelerator's
    lock: the entries it saw are gone by the next step."""

    def get(self, key: object, default: object = None) -> object:
        found = super().get(key, default)
        self.clear()
        return found

    def items(self) -> list[tuple[object, object]]:  # type: ignore[override]
        listed = list(super().items())
        self.clear()
        return listed


class _Generation:
    def generation(self, key: object) -> int:
        return 1


def test_a_copy_found_while_another_thread_empties_the_space_is_used() -> None:
    held = _held(10)
    name = ("semantic vectors", ("t", "o", "s"), 1, 4)
    scratch = _Emptied({name: held})
    found = accelerated._current(np, _Generation(), scratch, ("t", "o", "s"), 1, 4)  # type: ignore[arg-type]
    assert found is held
    assert scratch == {name: held}


def test_making_room_while_another_thread_empties_the_space() -> None:
    scratch = _Emptied({"a": _held(40), "b": _held(30)})
    accelerated._make_room(scratch, 0)
    assert scratch == {}
