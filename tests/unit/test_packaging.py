"""The distribution's metadata as PyPI reads it, and what both packages ship (no build)."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import evicortex
import trueheart_core
from trueheart_core._version import SOURCE_VERSION

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "https://github.com/trueheart-ai/trueheart-core"


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def test_project_urls() -> None:
    assert _pyproject()["project"]["urls"] == {
        "Homepage": REPOSITORY,
        "Documentation": f"{REPOSITORY}/blob/main/docs",
        "Changelog": f"{REPOSITORY}/blob/main/CHANGELOG.md",
        "Issues": f"{REPOSITORY}/issues",
    }


def test_license_is_an_spdx_expression_with_its_file() -> None:
    pyproject = _pyproject()
    project = pyproject["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").is_file()
    # PEP 639: a license expression replaces the license classifiers (PyPI refuses both).
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    # Hatchling writes array license-files and core metadata 2.4 from 1.27 on.
    assert pyproject["build-system"]["requires"] == ["hatchling>=1.27"]


def test_version_is_the_source_version() -> None:
    assert _pyproject()["project"]["version"] == SOURCE_VERSION


def test_both_packages_ship_py_typed() -> None:
    wheel = _pyproject()["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["src/trueheart_core", "src/evicortex"]
    for package in ("trueheart_core", "evicortex"):
        assert (ROOT / "src" / package / "py.typed").is_file()
        assert resources.files(package).joinpath("py.typed").is_file()


def test_evicortex_version_is_the_engine_version() -> None:
    assert evicortex.__version__ == trueheart_core.__version__
    assert isinstance(evicortex.__version__, str) and evicortex.__version__
    assert "__version__" in evicortex.__all__
