"""A server that is not there: the repository and the command line say that they could
not connect, at once, with a library error and nothing of the driver's text. Port 1 of
the loopback refuses every connection, so these tests need no server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conformance_builders import msg

from trueheart_core import PostgresRepository, RepositoryUnavailable

UNREACHABLE = "postgresql://agent@127.0.0.1:1/memory"
COULD_NOT_CONNECT = "repository unavailable: could not connect to the server"


def test_a_repository_on_a_server_that_is_not_there_is_unavailable() -> None:
    with pytest.raises(RepositoryUnavailable, match=msg(COULD_NOT_CONNECT)) as caught:
        PostgresRepository(UNREACHABLE, connect_timeout=1)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.parametrize("command", ["stats", "verify", "scopes"])
def test_a_command_on_a_server_that_is_not_there_says_so(command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trueheart_core.cli", command, UNREACHABLE, "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "error": "RepositoryUnavailable",
        "message": COULD_NOT_CONNECT,
        "exit_status": 1,
    }
    assert done.stderr == f"trueheart: {COULD_NOT_CONNECT}\n"


def test_an_import_to_a_server_that_is_not_there_says_so_in_one_line(tmp_path: Path) -> None:
    """Nothing of the driver reaches stderr, its pool's warnings of failed attempts
    included."""
    export = tmp_path / "export.jsonl"
    export.write_text("", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "trueheart_core.cli", "import", UNREACHABLE, str(export)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"trueheart: importing {export} into {UNREACHABLE}\ntrueheart: {COULD_NOT_CONNECT}\n"
    )
