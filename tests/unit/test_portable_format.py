"""The pure parts of the export format: the time codec, canonical lines, the digests and
the ``ImportRefused`` message."""

from __future__ import annotations

import hashlib
import json

import pytest

import trueheart_core
from trueheart_core import ImportRefused, TrueHeartError
from trueheart_core.domain import portable as fmt


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "1970-01-01T00:00:00.000000Z"),
        (1, "1970-01-01T00:00:00.000001Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
        (-62135596800000000, "0001-01-01T00:00:00.000000Z"),
        (253402300799999999, "9999-12-31T23:59:59.999999Z"),
        (1786622400123456, "2026-08-13T12:00:00.123456Z"),
    ],
)
def test_times_are_exact_iso_8601_utc(value: int, text: str) -> None:
    assert fmt.iso(value) == text
    assert fmt.microseconds(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "2026-08-13T12:00:00Z",
        "2026-08-13T12:00:00.000000+00:00",
        "2026-08-13 12:00:00.000000Z",
        "2026-08-13T12:00:00.0000001Z",
        "\uff12026-08-13T12:00:00.000000Z",
        "2026-13-13T12:00:00.000000Z",
        1786622400,
        None,
    ],
)
def test_other_time_texts_are_refused(text: object) -> None:
    with pytest.raises(ValueError):
        fmt.microseconds(text)


def test_canonical_lines_and_digests() -> None:
    obj = {"b": [1, 2.5, None], "a": "é✓", "kind": "event"}
    assert fmt.canonical(obj) == '{"a":"é✓","b":[1,2.5,null],"kind":"event"}'
    with pytest.raises(ValueError):
        fmt.canonical({"x": float("nan")})
    digest = fmt.line_digest({**obj, "digest": "ignored"})
    assert digest == hashlib.sha256(fmt.canonical(obj).encode("utf-8")).hexdigest()
    header = {"format": fmt.FORMAT, "version": 1, "schema": fmt.SCHEMA, "scope": None}
    h0 = fmt.chain_start({**header, "exported_at": "2026-08-13T12:00:00.000000Z"})
    assert h0 == fmt.chain_start({**header, "exported_at": "1999-01-01T00:00:00.000000Z"})
    assert (
        h0
        == hashlib.sha256(
            json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
    )
    assert fmt.chain_next(h0, digest) == hashlib.sha256((h0 + digest).encode()).hexdigest()
    assert fmt.KINDS == ("event", "body", "memory", "claim", "extraction", "tombstone", "audit")
    assert fmt.kind_counts({"memory": 2}) == tuple(
        (k, 2 if k == "memory" else 0) for k in fmt.KINDS
    )


def test_import_refused_names_the_line_only() -> None:
    error = ImportRefused("line digest mismatch", 12)
    assert str(error) == "import refused: line 12: line digest mismatch"
    assert error.line == 12
    whole = ImportRefused("the target store is not empty")
    assert (str(whole), whole.line) == ("import refused: the target store is not empty", None)
    assert issubclass(ImportRefused, TrueHeartError)
    assert trueheart_core.ImportRefused is ImportRefused
