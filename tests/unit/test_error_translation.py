"""Driver errors become library errors at exactly one choke point, and the mapping is total."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trueheart_core import (
    RawEventDraft,
    RecallQuery,
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
)
from trueheart_core.adapters.sqlite.connection import translate, translated

DRIVER_ERRORS = (
    sqlite3.Error,
    sqlite3.DatabaseError,
    sqlite3.DataError,
    sqlite3.IntegrityError,
    sqlite3.InterfaceError,
    sqlite3.InternalError,
    sqlite3.NotSupportedError,
    sqlite3.OperationalError,
    sqlite3.ProgrammingError,
)


def _error(cls: type[sqlite3.Error], code: int | None) -> sqlite3.Error:
    error = cls("driver text with a secret body")
    if code is not None:
        error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


_KINDS: dict[int, tuple[type[TrueHeartError], str]] = {
    3: (RepositoryReadOnly, "read-only"),  # PERM
    5: (RepositoryBusy, "busy"),  # BUSY
    6: (RepositoryBusy, "busy"),  # LOCKED
    8: (RepositoryReadOnly, "read-only"),  # READONLY
    13: (RepositoryFull, "full"),  # FULL
    15: (RepositoryBusy, "busy"),  # PROTOCOL
}
_EXTENDED = {
    4874: (RepositoryFull, "full"),  # IOERR_SHMSIZE: no room to grow the -shm file
}


@pytest.mark.parametrize("cls", DRIVER_ERRORS)
@pytest.mark.parametrize(
    "code", [None, *range(29), 100, 101, 261, 262, 264, 517, 518, 776, 1032, 2067, 4874]
)
def test_every_driver_error_maps_to_exactly_one_library_error(
    cls: type[sqlite3.Error], code: int | None
) -> None:
    result = translated(_error(cls, code), "memory recall failed")
    expected, kind = (
        (RepositoryCorruption, "corruption")
        if code is None
        else _EXTENDED.get(code) or _KINDS.get(code & 0xFF, (RepositoryCorruption, "corruption"))
    )
    assert type(result) is expected
    assert str(result) == f"repository {kind}: memory recall failed"
    assert "secret" not in str(result)


@pytest.mark.parametrize(
    "error",
    [
        UnicodeDecodeError("utf-8", b"secret body \xff", 12, 13, "invalid start byte"),
        UnicodeEncodeError("utf-8", "secret body \udc80", 12, 13, "surrogates not allowed"),
        TypeError("unsupported operand: 'secret body'"),
        ValueError("invalid literal for int(): 'secret body'"),
        OverflowError("secret body"),
        ZeroDivisionError("secret body"),
        KeyError("secret body"),
        IndexError("secret body"),
    ],
    ids=type,
)
def test_malformed_values_are_corruption_and_their_context_holds_no_body(
    error: Exception,
) -> None:
    with pytest.raises(TrueHeartError) as caught, translate("memory search failed"):
        try:
            raise RuntimeError("secret body of an earlier failure")
        except RuntimeError:
            raise error  # noqa: B904
    assert type(caught.value) is RepositoryCorruption
    assert str(caught.value) == "repository corruption: memory search failed"
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__ is True
    _assert_chain_body_free(caught.value)


def _assert_chain_body_free(error: BaseException) -> None:
    seen = error
    depth = 0
    while seen is not None and depth < 10:
        assert "secret" not in str(seen)
        assert "secret" not in repr(seen)
        assert all("secret" not in repr(arg) for arg in seen.args)
        if isinstance(seen, UnicodeError):
            assert b"secret" not in bytes(str(getattr(seen, "object", "")), "utf-8")
        assert seen.__traceback__ is None or seen is error
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
        depth += 1


@pytest.mark.parametrize("cls", DRIVER_ERRORS)
def test_translate_raises_without_chaining(cls: type[sqlite3.Error]) -> None:
    with pytest.raises(TrueHeartError) as caught, translate("audit read failed"):
        raise _error(cls, 11)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__ is True
    assert str(caught.value) == "repository corruption: audit read failed"
    _assert_chain_body_free(caught.value)


def test_library_errors_pass_through_unchanged() -> None:
    original = RepositoryBusy("x")
    with pytest.raises(RepositoryBusy) as caught, translate("audit read failed"):
        raise original
    assert caught.value is original


def test_a_real_driver_failure_surfaces_as_corruption_with_the_operation_diagnostic(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    now = datetime(2026, 8, 13, 12, tzinfo=UTC)
    scope = Scope("t", "o", "s")
    with SQLiteRepository(path) as repository:
        service = TrueHeart(repository, clock=lambda: now)
        service.ingest_event(
            RawEventDraft(
                "e1",
                scope,
                SourceRef("s", "t", now, TrustLevel.OBSERVED),
                "body",
                RetentionPolicy(timedelta(days=1), timedelta(days=1), timedelta(days=2)),
            )
        )
        assert service.recall(RecallQuery(scope, now)) == ()
        raw = sqlite3.connect(path)
        raw.execute("DROP INDEX memories_recall_clear")
        raw.commit()
        raw.close()
        with pytest.raises(RepositoryCorruption) as caught:
            service.recall(RecallQuery(scope, now))
        assert str(caught.value) == "repository corruption: memory recall failed"
        assert caught.value.__cause__ is None
