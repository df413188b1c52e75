"""The sentence-transformers configuration of a model directory, read by the
local-transformers embedder: pooling modes, Normalize, max_seq_length, do_lower_case,
explicit arguments over the files, the identity, and what is refused.

Each test copies the tiny model of conftest.py into ``tmp_path`` and writes the JSON files
of sentence-transformers next to it; every expected vector is computed here directly with
torch from the same model.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_transformers import REVISION, SEVEN_TOKENS, SIX_TOKENS, max_difference, norm, run_python

from trueheart_core import ProviderError, ValidationError
from trueheart_core.providers import TransformersEmbedder

TRANSFORMER = {
    "idx": 0,
    "name": "0",
    "path": "",
    "type": "sentence_transformers.models.Transformer",
}
POOLING = {
    "idx": 1,
    "name": "1",
    "path": "1_Pooling",
    "type": "sentence_transformers.models.Pooling",
}
NORMALIZE = {
    "idx": 2,
    "name": "2",
    "path": "2_Normalize",
    "type": "sentence_transformers.models.Normalize",
}
FLAGS = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
    "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens",
}
MODES = tuple(FLAGS)
TEXTS = [SIX_TOKENS, "dog", "hello world"]  # different lengths: the batch is padded
NO_PREFIXES = hashlib.sha256(bytes(16)).hexdigest()[:8]


def pooling_config(mode: str, **changes: object) -> dict[str, object]:
    """A Pooling config.json as sentence-transformers saves it, with one mode on."""
    config: dict[str, object] = {
        "word_embedding_dimension": 32,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
        "include_prompt": True,
    }
    config[FLAGS[mode]] = True
    config.update(changes)
    return config


def model_with(base: Path, target: Path, files: dict[str, object]) -> Path:
    """A copy of ``base`` at ``target`` with ``files`` (JSON values, or raw bytes) added."""
    directory = Path(shutil.copytree(base, target))
    for relative, value in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = value if isinstance(value, bytes) else json.dumps(value).encode("utf-8")
        path.write_bytes(data)
    return directory


def sentence_transformers_model(
    base: Path,
    target: Path,
    mode: str = "mean",
    *,
    normalize: bool = False,
    sbert: dict[str, object] | None = None,
) -> Path:
    files: dict[str, object] = {
        "modules.json": [TRANSFORMER, POOLING, *([NORMALIZE] if normalize else [])],
        "1_Pooling/config.json": pooling_config(mode),
    }
    if sbert is not None:
        files["sentence_bert_config.json"] = sbert
    return model_with(base, target, files)


def options(embedder: TransformersEmbedder) -> str:
    """The identity after the model's name and version: the effective configuration."""
    return embedder.identity.split(":", 2)[2]


def direct(model: Path, frameworks: tuple[Any, Any], text: str) -> dict[str, list[float]]:
    """Each pooling of ``text``'s last hidden state, computed with torch alone (the text
    alone in its batch: no padding)."""
    torch, transformers = frameworks
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model), local_files_only=True)
    encoder = transformers.AutoModel.from_pretrained(str(model), local_files_only=True).eval()
    with torch.no_grad():
        hidden = encoder(**tokenizer([text], return_tensors="pt")).last_hidden_state[0].double()
    return {
        "cls": hidden[0].tolist(),
        "mean": hidden.mean(dim=0).tolist(),
        "max": hidden.max(dim=0).values.tolist(),
        "mean_sqrt_len": (hidden.sum(dim=0) / math.sqrt(hidden.shape[0])).tolist(),
    }


# --- pooling, Normalize, max_seq_length, do_lower_case ---------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_each_pooling_mode_gives_the_direct_computation(
    tiny_model: Path, frameworks: tuple[Any, Any], tmp_path: Path, mode: str
) -> None:
    model = sentence_transformers_model(tiny_model, tmp_path / "st", mode)
    embedder = TransformersEmbedder(str(model))
    assert embedder.normalized is False  # modules.json lists no Normalize module
    assert options(embedder).startswith(f"{mode}:512:error:raw:")
    vectors = embedder.embed_documents(TEXTS)
    for text, vector in zip(TEXTS, vectors, strict=True):
        expected = direct(tiny_model, frameworks, text)
        assert max_difference(vector, expected[mode]) < 1e-5
        others = [expected[other] for other in MODES if other != mode]
        assert all(max_difference(vector, other) > 1e-3 for other in others)
    assert embedder.embed_query(SIX_TOKENS) == embedder.embed_documents([SIX_TOKENS])[0]


