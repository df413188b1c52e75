"""Healthy stores on odd storage get their own errors: read-only files, directories and
media serve reads; a full disk is ``RepositoryFull``; paths SQLite cannot open are a
``ValidationError`` at once (a FIFO never blocks); errors keep no body in their chains.

Tests that need an unprivileged user run in a forked child that drops to ``nobody``
(CI runs as root, for whom file permissions stop nothing). Tests that need a small or
read-only file system mount a tmpfs, and skip when this machine does not allow it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from storage_faults import NOBODY, NOW, OTHER, RETENTION, SCOPE, body, in_child, populate

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    RawEventDraft,
    RecallQuery,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
    ValidationError,
)


def _reads(path: Path) -> tuple[int, int, bool, int]:
    """Every kind of read, then every kind of write must be refused as read-only."""
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        recalled = len(service.recall(RecallQuery(SCOPE, NOW)))
        found = service.search(SearchQuery(SCOPE, "hiking lake", NOW)).matched
        report = service.verify_integrity()
        audit = len(service.audit(SCOPE))
        service.stats(SCOPE)
        source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
        writes = (
            lambda: service.ingest_event(RawEventDraft("new", SCOPE, source, "x", RETENTION)),
            lambda: service.erase_subject(SCOPE, occurred_at=NOW),
            lambda: service.expire_raw_content(as_of=NOW + timedelta(hours=2)),
            service.rebuild_indexes,
        )
        for write in writes:
            with pytest.raises(RepositoryReadOnly):
                write()
    return recalled, found, report.ok, audit


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory outside the root-only pytest base, so that ``nobody`` can reach it."""
    directory = Path(tempfile.mkdtemp(prefix="trueheart-shared-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        directory.chmod(0o755)
        shutil.rmtree(directory)


@pytest.mark.parametrize("what", ["directory", "file"])
def test_a_store_this_user_cannot_write_serves_reads(shared_dir: Path, what: str) -> None:
    path = shared_dir / "store.db"
    populate(path)
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        expected = (
            len(service.recall(RecallQuery(SCOPE, NOW))),
            service.search(SearchQuery(SCOPE, "hiking lake", NOW)).matched,
            True,
            len(service.audit(SCOPE)),
        )
    assert not Path(f"{path}-wal").exists()
    path.chmod(0o644 if what == "directory" else 0o444)
    if what == "directory":
        shared_dir.chmod(0o555)
    else:
        path.parent.chmod(0o777)
    before = path.read_bytes()
    kind, value = in_child(lambda: _reads(path), uid=NOBODY)
    assert (kind, value) == ("ok", expected)
    assert path.read_bytes() == before
    assert sorted(os.listdir(shared_dir)) == ["store.db"]


def test_an_explicit_read_only_open_of_a_missing_file_in_a_read_only_directory(
    shared_dir: Path,
) -> None:
    shared_dir.chmod(0o555)

    def open_missing() -> object:
        return SQLiteRepository(shared_dir / "absent.db")

    kind, value = in_child(open_missing, uid=NOBODY)
    assert kind == "error"
    assert value[0] == "RepositoryReadOnly"  # type: ignore[index]
    assert os.listdir(shared_dir) == []


def test_a_log_whose_shared_memory_file_cannot_be_made_is_named_not_called_damage(
    shared_dir: Path,
) -> None:
    # SQLite reads a WAL through the index it builds in the shared-memory file beside
    # it: where this user may not create that file, the sound store cannot be read, and
    # saying "corruption" would send its operator to restore a backup.
    path = shared_dir / "store.db"
    populate(path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("CREATE TABLE scratch (x)")  # a commit that stays in the WAL
    writer.execute("DROP TABLE scratch")
    # The writer stays open (its close would copy the log into the file and remove it):
    # the WAL holds a commit and, once its shared-memory file is gone, looks as a log
    # copied without that file, or left by a killed writer, does.
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    assert wal.stat().st_size > 0
    shm.unlink()
    path.chmod(0o644)
    wal.chmod(0o644)
    shared_dir.chmod(0o555)
    kind, value = in_child(lambda: SQLiteRepository(path), uid=NOBODY)
    assert kind == "error"
    assert value == (  # type: ignore[comparison-overlap]
        "ValidationError",
        "path: has a WAL file but no shared-memory file beside it, and this process may "
        "not create one there: open it once as a user who may write its directory",
        True,
    )
    shared_dir.chmod(0o755)
    writer.close()


def test_a_damaged_file_format_version_is_damage_not_a_read_only_store(tmp_path: Path) -> None:
    # A write version above 2 makes SQLite open the file for reading only: every write
    # would be refused as if the file were read-only.
    path = tmp_path / "store.db"
    populate(path)
    with path.open("r+b") as file:
        file.seek(18)
        file.write(bytes([6]))
    with pytest.raises(RepositoryCorruption) as caught:
        SQLiteRepository(path)
    assert str(caught.value) == "repository corruption: invalid database header"


@contextlib.contextmanager
def _tmpfs(size: str) -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="trueheart-tmpfs-"))
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(directory)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip("this machine does not allow mounting a tmpfs")
        try:
            yield directory
        finally:
            subprocess.run(["umount", "-l", str(directory)], check=False)
    finally:
        directory.rmdir()


def test_a_store_on_a_read_only_medium_serves_reads() -> None:
    with _tmpfs("8m") as mount:
        path = mount / "store.db"
        populate(path)
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            recalled = len(service.recall(RecallQuery(SCOPE, NOW)))
        remounted = subprocess.run(
            ["mount", "-o", "remount,ro", str(mount)], capture_output=True, check=False
        )
        if remounted.returncode != 0:
            pytest.skip("this machine does not allow remounting read-only")
        assert _reads(path)[0] == recalled


def _fill(mount: Path) -> Path:
    """Fill the file system to the last byte; returns the filler file."""
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 65536)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 512)
    finally:
        os.close(fd)
    return filler


