"""Shared fixtures, and the adapter configurations the conformance suite runs on.

The conformance suite (``tests/conformance/``) is backend-neutral: its tests take the
``repository`` fixture (or ``service``, built on it), which runs them once per adapter
configuration in ``CONFIGURATIONS``. A configuration is a small object: a name, how to
make a fresh target, how to open a repository on a target (optionally read-only), and
where a backup goes and how to open it. A test that needs an ability some backends lack
says so with ``@pytest.mark.requires(Capability.X, ...)``; it is skipped when the
repository at hand does not declare every named capability. Tests never ask which
configuration or adapter type they run on.

Fixtures for the conformance suite:

* ``repository``: an open repository on a fresh target, closed after the test;
* ``service``: a ``TrueHeart`` over ``repository`` with the fixed clock ``clock``;
* ``reopen(read_only=False)``: a new repository on the same target as ``repository``
  (the test is skipped unless the repository is ``Capability.PERSISTENT``; a read-only
  reopen also needs ``requires(Capability.READ_ONLY_OPEN)``);
* ``fresh_repository()``: a repository on another fresh target of the same configuration;
* ``backup_target``: an absolute target for ``TrueHeart.backup`` that does not exist yet,
  and ``open_backup(target, read_only=False)``: a repository on a backup.

Every repository these fixtures open is closed when the test ends. To run the suite on
another backend, add an ``AdapterConfiguration`` to ``CONFIGURATIONS``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import pytest

import postgres_configuration
from trueheart_core import SQLiteRepository, TrueHeart
from trueheart_core.ports import Capability, Repository

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)


class Opener(Protocol):
    """Opens a new repository on a target, for writing or (``read_only=True``) reading."""

    def __call__(self, target: str, *, read_only: bool = False) -> Repository: ...


@dataclass(frozen=True)
class AdapterConfiguration:
    """One backend with the settings the conformance suite runs it with.

    ``new_target(workspace)`` makes a fresh, empty target (``workspace`` is the test's
    own temporary directory, for backends that keep files) and removes it when the
    context ends; ``open(target, read_only=...)`` opens a new repository on a target;
    ``backup_target(workspace)`` names a target for ``TrueHeart.backup`` that does not
    exist yet, and ``open_backup`` opens the store a backup wrote there.
    """

    name: str
    new_target: Callable[[Path], AbstractContextManager[str]]
    open: Opener
    backup_target: Callable[[Path], str]
    open_backup: Opener


_serial = itertools.count(1)


def _numbered(workspace: Path, stem: str) -> str:
    """An absolute path in ``workspace`` that no other call returned."""
    return str((workspace / f"{stem}-{next(_serial)}.db").resolve())


@contextlib.contextmanager
def _sqlite_file_target(workspace: Path) -> Iterator[str]:
    yield _numbered(workspace, "store")  # the test's temporary directory is removed later


@contextlib.contextmanager
def _sqlite_memory_target(workspace: Path) -> Iterator[str]:
    yield ":memory:"  # every open of ":memory:" is a new, empty store


def _sqlite_open(target: str, *, read_only: bool = False) -> SQLiteRepository:
    return SQLiteRepository(target, read_only=read_only)


SQLITE_FILE = AdapterConfiguration(
    name="sqlite-file",
    new_target=_sqlite_file_target,
    open=_sqlite_open,
    backup_target=lambda workspace: _numbered(workspace, "backup"),
    open_backup=_sqlite_open,
)
SQLITE_MEMORY = AdapterConfiguration(
    name="sqlite-memory",
    new_target=_sqlite_memory_target,
    open=_sqlite_open,
    backup_target=lambda workspace: _numbered(workspace, "backup"),
    open_backup=_sqlite_open,
)

POSTGRES = AdapterConfiguration(
    name="postgres",
    new_target=postgres_configuration.new_target,
    open=postgres_configuration.open_target,  # type: ignore[arg-type]
    backup_target=lambda workspace: _numbered(workspace, "backup"),
    open_backup=_sqlite_open,
)

CONFIGURATIONS = (SQLITE_FILE, SQLITE_MEMORY, POSTGRES)


@pytest.fixture(scope="session", autouse=True)
def _sigint_reaches_children() -> Iterator[None]:
    """Commands the tests start and interrupt with SIGINT get the signal's default
    action (Python turns it into ``KeyboardInterrupt``), even when the test run itself
    ignores SIGINT, as a run started in the background by a shell without job control
    does: an ignored signal stays ignored in every child, a handled one does not."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture(scope="session", autouse=True)
def _postgres_server() -> Iterator[None]:
    """Stops the session's PostgreSQL server (started on first use) when tests end."""
    yield
    postgres_configuration.stop()


@pytest.fixture
def postgres_cluster() -> postgres_configuration.postgres_cluster.Cluster:
    """The session's PostgreSQL server (skips the test, with the reason, without one)."""
    return postgres_configuration.cluster()


