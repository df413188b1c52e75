"""The README's commands and tour are real: CI runs the marked commands, and the tour
code runs here against a store in a temporary directory."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"


def _block_after(marker: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(re.escape(marker) + r"\n```[a-z]*\n(.*?)```", text, re.DOTALL)
    assert match is not None, marker
    return match.group(1).strip()


def test_readme_marks_one_install_and_run_command_and_one_test_command() -> None:
    install = _block_after("<!-- ci:install-and-run -->")
    tests = _block_after("<!-- ci:test -->")
    assert install.count("\n") == 0 and "examples/basic_memory.py" in install
    assert tests == "python -m pytest"
    head = README.read_text(encoding="utf-8")[:2000]
    assert "<!-- ci:install-and-run -->" in head and "<!-- ci:test -->" in head


REPOSITORY_FILES = "https://github.com/trueheart-ai/trueheart-core/blob/main/"


def test_readme_links_work_on_the_package_index_and_name_files_that_exist() -> None:
    # The package index shows the README without the repository around it: a relative
    # link leads nowhere there. Every link is an address or an anchor, and those into the
    # repository name a file of this checkout (and a heading of it, when they name one).
    root = README.parent
    targets = re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))
    assert len(targets) > 20
    into_repository = 0
    for target in targets:
        assert target.startswith(("https://", "http://", "#")), target
        if not target.startswith(REPOSITORY_FILES):
            continue
        into_repository += 1
        path, _, heading = target.removeprefix(REPOSITORY_FILES).partition("#")
        assert (root / path).is_file(), target
        if heading:
            text = (root / path).read_text(encoding="utf-8")
            slugs = {
                re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in text.splitlines()
                if line.startswith("#")
            }
            assert heading in slugs, target
    assert into_repository > 20


def test_readme_tour_runs_twice_and_leaves_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text(encoding="utf-8")
    tour = re.search(r"## A short tour\n\n```python\n(.*?)```", text, re.DOTALL)
    assert tour is not None
    code = compile(tour.group(1), "README.md", "exec")
    cwd = tmp_path / "cwd"
    scratch = tmp_path / "tmp"  # where the tour's temporary directory is made
    cwd.mkdir()
    scratch.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    once = ["1.0 Prefers concise answers."]
    for run in range(2):  # the same IDs again: a fresh store each time
        exec(code, {"__name__": "readme_tour"})
        out = capsys.readouterr().out.splitlines()
        assert out[:1] == once, run
        assert "('delete', 'evt-1')" in out[1] and "('materialize', 'mem-1')" in out[1]
        assert len(out) == 2
        assert list(cwd.iterdir()) == [], run
        assert list(scratch.iterdir()) == [], run


def test_readme_search_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Search\n\n(?:[^\n]+\n)+\n```python\n(.*?)```", text, re.DOTALL)
    assert block is not None
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = compile(block.group(1), "README.md", "exec")
        for _ in range(2):  # fixed times: running it again replays the same event and memory
            exec(code, {"__name__": "readme_search"})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out.splitlines()
    once = [
        "1 Wants a ryokan in Kyoto in April. ('evt-2',)",
        "mem-2 included 11 40",
        "11 of 40 tokens",
    ]
    assert out == once + once
    assert (tmp_path / "search.db").exists()


def test_readme_claims_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Claims\n\n(?:[^\n]+\n)+\n```python\n(.*?)```", text, re.DOTALL)
    assert block is not None
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = compile(block.group(1), "README.md", "exec")
        for _ in range(2):  # fixed times: running it again replays the same events and claims
            exec(code, {"__name__": "readme_claims"})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out.splitlines()
    once = [
        "2026-04-02 ['dark current']",
        "2026-05-10 ['dark superseded', 'light current']",
    ]
    assert out == once + once
    assert (tmp_path / "claims.db").exists()


def test_readme_semantic_example_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Semantic search\n\n(?:[^\n]+\n)+\n```python\n(.*?)```", text, re.DOTALL)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "README.md", "exec"), {"__name__": "readme_semantic"})
    assert capsys.readouterr().out == "True True 0\nhashing-v1:th-lex-1\n"
    assert (tmp_path / "vectors.db").exists()


def test_readme_evicortex_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## evicortex API\n\n(?:[^\n]+\n)+\n```python\n(.*?)```", text, re.DOTALL)
    assert block is not None
    exec(compile(block.group(1), "README.md", "exec"), {"__name__": "readme_evicortex"})
    assert capsys.readouterr().out == "['episode', 'claim'] current\nTrue\n"