def _free(filler: Path, amount: int) -> None:
    os.truncate(filler, max(0, filler.stat().st_size - amount))


def _event(index: int, scope: object = SCOPE, size: int = 1) -> RawEventDraft:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    text = body("event", index, scope) * size  # type: ignore[arg-type]
    return RawEventDraft(f"e{index}", scope, source, text, RETENTION)  # type: ignore[arg-type]


def test_a_full_disk_is_repository_full_and_loses_nothing() -> None:
    with _tmpfs("2m") as mount:
        path = mount / "store.db"
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            for index in range(20):
                service.ingest_event(_event(index, size=20))
            filler = _fill(mount)
            failures = []
            for index in range(20, 60):
                try:
                    service.ingest_event(_event(index, size=20))
                except TrueHeartError as error:
                    failures.append(error)
                    break
            assert failures, "the disk never filled"
            (error,) = failures
            assert type(error) is RepositoryFull
            assert str(error).startswith("repository full: ")
            assert error.__context__ is None and error.__cause__ is None
            acknowledged = index
            assert service.get_receipt(SCOPE, "e0").content_available
            filler.unlink()
            service.ingest_event(_event(acknowledged, size=20))
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            for number in range(acknowledged + 1):
                assert service.get_receipt(SCOPE, f"e{number}").content_available
            assert service.verify_integrity().ok


def test_a_compaction_whose_rewrite_has_no_room_says_so_and_finishes_later() -> None:
    with _tmpfs("16m") as mount:
        path = mount / "store.db"
        service = TrueHeart(SQLiteRepository(path), clock=lambda: NOW)
        for index in range(5):
            service.ingest_event(_event(index))
        # The rest of the store belongs to another scope: a rewrite of the file needs
        # far more room than the erasure's own change.
        for index in range(5, 400):
            service.ingest_event(_event(index, OTHER, size=20))
        # Erased in place (no rewrite needed); the compaction then removes the erased
        # rows and rewrites the file.
        service.erase_subject(SCOPE, occurred_at=NOW)
        service.close()
        service = TrueHeart(SQLiteRepository(path), clock=lambda: NOW)
        filler = _fill(mount)
        committed = None
        for _ in range(128):
            _free(filler, 16384)
            try:
                service.compact()
            except RepositoryFull as error:
                if "erasure committed" in str(error):
                    committed = error
                    break
                continue
            pytest.fail("the compaction's rewrite found room: the disk was not full enough")
        assert committed is not None, "the compaction never committed"
        assert str(committed) == (
            "repository full: erasure committed, but scrubbing its bytes from the files "
            "needs free disk space: free space, then make any call or close the repository"
        )
        # Committed: reads go on; erasing calls wait for the rewrite.
        assert service.scopes() == (OTHER,)
        with pytest.raises(RepositoryFull, match="earlier erasure's scrub"):
            service.erase_subject(OTHER, occurred_at=NOW, dry_run=False)
        assert len(service.scopes()) == 1
        filler.unlink()
        service.stats()  # the next call rewrites the file first
        service.close()
        secret = body("event", 0, SCOPE).encode()
        data = b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())
        assert secret not in data
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as reopened:
            assert reopened.verify_integrity().ok


# --- paths SQLite cannot open -------------------------------------------------------------


