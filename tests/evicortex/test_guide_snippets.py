"""The evicortex API guide, read at test time: its signatures match the implementation,
and its runnable snippets run unchanged.

The guide is kept verbatim in ``tests/evicortex/data``. The Transformers snippet runs in
tests/providers/test_evicortex_snippet.py, where the model frameworks are installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from evicortex_guide import GUIDE, Signature, Snippets, implementation_parameters, read_snippets

import evicortex
import evicortex.providers
from evicortex import EviCortex, ExtractionRecord, HashingEmbedder
from evicortex.errors import StorageClosedError

ROOT = Path(__file__).resolve().parents[2]

SIGNATURES = (
    "EviCortex.open",
    "memory.remember",
    "ClaimInput",
    "memory.remember_extracted",
    "memory.get_extraction",
    "memory.recall",
    "memory.expand",
    "memory.index_semantic",
    "memory.semantic_status",
    "memory.sync_semantic",
    "memory.verify_integrity",
    "memory.rebuild_indexes",
    "memory.stats",
    "memory.purge_memory",
)

# Each runnable snippet of the guide: the two one-line imports exactly, the others by a
# text only they contain.
EXACT = {
    "imports": "from evicortex import ClaimInput, EviCortex, MemoryCapsule, MemoryRecord\n",
    "provider-import": "from evicortex.providers import TransformersEmbedder\n",
}
RUNNABLE = {
    **EXACT,
    "open-and-close": 'with EviCortex.open("memory.db") as memory:\n    ...',
    "canonical-extraction": "CanonicalClaimExtractor()",
    "semantic-lifecycle": "HashingEmbedder(dimensions=256)",
    "transformers-embedder": "TransformersEmbedder(\n",
}


@pytest.fixture(scope="module")
def snippets() -> Snippets:
    assert GUIDE.is_file(), "the API guide belongs in tests/evicortex/data"
    return read_snippets(GUIDE)


def snippet(snippets: Snippets, name: str) -> str:
    if name in EXACT:
        found = [code for code in snippets.runnable if code == EXACT[name]]
    else:
        found = [code for code in snippets.runnable if RUNNABLE[name] in code]
    assert len(found) == 1, (name, found)
    return found[0]


def run(code: str, namespace: dict[str, object], name: str) -> None:
    exec(compile(code, f"<guide snippet {name}>", "exec"), namespace)


def run_after_imports(snippets: Snippets, name: str) -> dict[str, object]:
    """Run the guide's import snippet, then the named snippet unchanged, in one fresh
    namespace (as a reader does who follows the guide from its top)."""
    namespace: dict[str, object] = {"__name__": "guide_snippet"}
    run(snippet(snippets, "imports"), namespace, "imports")
    run(snippet(snippets, name), namespace, name)
    return namespace


# --- the extractor -----------------------------------------------------------------------


def test_every_snippet_of_the_guide_is_found(snippets: Snippets) -> None:
    assert len(snippets.runnable) == len(RUNNABLE)
    for name in RUNNABLE:
        snippet(snippets, name)
    assert [s.name for s in snippets.signatures] == list(SIGNATURES)


def test_the_extractor_keeps_prose_out_of_the_snippets(snippets: Snippets) -> None:
    text = "\n".join(snippets.runnable)
    assert "is idempotent" not in text
    assert "python -m pip" not in text
    assert "understands only this exact grammar" not in text
    assert all(code.strip() for code in snippets.runnable)


# --- the signatures ----------------------------------------------------------------------


def documented(snippets: Snippets, name: str) -> Signature:
    (found,) = [s for s in snippets.signatures if s.name == name]
    return found


@pytest.mark.parametrize("name", SIGNATURES)
def test_the_implementation_has_the_documented_signature(snippets: Snippets, name: str) -> None:
    signature = documented(snippets, name)
    if name == "EviCortex.open":
        actual = implementation_parameters(EviCortex.open, drop_self=False)
    elif name == "ClaimInput":
        actual = implementation_parameters(evicortex.ClaimInput, drop_self=False)
    else:
        method = getattr(EviCortex, name.removeprefix("memory."))
        actual = implementation_parameters(method, drop_self=True)
    assert [p.key for p in actual] == [p.key for p in signature.parameters]


def test_the_documented_return_types_are_public_names(snippets: Snippets) -> None:
    for signature in snippets.signatures:
        if signature.returns in (None, "None", "bool"):
            continue
        assert signature.returns is not None
        assert hasattr(evicortex, signature.returns), signature.returns


# --- the runnable snippets ---------------------------------------------------------------


def test_the_import_snippets_run(snippets: Snippets) -> None:
    namespace = run_after_imports(snippets, "provider-import")
    assert namespace["EviCortex"] is evicortex.EviCortex
    assert namespace["ClaimInput"] is evicortex.ClaimInput
    assert namespace["MemoryCapsule"] is evicortex.MemoryCapsule
    assert namespace["MemoryRecord"] is evicortex.MemoryRecord
    assert namespace["TransformersEmbedder"] is evicortex.providers.TransformersEmbedder


def test_the_open_and_close_snippet_runs(
    snippets: Snippets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = run_after_imports(snippets, "open-and-close")
    assert (tmp_path / "memory.db").is_file()
    store = namespace["memory"]
    assert isinstance(store, EviCortex)
    with pytest.raises(StorageClosedError):
        store.stats()


def test_the_canonical_extraction_snippet_runs(
    snippets: Snippets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = run_after_imports(snippets, "canonical-extraction")
    assert list(tmp_path.iterdir()) == []  # ":memory:" leaves no file
    record = namespace["record"]
    audit = namespace["audit"]
    assert isinstance(record, evicortex.MemoryRecord)
    assert record.namespace == "demo/ada"
    assert record.content == namespace["text"]
    (claim,) = record.claims
    assert (claim.subject, claim.predicate, claim.value) == ("user:ada", "prefers_theme", "dark")
    assert claim.valid_from == datetime(2026, 4, 18, 9, 30, tzinfo=UTC)
    assert claim.confidence == 1.0
    assert claim.authority == "application"
    assert claim.memory_id == record.id
    assert isinstance(audit, ExtractionRecord)
    assert audit.claim_ids == (claim.id,)


def test_the_semantic_lifecycle_snippet_runs(
    snippets: Snippets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = run_after_imports(snippets, "semantic-lifecycle")
    assert namespace["status"].complete  # type: ignore[attr-defined]
    record = namespace["record"]
    assert isinstance(record, evicortex.MemoryRecord)
    with EviCortex.open(tmp_path / "memory.db", embedder=HashingEmbedder(dimensions=256)) as store:
        assert store.expand(namespace="demo/ada", memory_id=record.id) == record
        assert store.stats("demo/ada").memories == 1
        assert store.semantic_status("demo/ada").complete


def test_importing_evicortex_loads_no_model_framework(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import evicortex\n"
        "heavy = ('torch', 'transformers')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
        "import evicortex.providers\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if part
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "[]\n[]\n"
