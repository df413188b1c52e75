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


@pytest.mark.parametrize("cls", DRIVER_ERRORS)
@pytest.mark.parametrize("code", [None, *range(29), 100, 101, 261, 262, 517, 518, 2067])
def test_every_driver_error_maps_to_busy_or_corruption(
    cls: type[sqlite3.Error], code: int | None
) -> None:
    result = translated(_error(cls, code), "memory recall failed")
    busy = code is not None and code & 0xFF in (5, 6, 15)  # BUSY, LOCKED, PROTOCOL
    assert type(result) is (RepositoryBusy if busy else RepositoryCorruption)
    kind = "busy" if busy else "corruption"
    assert str(result) == f"repository {kind}: memory recall failed"
    assert "secret" not in str(result)


@pytest.mark.parametrize("cls", DRIVER_ERRORS)
def test_translate_raises_without_chaining(cls: type[sqlite3.Error]) -> None:
    with pytest.raises(TrueHeartError) as caught, translate("audit read failed"):
        raise _error(cls, 11)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__ is True
    assert str(caught.value) == "repository corruption: audit read failed"


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
