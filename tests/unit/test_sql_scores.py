"""The exact sums and the exact cut of lexical candidates, shared by the SQL backends."""

from __future__ import annotations

import math

import pytest

from trueheart_core import RepositoryCorruption
from trueheart_core.adapters.sql import scores

# One row per term a memory holds: m-a adds 0.1 + 0.2 + 0.3 and m-b 0.3 + 0.2 + 0.1 (apart
# left to right), m-c 0.1.
ROWS = [
    ("m-a", 0.1, 1, 2, 3),
    ("m-b", 0.3, 4, 5, 6),
    ("m-a", 0.2, 1, 2, 3),
    ("m-b", 0.2, 4, 5, 6),
    ("m-c", 0.1, 7, 8, 9),
    ("m-a", 0.3, 1, 2, 3),
    ("m-b", 0.1, 4, 5, 6),
]


def test_parts_are_added_exactly_and_cut_at_the_exact_window_edge() -> None:
    found = {c.memory_id: c for c in scores.from_parts(ROWS, 2)}
    # m-a adds 0.1 + 0.2 + 0.3 and m-b 0.3 + 0.2 + 0.1: apart left to right, tied here.
    assert found["m-a"].score == found["m-b"].score == math.fsum([0.1, 0.2, 0.3])
    assert set(found) == {"m-a", "m-b"}
    assert (found["m-b"].created_at, found["m-b"].clear_until, found["m-b"].recall_until) == (
        4,
        5,
        6,
    )
    # A window reaching past the tie keeps everything; one keeps both tied memories.
    assert {c.memory_id for c in scores.from_parts(ROWS, 3)} == {"m-a", "m-b", "m-c"}
    assert {c.memory_id for c in scores.from_parts(ROWS, 1)} == {"m-a", "m-b"}
    assert scores.from_parts([], 2) == []


@pytest.mark.parametrize(
    "row",
    [
        ("m-a", None, 1, 2, 3),
        ("m-a", 1, 1, 2, 3),
        ("m-a", math.nan, 1, 2, 3),
        ("m-a", math.inf, 1, 2, 3),
        (b"m-a", 0.5, 1, 2, 3),
    ],
)
def test_a_damaged_part_is_corruption(row: tuple[object, ...]) -> None:
    with pytest.raises(
        RepositoryCorruption, match=r"^repository corruption: invalid search index$"
    ):
        scores.from_parts([row], 2)


def test_lists_of_parts_are_added_exactly_like_rows_of_parts() -> None:
    groups = [
        ("m-a", [0.1, 0.2, 0.3], 1, 2, 3, "ignored"),
        ("m-b", [0.3, 0.2, 0.1], 4, 5, 6, "ignored"),
        ("m-c", [0.1], 7, 8, 9, "ignored"),
    ]
    for window in (1, 2, 3):
        grouped = scores.from_groups(groups, window)
        assert grouped == scores.from_parts(ROWS, window)
        assert len(grouped) == (2 if window < 3 else 3)


@pytest.mark.parametrize(
    "groups",
    [
        [("m-a", [0.5, None], 1, 2, 3)],
        [("m-a", None, 1, 2, 3)],
        [("m-a", [0.5], 1, 2, 3), ("m-a", [0.5], 1, 2, 3)],
        [("m-a", [math.nan], 1, 2, 3)],
    ],
)
def test_a_damaged_list_is_corruption(groups: list[tuple[object, ...]]) -> None:
    with pytest.raises(
        RepositoryCorruption, match=r"^repository corruption: invalid search index$"
    ):
        scores.from_groups(groups, 2)