@pytest.mark.parametrize("mode", ["max", "mean_sqrt_len"])
def test_the_new_pooling_modes_can_be_given_as_arguments(
    tiny_model: Path, frameworks: tuple[Any, Any], mode: str
) -> None:
    embedder = TransformersEmbedder(str(tiny_model), pooling=mode, normalize=False)  # type: ignore[arg-type]
    expected = direct(tiny_model, frameworks, SIX_TOKENS)[mode]
    assert max_difference(embedder.embed_query(SIX_TOKENS), expected) < 1e-5


def test_a_pooling_config_without_modules_json_is_read(
    tiny_model: Path, frameworks: tuple[Any, Any], tmp_path: Path
) -> None:
    model = model_with(
        tiny_model, tmp_path / "st", {"1_Pooling/config.json": pooling_config("cls")}
    )
    embedder = TransformersEmbedder(str(model))
    assert embedder.normalized is True  # no modules.json: the default stays
    assert options(embedder).startswith("cls:512:error:unit:")
    expected = direct(tiny_model, frameworks, SIX_TOKENS)["cls"]
    scaled = [x / norm(expected) for x in expected]
    assert max_difference(embedder.embed_query(SIX_TOKENS), scaled) < 1e-6


def test_a_normalize_module_gives_unit_vectors(
    tiny_model: Path, frameworks: tuple[Any, Any], tmp_path: Path
) -> None:
    raw = TransformersEmbedder(
        str(sentence_transformers_model(tiny_model, tmp_path / "raw", "max"))
    )
    unit = TransformersEmbedder(
        str(sentence_transformers_model(tiny_model, tmp_path / "unit", "max", normalize=True))
    )
    assert (raw.normalized, unit.normalized) == (False, True)
    assert options(unit).startswith("max:512:error:unit:")
    for text in TEXTS:
        vector = unit.embed_query(text)
        assert abs(norm(vector) - 1.0) < 1e-12
        expected = direct(tiny_model, frameworks, text)["max"]
        assert abs(norm(expected) - 1.0) > 0.1
        assert max_difference(vector, [x / norm(expected) for x in expected]) < 1e-6


def test_max_seq_length_truncates(tiny_model: Path, tmp_path: Path) -> None:
    model = sentence_transformers_model(
        tiny_model, tmp_path / "st", sbert={"max_seq_length": 8, "do_lower_case": False}
    )
    embedder = TransformersEmbedder(str(model))
    assert options(embedder).startswith("mean:8:truncate:raw:")
    # SEVEN_TOKENS is 9 tokens with [CLS] and [SEP]; cut to 8 it is SIX_TOKENS.
    assert embedder.embed_query(SEVEN_TOKENS) == embedder.embed_query(SIX_TOKENS)
    long_text = " ".join([SEVEN_TOKENS] * 50)
    assert embedder.embed_documents([long_text])[0] == embedder.embed_query(SIX_TOKENS)
    untruncated = TransformersEmbedder(str(model), max_length=16)
    assert untruncated.embed_query(SEVEN_TOKENS) != untruncated.embed_query(SIX_TOKENS)
    refusing = TransformersEmbedder(str(model), overflow_policy="error")
    assert options(refusing).startswith("mean:8:error:raw:")
    with pytest.raises(ValidationError, match="text: is longer than max_length tokens"):
        refusing.embed_query(SEVEN_TOKENS)


