"""The SQLite connection's memo (term IDs, pending counts, the buffer's size) stays bounded
inside one transaction that learns more than it may hold: it starts afresh, and every
answer is the one an unbounded memo gives.

White-box: the bound is lowered so that ordinary workloads cross it many times, and the
memo is read from the repository's unit of work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conformance_builders import NOW, OTHER_SCOPE, SCOPE, command, event, memory

from trueheart_core import (
    GovernanceAction,
    MemoryDraft,
    SearchQuery,
    SQLiteRepository,
    TrueHeart,
)
from trueheart_core.adapters.sqlite import session as session_module

BOUND = 16
WORDS = [f"w{n:04d}" for n in range(400)]


def _content(n: int) -> str:
    """Text whose words overlap its neighbours' (shared terms) and add new ones."""
    return " ".join(WORDS[(n * 7 + k) % len(WORDS)] for k in range(12))


def _drafts(scope: Any, numbers: range, source: str) -> list[MemoryDraft]:
    return [memory(f"m-{n:03d}", (source,), content=_content(n), scope=scope) for n in numbers]


def _workload(path: Path) -> dict[str, Any]:
    """A lifecycle whose transactions each learn more than BOUND entries; its answers."""
    answers: dict[str, Any] = {}
    with TrueHeart(SQLiteRepository(path), clock=lambda: NOW) as service:
        for scope in (SCOPE, OTHER_SCOPE):
            service.ingest_event(event(scope=scope))
            batch = _drafts(scope, range(40), "evt-batch")
            service.ingest_derived(event("evt-batch", scope=scope), memories=batch)
            for draft in _drafts(scope, range(40, 90), "evt-1"):
                service.materialize_once(draft)
        for n in range(0, 90, 9):
            service.govern(command(GovernanceAction.SEAL, f"m-{n:03d}"))
        for n in range(0, 45, 9):
            service.govern(command(GovernanceAction.RESTORE, f"m-{n:03d}"))
        for n in range(3, 90, 11):
            service.govern(command(GovernanceAction.FORGET, f"m-{n:03d}", scope=OTHER_SCOPE))
        answers["rebuild"] = service.rebuild_indexes()
        for word in ("w0000", "w0007 w0013", "w0399", WORDS[123]):
            for scope in (SCOPE, OTHER_SCOPE):
                capsule = service.search(SearchQuery(scope, word, NOW, 4096, 100))
                answers[f"search {word} {scope.subject_id}"] = [
                    (item.memory.memory_id, round(item.score, 9)) for item in capsule.items
                ]
        answers["stats"] = service.stats(SCOPE)
        answers["integrity"] = service.verify_integrity()
        assert answers["integrity"].ok, answers["integrity"].problems
    return answers


def test_a_bounded_memo_gives_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    largest = [0]
    remember = session_module.Session.remember

    def measured(self: session_module.Session, key: object, value: object) -> None:
        remember(self, key, value)
        largest[0] = max(largest[0], len(self.staged) + len(self.memo))

    monkeypatch.setattr(session_module.Session, "remember", measured)
    unbounded = _workload(tmp_path / "unbounded.db")
    assert largest[0] > 10 * BOUND  # the workload learns much more than the bound
    monkeypatch.setattr(session_module, "MEMO_LIMIT", BOUND)
    largest[0] = 0
    bounded = _workload(tmp_path / "bounded.db")
    # The staged entries of a transaction, and what earlier ones left (at most as many).
    assert 0 < largest[0] <= 2 * BOUND
    stats_bounded, stats_unbounded = bounded.pop("stats"), unbounded.pop("stats")
    assert stats_bounded.memories == stats_unbounded.memories == 90
    assert stats_bounded.search_terms == stats_unbounded.search_terms
    assert bounded == unbounded
    assert any(bounded[key] for key in bounded if key.startswith("search"))
