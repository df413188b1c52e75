"""The error tree: fixed messages, sibling busy/corruption errors and no chaining."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

import trueheart_core
from trueheart_core import (
    EntityDeleted,
    EntityNotFound,
    IdempotencyConflict,
    InvalidTransition,
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    Scope,
    ScopeMismatch,
    SourceRef,
    TrueHeartError,
    TrustEscalation,
    TrustLevel,
    ValidationError,
)


def assert_not_chained(error: BaseException) -> None:
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__


ENTITY_ERRORS: list[tuple[type[TrueHeartError], str]] = [
    (EntityNotFound, "entity not found"),
    (ScopeMismatch, "scope mismatch"),
    (IdempotencyConflict, "idempotency conflict"),
    (EntityDeleted, "entity deleted"),
    (InvalidTransition, "invalid transition"),
    (TrustEscalation, "trust escalation"),
]

DIAGNOSTIC_ERRORS: list[tuple[type[TrueHeartError], str]] = [
    (RepositoryBusy, "repository busy"),
    (RepositoryCorruption, "repository corruption"),
    (RepositoryReadOnly, "repository read-only"),
]

ALL_ERRORS = [
    ValidationError,
    *[cls for cls, _ in ENTITY_ERRORS],
    *[cls for cls, _ in DIAGNOSTIC_ERRORS],
]


def test_base_error_is_an_exception() -> None:
    assert issubclass(TrueHeartError, Exception)
    assert TrueHeartError.__bases__ == (Exception,)


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda cls: cls.__name__)
def test_every_error_derives_from_the_base(cls: type[TrueHeartError]) -> None:
    assert issubclass(cls, TrueHeartError)
    assert getattr(trueheart_core, cls.__name__) is cls


def test_validation_error_message() -> None:
    error = ValidationError("limit", "must be from 1 through 100")
    assert str(error) == "limit: must be from 1 through 100"
    assert error.args == ("limit: must be from 1 through 100",)
    assert vars(error) == {}


@pytest.mark.parametrize(("cls", "prefix"), ENTITY_ERRORS, ids=lambda v: getattr(v, "__name__", v))
def test_entity_error_messages(cls: type[TrueHeartError], prefix: str) -> None:
    error = cls("mem-1")  # type: ignore[call-arg]
    assert str(error) == f"{prefix}: mem-1"
    assert error.args == (f"{prefix}: mem-1",)
    assert vars(error) == {}
    assert not hasattr(error, "entity_id")


@pytest.mark.parametrize(
    ("cls", "prefix"), DIAGNOSTIC_ERRORS, ids=lambda v: getattr(v, "__name__", v)
)
def test_diagnostic_error_messages(cls: type[TrueHeartError], prefix: str) -> None:
    error = cls("event ingest failed")  # type: ignore[call-arg]
    assert str(error) == f"{prefix}: event ingest failed"
    assert error.args == (f"{prefix}: event ingest failed",)
    assert vars(error) == {}


def test_busy_and_corruption_are_siblings() -> None:
    assert not issubclass(RepositoryBusy, RepositoryCorruption)
    assert not issubclass(RepositoryCorruption, RepositoryBusy)
    busy = RepositoryBusy("memory recall failed")
    assert type(busy) is RepositoryBusy
    assert not isinstance(busy, RepositoryCorruption)
    assert not isinstance(RepositoryCorruption("x"), RepositoryBusy)


def test_read_only_is_neither_busy_nor_corruption() -> None:
    assert not issubclass(RepositoryReadOnly, (RepositoryBusy, RepositoryCorruption))
    assert not issubclass(RepositoryBusy, RepositoryReadOnly)
    assert not issubclass(RepositoryCorruption, RepositoryReadOnly)


def test_entity_errors_are_distinct_classes() -> None:
    classes = [cls for cls, _ in ENTITY_ERRORS]
    for cls in classes:
        for other in classes:
            if cls is not other:
                assert not issubclass(cls, other)
        assert not issubclass(cls, ValidationError)


def test_translated_datetime_error_is_not_chained() -> None:
    extreme = datetime.max.replace(tzinfo=timezone(-timedelta(hours=23, minutes=59)))
    with pytest.raises(ValidationError) as info:
        SourceRef("s", "t", extreme, TrustLevel.OBSERVED)
    assert str(info.value) == "occurred_at: must be a representable datetime"
    assert_not_chained(info.value)


def test_translated_unicode_error_is_not_chained_and_hides_the_value() -> None:
    with pytest.raises(ValidationError) as info:
        Scope("secret-tenant-\ud800", "owner", "subject")
    assert str(info.value) == "tenant_id: must be valid UTF-8"
    assert_not_chained(info.value)
    assert not isinstance(info.value, UnicodeError)


def test_validation_messages_never_echo_the_value() -> None:
    with pytest.raises(
        ValidationError, match=re.escape("tenant_id: must be at most 128 characters")
    ):
        Scope("secret" * 30, "owner", "subject")
    try:
        Scope("secret" * 30, "owner", "subject")
    except ValidationError as error:
        assert "secret" not in str(error)
