"""``examples/postgres.py`` runs against a server named by ``TRUEHEART_POSTGRES_URL``,
prints its two lines and leaves nothing behind; without the variable it says so and
exits cleanly, having done nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import postgres_configuration

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "postgres.py"
OUTPUT = (
    "moved 2 memories to PostgreSQL; search found memory-1\n"
    "after forgetting one, 1 recalled; integrity clean: True\n"
)


def _run(url: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRUEHEART_POSTGRES_URL"}
    if url is not None:
        env["TRUEHEART_POSTGRES_URL"] = url
    return subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, check=False
    )


def test_the_example_runs_on_a_server_and_leaves_nothing(postgres_cluster: Any) -> None:
    import psycopg

    url = postgres_configuration.database_url()
    done = _run(url)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", OUTPUT)
    with psycopg.connect(url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'trueheart_example'"
        ).fetchone()
    assert left == (0,)


def test_without_a_server_the_example_says_so_and_succeeds() -> None:
    done = _run(None)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "set TRUEHEART_POSTGRES_URL to a PostgreSQL server to run this example\n"
