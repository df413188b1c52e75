"""The local-transformers embedder and the artifact digest of a local model directory.

Tests that take ``frameworks``, ``tiny_model`` or ``model_factory`` need torch and
transformers (see conftest.py); the others run without them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trueheart_core import Embedder, ProviderError, ValidationError
from trueheart_core.providers import TransformersEmbedder, local_transformers_artifact_sha256

ROOT = Path(__file__).resolve().parents[2]
REVISION = "0123456789abcdef0123456789abcdef01234567"
SIX_TOKENS = "the cat sat on the mat"  # 8 tokens with [CLS] and [SEP]
SEVEN_TOKENS = "the cat sat on the mat ."


def run_python(
    code: str, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this tree's package."""
    env = {**os.environ, **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if part
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def write_files(directory: Path, files: dict[str, bytes]) -> Path:
    for relative, data in files.items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return directory


def spelled_out_digest(files: dict[str, bytes]) -> str:
    """The documented rule, written out independently of the library."""
    digest = hashlib.sha256()
    for relative in sorted(files, key=lambda name: name.encode("utf-8")):
        path, data = relative.encode("utf-8"), files[relative]
        digest.update(len(path).to_bytes(8, "big") + path)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def norm(vector: list[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in vector))


def max_difference(left: list[float], right: list[float]) -> float:
    assert len(left) == len(right)
    return max(abs(a - b) for a, b in zip(left, right, strict=True))


# --- import isolation ------------------------------------------------------------------


def test_import_trueheart_core_imports_no_provider_and_no_framework(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import trueheart_core\n"
        "heavy = ('torch', 'transformers', 'trueheart_core.providers')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
        "import trueheart_core.providers\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    completed = run_python(code, tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "[]\n['trueheart_core.providers']\n"


@pytest.mark.parametrize("blocked", ["torch", "transformers"])
def test_constructing_without_the_extra_raises_provider_error(tmp_path: Path, blocked: str) -> None:
    model = write_files(tmp_path / "model", {"config.json": b"{}"})
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None\n"
        "from trueheart_core import ProviderError\n"
        "from trueheart_core.providers import TransformersEmbedder\n"
        "try:\n"
        f"    TransformersEmbedder({str(model)!r})\n"
        "except ProviderError as error:\n"
        "    print(error, error.__cause__ is None, error.__suppress_context__)\n"
    )
    completed = run_python(code, tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert (
        completed.stdout
        == "provider error: the local-transformers extra is not installed True True\n"
    )


# --- the artifact digest ---------------------------------------------------------------


def test_digest_follows_the_documented_rule(tmp_path: Path) -> None:
    files = {
        "config.json": b'{"hidden_size": 32}',
        "Z": b"upper case sorts first",
        "a.txt": b"",
        "sub/dir/weights.bin": bytes(range(256)) * 5000,
        "sub-file": b"\x00",
    }
    write_files(tmp_path / "m", files)
    assert local_transformers_artifact_sha256(tmp_path / "m") == spelled_out_digest(files)
    assert local_transformers_artifact_sha256(str(tmp_path / "m")) == spelled_out_digest(files)


def test_digest_of_a_known_directory_is_pinned(tmp_path: Path) -> None:
    write_files(tmp_path / "m", {"a": b"b", "c/d": b""})
    assert local_transformers_artifact_sha256(tmp_path / "m") == (
        "2184e6a9b5bf35646172e23b50a88030870ea73c6ad9a5fa97d5372bc41ea368"
    )


def test_digest_frames_paths_and_contents_unambiguously(tmp_path: Path) -> None:
    first = write_files(tmp_path / "one", {"a": b"bc"})
    second = write_files(tmp_path / "two", {"ab": b"c"})
    third = write_files(tmp_path / "three", {"a": b"b", "c": b""})
    digests = {local_transformers_artifact_sha256(path) for path in (first, second, third)}
    assert len(digests) == 3


def test_digest_changes_with_content_and_names_but_not_location(tmp_path: Path) -> None:
    files = {"config.json": b"{}", "model.bin": b"\x01\x02\x03"}
    base = local_transformers_artifact_sha256(write_files(tmp_path / "base", files))
    assert local_transformers_artifact_sha256(write_files(tmp_path / "copy", files)) == base
    changed = write_files(tmp_path / "changed", {**files, "model.bin": b"\x01\x02\x04"})
    assert local_transformers_artifact_sha256(changed) != base
    renamed = write_files(
        tmp_path / "renamed", {"config.json": b"{}", "model2.bin": b"\x01\x02\x03"}
    )
    assert local_transformers_artifact_sha256(renamed) != base
    (tmp_path / "base" / "empty-directory").mkdir()
    assert local_transformers_artifact_sha256(tmp_path / "base") == base


def test_digest_refuses_symbolic_links_inside(tmp_path: Path) -> None:
    target = write_files(tmp_path / "target", {"weights.bin": b"w"})
    linked_file = write_files(tmp_path / "file-link", {"config.json": b"{}"})
    (linked_file / "weights.bin").symlink_to(target / "weights.bin")
    linked_directory = write_files(tmp_path / "dir-link", {"config.json": b"{}"})
    (linked_directory / "sub").symlink_to(target, target_is_directory=True)
    for directory in (linked_file, linked_directory):
        with pytest.raises(ValidationError) as caught:
            local_transformers_artifact_sha256(directory)
        assert str(caught.value) == "path: must not contain symbolic links"


def test_digest_follows_a_link_to_the_directory_itself(tmp_path: Path) -> None:
    target = write_files(tmp_path / "target", {"weights.bin": b"w"})
    (tmp_path / "current").symlink_to(target, target_is_directory=True)
    assert local_transformers_artifact_sha256(tmp_path / "current") == (
        local_transformers_artifact_sha256(target)
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_digest_refuses_entries_that_are_not_regular_files(tmp_path: Path) -> None:
    directory = write_files(tmp_path / "m", {"config.json": b"{}"})
    os.mkfifo(directory / "pipe")
    with pytest.raises(ValidationError) as caught:
        local_transformers_artifact_sha256(directory)
    assert str(caught.value) == "path: must contain only regular files and directories"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: write_files(tmp, {"file": b"x"}) / "file", "path: must be a directory"),
        (lambda tmp: tmp / "missing", "path: must be a directory"),
        (lambda tmp: 42, "path: must be a directory path"),
        (lambda tmp: "", "path: must be a directory path"),
        (lambda tmp: "bad\x00path", "path: must be a directory"),
    ],
)
def test_digest_refuses_what_is_not_a_directory(
    tmp_path: Path, make: Callable[[Path], Any], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        local_transformers_artifact_sha256(make(tmp_path))
    assert str(caught.value) == message


# --- arguments refused before any framework is imported ---------------------------------


@pytest.mark.parametrize(
    "revision", [None, "main", "v1.0", REVISION.upper(), REVISION[:39], REVISION + "0"]
)
def test_hub_name_needs_a_40_hex_commit_revision(revision: str | None) -> None:
    with pytest.raises(ValidationError) as caught:
        TransformersEmbedder("trueheart-tests/absent-model", revision=revision)
    assert str(caught.value) == "revision: must be a commit: 40 lowercase hex characters"


@pytest.mark.parametrize(
    "model",
    [
        "bad\x00name",
        "/no/such/model",
        "./model",
        "a/b/c",
        "~/model",
        "model name",
        "a/../b",
        "a--b",
    ],
)
def test_a_missing_path_is_not_taken_for_a_hub_name(model: str) -> None:
    with pytest.raises(ValidationError) as caught:
        TransformersEmbedder(model, revision=REVISION)
    assert str(caught.value) == "model: must be an existing directory or a hub name"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pooling": "median"}, 'pooling: must be "cls", "mean", "max" or "mean_sqrt_len"'),
        ({"pooling": ""}, 'pooling: must be "cls", "mean", "max" or "mean_sqrt_len"'),
        ({"overflow_policy": "drop"}, 'overflow_policy: must be "error" or "truncate"'),
        ({"max_length": 0}, "max_length: must be an integer from 1 through 1000000"),
        ({"max_length": True}, "max_length: must be an integer from 1 through 1000000"),
        ({"max_length": "512"}, "max_length: must be an integer from 1 through 1000000"),
        ({"batch_size": 0}, "batch_size: must be an integer from 1 through 4096"),
        ({"batch_size": 4097}, "batch_size: must be an integer from 1 through 4096"),
        ({"normalize": 1}, "normalize: must be a bool"),
        ({"lowercase": "yes"}, "lowercase: must be a bool"),
        ({"local_files_only": "yes"}, "local_files_only: must be a bool"),
        ({"device": ""}, "device: must be a non-empty string"),
        ({"query_prefix": None}, "query_prefix: must be a string"),
        ({"document_prefix": "\ud800"}, "document_prefix: must be valid UTF-8"),
        (
            {"local_artifact_sha256": "ABC"},
            "local_artifact_sha256: must be 64 lowercase hex characters",
        ),
        ({"revision": "main"}, "revision: must be a commit: 40 lowercase hex characters"),
    ],
)
def test_invalid_arguments_are_refused(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        TransformersEmbedder(str(tmp_path), **options)
    assert str(caught.value) == message


@pytest.mark.parametrize("model", [None, 3, ""])
def test_model_must_be_a_non_empty_string(model: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        TransformersEmbedder(model)
    assert str(caught.value) == "model: must be a non-empty string"


def test_artifact_digest_applies_only_to_a_directory() -> None:
    with pytest.raises(ValidationError) as caught:
        TransformersEmbedder(
            "trueheart-tests/absent-model", revision=REVISION, local_artifact_sha256="0" * 64
        )
    assert str(caught.value) == "local_artifact_sha256: applies only to a directory"


# --- the framework helper -----------------------------------------------------------------


def test_a_missing_framework_skips_unless_required(
    require_module: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    absent = "trueheart_tests_absent_framework"
    monkeypatch.delenv("TRUEHEART_REQUIRE_PROVIDERS", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require_module(absent)
    monkeypatch.setenv("TRUEHEART_REQUIRE_PROVIDERS", "1")
    with pytest.raises(pytest.fail.Exception):
        require_module(absent)
    assert require_module("math") is math


# --- embedding with a tiny model ----------------------------------------------------------


def test_vectors_have_the_model_dimensions_and_unit_length(tiny_model: Path) -> None:
    embedder = TransformersEmbedder(str(tiny_model))
    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == 32
    assert embedder.normalized is True
    vectors = [*embedder.embed_documents([SIX_TOKENS, "hello world", ""])]
    vectors.append(embedder.embed_query("a dog ran"))
    assert len(vectors) == 4
    for vector in vectors:
        assert len(vector) == 32
        assert all(type(x) is float for x in vector)
        assert abs(norm(vector) - 1.0) < 1e-12
    assert embedder.embed_documents([]) == []


def test_unnormalised_vectors_keep_their_length(tiny_model: Path) -> None:
    raw = TransformersEmbedder(str(tiny_model), normalize=False)
    assert raw.normalized is False
    vector = raw.embed_query(SIX_TOKENS)
    assert abs(norm(vector) - 1.0) > 0.1
    unit = TransformersEmbedder(str(tiny_model)).embed_query(SIX_TOKENS)
    assert max_difference([x / norm(vector) for x in vector], unit) < 1e-12


def test_pooling_matches_the_encoder_output(tiny_model: Path, frameworks: tuple[Any, Any]) -> None:
    torch, transformers = frameworks
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_model), local_files_only=True)
    model = transformers.AutoModel.from_pretrained(str(tiny_model), local_files_only=True).eval()
    with torch.no_grad():
        hidden = model(**tokenizer([SIX_TOKENS], return_tensors="pt")).last_hidden_state
    hidden = hidden[0].double()
    expected = {"cls": hidden[0].tolist(), "mean": hidden.mean(dim=0).tolist()}
    for pooling, vector in expected.items():
        raw = TransformersEmbedder(str(tiny_model), pooling=pooling, normalize=False)  # type: ignore[arg-type]
        assert max_difference(raw.embed_documents([SIX_TOKENS])[0], vector) < 1e-6
        unit = TransformersEmbedder(str(tiny_model), pooling=pooling)  # type: ignore[arg-type]
        scaled = [x / norm(vector) for x in vector]
        assert max_difference(unit.embed_documents([SIX_TOKENS])[0], scaled) < 1e-6
    assert max_difference(expected["cls"], expected["mean"]) > 1e-3


def test_mean_pooling_ignores_padding(tiny_model: Path) -> None:
    embedder = TransformersEmbedder(str(tiny_model), normalize=False)
    alone = embedder.embed_documents(["dog"])[0]
    padded = embedder.embed_documents(["dog", SEVEN_TOKENS])[0]
    assert max_difference(alone, padded) < 1e-5


def test_vectors_are_deterministic(tiny_model: Path) -> None:
    texts = [SIX_TOKENS, "hello world", "a dog ran on the rug"]
    first = TransformersEmbedder(str(tiny_model), batch_size=2)
    second = TransformersEmbedder(str(tiny_model), batch_size=2)
    assert first.embed_documents(texts) == first.embed_documents(texts)
    assert first.embed_documents(texts) == second.embed_documents(texts)
    assert first.embed_query("hello") == second.embed_query("hello")


def test_documents_are_batched_in_order(tiny_model: Path) -> None:
    texts = [SIX_TOKENS, "hello world", "dog", "a cat sat", "the rug"]
    one_by_one = TransformersEmbedder(str(tiny_model), batch_size=1)
    in_pairs = TransformersEmbedder(str(tiny_model), batch_size=2)
    singles = one_by_one.embed_documents(texts)
    assert singles == [one_by_one.embed_documents([text])[0] for text in texts]
    batched = in_pairs.embed_documents(texts)
    assert len(batched) == len(texts)
    for single, vector in zip(singles, batched, strict=True):
        assert max_difference(single, vector) < 1e-5
    assert len({tuple(vector) for vector in singles}) == len(texts)


def test_queries_and_documents_take_their_own_prefix(tiny_model: Path) -> None:
    plain = TransformersEmbedder(str(tiny_model))
    prefixed = TransformersEmbedder(
        str(tiny_model), query_prefix="query: ", document_prefix="passage: "
    )
    text = "the cat sat"
    query = prefixed.embed_query(text)
    document = prefixed.embed_documents([text])[0]
    assert query == plain.embed_documents(["query: " + text])[0]
    assert document == plain.embed_documents(["passage: " + text])[0]
    assert query != document
    assert plain.embed_query(text) == plain.embed_documents([text])[0]


def test_overlong_input_is_refused_by_default(tiny_model: Path) -> None:
    embedder = TransformersEmbedder(str(tiny_model), max_length=8)
    assert len(embedder.embed_documents([SIX_TOKENS])[0]) == 32
    calls: list[Callable[[], object]] = [
        lambda: embedder.embed_query(SEVEN_TOKENS),
        lambda: embedder.embed_documents(["dog", SEVEN_TOKENS]),
        lambda: TransformersEmbedder(
            str(tiny_model), max_length=8, query_prefix="hello "
        ).embed_query(SIX_TOKENS),
    ]
    for call in calls:
        with pytest.raises(ValidationError) as caught:
            call()
        assert str(caught.value) == "text: is longer than max_length tokens"


def test_overlong_input_is_truncated_on_request(tiny_model: Path) -> None:
    embedder = TransformersEmbedder(str(tiny_model), max_length=8, overflow_policy="truncate")
    assert embedder.embed_query(SEVEN_TOKENS) == embedder.embed_query(SIX_TOKENS)
    long_text = " ".join(["the cat sat on the mat"] * 100)
    assert embedder.embed_documents([long_text])[0] == embedder.embed_query(SIX_TOKENS)


def test_max_length_is_bounded_by_the_model(tiny_model: Path) -> None:
    for max_length, message in [
        (513, "max_length: exceeds the model's maximum input length"),
        (2, "max_length: leaves no room for text"),
    ]:
        with pytest.raises(ValidationError) as caught:
            TransformersEmbedder(str(tiny_model), max_length=max_length)
        assert str(caught.value) == message
    assert TransformersEmbedder(str(tiny_model), max_length=3).embed_query("dog")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: e.embed_documents("a cat"), "texts: must be a sequence of strings"),
        (lambda e: e.embed_documents(None), "texts: must be a sequence of strings"),
        (lambda e: e.embed_documents(["dog", 1]), "text: must be a string"),
        (lambda e: e.embed_documents(["\udcff"]), "text: must be valid UTF-8"),
        (lambda e: e.embed_query(b"dog"), "text: must be a string"),
    ],
)
def test_invalid_texts_are_refused(
    tiny_model: Path, call: Callable[[TransformersEmbedder], object], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        call(TransformersEmbedder(str(tiny_model)))
    assert str(caught.value) == message


# --- identity ----------------------------------------------------------------------------


def test_identity_names_everything_that_changes_vectors(tiny_model: Path) -> None:
    digest = local_transformers_artifact_sha256(tiny_model)
    no_prefixes = hashlib.sha256(bytes(16)).hexdigest()[:8]
    base = TransformersEmbedder(str(tiny_model)).identity
    assert base == f"transformers:local@{digest[:16]}:mean:512:error:unit:{no_prefixes}"
    variants: list[dict[str, Any]] = [
        {"pooling": "cls"},
        {"query_prefix": "query: "},
        {"document_prefix": "query: "},
        {"query_prefix": "ab"},
        {"query_prefix": "a", "document_prefix": "b"},
        {"max_length": 256},
        {"overflow_policy": "truncate"},
        {"normalize": False},
    ]
    identities = {base} | {
        TransformersEmbedder(str(tiny_model), **options).identity for options in variants
    }
    assert len(identities) == len(variants) + 1
    assert all(len(identity) <= 128 for identity in identities)
    same = TransformersEmbedder(str(tiny_model), batch_size=3, device="cpu").identity
    assert same == base


def test_identity_and_repr_contain_no_path(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = TransformersEmbedder(str(tiny_model))
    for text in (embedder.identity, repr(embedder)):
        assert str(tiny_model) not in text
        assert tiny_model.name not in text
        assert "/" not in text and os.sep not in text
    monkeypatch.chdir(tiny_model.parent)
    assert TransformersEmbedder(tiny_model.name).identity == embedder.identity


def test_identity_follows_the_weights_not_the_location(
    tiny_model: Path, model_factory: Callable[[int], Path], tmp_path: Path
) -> None:
    base = TransformersEmbedder(str(tiny_model))
    copy = shutil.copytree(tiny_model, tmp_path / "copy")
    assert TransformersEmbedder(str(copy)).identity == base.identity
    other_weights = model_factory(1) / "model.safetensors"
    shutil.copyfile(other_weights, copy / "model.safetensors")
    changed = TransformersEmbedder(str(copy))
    assert changed.identity != base.identity
    assert changed.embed_query(SIX_TOKENS) != base.embed_query(SIX_TOKENS)


def test_a_pinned_hub_model_loads_from_the_local_cache_offline(
    tiny_model: Path, frameworks: tuple[Any, Any], tmp_path: Path
) -> None:
    short = "trueheart-tests/tiny-bert"
    long = "o" * 40 + "/" + "n" * 50
    cache = tmp_path / "hub-cache"
    for name in (short, long):
        folder = "models--" + name.replace("/", "--")
        shutil.copytree(tiny_model, cache / folder / "snapshots" / REVISION)
    code = (
        "import json\n"
        "from trueheart_core.providers import TransformersEmbedder\n"
        f"for name in ({short!r}, {long!r}):\n"
        f"    embedder = TransformersEmbedder(name, revision={REVISION!r})\n"
        f"    print(json.dumps([embedder.identity, embedder.embed_query({SIX_TOKENS!r})]))\n"
    )
    env_cache = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    completed = run_python(code, tmp_path, env_cache)
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    local = TransformersEmbedder(str(tiny_model))
    options = local.identity.split(":", 2)[2]
    hashed = "sha256-" + hashlib.sha256(long.encode("ascii")).hexdigest()[:16]
    assert [identity for identity, _ in lines] == [
        f"transformers:{short}@{REVISION}:{options}",
        f"transformers:{hashed}@{REVISION}:{options}",
    ]
    assert all(vector == local.embed_query(SIX_TOKENS) for _, vector in lines)


# --- the artifact digest at construction ------------------------------------------------


def test_a_correct_artifact_digest_is_accepted(tiny_model: Path) -> None:
    digest = local_transformers_artifact_sha256(tiny_model)
    embedder = TransformersEmbedder(str(tiny_model), local_artifact_sha256=digest)
    assert embedder.identity == TransformersEmbedder(str(tiny_model)).identity
    assert f"@{digest[:16]}:" in embedder.identity


def test_a_wrong_artifact_digest_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    digest = local_transformers_artifact_sha256(tiny_model)
    with pytest.raises(ProviderError) as caught:
        TransformersEmbedder(str(tiny_model), local_artifact_sha256="0" * 64)
    assert str(caught.value) == "provider error: local model artifact digest mismatch"
    copy = shutil.copytree(tiny_model, tmp_path / "copy")
    (copy / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ProviderError) as caught:
        TransformersEmbedder(str(copy), local_artifact_sha256=digest)
    assert str(caught.value) == "provider error: local model artifact digest mismatch"


# --- loading -----------------------------------------------------------------------------


def test_a_hub_model_absent_from_the_local_cache_is_not_fetched(
    frameworks: tuple[Any, Any],
) -> None:
    with pytest.raises(ProviderError) as caught:
        TransformersEmbedder("trueheart-tests/absent-model", revision=REVISION)
    assert str(caught.value) == "provider error: the model could not be loaded"
    assert caught.value.__cause__ is not None


def test_a_directory_without_a_model_cannot_be_loaded(
    frameworks: tuple[Any, Any], tmp_path: Path
) -> None:
    empty = write_files(tmp_path / "empty", {"notes.txt": b"not a model"})
    with pytest.raises(ProviderError) as caught:
        TransformersEmbedder(str(empty))
    assert str(caught.value) == "provider error: the model could not be loaded"
    assert caught.value.__cause__ is not None


def test_an_unknown_device_is_reported(tiny_model: Path) -> None:
    with pytest.raises(ProviderError) as caught:
        TransformersEmbedder(str(tiny_model), device="no-such-device")
    assert str(caught.value) == "provider error: the model could not be loaded"
