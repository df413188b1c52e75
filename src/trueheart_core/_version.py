"""The package version: installed metadata first, the source tree's version otherwise."""

from __future__ import annotations

from importlib import metadata

SOURCE_VERSION = "0.5.0"


def package_version() -> str:
    """``__version__``: the installed distribution's version, else :data:`SOURCE_VERSION`."""
    try:
        return metadata.version("trueheart-core")
    except metadata.PackageNotFoundError:
        return SOURCE_VERSION
