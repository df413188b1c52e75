"""The conformance suite stays backend-neutral: no file under tests/conformance names the
SQLite driver, the SQLite adapter or a path of the store. Checks that need them belong in
tests/adapters/sqlite/."""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parent
FORBIDDEN = (
    "sqlite3",
    "SQLiteRepository",
    "adapters.sqlite",
    "trueheart_core.adapters",
    "db_path",
    "store.db",
)


def _suite_files() -> list[Path]:
    own = Path(__file__).resolve()
    return sorted(
        path
        for path in SUITE.rglob("*")
        if path.is_file() and path.resolve() != own and "__pycache__" not in path.parts
    )


def test_the_suite_has_the_files_it_is_checked_by() -> None:
    names = {path.name for path in _suite_files()}
    assert {"conformance_builders.py", "semantic_builders.py", "test_erasure.py"} <= names
    assert all(not name.startswith("test_sqlite") for name in names)


def _forbidden_in(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [word for word in FORBIDDEN if word in text]


@pytest.mark.parametrize("path", _suite_files(), ids=lambda path: path.name)
def test_no_file_names_the_sqlite_backend(path: Path) -> None:
    assert _forbidden_in(path) == [], f"{path.relative_to(SUITE)} names the SQLite backend"


def test_the_check_finds_what_it_forbids(tmp_path: Path) -> None:
    leaky = tmp_path / "test_leaky.py"
    leaky.write_text('import sqlite3\nPATH = tmp_path / "store.db"  # db_path\n', encoding="utf-8")
    assert _forbidden_in(leaky) == ["sqlite3", "db_path", "store.db"]
    clean = tmp_path / "test_clean.py"
    clean.write_text("def test_x(repository: Repository) -> None: ...\n", encoding="utf-8")
    assert _forbidden_in(clean) == []
