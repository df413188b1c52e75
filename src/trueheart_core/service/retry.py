"""Running a whole public call again when a concurrent writer conflicted with it.

A backend whose writers run concurrently (PostgreSQL at ``SERIALIZABLE``) rolls a unit of
work back with ``RepositoryConflict`` when another transaction's changes conflict with
it. Nothing of that unit was stored, so the service runs the whole call again: it reads
the store afresh and decides again (a replay of the other writer's event is then
recognised as one, a tombstone that won the race is seen). Every public call may be
retried so, because its effects are the store's alone; the two that consume a stream or
write to the caller's (``import_store``, ``export_store``) are not, and pass the
conflict on.
"""

from __future__ import annotations

import functools
import inspect
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from trueheart_core import logs
from trueheart_core.errors import RepositoryConflict

ATTEMPTS = 8
"""How many times a call runs before its last conflict leaves it."""
_PAUSE_CAP = 0.2

_C = TypeVar("_C", bound=type)


def _pause(attempt: int) -> float:
    """A random pause that grows with the attempt (full jitter, capped), so that writers
    that conflicted do not meet again in step."""
    return random.uniform(0, min(_PAUSE_CAP, 0.002 * 2**attempt))


def retried(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, run again after a ``RepositoryConflict``, up to :data:`ATTEMPTS` times."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(1, ATTEMPTS):
            try:
                return method(*args, **kwargs)
            except RepositoryConflict:
                logs.BUSY.info(
                    "%s conflicted with a concurrent writer: attempt %d of %d",
                    method.__name__,
                    attempt,
                    ATTEMPTS,
                )
                time.sleep(_pause(attempt))
        return method(*args, **kwargs)

    return call


def retry_conflicts(*, exclude: frozenset[str]) -> Callable[[_C], _C]:
    """Class decorator: every public method but those in ``exclude`` is :func:`retried`."""

    def decorate(cls: _C) -> _C:
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or name in exclude or not inspect.isfunction(member):
                continue
            setattr(cls, name, retried(member))
        return cls

    return decorate
