"""The canonical JSON text and the audit IDs, as every write makes them.

``canonical_json`` calls the ``json`` module's C encoder directly (made once) where the
module has one; its text must be exactly ``json.dumps`` with the canonical options, and
the ordinary encoder must give the same text where there is no C encoder."""

from __future__ import annotations

import json
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import Any

import pytest

from trueheart_core.domain import validation
from trueheart_core.domain.validation import EMPTY_METADATA, canonical_json
from trueheart_core.service.writing import new_audit_id

VALUES: list[Any] = [
    "plain",
    'quote " backslash \\ newline \n tab \t nul \x00',
    "é ñ 漢字 \U0001f600",
    0,
    -(2**70),
    2**4095,
    1.5,
    -0.0,
    1e300,
    None,
    True,
    [],
    {},
    ["memory", ["t", "o", "s"], "m-1", "body", ["e-2", "e-1"], "f" * 64, "fact", 2, 10],
    {"b": [1, {"d": None, "c": (1, 2)}], "a": "x", "é": {"z": [], "y": {}}},
    (1, ("nested", ("tuple",))),
    MappingProxyType({"b": 1, "a": MappingProxyType({"k": [True, False]})}),
]


def _dumps(value: Any) -> str:
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=dict,
    )


def test_the_direct_encoder_is_in_use_where_the_json_module_has_one() -> None:
    assert validation._DIRECT is not None


@pytest.mark.parametrize("direct", [True, False], ids=["c-encoder", "json-encoder"])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_canonical_text_is_json_dumps_with_the_canonical_options(
    value: Any, direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not direct:
        monkeypatch.setattr(validation, "_DIRECT", None)
    assert canonical_json(value) == _dumps(value)


@pytest.mark.parametrize("direct", [True, False], ids=["c-encoder", "json-encoder"])
def test_canonical_text_refuses_what_json_dumps_refuses(
    direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not direct:
        monkeypatch.setattr(validation, "_DIRECT", None)
    out_of_range: list[object] = [float("nan"), [float("inf")], {"k": float("-inf")}]
    for bad in out_of_range:
        with pytest.raises(ValueError):
            canonical_json(bad)
    not_json: list[object] = [object(), [b"bytes"], {1: "a", "b": 2}]
    for bad in not_json:
        with pytest.raises(TypeError):
            canonical_json(bad)
    assert canonical_json(EMPTY_METADATA) == "{}"


def test_audit_ids_are_random_version_4_uuids_in_hex() -> None:
    ids = [new_audit_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_audit_ids_drawn_by_many_threads_at_once_are_distinct() -> None:
    barrier = threading.Barrier(8)

    def draw() -> list[str]:
        barrier.wait()
        return [new_audit_id() for _ in range(500)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = [text for drawn in pool.map(lambda _: draw(), range(8)) for text in drawn]
    assert len(ids) == 4000
    assert len(set(ids)) == len(ids)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_draws_audit_ids_of_its_own() -> None:
    new_audit_id()  # the parent now holds IDs drawn ahead
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report five IDs, then leave without running the suite
        try:
            os.write(write, "".join(new_audit_id() for _ in range(5)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    child = {text[k : k + 32] for k in range(0, len(text), 32)}
    parent = {new_audit_id() for _ in range(5)}
    assert len(child) == 5
    assert not child & parent
