"""``examples/mcp_client.py``: what it prints with the SDK, and without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_support import DEADLINE, child_environment

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "mcp_client.py"
EXPECTED = """\
connected: 7 tools for example/assistant/ada
remembered: Prefers green tea in the morning. (preference)
search 'green tea': ['Prefers green tea in the morning.']
forgot it; removed: raw_event, raw_body, memory, lineage_edge, search_entry, search_term
search 'green tea': []
remember with the same key: error=True: entity deleted: <memory id>
done: the temporary store is removed
"""


def _run(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *command],
        cwd=tmp_path,
        env=child_environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def test_the_example(tmp_path: Path) -> None:
    done = _run(tmp_path, str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED
    assert list(tmp_path.iterdir()) == []


def test_the_example_without_the_sdk(tmp_path: Path) -> None:
    hide = (
        "import runpy, sys\n"
        "sys.modules['mcp'] = None\n"
        f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')\n"
    )
    done = _run(tmp_path, "-c", hide)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "skipped: the MCP SDK is not installed (pip install 'trueheart-core[mcp]')\n"
    )
