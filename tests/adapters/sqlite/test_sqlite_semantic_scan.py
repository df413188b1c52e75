"""The semantic scan over vector rows edited behind the library's back (with sqlite3):
sketches that are missing (as in a store upgraded from schema 4) or damaged are
compared exactly, so the answer does not change."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scan_builders import Item, bits, random_unit, scanned_by, store
from sqlite_builders import tamper

from trueheart_core import SQLiteRepository

DIMS = 24


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
