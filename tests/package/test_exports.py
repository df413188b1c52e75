"""Package surface: exports, version, enums and the typing marker."""

from __future__ import annotations

import enum
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import trueheart_core
from trueheart_core import ArtifactClass, EntityType, GovernanceAction, MemoryStatus, TrustLevel

ROOT = Path(__file__).resolve().parents[2]

NAMES_0_1_2 = [
    "AuditRecord",
    "EntityDeleted",
    "EntityNotFound",
    "EntityType",
    "GovernanceAction",
    "GovernanceCommand",
    "GovernanceResult",
    "IdempotencyConflict",
    "InvalidTransition",
    "MemoryDraft",
    "MemoryRecord",
    "MemoryStatus",
    "RawEventDraft",
    "RawEventReceipt",
    "RecallItem",
    "RecallQuery",
    "RepositoryBusy",
    "RepositoryCorruption",
    "RetentionPolicy",
    "SQLiteRepository",
    "Scope",
    "ScopeMismatch",
    "SourceRef",
    "TrueHeart",
    "TrueHeartError",
    "TrustEscalation",
    "TrustLevel",
    "ValidationError",
    "__version__",
]

NEW_IN_0_2 = ["IntegrityProblem", "IntegrityReport", "RepositoryReadOnly"]

NEW_IN_0_3 = [
    "CapsuleDecision",
    "CapsuleItem",
    "CapsuleTraceEntry",
    "MemoryCapsule",
    "MemoryPage",
    "SearchQuery",
    "TokenEstimator",
    "Utf8BytesEstimator",
    "CanonicalClaimExtractor",
    "ClaimConflict",
    "ClaimDraft",
    "ClaimExtraction",
    "ClaimExtractor",
    "ClaimProvenance",
    "ClaimQuery",
    "ClaimRecord",
    "ClaimSet",
    "ClaimStatus",
    "ClaimView",
    "ExtractedClaim",
    "ExtractionDiagnostic",
    "ExtractionRecord",
    "ExtractionResult",
]

NEW_IN_0_5 = [
    "EmbedderMismatch",
    "ProviderError",
    "SemanticProjectionError",
    "Embedder",
    "HashingEmbedder",
    "RerankCandidate",
    "Reranker",
    "RerankResult",
    "RankSignal",
    "SemanticStatus",
    "SemanticTrace",
    "SignalSource",
    "IngestResult",
]


NEW_IN_0_6 = ["RepositoryFull", "AsyncTrueHeart", "TimeOrder", "TimeTrace"]

NEW_IN_EXPORT = ["ExportReceipt", "ImportReceipt", "ImportRefused"]

NEW_IN_POSTGRES = ["PostgresRepository", "RepositoryConflict", "RepositoryUnavailable"]

NEW_IN_OPERATIONS = [
    "ArtifactClass",
    "ArtifactCounts",
    "BackupReport",
    "ErasureReceipt",
    "IndexRebuildReport",
    "StoreStats",
]


def test_all_is_a_superset_of_the_0_1_2_names() -> None:
    assert set(NAMES_0_1_2) <= set(trueheart_core.__all__)


def test_all_is_plain_sorted_with_version_last() -> None:
    names = list(trueheart_core.__all__)
    assert names[-1] == "__version__"
    assert names[:-1] == sorted(names[:-1])
    assert len(names) == len(set(names))


def test_all_is_exactly_the_documented_surface() -> None:
    names = (
        NAMES_0_1_2[:-1]
        + NEW_IN_0_2
        + NEW_IN_0_3
        + NEW_IN_0_5
        + NEW_IN_0_6
        + NEW_IN_OPERATIONS
        + NEW_IN_EXPORT
        + NEW_IN_POSTGRES
    )
    expected = [*sorted(names), "__version__"]
    assert list(trueheart_core.__all__) == expected


def test_sqlite_repository_sorts_before_scope() -> None:
    names = list(trueheart_core.__all__)
    assert names.index("SQLiteRepository") < names.index("Scope")


