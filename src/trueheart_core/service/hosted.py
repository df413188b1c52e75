"""Exceptions of the host's own objects, carried out of a unit of work unchanged.

An adapter's one error-translation point takes a ``ValueError``, ``KeyError`` or
``TypeError`` raised inside a unit of work for a malformed row and reports
``RepositoryCorruption``, emptying the exception of its arguments. An exception of a
writer or an iterable the host passed in is not about the store: the operation wraps it
in :class:`HostRaised`, which the translation lets through, and
:func:`unwrapped` raises the host's own exception again once the unit has rolled back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["HostRaised", "unwrapped"]


class HostRaised(Exception):
    """The exception ``error`` of the host's own code, on its way out of a unit of work."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error


@contextlib.contextmanager
def unwrapped() -> Iterator[None]:
    """Raise the host's exception that a :class:`HostRaised` carries, as it was."""
    try:
        yield
    except HostRaised as carried:
        raise carried.error from None
