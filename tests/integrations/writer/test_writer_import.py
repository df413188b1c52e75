"""The writer's client is imported only when it is needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_the_library_or_the_writer_does_not_import_openai() -> None:
    completed = _run(
        "import sys, trueheart_core\n"
        "print('writer' in ' '.join(m for m in sys.modules if m.startswith('trueheart_core.')),"
        " 'openai' in sys.modules)\n"
        "import trueheart_core.integrations.writer\n"
        "print('openai' in sys.modules)\n"
        "trueheart_core.integrations.writer.ChatSettings(model='m', api_key='k')\n"
        "print('openai' in sys.modules)\n"
        "trueheart_core.integrations.writer.ChatClient(\n"
        "    trueheart_core.integrations.writer.ChatSettings(model='m', api_key='k',"
        " base_url='http://127.0.0.1:9/v1'))\n"
        "print('openai' in sys.modules)\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["False False", "False", "False", "True"]


def test_without_the_extra_the_client_raises_provider_error() -> None:
    completed = _run(
        "import sys\n"
        "sys.modules['openai'] = None\n"
        "from trueheart_core import ProviderError\n"
        "from trueheart_core.integrations.writer import ChatSettings, ModelClaimExtractor\n"
        "try:\n"
        "    ModelClaimExtractor(ChatSettings(model='m', api_key='k'))\n"
        "except ProviderError as error:\n"
        "    print(error, error.__cause__ is None)\n"
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == (
        "provider error: the memory writer needs the writer extra: "
        "pip install 'trueheart-core[writer]' True\n"
    )