def test_a_fifo_at_the_path_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    os.mkfifo(path)
    kind, value = in_child(lambda: SQLiteRepository(path), seconds=10)
    assert kind == "error", (kind, value)
    assert value[1] == "path: must be a regular file, not a FIFO, device or socket"  # type: ignore[index]


def test_a_fifo_at_the_wal_path_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    SQLiteRepository(path).close()
    os.mkfifo(f"{path}-wal")
    kind, value = in_child(lambda: SQLiteRepository(path), seconds=10)
    assert kind == "error", (kind, value)
    assert value[1] == "path: must be a regular file, not a FIFO, device or socket"  # type: ignore[index]


def test_a_device_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"^path: must be a regular file"):
        SQLiteRepository("/dev/null")


def test_a_dangling_symbolic_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "store.db").symlink_to(tmp_path / "nowhere.db")
    with pytest.raises(ValidationError, match=r"^path: is a dangling symbolic link$"):
        SQLiteRepository(tmp_path / "store.db")
    assert not (tmp_path / "nowhere.db").exists()


def test_a_symbolic_link_to_a_store_opens_it(tmp_path: Path) -> None:
    SQLiteRepository(tmp_path / "real.db").close()
    (tmp_path / "link.db").symlink_to(tmp_path / "real.db")
    SQLiteRepository(tmp_path / "link.db").close()


def _linked_event(index: int, content: str = "hiking near the lake") -> RawEventDraft:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    return RawEventDraft(f"link-{index}", SCOPE, source, content, RETENTION)


def test_a_symbolic_link_reads_the_log_beside_the_file_it_names(tmp_path: Path) -> None:
    # SQLite keeps the WAL beside the file the link names, not beside the link: sizes,
    # byte searches and the choice of a read-only snapshot look there too.
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "store.db"
    link = tmp_path / "link.db"
    link.symlink_to(real)
    with TrueHeart(SQLiteRepository(real), clock=lambda: NOW) as writer:
        for index in range(6):  # committed, and held in the WAL while the writer is open
            writer.ingest_event(_linked_event(index, f"LINKSECRET-{index} hiking"))
        wal = (tmp_path / "real" / "store.db-wal").stat().st_size
        assert wal > 0
        assert not (tmp_path / "link.db-wal").exists()
        through_link = SQLiteRepository(link)
        with TrueHeart(through_link, clock=lambda: NOW) as service:
            assert service.stats().wal_bytes == wal
            assert through_link.residue([b"LINKSECRET-5"]) == {b"LINKSECRET-5"}
            assert service.stats().events == 6
        # A file nobody may write is read as an immutable snapshot only when no WAL lies
        # beside it: here one does, and what it holds is read.
        os.chmod(real, 0o444)
        try:
            with TrueHeart(SQLiteRepository(link, read_only=True)) as reader:
                assert reader.stats().events == 6
        finally:
            os.chmod(real, 0o600)
    assert not (tmp_path / "link.db-wal").exists() and not (tmp_path / "link.db-shm").exists()


def test_a_store_with_two_names_is_refused(tmp_path: Path) -> None:
    # SQLite keeps a log beside each name of a file: writers through two names would
    # each commit into a log of their own and overwrite each other's pages.
    first = tmp_path / "first.db"
    with TrueHeart(SQLiteRepository(first), clock=lambda: NOW) as service:
        service.ingest_event(_linked_event(0))
        os.link(first, tmp_path / "second.db")
        for name in ("first.db", "second.db"):
            with pytest.raises(ValidationError) as caught:
                SQLiteRepository(tmp_path / name)
            assert str(caught.value).startswith(
                "path: names a file that has other names (hard links)"
            )
        # The repository opened before the second name was made goes on.
        service.ingest_event(_linked_event(1))
        (tmp_path / "second.db").unlink()
    with TrueHeart(SQLiteRepository(first)) as service:
        assert service.stats().events == 2


def test_paths_over_the_length_sqlite_accepts(tmp_path: Path) -> None:
    deep = tmp_path
    while len(str(deep)) < 420:
        deep = deep / ("d" * 60)
    deep.mkdir(parents=True)
    too_long = deep / ("s" * (505 - len(str(deep)) - 1))
    assert len(str(too_long)) == 505
    with pytest.raises(ValidationError, match=r"^path: must be at most 504 bytes long$"):
        SQLiteRepository(too_long)
    new_too_long = deep / ("s" * (482 - len(str(deep)) - 1))
    with pytest.raises(ValidationError, match=r"at most 481 bytes long for a new store$"):
        SQLiteRepository(new_too_long)
    longest_new = deep / ("s" * (481 - len(str(deep)) - 1))
    SQLiteRepository(longest_new).close()
    # An existing store at the limit opens: SQLite accepts 504 bytes.
    at_limit = deep / ("s" * (504 - len(str(deep)) - 1))
    os.rename(longest_new, at_limit)
    SQLiteRepository(at_limit).close()


