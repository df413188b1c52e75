"""PostgreSQL driver errors become library errors at the adapter's one choke point
(``adapters.postgres.connection.translate``), and the mapping is total: every exception
class psycopg defines, with every SQLSTATE it knows, becomes a documented library error
whose message quotes nothing of the driver's."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")
psycopg_pool = pytest.importorskip("psycopg_pool", reason="needs the postgres extra")

from psycopg import errors as pg_errors  # noqa: E402

from trueheart_core import (  # noqa: E402
    RepositoryBusy,
    RepositoryConflict,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    RepositoryUnavailable,
    TrueHeartError,
    ValidationError,
)
from trueheart_core.adapters.postgres.connection import translate, translated  # noqa: E402


def _driver_classes() -> list[type[BaseException]]:
    found = {
        member
        for _, member in inspect.getmembers(pg_errors, inspect.isclass)
        if issubclass(member, psycopg.Error)
    }
    found.update(
        member
        for _, member in inspect.getmembers(psycopg, inspect.isclass)
        if issubclass(member, psycopg.Error)
    )
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


DRIVER_CLASSES = _driver_classes()

EXPECTED_BY_STATE: dict[str, type[TrueHeartError]] = {
    "40001": RepositoryConflict,
    "40P01": RepositoryConflict,
    "23505": RepositoryConflict,
    "26000": RepositoryConflict,
    "55P03": RepositoryBusy,
    "57014": RepositoryBusy,
    "53300": RepositoryBusy,
    "25006": RepositoryReadOnly,
    "42501": RepositoryReadOnly,
    "53100": RepositoryFull,
    "53200": RepositoryFull,
    "08006": RepositoryUnavailable,
    "08001": RepositoryUnavailable,
    "57P01": RepositoryUnavailable,
    "57P02": RepositoryUnavailable,
    "22021": RepositoryCorruption,
    "XX001": RepositoryCorruption,
}


def _instance(cls: type[BaseException]) -> BaseException:
    return cls("driver text quoting a secret body")


def test_psycopg_defines_many_error_classes() -> None:
    assert len(DRIVER_CLASSES) > 200  # every SQLSTATE class psycopg knows


@pytest.mark.parametrize("cls", DRIVER_CLASSES, ids=lambda c: c.__qualname__)
def test_every_driver_error_becomes_a_library_error_without_its_text(
    cls: type[BaseException],
) -> None:
    error = _instance(cls)
    failure = translated(error, "memory read failed")
    assert type(failure) in (
        RepositoryBusy,
        RepositoryConflict,
        RepositoryCorruption,
        RepositoryFull,
        RepositoryReadOnly,
        RepositoryUnavailable,
    )
    assert "secret" not in str(failure) and str(failure).endswith("memory read failed")
    state = getattr(cls, "sqlstate", None)
    if state in EXPECTED_BY_STATE:
        assert type(failure) is EXPECTED_BY_STATE[state]


@pytest.mark.parametrize("state", sorted(EXPECTED_BY_STATE))
def test_the_documented_states_have_their_classes(state: str) -> None:
    cls = pg_errors.lookup(state)
    assert type(translated(_instance(cls), "x")) is EXPECTED_BY_STATE[state]


def test_errors_without_a_state() -> None:
    assert type(translated(psycopg.OperationalError("no route"), "x")) is RepositoryUnavailable
    assert type(translated(psycopg.InterfaceError("closed"), "x")) is RepositoryUnavailable
    assert type(translated(psycopg.DataError("bad"), "x")) is RepositoryCorruption
    assert type(translated(psycopg_pool.PoolTimeout("wait"), "x")) is RepositoryBusy
    assert type(translated(psycopg_pool.PoolClosed("gone"), "x")) is RepositoryUnavailable
    assert type(translated(RuntimeError("other"), "x")) is RepositoryCorruption


@pytest.mark.parametrize(
    "raised",
    [
        pg_errors.SerializationFailure("a secret body"),
        psycopg.OperationalError("a secret body"),
        UnicodeDecodeError("utf-8", b"a secret body \xff", 14, 15, "invalid start byte"),
        TypeError("a secret body"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_translate_keeps_no_driver_text_in_the_chain(raised: BaseException) -> None:
    with pytest.raises(TrueHeartError) as caught, translate("memory read failed"):
        raise raised
    assert caught.value.__cause__ is None
    context = caught.value.__context__
    assert context is None or (
        context.args == () and "secret" not in repr(getattr(context, "object", ""))
    )


def test_library_errors_pass_through_unchanged() -> None:
    original = RepositoryCorruption("invalid scope record")
    with pytest.raises(RepositoryCorruption) as caught, translate("memory read failed"):
        raise original
    assert caught.value is original


# --- the same on a live server --------------------------------------------------------


@pytest.fixture
def conninfo(postgres_cluster: object) -> Iterator[str]:
    url = postgres_cluster.create_database()  # type: ignore[attr-defined]
    yield url
    postgres_cluster.drop_database(url)  # type: ignore[attr-defined]


def test_a_real_serialization_failure_is_a_conflict(conninfo: str) -> None:
    with psycopg.connect(conninfo, autocommit=True) as setup:
        setup.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
        setup.execute("INSERT INTO t VALUES (1, 0), (2, 0)")
    first = psycopg.connect(conninfo, autocommit=True)
    second = psycopg.connect(conninfo, autocommit=True)
    try:
        for conn in (first, second):
            conn.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        first.execute("SELECT sum(v) FROM t").fetchone()
        second.execute("SELECT sum(v) FROM t").fetchone()
        first.execute("UPDATE t SET v = 1 WHERE k = 1")
        second.execute("UPDATE t SET v = 1 WHERE k = 2")
        first.execute("COMMIT")
        with pytest.raises(RepositoryConflict), translate("event ingest failed"):
            second.execute("COMMIT")
    finally:
        first.close()
        second.close()


def test_a_real_lock_timeout_is_busy(conninfo: str) -> None:
    with psycopg.connect(conninfo, autocommit=True) as setup:
        setup.execute("CREATE TABLE t (k int PRIMARY KEY)")
        setup.execute("INSERT INTO t VALUES (1)")
    holder = psycopg.connect(conninfo, autocommit=True)
    waiter = psycopg.connect(conninfo, autocommit=True)
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT * FROM t FOR UPDATE")
        waiter.execute("SET lock_timeout = '100ms'")
        waiter.execute("BEGIN")
        with pytest.raises(RepositoryBusy) as caught, translate("governance transaction failed"):
            waiter.execute("UPDATE t SET k = 2")
        assert type(caught.value) is RepositoryBusy
    finally:
        holder.close()
        waiter.close()


def test_a_connection_killed_by_the_server_is_unavailable(conninfo: str) -> None:
    victim = psycopg.connect(conninfo, autocommit=True)
    (pid,) = victim.execute("SELECT pg_backend_pid()").fetchone() or (0,)
    with psycopg.connect(conninfo, autocommit=True) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
    try:
        with pytest.raises(RepositoryUnavailable), translate("memory read failed"):
            victim.execute("SELECT 1")
    finally:
        victim.close()


@pytest.mark.parametrize(
    "url",
    ["postgresql://app:s3cret@db\udcff.internal/agents", "host=db\ud800 password=s3cret"],
)
def test_a_connection_string_that_is_not_utf8_is_refused_without_quoting_it(url: str) -> None:
    from trueheart_core import PostgresRepository
    from trueheart_core.stores import open_repository

    # open_repository takes only the URL form for a server; other text is a path
    for opening in (PostgresRepository, *([open_repository] if "://" in url else [])):
        with pytest.raises(ValidationError) as caught:
            opening(url)
        assert str(caught.value) == "conninfo: must be a libpq connection string or URL"
        assert caught.value.__context__ is None and caught.value.__cause__ is None


@pytest.mark.parametrize(
    "field", ["connect_timeout", "lock_timeout", "statement_timeout", "probe_after"]
)
@pytest.mark.parametrize(
    "value", [10**400, -(10**400), float("inf"), float("nan")], ids=["huge", "-huge", "inf", "nan"]
)
def test_a_timeout_too_large_for_a_float_is_refused_before_connecting(
    field: str, value: float
) -> None:
    from trueheart_core import PostgresRepository

    with pytest.raises(ValidationError, match=f"^{field}: must be ") as caught:
        PostgresRepository("postgresql://app@127.0.0.1:1/agents", **{field: value})
    assert caught.value.__cause__ is None and caught.value.__context__ is None


@pytest.mark.parametrize("schema", ["1store", "9", "Store", "my-store", "", "s" * 64, "pg_x"])
def test_a_schema_name_outside_the_rule_is_refused_before_connecting(schema: str) -> None:
    from trueheart_core import PostgresRepository
    from trueheart_core.adapters.postgres.repository import SCHEMA_NAME_RULE

    # Port 1 answers nobody: a name that passed the check would fail to connect instead.
    with pytest.raises(ValidationError) as caught:
        PostgresRepository("postgresql://app@127.0.0.1:1/agents", schema=schema)
    assert str(caught.value) == f"schema: {SCHEMA_NAME_RULE}"
    assert "digit" in SCHEMA_NAME_RULE


@pytest.mark.parametrize("schema", ["store_1", "_store", "s" * 63])
def test_a_schema_name_within_the_rule_gets_as_far_as_connecting(schema: str) -> None:
    from trueheart_core import PostgresRepository, RepositoryUnavailable

    with pytest.raises(RepositoryUnavailable):
        PostgresRepository("postgresql://app@127.0.0.1:1/agents", schema=schema, connect_timeout=1)