@pytest.fixture
def own_cluster() -> Iterator[postgres_configuration.postgres_cluster.Cluster]:
    """A throwaway PostgreSQL cluster for one test alone (its server may be killed or
    stopped), with the server's durable defaults; skips without server binaries, or when
    the environment names the server to use."""
    cluster_module = postgres_configuration.postgres_cluster
    if cluster_module.URL_VARIABLE in os.environ:
        pytest.skip("the server is named by the environment: it cannot be stopped here")
    reason = cluster_module.unavailable()
    if reason:
        pytest.skip(reason)
    # Durable: with synchronous_commit off (the test cluster's setting) a commit returns
    # before its WAL record leaves the server's memory, and a crash may lose it.
    cluster = cluster_module.start(durable=True)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=CONFIGURATIONS, ids=[c.name for c in CONFIGURATIONS])
def adapter_configuration(request: pytest.FixtureRequest) -> AdapterConfiguration:
    """The adapter configuration this test runs on (for the fixtures below only)."""
    configuration: AdapterConfiguration = request.param
    return configuration


@pytest.fixture
def _opened() -> Iterator[list[Repository]]:
    """Every repository the fixtures open for one test, closed when it ends."""
    opened: list[Repository] = []
    yield opened
    for repository in reversed(opened):
        repository.close()


@pytest.fixture
def repository_target(adapter_configuration: AdapterConfiguration, tmp_path: Path) -> Iterator[str]:
    """The target of the ``repository`` fixture."""
    with adapter_configuration.new_target(tmp_path) as target:
        yield target


@pytest.fixture
def repository(
    adapter_configuration: AdapterConfiguration, repository_target: str, _opened: list[Repository]
) -> Repository:
    """One repository per adapter configuration, closed after the test."""
    repo = adapter_configuration.open(repository_target)
    _opened.append(repo)
    return repo


def _missing(repository: Repository, wanted: tuple[Capability, ...]) -> list[Capability]:
    return [capability for capability in wanted if capability not in repository.capabilities]


def _skip_message(missing: list[Capability]) -> str:
    return "needs capability: " + ", ".join(capability.value for capability in missing)


@pytest.fixture(autouse=True)
def _capability_gate(request: pytest.FixtureRequest) -> None:
    """The ``requires`` marker: skip unless ``repository`` has every named capability."""
    wanted: list[Capability] = []
    for marker in request.node.iter_markers("requires"):
        if not marker.args or not all(isinstance(a, Capability) for a in marker.args):
            pytest.fail("requires() takes one or more Capability members", pytrace=False)
        wanted.extend(marker.args)
    if not wanted:
        return
    if "repository" not in request.fixturenames:
        pytest.fail("a test marked requires() must take the repository fixture", pytrace=False)
    missing = _missing(request.getfixturevalue("repository"), tuple(wanted))
    if missing:
        pytest.skip(_skip_message(missing))


@pytest.fixture
def reopen(
    adapter_configuration: AdapterConfiguration,
    repository_target: str,
    repository: Repository,
    _opened: list[Repository],
) -> Callable[..., Repository]:
    """``reopen(read_only=False)``: a new repository on the target of ``repository``.
    Skips the test unless the repository is persistent."""
    missing = _missing(repository, (Capability.PERSISTENT,))
    if missing:
        pytest.skip(_skip_message(missing))

    def reopen_(*, read_only: bool = False) -> Repository:
        if read_only and _missing(repository, (Capability.READ_ONLY_OPEN,)):
            pytest.fail("mark the test requires(Capability.READ_ONLY_OPEN)", pytrace=False)
        repo = adapter_configuration.open(repository_target, read_only=read_only)
        _opened.append(repo)
        return repo

    return reopen_


@pytest.fixture
def fresh_repository(
    adapter_configuration: AdapterConfiguration, tmp_path: Path
) -> Iterator[Callable[[], Repository]]:
    """``fresh_repository()``: a repository on a new, empty target of the configuration
    of ``repository``; each call makes another target."""
    made: list[Repository] = []
    with contextlib.ExitStack() as targets:

        def fresh() -> Repository:
            target = targets.enter_context(adapter_configuration.new_target(tmp_path))
            repo = adapter_configuration.open(target)
            made.append(repo)
            return repo

        yield fresh
        for repo in reversed(made):  # closed before their targets are removed
            repo.close()


@pytest.fixture
def backup_target(adapter_configuration: AdapterConfiguration, tmp_path: Path) -> str:
    """An absolute target for ``TrueHeart.backup`` that does not exist yet."""
    target = adapter_configuration.backup_target(tmp_path)
    assert not os.path.lexists(target)
    return target


@pytest.fixture
def open_backup(
    adapter_configuration: AdapterConfiguration, _opened: list[Repository]
) -> Callable[..., Repository]:
    """``open_backup(target, read_only=False)``: a repository on the store a backup
    wrote at ``target``."""

    def open_(target: str, *, read_only: bool = False) -> Repository:
        repo = adapter_configuration.open_backup(target, read_only=read_only)
        _opened.append(repo)
        return repo

    return open_


@pytest.fixture
def clock() -> Callable[[], datetime]:
    """A fixed service clock at 2026-08-13T12:00Z."""
    return lambda: NOW


@pytest.fixture
def service(repository: Repository, clock: Callable[[], datetime]) -> TrueHeart:
    """A TrueHeart service over the parametrised repository with a fixed clock."""
    return TrueHeart(repository, clock=clock)
