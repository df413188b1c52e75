"""``semantic-status`` and ``semantic-sync`` through ``trueheart_core.cli.main``: the
status before and after a sync, JSON, embedders named by import paths (good and bad),
usage errors, a missing store and a store this user cannot write."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import OTHER, SCOPE, as_reader, build, call, unwritable
from store_dump import dump

from trueheart_core import HashingEmbedder, SQLiteRepository, TrueHeart

HASHING = "trueheart_core:HashingEmbedder"
UNUSABLE = "is not a usable embedder"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return build(tmp_path / "store.db")


@pytest.fixture
def cwd_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module ``cli_embedders`` in the current directory (not on ``sys.path``)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "cli_embedders.py").write_text(
        "from trueheart_core import HashingEmbedder\n"
        "small = HashingEmbedder(dimensions=8)\n"
        "def make():\n"
        "    return HashingEmbedder(dimensions=16)\n"
        "def broken():\n"
        "    raise RuntimeError('Drinks green tea.')\n"
        "def exits():\n"
        "    raise SystemExit('Drinks green tea.')\n"
        "def wrong():\n"
        "    return 42\n"
        "number = 7\n"
        "class _Small:\n"
        "    dimensions = 2\n"
        "    normalized = False\n"
        "    def embed_query(self, text):\n"
        "        return [1.0, 0.0]\n"
        "class Exits(_Small):\n"
        "    identity = 'exits-v1'\n"
        "    def embed_documents(self, texts):\n"
        "        raise SystemExit('model said: ' + texts[0])\n"
        "class Aborted(BaseException):\n"
        "    pass\n"
        "class Aborts(_Small):\n"
        "    identity = 'aborts-v1'\n"
        "    def embed_documents(self, texts):\n"
        "        raise Aborted('model said: ' + texts[0])\n"
        "class NoIdentity(_Small):\n"
        "    @property\n"
        "    def identity(self):\n"
        "        raise ValueError('Drinks green tea.')\n"
        "    def embed_documents(self, texts):\n"
        "        return [[1.0, 0.0] for _ in texts]\n"
        "class Huge(_Small):\n"
        "    identity = 'huge-v1'\n"
        "    dimensions = 10 ** 9\n"
        "    def embed_documents(self, texts):\n"
        "        return []\n"
        "huge = Huge()\n"
        "class Flag(Huge):\n"
        "    dimensions = True\n"
        "class Unsure(Huge):\n"
        "    dimensions = 2\n"
        "    normalized = 'maybe'\n"
        "class Blank(Unsure):\n"
        "    identity = ' '\n"
        "    normalized = False\n"
        "class Long(Blank):\n"
        "    identity = 'x' * 129\n"
        "class _Lazy:\n"
        "    def __getattr__(self, name):\n"
        "        raise RuntimeError('Drinks green tea.')\n"
        "lazy = _Lazy()\n",
        encoding="utf-8",
    )
    (home / "cli_noisy.py").write_text(
        "from trueheart_core import HashingEmbedder\n"
        "print('loading the model')\n"
        "class Noisy(HashingEmbedder):\n"
        "    def embed_documents(self, texts):\n"
        "        print('embedding', len(texts), 'texts')\n"
        "        return super().embed_documents(texts)\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(home)
    monkeypatch.setattr("sys.path", [p for p in sys.path if p not in ("", str(home))])
    yield "cli_embedders"
    sys.modules.pop("cli_embedders", None)
    sys.modules.pop("cli_noisy", None)


def test_status_then_sync_then_status(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = call(capsys, "semantic-status", str(store))
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "SCOPE              MEMORIES  INDEXED  MISSING  STALE  COMPLETE",
        "acme/agent/user-1         3        0        3      0  no",
        "acme/agent/user-2         1        0        1      0  no",
    ]
    status, out, err = call(capsys, "semantic-sync", str(store), "--embedder", HASHING)
    assert status == 0, err
    assert out.splitlines() == [
        "SCOPE              EMBEDDED  MEMORIES  INDEXED  MISSING  STALE  COMPLETE",
        "acme/agent/user-1         3         3        3        0      0  yes",
        "acme/agent/user-2         1         1        1        0      0  yes",
    ]
    assert err == (
        f"trueheart: embedding acme/agent/user-1 (1 of 2) in {store}\n"
        f"trueheart: embedding acme/agent/user-2 (2 of 2) in {store}\n"
    )
    status, out, _ = call(capsys, "semantic-status", str(store), "--scope", "acme/agent/user-1")
    assert status == 0
    assert out.splitlines()[1].split() == ["acme/agent/user-1", "3", "3", "0", "0", "yes"]
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert service.stats().vectors == 4


def test_json_of_status_and_sync(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = call(
        capsys, "semantic-status", str(store), "--scope", "acme/agent/user-2", "--json"
    )
    assert status == 0
    assert json.loads(out) == {
        "scopes": [
            {
                "scope": "acme/agent/user-2",
                "embedder": None,
                "registered": False,
                "complete": False,
                "memories": 1,
                "indexed": 0,
                "missing": 1,
                "stale": 0,
                "missing_memory_ids": ["mem-1"],
                "stale_memory_ids": [],
                "missing_claim_ids": [],
                "stale_claim_ids": [],
            }
        ]
    }
    args = ("semantic-sync", str(store), "--embedder", HASHING, "--scope", "acme/agent/user-1")
    status, out, _ = call(capsys, *args, "--batch", "2", "--json")
    doc = json.loads(out)
    assert status == 0
    assert doc["embedder"] == HashingEmbedder().identity
    [only] = doc["scopes"]
    assert (only["scope"], only["embedded"], only["complete"]) == ("acme/agent/user-1", 3, True)
    with TrueHeart(SQLiteRepository(store, read_only=True)) as service:
        assert service.semantic_status(SCOPE).complete
        assert not service.semantic_status(OTHER).indexed
    # Synced again, nothing is left to embed.
    status, out, _ = call(capsys, *args, "--json")
    assert json.loads(out)["scopes"][0]["embedded"] == 0


def test_a_module_of_the_current_directory(
    store: Path, capsys: pytest.CaptureFixture[str], cwd_module: str
) -> None:
    for attribute, dimensions in (("small", 8), ("make", 16)):
        path = store.with_name(f"{attribute}.db")
        path.write_bytes(store.read_bytes())
        args = ("semantic-sync", str(path), "--embedder", f"{cwd_module}:{attribute}", "--json")
        status, out, err = call(capsys, *args)
        assert status == 0, err
        assert json.loads(out)["embedder"] == HashingEmbedder(dimensions).identity


def test_what_the_embedder_prints_never_reaches_the_answer(
    store: Path, capsys: pytest.CaptureFixture[str], cwd_module: str
) -> None:
    args = ("semantic-sync", str(store), "--embedder", "cli_noisy:Noisy", "--json")
    status, out, err = call(capsys, *args)
    assert status == 0, err
    assert json.loads(out)["embedder"] == HashingEmbedder().identity  # stdout: one document
    assert "loading the model" in err and "embedding" in err


@pytest.mark.parametrize(
    ("embedder", "why"),
    [
        ("cli_embedders", "must be MODULE:ATTR, such as trueheart_core:HashingEmbedder"),
        (":make", "must be MODULE:ATTR, such as trueheart_core:HashingEmbedder"),
        ("no_such_module_here:x", "cannot import module no_such_module_here"),
        ("cli_embedders:absent", "module cli_embedders has no absent"),
        ("cli_embedders:number", "is not an embedder, nor a class or function that makes one"),
        ("cli_embedders:broken", "calling it without arguments failed"),
        ("cli_embedders:exits", "calling it without arguments failed"),
        ("cli_embedders:wrong", "calling it did not return an embedder"),
        ("cli_embedders:NoIdentity", "calling it did not return an embedder"),
        ("cli_embedders:Huge", f"{UNUSABLE}: its dimensions must be from 1 through 16384"),
        ("cli_embedders:huge", f"{UNUSABLE}: its dimensions must be from 1 through 16384"),
        ("cli_embedders:Flag", f"{UNUSABLE}: its dimensions must be from 1 through 16384"),
        ("cli_embedders:Unsure", f"{UNUSABLE}: its normalized must be a bool"),
        ("cli_embedders:Blank", f"{UNUSABLE}: its identity must be a non-blank string"),
        ("cli_embedders:Long", f"{UNUSABLE}: its identity must be at most 128 characters"),
        ("cli_embedders:lazy.model", "reading lazy.model of cli_embedders failed"),
    ],
)
def test_a_bad_embedder_path_exits_2_and_changes_nothing(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    cwd_module: str,
    embedder: str,
    why: str,
) -> None:
    before = dump(store)
    status, out, err = call(capsys, "semantic-sync", str(store), "--embedder", embedder, "--json")
    message = f"--embedder {embedder}: {why}"
    assert (status, err) == (2, f"trueheart: {message}\n")
    assert json.loads(out) == {"error": "EmbedderRefused", "exit_status": 2, "message": message}
    assert "Drinks" not in err + out
    assert dump(store) == before


def test_an_unusable_embedder_is_refused_before_the_store_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cwd_module: str
) -> None:
    """Its space is checked as the service checks it, but first: even with no store."""
    missing = str(tmp_path / "missing.db")
    args = ("semantic-sync", missing, "--embedder", f"{cwd_module}:Huge")
    status, _, err = call(capsys, *args)
    message = f"{cwd_module}:Huge: {UNUSABLE}: its dimensions must be from 1 through 16384"
    assert (status, err) == (2, f"trueheart: --embedder {message}\n")


@pytest.mark.parametrize("embedder", ["Exits", "Aborts"])
def test_an_embedder_that_exits_or_aborts_is_an_internal_error_without_its_text(
    store: Path, capsys: pytest.CaptureFixture[str], cwd_module: str, embedder: str
) -> None:
    args = ("semantic-sync", str(store), "--embedder", f"{cwd_module}:{embedder}", "--json")
    status, out, err = call(capsys, *args)
    name = "SystemExit" if embedder == "Exits" else "Aborted"
    message = f"internal error ({name}); please report it"
    assert status == 1
    assert json.loads(out) == {"error": name, "exit_status": 1, "message": message}
    assert err.splitlines()[-1] == f"trueheart: {message}"
    assert "Drinks" not in err + out and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("semantic-sync", "DB"), "the following arguments are required: --embedder"),
        (
            ("semantic-sync", "DB", "--embedder", HASHING, "--batch", "0"),
            "must be from 1 through 4096",
        ),
        (("semantic-sync", "DB", "--embedder", HASHING, "--batch", "x"), "must be a whole number"),
        (("semantic-status", "DB", "--scope", "a/b"), "must be tenant/owner/subject"),
    ],
)
def test_usage_errors_exit_2(
    store: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    argv = [str(store) if a == "DB" else a for a in args]
    status, out, err = call(capsys, *argv, "--json")
    assert status == 2
    assert json.loads(out)["error"] == "usage"
    assert message in err


@pytest.mark.parametrize("args", [("semantic-status",), ("semantic-sync", "--embedder", HASHING)])
def test_a_missing_store_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    missing = tmp_path / "missing.db"
    status, _, err = call(capsys, args[0], str(missing), *args[1:])
    assert (status, err) == (3, f"trueheart: {missing}: database not found\n")
    assert not missing.exists()


def test_a_store_this_user_cannot_write(store: Path) -> None:
    with unwritable(store) as copy:
        before = dump(copy)
        status, out, err = as_reader("semantic-status", str(copy))
        assert (status, err) == (0, ""), err
        assert "acme/agent/user-1" in out
        status, _, err = as_reader("semantic-sync", str(copy), "--embedder", HASHING)
        assert status == 5, err
        assert err.splitlines()[-1].startswith(f"trueheart: {copy}: repository read-only: ")
        assert dump(copy) == before
