"""The semantic index status of a scope (domain level, frozen DTO)."""

from __future__ import annotations

from dataclasses import dataclass

from trueheart_core.domain import validation as v
from trueheart_core.domain.model import Scope, _Reducible, _set
from trueheart_core.errors import ValidationError

__all__ = ["SemanticStatus"]


def _ids(field: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, tuple) or not all(isinstance(x, str) for x in value):
        raise ValidationError(field, "must be a tuple of str")
    return value


@dataclass(frozen=True, slots=True)
class SemanticStatus(_Reducible):
    """How far the active memories of one scope are projected into the vector space.

    ``embedder`` is the identity of the service's embedder (``None`` without one);
    ``registered`` says whether the store's current vector space is that embedder's (or,
    without an embedder, whether any space is registered). ``memories`` counts the
    scope's active memories, claims included, and ``indexed`` those with a vector of the
    current space computed from their present content. The others are *missing* (no
    vector) or *stale* (a vector of an earlier space, or of other content); their IDs are
    listed in ``memory_id`` order, claims (memories of the kind ``"claim"``) apart.
    """

    scope: Scope
    embedder: str | None
    registered: bool
    memories: int
    indexed: int
    missing_memory_ids: tuple[str, ...]
    stale_memory_ids: tuple[str, ...]
    missing_claim_ids: tuple[str, ...]
    stale_claim_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValidationError("scope", "must be a Scope")
        if self.embedder is not None:
            _set(self, "embedder", v.text("embedder", self.embedder))
        if not isinstance(self.registered, bool):
            raise ValidationError("registered", "must be a bool")
        for name in ("memories", "indexed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(name, "must be a non-negative int")
        for name in (
            "missing_memory_ids",
            "stale_memory_ids",
            "missing_claim_ids",
            "stale_claim_ids",
        ):
            _ids(name, getattr(self, name))
        if self.indexed + self.missing_count + self.stale_count != self.memories:
            raise ValidationError("memories", "must be indexed plus missing plus stale")

    @property
    def missing_count(self) -> int:
        """Active memories and claims without a vector."""
        return len(self.missing_memory_ids) + len(self.missing_claim_ids)

    @property
    def stale_count(self) -> int:
        """Active memories and claims whose vector is stale."""
        return len(self.stale_memory_ids) + len(self.stale_claim_ids)

    @property
    def complete(self) -> bool:
        """Registered, and every active memory and claim has a current vector."""
        return self.registered and self.missing_count == 0 and self.stale_count == 0
