"""The faster construction of frozen rows and records keeps what the dataclass was."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from trueheart_core import MemoryRecord, MemoryStatus, Scope, TrustLevel
from trueheart_core.domain.frozen import assembler, direct_init
from trueheart_core.domain.model import assembled
from trueheart_core.ports import AuditRow, EdgeRow, EventRow, MemoryRow, SearchDocRow


@dataclass(frozen=True, slots=True)
class _Reference:
    a: int
    b: str
    c: tuple[int, ...] = ()
    d: int | None = None


@direct_init
@dataclass(frozen=True, slots=True)
class _Direct:
    a: int
    b: str
    c: tuple[int, ...] = ()
    d: int | None = None


def test_direct_init_takes_the_same_arguments_and_defaults() -> None:
    for args, kwargs in (
        ((1, "x"), {}),
        ((1, "x", (2, 3)), {}),
        ((1,), {"b": "y", "d": 4}),
        ((), {"a": 5, "b": "z", "c": (1,), "d": None}),
    ):
        made = _Direct(*args, **kwargs)  # type: ignore[arg-type]
        reference = _Reference(*args, **kwargs)  # type: ignore[arg-type]
        assert dataclasses.astuple(made) == dataclasses.astuple(reference)
    assert list(inspect.signature(_Direct).parameters) == ["a", "b", "c", "d"]
    assert inspect.signature(_Direct).parameters["c"].default == ()
    with pytest.raises(TypeError):
        _Direct(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Direct(1, "x", e=2)  # type: ignore[call-arg]


def test_direct_init_keeps_equality_hash_repr_replace_and_immutability() -> None:
    one, same, other = _Direct(1, "x"), _Direct(1, "x"), _Direct(2, "x")
    assert one == same and one != other
    assert hash(one) == hash(same)
    assert repr(one) == "_Direct(a=1, b='x', c=(), d=None)"
    changed = dataclasses.replace(one, b="y")
    assert (changed.a, changed.b, one.b) == (1, "y", "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.a = 3  # type: ignore[misc]
    assert not hasattr(one, "__dict__")


def test_direct_init_refuses_what_it_cannot_build_alike() -> None:
    @dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True)
    class Unslotted:
        a: int

    for cls in (Factory, Checked, Unslotted):
        with pytest.raises(TypeError):
            direct_init(cls)


def test_port_rows_are_built_directly_and_compare_as_before() -> None:
    for cls in (AuditRow, EdgeRow, EventRow, MemoryRow, SearchDocRow):
        names = [f.name for f in dataclasses.fields(cls)]
        # the slots' setters are what the replaced __init__ calls
        assert f"_set_{names[0]}" in cls.__init__.__globals__
        assert list(inspect.signature(cls).parameters) == names
    row = EdgeRow(("t", "o", "s"), "m", "e", 1, "10", "20", "d")
    assert dataclasses.astuple(row) == (("t", "o", "s"), "m", "e", 1, "10", "20", "d")
    assert row == EdgeRow(("t", "o", "s"), "m", "e", 1, "10", "20", "d")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.digest = "x"  # type: ignore[misc]


def test_assembled_record_equals_the_validated_one() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    values = (
        "m1",
        Scope("t", "o", "s"),
        "a body",
        ("e1",),
        "f" * 64,
        "note",
        TrustLevel.OBSERVED,
        when,
        when,
        when,
        MemoryStatus.ACTIVE,
        {"k": 1},
    )
    checked = MemoryRecord(*values)
    built = assembled(
        MemoryRecord, *(getattr(checked, f.name) for f in dataclasses.fields(checked))
    )
    assert built == checked and type(built) is MemoryRecord
    with pytest.raises(TypeError):
        assembled(MemoryRecord, *values[:-1])
    with pytest.raises(TypeError):
        assembler(dict)
