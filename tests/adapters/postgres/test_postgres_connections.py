"""The pool's connections: sessions the server ended are replaced before calls see
them, and the ``options`` of the caller's URL reach every session."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs the postgres extra (psycopg)")
pytest.importorskip("psycopg_pool", reason="needs the postgres extra")

from conformance_builders import SCOPE, event  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402

from trueheart_core import (  # noqa: E402
    EntityNotFound,
    PostgresRepository,
    RepositoryUnavailable,
    TrueHeart,
)


@pytest.fixture
def conninfo(postgres_cluster: Any) -> Iterator[str]:
    url: str = postgres_cluster.create_database()
    yield url
    postgres_cluster.drop_database(url)


def _terminate_others(conninfo: str) -> int:
    with psycopg.connect(conninfo, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


def test_after_the_server_ends_every_session_the_next_call_works(conninfo: str) -> None:
    repository = PostgresRepository(conninfo, schema="s1", max_connections=4, connect_timeout=2)
    with TrueHeart(repository) as service:
        service.ingest_event(event("e0"))
        barrier = threading.Barrier(4)

        def warm() -> None:
            # Four units of work at once: the pool holds four connections, all just used.
            with repository.unit_of_work("stats", write=False):
                barrier.wait()

        threads = [threading.Thread(target=warm) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert _terminate_others(conninfo) == 4
        time.sleep(0.05)
        with contextlib.suppress(RepositoryUnavailable):
            service.verify_integrity(SCOPE)  # the call that finds its session ended may fail
        for _ in range(3):
            service.verify_integrity(SCOPE)


def _setting(repository: PostgresRepository, name: str) -> str:
    pool = repository._pool
    assert pool is not None
    with pool.connection() as conn:
        row = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()
    assert row is not None
    return str(row[0])


def test_the_options_of_the_url_reach_every_session(conninfo: str) -> None:
    url = make_conninfo(
        conninfo,
        options="-c work_mem=7777kB -c application_name=from\\ the\\ url "
        "-c statement_timeout=123s -c search_path=elsewhere",
    )
    with PostgresRepository(url, schema="s1", statement_timeout=9.0) as repository:
        TrueHeart(repository).ingest_event(event("e1"))
        assert _setting(repository, "work_mem") == "7777kB"
        assert _setting(repository, "application_name") == "from the url"
        # Where the URL and the library set the same parameter, the library's wins.
        assert _setting(repository, "statement_timeout") == "9s"
        assert _setting(repository, "search_path") == "s1"
        assert _setting(repository, "lock_timeout") == "5s"


def test_pgoptions_reach_every_session_when_the_url_has_no_options(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGOPTIONS", "-c work_mem=6666kB -c lock_timeout=77s")
    with PostgresRepository(conninfo, schema="s1") as repository:
        TrueHeart(repository).ingest_event(event("e1"))
        assert _setting(repository, "work_mem") == "6666kB"
        assert _setting(repository, "lock_timeout") == "5s"  # the library's own wins
    # The URL's own options replace the variable, as in libpq.
    url = make_conninfo(conninfo, options="-c work_mem=5555kB")
    with PostgresRepository(url, schema="s1") as repository:
        assert _setting(repository, "work_mem") == "5555kB"


def test_the_keepalive_parameters_of_the_url_reach_libpq(conninfo: str) -> None:
    url = make_conninfo(conninfo, keepalives_idle="7", tcp_user_timeout="9000")
    with PostgresRepository(url, schema="s1") as repository:
        pool = repository._pool
        assert pool is not None
        with pool.connection() as conn:
            parameters = conn.info.get_parameters()
    assert parameters.get("keepalives_idle") == "7"
    assert parameters.get("tcp_user_timeout") == "9000"


def test_a_read_a_failed_unit_left_unfinished_never_reaches_a_later_unit(
    conninfo: str,
) -> None:
    # A unit that fails while it walks a server-side cursor leaves the reader suspended;
    # whenever that reader is finalised (by the garbage collector, at any allocation of a
    # later call on the same connection), closing it must not send a CLOSE into the
    # transaction of whichever unit holds the connection then.
    repository = PostgresRepository(conninfo, schema="s1", max_connections=1)
    key = (SCOPE.tenant_id, SCOPE.owner_id, SCOPE.subject_id)
    with TrueHeart(repository) as service:
        service.ingest_events([event(f"e{i}") for i in range(3)])
        left: list[Iterator[tuple[Any, ...]]] = []
        with (
            pytest.raises(EntityNotFound),
            repository.unit_of_work("stats", write=False) as uow,
        ):
            rows = uow.session.stream("SELECT event_id FROM raw_events")
            next(rows)
            left.append(rows)
            raise EntityNotFound("e9")
        with repository.unit_of_work("stats", write=False) as uow:
            assert set(uow.events.get(key, ["e0"])) == {"e0"}
            left.pop().close()  # the reader's cleanup, inside this unit's transaction
            assert set(uow.events.get(key, ["e1"])) == {"e1"}
        service.ingest_event(event("e3"))
        assert service.verify_integrity(SCOPE).ok
