"""The names of the trust levels in the tools' arguments, results and schemas.

A client reads and writes a trust level as a lower-case word (``observed``), never as
the enum's number, so that the schemas can list the words a call may give.
"""

from __future__ import annotations

from trueheart_core import TrustLevel

__all__ = ["TRUST_LEVELS", "TRUST_NAMES", "trust_name"]

TRUST_NAMES = {level: level.name.lower() for level in TrustLevel}
"""Every trust level's name, from the least trusted to the most."""
TRUST_LEVELS = {name: level for level, name in TRUST_NAMES.items()}
"""The trust level of each name, in the same order."""


def trust_name(level: TrustLevel) -> str:
    """The name of a trust level in the tools' arguments and results: ``observed``."""
    return TRUST_NAMES[level]
