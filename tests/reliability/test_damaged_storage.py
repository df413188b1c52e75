"""A damaged store never makes a call report what it did not do, loop, or raise a raw error.

Damage is made with real byte edits of a real store: a lost or wrong index entry, a
changed stored definition, seeded random single-byte edits of the schema pages and of
table pages, and NULLs or values of the wrong type in every stored column. Every call
runs in a child process with a deadline, so a hang fails instead of stalling the suite.
The rules checked: only ``TrueHeartError`` escapes (an erasure without a rewrite, which
trusts the scope's indexes, included); an erasure that returns normally left none of the
erased bodies in the database file or its WAL; ``verify_integrity``
never says ``ok`` about a store it could not read.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from storage_faults import (
    NOW,
    OTHER,
    SCOPE,
    edit_page,
    in_child,
    populate,
    root_page,
)

from trueheart_core import (
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryDraft,
    RecallQuery,
    RepositoryCorruption,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
    TrueHeartError,
    TrustLevel,
)

SECRET = f"SECRET-event-{SCOPE.subject_id}".encode()
SECRET_MEMORY = f"SECRET-memory-{SCOPE.subject_id}".encode()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pristine") / "store.db"
    populate(path)
    return path


def _copy(pristine: Path, tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    shutil.copyfile(pristine, path)
    return path


def _files(path: Path) -> bytes:
    return b"".join(
        p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal")) if p.exists()
    )


def _holds_scope(path: Path) -> bool:
    """Whether the scopes table itself (not its index) has a row of SCOPE."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return bool(
            conn.execute(
                "SELECT 1 FROM scopes NOT INDEXED "
                "WHERE tenant_id = ? AND owner_id = ? AND subject_id = ?",
                (SCOPE.tenant_id, SCOPE.owner_id, SCOPE.subject_id),
            ).fetchall()
        )
    except sqlite3.Error:
        return True
    finally:
        conn.close()


def _erase_and_check(path: Path) -> str:
    """Erase SCOPE; when the call returns, none of its bodies may be in the files (unless
    the damage renamed the scope's own row, so that the store holds no such scope)."""
    if not _holds_scope(path):
        return "no such scope"
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        receipt = service.erase_subject(SCOPE, occurred_at=NOW)
        assert receipt.remaining is not None
        assert not any(dataclasses.astuple(receipt.remaining)), "the receipt counts leftovers"
    data = _files(path)
    assert SECRET not in data, "an erasure that returned left bodies in the file"
    assert SECRET_MEMORY not in data, "an erasure that returned left memories in the file"
    return "erased"


