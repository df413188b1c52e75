"""The examples of docs/cli.md are real: every ``console`` block is run again, in the
order of the document, in an empty directory, and its output and exit status compared.
The input files the examples read are the document's ``jsonl NAME`` blocks, written into
that directory first.

The sizes of files (which depend on SQLite's page allocation), and an export's digest
(which covers random audit IDs) and time, may take any value; everything else must match.
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
SRC = Path(__file__).resolve().parents[2] / "src"
CAPTURED_IN = "/tmp/clidocs"
_BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)
_FILE = re.compile(r"```jsonl (\S+)\n(.*?)```", re.DOTALL)
_SIZES = re.compile(
    r'^(\s*"?(?:storage_bytes|database_bytes(?:_before)?|wal_bytes|pages|bytes)"?:?\s+)\d+(,?)$'
)


def _examples() -> list[tuple[list[str], list[str], int]]:
    examples = []
    for block in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        command, *lines = block.rstrip("\n").split("\n")
        assert command.startswith("$ trueheart "), command
        status = re.fullmatch(r"\[exit (\d+)\]", lines[-1])
        assert status is not None, lines[-1]
        examples.append((shlex.split(command[len("$ trueheart ") :]), lines[:-1], int(status[1])))
    return examples


# An export's digest covers its audit IDs, which are random, and its time is the clock's.
_EXPORT = re.compile(r"^(digest\s+)[0-9a-f]{64}$|^(exported_at\s+)\S+Z$")


def _normalised(lines: list[str], directory: str) -> list[str]:
    return [
        _EXPORT.sub(r"\1\2<varies>", _SIZES.sub(r"\1<n>\2", line.replace(directory, "<dir>")))
        for line in lines
    ]


def test_the_documented_examples_run_as_shown(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PYTHONPATH=str(SRC), COLUMNS="80")
    for name, text in _FILE.findall(DOC.read_text(encoding="utf-8")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    examples = _examples()
    assert len(examples) == 43
    for args, expected, status in examples:
        if args == ["verify", "copy.db"]:
            # the documented change behind the library's back
            conn = sqlite3.connect(tmp_path / "copy.db")
            with conn:
                conn.execute(
                    "UPDATE raw_events SET source_id = 'forged' "
                    "WHERE event_id = 'evt-1' AND erased = 0"
                )
            conn.close()
        done = subprocess.run(
            [sys.executable, "-m", "trueheart_core.cli", *args],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,  # not a terminal: forget and erase-subject do not ask
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == status, (args, done.stdout)
        got = _normalised(done.stdout.rstrip("\n").split("\n"), str(tmp_path))
        want = _normalised(expected, CAPTURED_IN)
        assert got == want, args
