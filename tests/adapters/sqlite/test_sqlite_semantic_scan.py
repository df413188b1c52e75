"""The semantic scan over vector rows edited behind the library's back (with sqlite3):
sketches that are missing (as in a store upgraded from schema 4) or damaged are
compared exactly, so the answer does not change; a copy of the vectors kept in memory
is read again after such an edit."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from scan_builders import Item, bits, random_unit, scanned_by, store
from sqlite_builders import tamper

from trueheart_core import SQLiteRepository
from trueheart_core.service.search import accelerated

DIMS = 24


@pytest.fixture(autouse=True)
def _zero_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(accelerated.SWITCH, "python")


def _items(rng: random.Random, count: int = 80) -> list[Item]:
    return [Item(f"mem-{i:04d}", random_unit(rng, DIMS), hours=i % 9) for i in range(count)]


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("UPDATE vectors SET sketch = NULL, sketch_scale = NULL, sketch_error = NULL", ()),
        ("UPDATE vectors SET sketch = NULL WHERE vid % 3 = 0", ()),
        ("UPDATE vectors SET sketch = 'text' WHERE vid % 4 = 0", ()),
        ("UPDATE vectors SET sketch = substr(sketch, 2) WHERE vid % 5 = 0", ()),
        ("UPDATE vectors SET sketch_scale = -1.0 WHERE vid % 2 = 0", ()),
        ("UPDATE vectors SET sketch_error = ? WHERE vid % 2 = 1", (float("nan"),)),
        ("UPDATE vectors SET sketch_error = 1e400 WHERE vid % 7 = 1", ()),
        ("UPDATE vectors SET sketch_scale = 3 WHERE vid % 6 = 1", ()),
    ],
    ids=["none", "some-null", "text", "short", "negative", "nan", "infinite", "integer"],
)
def test_missing_or_damaged_sketches_are_compared_exactly(
    repository: SQLiteRepository, db_path: Path, sql: str, params: tuple[object, ...]
) -> None:
    rng = random.Random(1)
    service = store(repository, DIMS, _items(rng))
    probes = [random_unit(rng, DIMS) for _ in range(4)]
    before = [scanned_by(service, repository, p, minimum=-1.0, limit=10) for p in probes]
    assert tamper(db_path, sql, params) > 0
    after = [scanned_by(service, repository, p, minimum=-1.0, limit=10) for p in probes]
    for old, new in zip(before, after, strict=True):
        assert bits(new.candidates) == bits(old.candidates)
        assert new.scanned == old.scanned
    # Vectors without sketches are compared exactly, so more of them are.
    assert sum(s.compared for s in after) > sum(s.compared for s in before)


def test_the_copy_in_memory_follows_a_change_behind_the_librarys_back(
    repository: SQLiteRepository, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.environ.get("TRUEHEART_REQUIRE_NUMPY") != "1":
        pytest.importorskip("numpy")
    rng = random.Random(5)
    service = store(repository, DIMS, _items(rng))
    probe = random_unit(rng, DIMS)
    monkeypatch.delenv(accelerated.SWITCH)
    first = scanned_by(service, repository, probe, minimum=-1.0, limit=3)
    best = first.candidates[0].memory_id
    tamper(db_path, "UPDATE vectors SET active = 0 WHERE memory_id = ?", [best])
    fast = scanned_by(service, repository, probe, minimum=-1.0, limit=3)
    monkeypatch.setenv(accelerated.SWITCH, "python")
    plain = scanned_by(service, repository, probe, minimum=-1.0, limit=3)
    assert bits(fast.candidates) == bits(plain.candidates)
    assert best not in {c.memory_id for c in fast.candidates}
    assert fast.scanned == first.scanned - 1