def _calls(path: Path) -> dict[str, Callable[[TrueHeart], object]]:
    def restore(service: TrueHeart) -> object:
        return service.govern(
            GovernanceCommand(SCOPE, GovernanceAction.RESTORE, EntityType.MEMORY, "m1", NOW, "ok")
        )

    def forget(service: TrueHeart) -> object:
        return service.govern(
            GovernanceCommand(SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m2", NOW, "ok")
        )

    def materialize(service: TrueHeart) -> object:
        return service.materialize_once(
            MemoryDraft("m-new", SCOPE, "a new note", ("e3",), "note", TrustLevel.OBSERVED, NOW)
        )

    return {
        "verify": lambda s: s.verify_integrity(),
        "verify scope": lambda s: s.verify_integrity(SCOPE),
        "recall": lambda s: s.recall(RecallQuery(SCOPE, NOW)),
        "search": lambda s: s.search(SearchQuery(SCOPE, "hiking lake", NOW)),
        "list": lambda s: s.list_memories(SCOPE),
        "get": lambda s: s.get_memory(SCOPE, "m0"),
        "audit": lambda s: s.audit(SCOPE),
        "stats": lambda s: s.stats(SCOPE),
        "scopes": lambda s: s.scopes(),
        "materialize": materialize,
        "restore": restore,
        "forget": forget,
        "expire": lambda s: s.expire_raw_content(as_of=NOW + timedelta(hours=2)),
    }


def _exercise(path: Path) -> list[str]:
    """Every call on a possibly damaged store; what each did. Raises (and so reports a
    raw error) on anything but a ``TrueHeartError``, and on a broken guarantee."""
    outcomes = []
    try:
        service = TrueHeart(SQLiteRepository(path), clock=lambda: NOW)
    except TrueHeartError as error:
        return [f"open: {type(error).__name__}"]
    with service:
        for name, call in _calls(path).items():
            try:
                result = call(service)
            except TrueHeartError as error:
                outcomes.append(f"{name}: {type(error).__name__}")
                continue
            if name == "verify":
                report = result
                assert not (report.ok and report.rows_checked == 0), "ok without reading rows"  # type: ignore[attr-defined]
            outcomes.append(f"{name}: ok")
    outcomes.append(_erase_in_place(path))
    try:
        outcomes.append(_erase_and_check(path))
    except TrueHeartError as error:
        outcomes.append(f"erase: {type(error).__name__}")
    return outcomes


def _erase_in_place(path: Path) -> str:
    """Erase SCOPE without a rewrite, on a copy of the damaged store: it trusts the
    scope's indexes, so only its errors are checked (nothing but a ``TrueHeartError``)."""
    copy = path.with_name(f"{path.stem}-in-place.db")
    shutil.copyfile(path, copy)
    try:
        with TrueHeart(SQLiteRepository(copy), clock=lambda: NOW) as service:
            receipt = service.erase_subject(SCOPE, occurred_at=NOW, rewrite=False)
        return f"erase in place: verified {receipt.verified}"
    except TrueHeartError as error:
        return f"erase in place: {type(error).__name__}"
    finally:
        for side in ("", "-wal", "-shm"):
            Path(f"{copy}{side}").unlink(missing_ok=True)


def _assert_safe(outcome: tuple[str, object]) -> list[str]:
    kind, value = outcome
    assert kind != "hang", "a call did not finish"
    assert kind != "raw", value
    assert kind == "ok"
    assert isinstance(value, list)
    return value


# --- one lost or wrong index entry --------------------------------------------------------


def test_a_lost_scope_index_entry_does_not_turn_erasure_into_a_no_op(
    pristine: Path, tmp_path: Path
) -> None:
    path = _copy(pristine, tmp_path)
    page, size = root_page(path, "sqlite_autoindex_scopes_1")
    edit_page(path, page, size, SCOPE.subject_id.encode(), b"user-4X")
    kind, value = in_child(lambda: _erase_and_check(path))
    assert (kind, value) == ("ok", "erased") or (
        kind == "error" and value[2]  # type: ignore[index]
    ), value
    if kind == "ok":
        # The other scope's rows are untouched (read from the table: the damaged index
        # hides them from lookups until the indexes are rebuilt).
        conn = sqlite3.connect(path)
        try:
            counts = dict(
                conn.execute(
                    "SELECT s.subject_id, COUNT(*) FROM memories m NOT INDEXED "
                    "JOIN scopes s ON s.scope_id = m.scope_id WHERE m.erased IS NOT 1 "
                    "GROUP BY s.subject_id"
                ).fetchall()
            )
        finally:
            conn.close()
        assert counts == {OTHER.subject_id: 7}  # six memories and a claim's
        with TrueHeart(SQLiteRepository(pristine, read_only=True), clock=lambda: NOW) as service:
            expected = service.recall(RecallQuery(OTHER, NOW))
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            service.rebuild_indexes()
            assert service.recall(RecallQuery(OTHER, NOW)) == expected
            assert service.recall(RecallQuery(SCOPE, NOW)) == ()


def test_a_lost_scope_index_entry_is_reported_by_verification(
    pristine: Path, tmp_path: Path
) -> None:
    path = _copy(pristine, tmp_path)
    page, size = root_page(path, "sqlite_autoindex_scopes_1")
    edit_page(path, page, size, SCOPE.subject_id.encode(), b"user-4X")

    def verify() -> tuple[bool, int]:
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            report = service.verify_integrity()
            scoped = service.verify_integrity(SCOPE)
        assert scoped.rows_checked > 0
        return report.ok, report.rows_checked

    kind, value = in_child(verify)
    assert kind == "ok", value
    ok, checked = value  # type: ignore[misc]
    assert not ok
    assert checked > 0


def _lose_index_entry(path: Path, index: str, table: str, id_column: str, entity_id: str) -> None:
    """Build ``index`` again without the entry of SCOPE's row ``entity_id``, then put its
    stored definition back as it was: the b-tree lacks one entry of a sound table, as a
    lost index page would leave it."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (rid,) = conn.execute(
            f"SELECT x.rid FROM {table} x JOIN scopes s ON s.scope_id = x.scope_id "
            f"WHERE x.{id_column} = ? AND s.subject_id = ?",
            (entity_id, SCOPE.subject_id),
        ).fetchone()
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (index,)).fetchone()
        conn.execute(f"DROP INDEX {index}")
        conn.execute(f"{sql} AND rid <> {int(rid)}")
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (sql, index))
        conn.execute("PRAGMA writable_schema = OFF")
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("index", "table", "id_column", "entity_id", "secret"),
    [
        ("raw_events_by_scope", "raw_events", "event_id", "e3", "SECRET-event"),
        ("memories_by_status", "memories", "memory_id", "m3", "SECRET-memory"),
    ],
)
def test_a_row_its_scope_index_lost_is_still_erased(
    pristine: Path,
    tmp_path: Path,
    index: str,
    table: str,
    id_column: str,
    entity_id: str,
    secret: str,
) -> None:
    """An erasure finds the scope's receipts and memories through the scope's indexes
    and through the IDs its audit rows name, so a row the index lost is not left behind:
    the erasure either removes it or fails with a library error, changing nothing; after
    a rebuild of the indexes it erases the subject whole."""
    path = _copy(pristine, tmp_path)
    _lose_index_entry(path, index, table, id_column, entity_id)
    lost = f"{secret}-{SCOPE.subject_id}-003".encode()
    assert lost in _files(path)
    kind, value = in_child(lambda: _erase_and_check(path))
    if kind == "error":
        assert value[2], value  # type: ignore[index]
        assert lost in _files(path)  # rolled back whole

        def rebuilt() -> str:
            with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
                service.rebuild_indexes()
            return _erase_and_check(path)

        kind, value = in_child(rebuilt)
    assert (kind, value) == ("ok", "erased"), value
    assert lost not in _files(path)


@pytest.mark.parametrize(
    ("index", "needle", "replacement"),
    [
        ("raw_events_by_id", b"e0", b"x0"),
        ("sqlite_autoindex_scopes_1", SCOPE.subject_id.encode(), b"user-4X"),
    ],
)
def test_expiry_over_a_lost_index_entry_stops_with_corruption(
    pristine: Path, tmp_path: Path, index: str, needle: bytes, replacement: bytes
) -> None:
    path = _copy(pristine, tmp_path)
    page, size = root_page(path, index)
    edit_page(path, page, size, needle, replacement)
    before = path.read_bytes()

    def expire() -> int:
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            return service.expire_raw_content(as_of=NOW + timedelta(hours=2))

    kind, value = in_child(expire, seconds=20)
    assert kind == "error", (kind, value)
    assert value[0] == "RepositoryCorruption"  # type: ignore[index]
    # Rolled back whole: every body is still there (read from the table: the damaged
    # index hides rows from lookups).
    conn = sqlite3.connect(path)
    try:
        (bodies,) = conn.execute(
            "SELECT COUNT(*) FROM raw_bodies NOT INDEXED WHERE erased IS NOT 1"
        ).fetchone()
        (active,) = conn.execute(
            "SELECT COUNT(*) FROM raw_events NOT INDEXED WHERE status = 0 AND erased IS NOT 1"
        ).fetchone()
    finally:
        conn.close()
    assert (bodies, active) == (12, 12)
    assert SECRET in before


def test_a_stale_memory_index_entry_rolls_a_governance_change_back(
    pristine: Path, tmp_path: Path
) -> None:
    path = _copy(pristine, tmp_path)
    page, size = root_page(path, "memories_by_id")
    edit_page(path, page, size, b"m2", b"q2")

    def forget() -> object:
        with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
            return service.govern(
                GovernanceCommand(
                    SCOPE, GovernanceAction.FORGET, EntityType.MEMORY, "m2", NOW, "gone"
                )
            )

    kind, value = in_child(forget)
    assert kind in ("ok", "error"), (kind, value)
    if kind == "error":
        assert value[2]  # type: ignore[index]
    else:  # it returned: the memory's body is gone from the files
        assert f"SECRET-memory-{SCOPE.subject_id}-002".encode() not in _files(path)


# --- changed stored definitions -----------------------------------------------------------


def _rewrite_definition(path: Path, name: str, old: str, new: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        assert old in sql
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = ? WHERE name = ?", (sql.replace(old, new, 1), name)
        )
        conn.execute("PRAGMA writable_schema = OFF")
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        # The same meaning to SQLite (identifiers ignore case), but not our definition.
        ("scopes", "subject_id TEXT NOT NULL", "SUBJECT_ID TEXT NOT NULL"),
        ("scopes", "subject_id TEXT NOT NULL", "subject_id TEXT"),
        ("raw_bodies", "content, digest", "content BLOB, digest"),
        ("memories_recall_clear", "memory_id DESC", "memory_id ASC"),
        ("raw_events_expiry", "status = 0", "status = 1"),
    ],
)
def test_a_changed_stored_definition_is_refused_before_any_work(
    pristine: Path, tmp_path: Path, name: str, old: str, new: str
) -> None:
    path = _copy(pristine, tmp_path)
    _rewrite_definition(path, name, old, new)
    before = path.read_bytes()
    with pytest.raises(RepositoryCorruption, match=r"^repository corruption: invalid schema"):
        SQLiteRepository(path)
    assert path.read_bytes() == before


def test_a_foreign_trigger_is_refused(pristine: Path, tmp_path: Path) -> None:
    path = _copy(pristine, tmp_path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TRIGGER keep AFTER DELETE ON raw_bodies BEGIN SELECT 1; END")
    conn.close()
    with pytest.raises(RepositoryCorruption, match=r"invalid schema catalog"):
        SQLiteRepository(path)


# --- seeded random byte edits -------------------------------------------------------------


def _schema_pages(path: Path) -> list[int]:
    """The pages that hold the stored definitions: page 1 and any page with CREATE text."""
    data = path.read_bytes()
    size = int.from_bytes(data[16:18], "big")
    return [
        page + 1
        for page in range(len(data) // size)
        if page == 0 or b"CREATE" in data[page * size : (page + 1) * size]
    ]


def _table_pages(path: Path) -> list[int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return sorted(
            {
                int(page)
                for (page,) in conn.execute(
                    "SELECT pageno FROM dbstat WHERE name NOT LIKE 'sqlite_%'"
                )
            }
        )
    except sqlite3.OperationalError:
        pytest.skip("this SQLite has no dbstat table")
    finally:
        conn.close()


def _random_edits(path: Path, pages: list[int], count: int, seed: int) -> list[tuple[int, int]]:
    data = path.read_bytes()
    size = int.from_bytes(data[16:18], "big")
    rng = random.Random(seed)
    edits = []
    for _ in range(count):
        page = rng.choice(pages)
        start = (page - 1) * size + (100 if page == 1 else 0)
        offset = rng.randrange(start, page * size)
        edits.append((offset, (data[offset] + rng.randrange(1, 256)) % 256))
    return edits


def _fuzz(pristine: Path, tmp_path: Path, edits: list[tuple[int, int]]) -> None:
    def run_all() -> list[list[str]]:
        results = []
        for index, (offset, value) in enumerate(edits):
            path = tmp_path / f"case-{index}.db"
            data = bytearray(pristine.read_bytes())
            data[offset] = value
            path.write_bytes(bytes(data))
            results.append(_exercise(path))
            for side in ("", "-wal", "-shm"):
                Path(f"{path}{side}").unlink(missing_ok=True)
        return results

    kind, value = in_child(run_all, seconds=240)
    assert kind != "hang", "a call on a damaged store did not finish"
    assert kind == "ok", value
    assert isinstance(value, list)
    assert len(value) == len(edits)


def test_random_edits_of_the_stored_definitions(pristine: Path, tmp_path: Path) -> None:
    edits = _random_edits(pristine, _schema_pages(pristine), 150, seed=20261201)
    _fuzz(pristine, tmp_path, edits)


def test_random_edits_of_table_pages(pristine: Path, tmp_path: Path) -> None:
    edits = _random_edits(pristine, _table_pages(pristine), 150, seed=1201)
    _fuzz(pristine, tmp_path, edits)


# --- NULLs and values of the wrong type in stored columns ---------------------------------

_TABLES = (
    "scopes",
    "raw_events",
    "raw_bodies",
    "memories",
    "lineage",
    "tombstones",
    "audit_log",
    "write_buffer",
    "search_waiting",
    "search_docs",
    "search_terms",
    "search_postings",
    "search_stats",
    "claims",
    "extractions",
)


def _columns(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [
            (table, column)
            for table in _TABLES
            for (_, column, _, _, _, pk) in conn.execute(f"PRAGMA table_info({table})")
            if not pk
        ]
    finally:
        conn.close()


@pytest.mark.parametrize("value", [None, "x", b"\xff\xfe", 2**62, -1.5])
def test_malformed_stored_values_give_library_errors(
    pristine: Path, tmp_path: Path, value: object
) -> None:
    # The search index is built on first use; build it in the pristine copy first.
    columns = _columns(pristine)

    def run_all() -> list[list[str]]:
        results = []
        for table, column in columns:
            path = tmp_path / "case.db"
            shutil.copyfile(pristine, path)
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                conn.execute(f"UPDATE {table} SET {column} = ?", (value,))
            except sqlite3.IntegrityError:
                continue  # a NOT NULL or CHECK constraint keeps this value out
            finally:
                conn.close()
            try:
                results.append(_exercise(path))
            except AssertionError as failure:
                raise AssertionError(f"{table}.{column}: {failure}") from None
            for side in ("", "-wal", "-shm"):
                Path(f"{path}{side}").unlink(missing_ok=True)
        return results

    kind, outcome = in_child(run_all, seconds=240)
    assert kind != "hang"
    assert kind == "ok", outcome


# --- invalid UTF-8 in the stored definitions ---------------------------------------------


def _invalid_utf8_definition(pristine: Path, tmp_path: Path) -> Path:
    """A store whose stored definition of ``raw_bodies`` has a byte that is not UTF-8:
    SQLite's own error message about the schema then holds invalid UTF-8 too."""
    path = _copy(pristine, tmp_path)
    data = bytearray(path.read_bytes())
    offset = data.find(b'CREATE TABLE "raw_bodies"')
    assert offset > 0
    data[offset + len('CREATE TABLE "raw_')] = 0xFF
    path.write_bytes(bytes(data))
    return path


def test_invalid_utf8_in_a_definition_is_corruption_on_both_faces_and_the_command_line(
    pristine: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from evicortex import EviCortex

    path = _invalid_utf8_definition(pristine, tmp_path)
    with pytest.raises(RepositoryCorruption) as caught:
        SQLiteRepository(path)
    assert caught.value.__context__ is None
    with pytest.raises(RepositoryCorruption):
        EviCortex.open(path)
    done = subprocess.run(
        [sys.executable, "-m", "trueheart_core.cli", "stats", str(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    assert "repository corruption" in done.stderr
