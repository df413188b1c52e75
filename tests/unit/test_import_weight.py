"""Importing either face loads no optional provider and no model framework."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _python(
    code: str, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``code`` run by this interpreter over this checkout's sources (in
    ``environment``, by default this one's)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)} if environment is None else environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("package", ["trueheart_core", "evicortex"])
def test_import_loads_no_provider(package: str) -> None:
    code = (
        f"import sys, {package}\n"
        "loaded = [m for m in ('torch', 'transformers', 'numpy', 'mcp', 'agents', 'openai',"
        " 'trueheart_core.providers', 'evicortex.providers', 'trueheart_core.integrations',"
        " 'psycopg', 'psycopg_pool', 'trueheart_core.adapters.postgres')"
        " if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    completed = _python(code, environment)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "\n"


def test_the_postgresql_adapter_is_imported_on_first_use() -> None:
    pytest.importorskip("psycopg", reason="needs the postgres extra")
    code = (
        "import sys, trueheart_core\n"
        "before = 'psycopg' in sys.modules\n"
        "from trueheart_core import PostgresRepository\n"
        "print(before, 'psycopg' in sys.modules, PostgresRepository.__module__)\n"
    )
    completed = _python(code)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "False True trueheart_core.adapters.postgres.repository\n"


def test_without_the_extra_the_postgresql_adapter_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if the postgres extra were not installed\n"
        "import trueheart_core\n"
        "from trueheart_core import *  # every name of __all__ resolves\n"
        "assert hasattr(trueheart_core, 'PostgresRepository')\n"
        "from trueheart_core import PostgresRepository\n"
        "try:\n"
        "    PostgresRepository('postgresql://localhost/memory')\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    completed = _python(code)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == (
        "ImportError PostgresRepository needs the postgres extra: "
        "pip install 'trueheart-core[postgres]'\n"
    )


@pytest.mark.parametrize(
    "code",
    [
        "import trueheart_core",
        "import trueheart_core.integrations.mcp_server",
        "from trueheart_core.cli import main; main(['--help'])",
        "from trueheart_core.cli import main; main(['mcp', '--help'])",
    ],
)
def test_the_mcp_sdk_is_imported_only_to_serve(code: str) -> None:
    """The MCP server's SDK (the ``mcp`` extra) is imported by ``trueheart mcp`` when it
    serves, never by the package, the integration's tools or the command line's help."""
    probe = (
        "import contextlib, io, sys\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    {code}\n"
        "loaded = [m for m in ('mcp', 'anyio', 'uvicorn', 'starlette', 'pydantic',"
        " 'trueheart_core.integrations.mcp_server.server') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    completed = _python(probe, environment)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "\n"


def test_numpy_is_imported_only_when_a_semantic_search_runs() -> None:
    code = (
        "import sys\n"
        "from datetime import UTC, datetime\n"
        "from trueheart_core import HashingEmbedder, Scope, SearchQuery\n"
        "from trueheart_core import SQLiteRepository, TrueHeart\n"
        "th = TrueHeart(SQLiteRepository(':memory:'), embedder=HashingEmbedder(8))\n"
        "query = SearchQuery(Scope('t', 'o', 's'), 'tea', datetime.now(UTC))\n"
        "th.search(SearchQuery(query.scope, 'tea', query.as_of, semantic=False))\n"
        "before = 'numpy' in sys.modules\n"
        "th.search(query)\n"
        "after = 'numpy' in sys.modules\n"
        "try:\n"
        "    import numpy\n"
        "except ImportError:\n"
        "    numpy = None\n"
        "print(before, after, numpy is not None)\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    environment.pop("TRUEHEART_SCAN", None)
    completed = _python(code, environment)
    assert completed.returncode == 0, completed.stderr
    before, after, installed = completed.stdout.split()
    assert before == "False"
    assert after == installed  # loaded by the semantic search exactly when installed


def test_the_faces_name_the_postgres_extra_for_a_server_url_without_it() -> None:
    """``EviCortex.open`` and the ``trueheart`` command given a ``postgresql://`` URL
    where psycopg is missing: their own errors, naming the extra."""
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if the postgres extra were not installed\n"
        "from evicortex import EviCortex\n"
        "from trueheart_core import TrueHeartError\n"
        "from trueheart_core.cli import main\n"
        "try:\n"
        "    EviCortex.open('postgresql://localhost/memory')\n"
        "except TrueHeartError as error:\n"
        "    print(type(error).__name__, error)\n"
        "print(main(['stats', 'postgresql://localhost/memory']))\n"
    )
    completed = _python(code)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == (
        "ValidationError url: needs the postgres extra: pip install 'trueheart-core[postgres]'\n1\n"
    )
    assert completed.stderr == (
        "trueheart: url: needs the postgres extra: pip install 'trueheart-core[postgres]'\n"
    )
