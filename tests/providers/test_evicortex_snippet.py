"""The evicortex API guide's TransformersEmbedder snippet, run unchanged.

The guide (kept verbatim in ``tests/evicortex/data``) is read at test time; the
snippet names a hub model at a pinned revision and loads it offline from the local cache.
The cache here is a fake one, built in a temporary directory, whose snapshot for that
repository and revision is the tiny random BERT of the other provider tests. The snippet
runs in a fresh interpreter whose ``HF_HUB_CACHE`` and ``HF_HOME`` point into that
directory, with the temporary directory as working directory (it writes ``memory.db``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "unsloth/bge-small-en-v1.5"


def guide_module() -> ModuleType:
    """tests/evicortex/evicortex_guide.py, loaded by path."""
    path = ROOT / "tests" / "evicortex" / "evicortex_guide.py"
    spec = importlib.util.spec_from_file_location("evicortex_guide_for_providers", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def transformers_snippet() -> str:
    guide = guide_module()
    assert guide.GUIDE.is_file(), "the API guide belongs in tests/evicortex/data"
    found = [
        code
        for code in guide.read_snippets(guide.GUIDE).runnable
        if "TransformersEmbedder(\n" in code
    ]
    assert len(found) == 1, found
    return str(found[0])


DRIVER = """\
import json
import sys

namespace = {"__name__": "guide_snippet"}
code = open(sys.argv[1], encoding="utf-8").read()
exec(compile(code, "<guide snippet transformers-embedder>", "exec"), namespace)

from evicortex import EviCortex

embedder = namespace["embedder"]
with EviCortex.open("memory.db", embedder=embedder) as memory:
    record = memory.remember(namespace="demo/ada", content="the cat sat on the mat")
    status = memory.semantic_status("demo/ada")
    capsule = memory.recall(namespace="demo/ada", query="the cat")
    print(json.dumps({
        "identity": embedder.identity,
        "dimensions": embedder.dimensions,
        "complete": status.complete,
        "recalled": [item.id for item in capsule.items] == [record.id],
        "semantic": capsule.semantic is not None,
    }))
"""


def test_the_guide_s_transformers_snippet_runs_unchanged(
    frameworks: tuple[Any, Any], tiny_model: Path, tmp_path: Path
) -> None:
    code = transformers_snippet()
    repository = re.search(r'TransformersEmbedder\(\s*"([^"]+)"', code)
    revision = re.search(r'revision="([0-9a-f]{40})"', code)
    assert repository is not None
    assert revision is not None
    assert repository.group(1) == REPOSITORY

    cache = tmp_path / "hf-home" / "hub"
    folder = "models--" + REPOSITORY.replace("/", "--")
    shutil.copytree(tiny_model, cache / folder / "snapshots" / revision.group(1))
    work = tmp_path / "work"
    work.mkdir()
    snippet_file = tmp_path / "snippet.py"
    snippet_file.write_text(code, encoding="utf-8")
    driver_file = tmp_path / "driver.py"
    driver_file.write_text(DRIVER, encoding="utf-8")

    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if part
    )
    completed = subprocess.run(
        [sys.executable, str(driver_file), str(snippet_file)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.splitlines()[-1])
    assert result["identity"].startswith(f"transformers:{REPOSITORY}@{revision.group(1)}:")
    assert result["dimensions"] == 32
    assert result["complete"] is True
    assert result["recalled"] is True
    assert result["semantic"] is True
    assert (work / "memory.db").is_file()