def test_do_lower_case_lowercases_every_input(
    cased_model: Path, tiny_model: Path, tmp_path: Path
) -> None:
    lowered_model = model_with(
        cased_model, tmp_path / "st", {"sentence_bert_config.json": {"do_lower_case": True}}
    )
    lowered = TransformersEmbedder(str(lowered_model), query_prefix="HELLO ")
    cased = TransformersEmbedder(str(cased_model), query_prefix="HELLO ")
    uncased = TransformersEmbedder(str(tiny_model), query_prefix="hello ")
    assert options(lowered) == options(cased) + ":lower"
    assert lowered.embed_query("THE CAT SAT") == uncased.embed_query("the cat sat")
    assert lowered.embed_documents(["THE DOG"]) == uncased.embed_documents(["the dog"])
    assert (
        max_difference(cased.embed_query("THE CAT SAT"), uncased.embed_query("the cat sat")) > 1e-3
    )
    # The argument wins over the file, both ways.
    kept = TransformersEmbedder(str(lowered_model), query_prefix="HELLO ", lowercase=False)
    assert options(kept) == options(cased)
    assert kept.embed_query("THE CAT SAT") == cased.embed_query("THE CAT SAT")
    asked = TransformersEmbedder(str(cased_model), query_prefix="HELLO ", lowercase=True)
    assert options(asked) == options(lowered)
    assert asked.embed_query("THE CAT SAT") == lowered.embed_query("THE CAT SAT")
    unset = model_with(cased_model, tmp_path / "unset", {"sentence_bert_config.json": {}})
    assert options(TransformersEmbedder(str(unset), query_prefix="HELLO ")) == options(cased)


# --- explicit arguments and the identity -------------------------------------------------


def test_explicit_arguments_win_over_the_files(tiny_model: Path, tmp_path: Path) -> None:
    model = sentence_transformers_model(
        tiny_model, tmp_path / "st", "cls", normalize=True, sbert={"max_seq_length": 8}
    )
    from_files = TransformersEmbedder(str(model))
    assert from_files.normalized is True
    assert options(from_files).startswith("cls:8:truncate:unit:")
    chosen = {"pooling": "mean", "max_length": 16, "overflow_policy": "error", "normalize": False}
    explicit = TransformersEmbedder(str(model), **chosen)  # type: ignore[arg-type]
    plain = TransformersEmbedder(str(tiny_model), **chosen)  # type: ignore[arg-type]
    assert explicit.normalized is False
    assert options(explicit) == options(plain)
    assert options(explicit).startswith("mean:16:error:raw:")
    assert explicit.embed_documents(TEXTS) == plain.embed_documents(TEXTS)
    partly = TransformersEmbedder(str(model), pooling="max")
    assert options(partly).startswith("max:8:truncate:unit:")
    assert options(TransformersEmbedder(str(model), max_length=16)).startswith(
        "cls:16:truncate:unit:"
    )


def test_the_identity_names_the_effective_configuration(tiny_model: Path, tmp_path: Path) -> None:
    def arguments(pooling: str, max_length: int, overflow: str, unit: bool) -> dict[str, Any]:
        return {
            "pooling": pooling,
            "max_length": max_length,
            "overflow_policy": overflow,
            "normalize": unit,
        }

    configurations: list[tuple[dict[str, Any] | None, dict[str, Any], str]] = [
        (None, arguments("mean", 512, "error", True), f"mean:512:error:unit:{NO_PREFIXES}"),
        *(
            (
                {"mode": mode},
                arguments(mode, 512, "error", False),
                f"{mode}:512:error:raw:{NO_PREFIXES}",
            )
            for mode in MODES
        ),
        (
            {"mode": "cls", "normalize": True},
            arguments("cls", 512, "error", True),
            f"cls:512:error:unit:{NO_PREFIXES}",
        ),
        (
            {"sbert": {"max_seq_length": 8}},
            arguments("mean", 8, "truncate", False),
            f"mean:8:truncate:raw:{NO_PREFIXES}",
        ),
        (
            {"sbert": {"max_seq_length": 8, "do_lower_case": True}},
            {**arguments("mean", 8, "truncate", False), "lowercase": True},
            f"mean:8:truncate:raw:{NO_PREFIXES}:lower",
        ),
    ]
    seen = set()
    for index, (settings, explicit, expected) in enumerate(configurations):
        model = (
            tiny_model
            if settings is None
            else sentence_transformers_model(tiny_model, tmp_path / f"m{index}", **settings)
        )
        embedder = TransformersEmbedder(str(model))
        assert options(embedder) == expected
        assert len(embedder.identity) <= 128
        seen.add(options(embedder))
        # The same configuration given as arguments names the same space.
        assert TransformersEmbedder(str(model), **explicit).identity == embedder.identity
    assert len(seen) == len(configurations)