@pytest.mark.parametrize(
    "name",
    NAMES_0_1_2
    + NEW_IN_0_2
    + NEW_IN_0_3
    + NEW_IN_0_6
    + NEW_IN_OPERATIONS
    + NEW_IN_EXPORT
    + NEW_IN_POSTGRES,
)
def test_every_exported_name_resolves(name: str) -> None:
    if name == "PostgresRepository":
        pytest.importorskip("psycopg", reason="PostgresRepository needs the postgres extra")
    assert getattr(trueheart_core, name) is not None


def test_version_matches_pyproject() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        version = tomllib.load(handle)["project"]["version"]
    assert trueheart_core.__version__ == version == "0.5.0"


def test_package_ships_py_typed_marker() -> None:
    package_dir = Path(trueheart_core.__file__).resolve().parent
    assert (package_dir / "py.typed").is_file()


def test_import_from_source_tree_without_installed_metadata() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # -S skips site-packages, so no installed distribution metadata is visible.
    completed = subprocess.run(
        [sys.executable, "-S", "-c", "import trueheart_core; print(trueheart_core.__version__)"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "0.5.0\n"


def test_trust_level_is_an_ordered_int_enum() -> None:
    assert issubclass(TrustLevel, enum.IntEnum)
    assert [(m.name, m.value) for m in TrustLevel] == [
        ("UNTRUSTED", 0),
        ("OBSERVED", 1),
        ("CONFIRMED", 2),
    ]
    assert TrustLevel.CONFIRMED > TrustLevel.OBSERVED > TrustLevel.UNTRUSTED


@pytest.mark.parametrize(
    ("enum_class", "members"),
    [
        (
            EntityType,
            [("RAW_EVENT", "raw_event"), ("MEMORY", "memory"), ("SUBJECT", "subject")],
        ),
        (
            ArtifactClass,
            [
                ("RAW_EVENT", "raw_event"),
                ("RAW_BODY", "raw_body"),
                ("MEMORY", "memory"),
                ("CLAIM", "claim"),
                ("LINEAGE_EDGE", "lineage_edge"),
                ("EXTRACTION_RECORD", "extraction_record"),
                ("SEARCH_ENTRY", "search_entry"),
                ("SEARCH_TERM", "search_term"),
                ("VECTOR", "vector"),
            ],
        ),
        (
            GovernanceAction,
            [("SEAL", "seal"), ("RESTORE", "restore"), ("FORGET", "forget"), ("DELETE", "delete")],
        ),
        (MemoryStatus, [("ACTIVE", "active"), ("SEALED", "sealed")]),
    ],
)
def test_str_enums_have_the_documented_members(
    enum_class: type[enum.StrEnum], members: list[tuple[str, str]]
) -> None:
    assert issubclass(enum_class, enum.StrEnum)
    assert [(m.name, m.value) for m in enum_class] == members


def test_version() -> None:
    assert trueheart_core.__version__ == "0.5.0"
    assert trueheart_core.__all__[-1] == "__version__"


def test_all_is_sorted_superset_of_0_1_2() -> None:
    names = list(trueheart_core.__all__)
    old = {
        "AuditRecord", "EntityDeleted", "EntityNotFound", "EntityType", "GovernanceAction",
        "GovernanceCommand", "GovernanceResult", "IdempotencyConflict", "InvalidTransition",
        "MemoryDraft", "MemoryRecord", "MemoryStatus", "RawEventDraft", "RawEventReceipt",
        "RecallItem", "RecallQuery", "RepositoryBusy", "RepositoryCorruption",
        "RetentionPolicy", "SQLiteRepository", "Scope", "ScopeMismatch", "SourceRef",
        "TrueHeart", "TrueHeartError", "TrustEscalation", "TrustLevel", "ValidationError",
    }  # fmt: skip
    assert old <= set(names)
    assert names[:-1] == sorted(names[:-1])
    assert names[-1] == "__version__"
