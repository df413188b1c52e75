"""The service runs a whole call again when its unit of work lost a race to a concurrent
writer (``RepositoryConflict``), and passes the conflict on after a bounded number of
attempts. The conflict is injected at the commit of a real SQLite store's units, which
rolls the unit back as a server would."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from trueheart_core import RepositoryConflict, SQLiteRepository, TrueHeart
from trueheart_core.ports import Capability, Operation, Repository
from trueheart_core.service import retry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
from conformance_builders import SCOPE, event

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)


class _ConflictingCommit:
    """A unit of work whose commit loses the race: it raises instead of committing."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def commit(self) -> None:
        raise RepositoryConflict("event ingest failed")


class _Racing:
    """A repository whose first ``conflicts`` writing units conflict at commit."""

    def __init__(self, inner: SQLiteRepository, conflicts: int) -> None:
        self._inner = inner
        self.conflicts = conflicts
        self.units = 0

    @property
    def capabilities(self) -> frozenset[Capability]:
        return self._inner.capabilities

    @contextlib.contextmanager
    def unit_of_work(
        self, operation: Operation, *, write: bool, erasing: bool = False
    ) -> Iterator[Any]:
        with self._inner.unit_of_work(operation, write=write, erasing=erasing) as uow:
            if write:
                self.units += 1
            if write and self.conflicts > 0:
                self.conflicts -= 1
                yield _ConflictingCommit(uow)
            else:
                yield uow

    def close(self) -> None:
        self._inner.close()


def _racing(tmp_path: Path, conflicts: int) -> tuple[_Racing, TrueHeart]:
    racing = _Racing(SQLiteRepository(tmp_path / "store.db"), conflicts)
    repository: Repository = racing
    return racing, TrueHeart(repository, clock=lambda: NOW)


def test_a_call_that_lost_a_race_runs_again_and_is_stored_once(tmp_path: Path) -> None:
    racing, service = _racing(tmp_path, conflicts=3)
    receipt = service.ingest_event(event("evt-1"))
    assert racing.units == 4 and racing.conflicts == 0
    assert service.get_receipt(SCOPE, "evt-1") == receipt
    assert [a.action for a in service.audit(SCOPE)] == ["ingest"]
    assert service.stats().events == 1
    assert service.verify_integrity().ok
    service.close()


def test_the_conflict_leaves_the_call_after_the_last_attempt(tmp_path: Path) -> None:
    racing, service = _racing(tmp_path, conflicts=10_000)
    with pytest.raises(RepositoryConflict, match="repository busy: event ingest failed"):
        service.ingest_event(event("evt-1"))
    assert racing.units == retry.ATTEMPTS
    assert service.stats().events == 0 and service.audit(SCOPE) == ()
    service.close()


def test_export_and_import_are_not_run_again(tmp_path: Path) -> None:
    source = TrueHeart(SQLiteRepository(tmp_path / "source.db"), clock=lambda: NOW)
    source.ingest_event(event("evt-1"))
    out = io.StringIO()
    source.export_store(out)
    source.close()
    racing, service = _racing(tmp_path, conflicts=1)
    with pytest.raises(RepositoryConflict):
        service.import_store(out.getvalue().splitlines(keepends=True))
    assert racing.units == 1
    assert service.stats().events == 0
    service.close()
