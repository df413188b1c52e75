"""The SDK is imported by the integration package only: not by ``import trueheart_core``,
nor by ``trueheart_core.integrations``; without it the package says which extra to
install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_core_and_the_integrations_package_do_not_import_the_sdk() -> None:
    completed = _python(
        "import sys, trueheart_core, trueheart_core.integrations, evicortex\n"
        "print(sorted(m for m in sys.modules if m == 'agents' or m.startswith('agents.')))\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "[]\n"


def test_the_integration_imports_the_sdk() -> None:
    completed = _python(
        "import sys, trueheart_core.integrations.openai_agents\nprint('agents' in sys.modules)\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "True\n"


def test_without_the_sdk_the_integration_names_the_extra() -> None:
    completed = _python(
        "import sys\n"
        "sys.modules['agents'] = None\n"
        "try:\n"
        "    import trueheart_core.integrations.openai_agents\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == (
        "trueheart_core.integrations.openai_agents needs the OpenAI Agents SDK: "
        'pip install "trueheart-core[openai-agents]"\n'
    )