# --- bodies in exception chains -----------------------------------------------------------


def _chain(error: BaseException) -> list[BaseException]:
    found = []
    seen: BaseException | None = error
    while seen is not None and len(found) < 10:
        found.append(seen)
        seen = seen.__cause__ or seen.__context__
    return found


def test_a_validation_error_for_bad_utf8_keeps_no_body() -> None:
    source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
    with pytest.raises(ValidationError) as caught:
        RawEventDraft("e", SCOPE, source, "SECRET body \udc80", RETENTION)
    assert _chain(caught.value) == [caught.value]
    with pytest.raises(ValidationError) as caught:
        RawEventDraft("e", SCOPE, source, "x", RETENTION, metadata={"k": "SECRET \udc80"})
    assert _chain(caught.value) == [caught.value]


def test_corruption_from_a_malformed_row_keeps_no_body(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "store.db"
    populate(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute('UPDATE memories SET metadata = \'{"k": "SECRET unfinished\'')
    conn.execute("UPDATE raw_events SET trust = 'SECRET trust'")
    conn.close()
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        for call in (
            lambda: service.recall(RecallQuery(SCOPE, NOW)),
            lambda: service.get_memory(SCOPE, "m0"),
            lambda: service.get_receipt(SCOPE, "e0"),
            lambda: service.search(SearchQuery(SCOPE, "hiking", NOW)),
        ):
            with pytest.raises(TrueHeartError) as caught:
                call()
            for error in _chain(caught.value):
                assert "SECRET" not in repr(error) and "SECRET" not in str(error)
            assert caught.value.__context__ is None


def _wait_for(flag: Path) -> None:
    """Wait (at most 10 s) until another process has written ``flag``."""
    for _ in range(2000):
        if flag.exists():
            return
        time.sleep(0.005)


def test_a_file_another_user_may_write_is_read_as_a_store_in_use(shared_dir: Path) -> None:
    """Only where no writer can exist is a file read as an immutable snapshot: a file its
    owner may write (mode 0644) in a directory open to all is read with side files, so
    the owner's later commits are seen."""
    path = shared_dir / "store.db"
    populate(path)
    path.chmod(0o644)
    shared_dir.chmod(0o777)

    def read_while_the_owner_writes() -> tuple[bool, int, int]:
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            before = len(service.audit(SCOPE))
            side = Path(f"{path}-shm").exists()
            # The owner (root, in the parent) writes now; see the flag protocol below.
            (shared_dir / "reader-ready").write_text("1")
            _wait_for(shared_dir / "writer-done")
            after = len(service.audit(SCOPE))
        return side, before, after

    def owner() -> None:
        _wait_for(shared_dir / "reader-ready")
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
            service.ingest_event(RawEventDraft("owner-new", SCOPE, source, "x", RETENTION))
        (shared_dir / "writer-done").write_text("1")

    writer = threading.Thread(target=owner)
    writer.start()
    kind, value = in_child(read_while_the_owner_writes, uid=NOBODY)
    writer.join(timeout=30)
    assert kind == "ok", value
    side, before, after = value  # type: ignore[misc]
    assert side, "read as an immutable snapshot although the owner may write"
    assert after == before + 1


def test_a_snapshot_its_reader_could_not_guard_is_read_again_once_the_file_changed(
    shared_dir: Path,
) -> None:
    """A reader that may not create side files (the directory is its owner's, mode 0755)
    reads the file as an immutable snapshot; when the owner writes (side files appear,
    then the file itself changes), the reader's next call opens it again and sees what
    the owner committed, rather than stale pages."""
    path = shared_dir / "store.db"
    populate(path)
    path.chmod(0o644)
    flags = shared_dir / "flags"  # written by both users; the store's directory is not
    flags.mkdir()
    flags.chmod(0o777)

    def read_while_the_owner_writes() -> tuple[int, int, int, int]:
        with TrueHeart(SQLiteRepository(path, read_only=True), clock=lambda: NOW) as service:
            before = (len(service.audit(SCOPE, limit=100)), service.stats().memories)
            (flags / "reader-ready").write_text("1")
            _wait_for(flags / "writer-done")
            after = (len(service.audit(SCOPE, limit=100)), service.stats().memories)
        return (*before, *after)

    def owner() -> None:
        _wait_for(flags / "reader-ready")
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            source = SourceRef("chat", "chat", NOW, TrustLevel.OBSERVED)
            service.ingest_event(RawEventDraft("owner-new", SCOPE, source, "x", RETENTION))
            service.govern(
                GovernanceCommand(
                    SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m0", NOW, "request"
                )
            )
        (flags / "writer-done").write_text("1")

    writer = threading.Thread(target=owner)
    writer.start()
    kind, value = in_child(read_while_the_owner_writes, uid=NOBODY)
    writer.join(timeout=30)
    assert kind == "ok", value
    audit_before, memories_before, audit_after, memories_after = value  # type: ignore[misc]
    assert audit_after == audit_before + 2
    assert memories_after == memories_before - 1


def test_side_files_another_user_left_unreadable_are_named_not_taken_for_damage(
    shared_dir: Path,
) -> None:
    """A reader of a store it may read finds the WAL and shared-memory files another
    user's process left, readable by their owner only: the open is refused with a
    library error naming them, not reported as a damaged store."""
    path = shared_dir / "store.db"
    populate(path)
    holder = sqlite3.connect(path)  # keeps the side files, as a running writer does
    try:
        holder.execute("SELECT count(*) FROM scopes").fetchone()
        for side in (Path(f"{path}-wal"), Path(f"{path}-shm")):
            assert side.exists()
            side.chmod(0o600)
        path.chmod(0o644)

        def open_it() -> str:
            try:
                SQLiteRepository(path, read_only=True).close()
            except TrueHeartError as error:
                return f"{type(error).__name__}: {error}"
            return "opened"

        kind, value = in_child(open_it, uid=NOBODY)
    finally:
        holder.close()
    assert (kind, value) == (
        "ok",
        "ValidationError: path: its WAL or shared-memory file cannot be read by this process",
    )


def test_side_files_another_process_removes_while_they_are_checked_are_no_obstacle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's close removes the WAL and shared-memory files at any moment:
    a side file that is gone by the time its permissions are asked about does not
    refuse the open."""
    path = tmp_path / "store.db"
    populate(path)
    holder = sqlite3.connect(path)  # keeps the side files, as a running writer does
    holder.execute("SELECT count(*) FROM scopes").fetchone()
    real_access = os.access
    removed: list[str] = []

    def closed_meanwhile(target: Any, mode: int, **kwargs: Any) -> bool:
        name = os.fsdecode(target)
        if name.endswith(("-wal", "-shm")) and name not in removed:
            # The last connection closes between the stat and the permission check.
            holder.close()
            for side in (f"{path}-wal", f"{path}-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(side)
            removed.append(name)
            return False
        return real_access(target, mode, **kwargs)

    monkeypatch.setattr(os, "access", closed_meanwhile)
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        assert service.verify_integrity().ok
    assert removed


def test_a_full_disk_at_open_is_repository_full() -> None:
    # SQLite reports the shared-memory file it cannot grow as an I/O error; that is a
    # full disk, not a damaged store.
    with _tmpfs("2m") as mount:
        path = mount / "store.db"
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            for index in range(30):
                service.ingest_event(_event(index))
        filler = _fill(mount)
        for read_only in (False, True):
            with pytest.raises(RepositoryFull, match=r"^repository full: "):
                SQLiteRepository(path, read_only=read_only)
        filler.unlink()
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            assert service.stats().events == 30 and service.verify_integrity().ok


def test_failed_creations_on_a_full_disk_leave_nothing_behind() -> None:
    with _tmpfs("1m") as mount:
        filler = _fill(mount)
        path = mount / "store.db"
        for _ in range(400):
            try:
                SQLiteRepository(path).close()
                break
            except TrueHeartError as error:
                assert type(error) is RepositoryFull, error
                assert sorted(p.name for p in mount.iterdir()) == ["filler"]
            _free(filler, 4096)
        else:
            pytest.fail("the store was never created")
        assert sorted(p.name for p in mount.iterdir()) == ["filler", "store.db"]


def test_an_export_whose_disk_fills_names_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trueheart_core.cli import main

    store = tmp_path / "store.db"
    with TrueHeart(SQLiteRepository(store), clock=lambda: NOW) as service:
        service.ingest_events([_event(index, size=20) for index in range(40)])
    with _tmpfs("64k") as mount:
        _fill(mount)
        output = mount / "out.jsonl"
        assert main(["export", str(store), "-o", str(output)]) == 1
        assert capsys.readouterr().err.endswith(f"\ntrueheart: {output}: No space left on device\n")
        assert not output.exists()