def test_a_hub_model_reads_its_files_from_the_local_cache(
    tiny_model: Path, frameworks: tuple[Any, Any], tmp_path: Path
) -> None:
    name = "trueheart-tests/tiny-st"
    cache = tmp_path / "hub-cache"
    snapshot = cache / ("models--" + name.replace("/", "--")) / "snapshots" / REVISION
    snapshot.parent.mkdir(parents=True)
    sentence_transformers_model(
        tiny_model, snapshot, "cls", normalize=True, sbert={"max_seq_length": 8}
    )
    code = (
        "import json\n"
        "from trueheart_core.providers import TransformersEmbedder\n"
        f"embedder = TransformersEmbedder({name!r}, revision={REVISION!r})\n"
        f"print(json.dumps([embedder.identity, embedder.embed_query({SEVEN_TOKENS!r})]))\n"
    )
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    completed = run_python(code, tmp_path, env)
    assert completed.returncode == 0, completed.stderr
    identity, vector = json.loads(completed.stdout)
    local = TransformersEmbedder(
        str(tiny_model), pooling="cls", max_length=8, overflow_policy="truncate"
    )
    assert identity == f"transformers:{name}@{REVISION}:{options(local)}"
    assert max_difference(vector, local.embed_query(SIX_TOKENS)) < 1e-12


# --- refused configurations ------------------------------------------------------------

