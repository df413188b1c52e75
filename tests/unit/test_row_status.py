"""A memory row with another status keeps every other field and gets the digest a row
with that status has."""

from __future__ import annotations

import dataclasses

from trueheart_core.domain.model import MemoryStatus
from trueheart_core.ports.rows import MemoryRow
from trueheart_core.service import records


def test_a_status_change_keeps_every_other_field() -> None:
    row = MemoryRow(
        ("tenant", "owner", "subject"),
        "mem-1",
        "body",
        "f" * 64,
        "fact",
        2,
        10,
        20,
        30,
        "active",
        '{"a":1}',
        "old digest",
    )
    changed = records.with_memory_status(row, MemoryStatus.SEALED, ["evt-2", "evt-1"])
    expected = dataclasses.replace(row, status="sealed")
    assert dataclasses.replace(changed, digest="") == dataclasses.replace(expected, digest="")
    # The digest is the one a row stored with that status verifies against.
    again = records.with_memory_status(expected, MemoryStatus.SEALED, ["evt-1", "evt-2"])
    assert changed.digest == again.digest != row.digest
