"""A SQLite store whose file is taken from under an open repository, and a new store
where a removed store's side files were left: no call reports a write it did not make,
and no store takes another's pages for its own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from storage_faults import NOW, RETENTION, SCOPE

from trueheart_core import (
    RawEventDraft,
    RepositoryUnavailable,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.cli import main

GONE = (
    "repository unavailable: the database file was removed or replaced since it was "
    "opened: close the repository and open the path again"
)


def _event(index: int) -> RawEventDraft:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    return RawEventDraft(f"e{index}", SCOPE, source, f"body number {index}", RETENTION)


@pytest.mark.parametrize(
    "how",
    [
        "file removed",
        "directory removed",
        "file replaced",
        "file renamed aside, then replaced",
        "file kept under another link, then replaced",
    ],
)
def test_no_call_succeeds_on_a_file_no_longer_at_its_path(tmp_path: Path, how: str) -> None:
    directory = tmp_path / "data"
    path = directory / "store.db"
    service = TrueHeart(SQLiteRepository(path), clock=lambda: NOW)
    service.ingest_event(_event(0))
    service.backup(str(tmp_path / "copy.db"))
    service.ingest_event(_event(1))
    if how == "file removed":
        path.unlink()
    elif how == "directory removed":
        shutil.rmtree(directory)
    elif how == "file replaced":  # an operator restores a backup over the store in use
        os.replace(tmp_path / "copy.db", path)
    elif how == "file renamed aside, then replaced":  # the old file keeps a name
        os.rename(path, directory / "store.old")
        os.replace(tmp_path / "copy.db", path)
    else:
        os.link(path, directory / "store.bak")
        os.replace(tmp_path / "copy.db", path)
    for call in (
        lambda: service.ingest_event(_event(2)),
        service.stats,
        lambda: service.backup(str(tmp_path / "later.db")),
    ):
        with pytest.raises(RepositoryUnavailable) as caught:
            call()
        assert str(caught.value) == GONE
    service.close()
    assert not (tmp_path / "later.db").exists()
    if how == "file removed":
        # The removed store's side files stay at the path, and no new store takes them.
        with pytest.raises(ValidationError, match="has a -wal, -shm or -journal file"):
            SQLiteRepository(path)


def _crash_with_side_files(path: Path) -> None:
    """A process that writes a store and is killed, leaving its WAL and shared memory."""
    code = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from storage_faults import NOW, RETENTION, SCOPE
        from trueheart_core import RawEventDraft, SourceRef, SQLiteRepository, TrueHeart, TrustLevel
        service = TrueHeart(SQLiteRepository({str(path)!r}), clock=lambda: NOW)
        for n in range(5):
            source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
            service.ingest_event(RawEventDraft(f"e{{n}}", SCOPE, source, "old secret", RETENTION))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_a_new_store_refuses_the_side_files_of_a_removed_one(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _crash_with_side_files(path)
    path.unlink()  # the operator resets the store
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["store.db-shm", "store.db-wal"]
    with pytest.raises(ValidationError, match=r"^path: has a -wal, -shm or -journal file"):
        SQLiteRepository(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == left  # nothing made, nothing taken
    for name in left:
        (tmp_path / name).unlink()
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as fresh:
        assert fresh.stats().events == 0 and fresh.verify_integrity().ok


def test_an_import_refuses_the_side_files_of_a_removed_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source.db"
    with TrueHeart(SQLiteRepository(source), clock=lambda: NOW) as service:
        service.ingest_event(_event(0))
    export = tmp_path / "store.jsonl"
    assert main(["export", str(source), "-o", str(export)]) == 0
    path = tmp_path / "store.db"
    _crash_with_side_files(path)
    path.unlink()
    capsys.readouterr()
    assert main(["import", str(path), str(export)]) == 1
    assert "has a -wal, -shm or -journal file beside it" in capsys.readouterr().err
    assert not path.exists()