MODULES = "sentence-transformers modules.json: "
POOLING_CONFIG = "sentence-transformers pooling config.json: "
SBERT = "sentence-transformers sentence_bert_config.json: "
DENSE = {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}
VALID_POOLING = {"1_Pooling/config.json": pooling_config("mean")}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"modules.json": [TRANSFORMER, POOLING, DENSE], **VALID_POOLING},
            MODULES + "lists a module other than Transformer, Pooling and Normalize",
        ),
        (
            {"modules.json": [TRANSFORMER, {**POOLING, "type": "my_package.Pooling"}]},
            MODULES + "lists a module other than Transformer, Pooling and Normalize",
        ),
        (
            {"modules.json": [POOLING, TRANSFORMER], **VALID_POOLING},
            MODULES + "must list Transformer, Pooling and optionally Normalize, in that order",
        ),
        (
            {"modules.json": [TRANSFORMER], **VALID_POOLING},
            MODULES + "must list Transformer, Pooling and optionally Normalize, in that order",
        ),
        (
            {"modules.json": [TRANSFORMER, POOLING, NORMALIZE, NORMALIZE], **VALID_POOLING},
            MODULES + "must list Transformer, Pooling and optionally Normalize, in that order",
        ),
        ({"modules.json": {"0": TRANSFORMER}}, MODULES + "must be a non-empty list of modules"),
        ({"modules.json": []}, MODULES + "must be a non-empty list of modules"),
        (
            {"modules.json": [TRANSFORMER, {"path": "1_Pooling"}]},
            MODULES + "must give every module a type",
        ),
        (
            {"modules.json": [TRANSFORMER, {**POOLING, "path": 1}]},
            MODULES + "must give every module's path as a string",
        ),
        (
            {"modules.json": [{**TRANSFORMER, "path": "0_Transformer"}, POOLING], **VALID_POOLING},
            MODULES + "must keep the Transformer module in the model directory",
        ),
        (
            {"modules.json": [TRANSFORMER, {**POOLING, "path": "../1_Pooling"}]},
            MODULES + "must keep the Pooling module in a subdirectory of the model",
        ),
        (
            {"modules.json": [TRANSFORMER, {**POOLING, "path": ".."}]},
            MODULES + "must keep the Pooling module in a subdirectory of the model",
        ),
        (
            {"modules.json": [TRANSFORMER, POOLING]},
            MODULES + "names a Pooling module without a config.json",
        ),
        ({"modules.json": b"[{"}, MODULES + "is not valid JSON"),
        ({"modules.json": b"null"}, MODULES + "must not be null"),
        ({"modules.json": b"\xff\xfe"}, MODULES + "is not valid JSON"),
        (
            {"1_Pooling/config.json": pooling_config("cls", pooling_mode_mean_tokens=True)},
            POOLING_CONFIG + "enables more than one pooling mode, which is not supported",
        ),
        (
            # A missing key takes the sentence-transformers default: mean is on.
            {"1_Pooling/config.json": {"pooling_mode_cls_token": True}},
            POOLING_CONFIG + "enables more than one pooling mode, which is not supported",
        ),
        (
            {"1_Pooling/config.json": pooling_config("mean", pooling_mode_mean_tokens=False)},
            POOLING_CONFIG + "enables no pooling mode",
        ),
        (
            {
                "1_Pooling/config.json": pooling_config(
                    "mean", pooling_mode_weightedmean_tokens=True
                )
            },
            POOLING_CONFIG + "pooling_mode_weightedmean_tokens is not supported",
        ),
        (
            {"1_Pooling/config.json": pooling_config("cls", pooling_mode_lasttoken=True)},
            POOLING_CONFIG + "pooling_mode_lasttoken is not supported",
        ),
        (
            {"1_Pooling/config.json": pooling_config("mean", include_prompt=False)},
            POOLING_CONFIG + "include_prompt false is not supported",
        ),
        (
            {"1_Pooling/config.json": pooling_config("mean", pooling_mode="cls")},
            POOLING_CONFIG + "holds a setting this embedder does not know",
        ),
        (
            {"1_Pooling/config.json": pooling_config("mean", pooling_mode_cls_token=1)},
            POOLING_CONFIG + "pooling_mode_cls_token must be true or false",
        ),
        (
            {"1_Pooling/config.json": pooling_config("mean", word_embedding_dimension="32")},
            POOLING_CONFIG + "word_embedding_dimension must be an integer",
        ),
        (
            {"1_Pooling/config.json": pooling_config("mean", word_embedding_dimension=64)},
            POOLING_CONFIG + "word_embedding_dimension is not the model's hidden size",
        ),
        (
            {
                "1_Pooling/config.json": b'{"pooling_mode_cls_token": true, '
                b'"pooling_mode_cls_token": false}'
            },
            POOLING_CONFIG + "repeats a key",
        ),
        ({"1_Pooling/config.json": [1]}, POOLING_CONFIG + "must be a JSON object"),
        (
            {"sentence_bert_config.json": {"max_seq_length": True}},
            SBERT + "max_seq_length must be an integer from 1 through 1000000",
        ),
        (
            {"sentence_bert_config.json": {"max_seq_length": 0}},
            SBERT + "max_seq_length must be an integer from 1 through 1000000",
        ),
        (
            {"sentence_bert_config.json": {"do_lower_case": "no"}},
            SBERT + "do_lower_case must be true or false",
        ),
        (
            {"sentence_bert_config.json": {"max_seq_length": 8, "model_args": {}}},
            SBERT + "holds a setting other than max_seq_length and do_lower_case",
        ),
        ({"sentence_bert_config.json": b'{"max_seq_length": NaN}'}, SBERT + "is not valid JSON"),
        ({"sentence_bert_config.json": b" " * (1 << 20) + b"{}"}, SBERT + "is too large"),
        ({"sentence_bert_config.json": [8]}, SBERT + "must be a JSON object"),
        ({"modules.json/x": b""}, "the sentence-transformers configuration could not be read"),
    ],
)
def test_a_configuration_that_cannot_be_reproduced_is_refused(
    tiny_model: Path, tmp_path: Path, files: dict[str, object], message: str
) -> None:
    model = model_with(tiny_model, tmp_path / "st", files)
    with pytest.raises(ProviderError) as caught:
        TransformersEmbedder(str(model))
    assert str(caught.value) == "provider error: " + message
    assert str(tmp_path) not in str(caught.value)
    # An explicit argument does not make a broken file acceptable.
    with pytest.raises(ProviderError):
        TransformersEmbedder(str(model), pooling="mean", max_length=16, normalize=True)


@pytest.mark.parametrize(
    ("max_seq_length", "rule"),
    [
        (513, "max_seq_length exceeds the model's maximum input length"),
        (2, "max_seq_length leaves no room for text"),
    ],
)
def test_a_declared_max_seq_length_must_fit_the_model(
    tiny_model: Path, tmp_path: Path, max_seq_length: int, rule: str
) -> None:
    model = model_with(
        tiny_model,
        tmp_path / "st",
        {"sentence_bert_config.json": {"max_seq_length": max_seq_length}},
    )
    with pytest.raises(ProviderError) as caught:
        TransformersEmbedder(str(model))
    assert str(caught.value) == "provider error: " + SBERT + rule
    # An explicit max_length replaces the declared one, which is then not used.
    assert options(TransformersEmbedder(str(model), max_length=16)).startswith("mean:16:truncate:")
