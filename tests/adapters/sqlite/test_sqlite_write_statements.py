"""How many statements the common writes run on SQLite, from ``BEGIN IMMEDIATE`` to
``COMMIT``, once the connection has met the scope and its words (as
``docs/performance.md`` counts them), without a move of the write buffer or a merge of
the pending search rows.

White-box test of the SQLite adapter: SQLite's trace callback records every statement the
repository's connection runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conformance_builders import command, event, memory
from sqlite_builders import merge_pending_of

from trueheart_core import GovernanceAction, SQLiteRepository, TrueHeart

WORDS = "green tea at noon"


def _counted(repository: SQLiteRepository, call: Callable[[], object]) -> list[str]:
    statements: list[str] = []
    repository._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        call()
    finally:
        repository._conn.set_trace_callback(None)  # type: ignore[union-attr]
    return statements


def test_the_statements_of_a_new_memory_a_seal_and_a_restore(db_path: Path) -> None:
    repository = SQLiteRepository(db_path)
    service = TrueHeart(repository)
    try:
        service.ingest_event(event("evt-1"))
        for memory_id in ("mem-1", "mem-2", "mem-3"):
            service.materialize_once(memory(memory_id, content=WORDS))
        # mem-3's entry merged, then its removal merged: as a memory sealed long ago.
        merge_pending_of(db_path)
        service.govern(command(GovernanceAction.SEAL, "mem-3"))
        merge_pending_of(db_path)
        # Another connection committed: this one learns the store again.
        service.materialize_once(memory("mem-4", content=WORDS))

        written = _counted(
            repository, lambda: service.materialize_once(memory("mem-5", content=WORDS))
        )
        sealed = _counted(
            repository, lambda: service.govern(command(GovernanceAction.SEAL, "mem-1"))
        )
        restored = _counted(
            repository, lambda: service.govern(command(GovernanceAction.RESTORE, "mem-3"))
        )
    finally:
        repository.close()
    for statements in (written, sealed, restored):
        assert statements[0] == "BEGIN IMMEDIATE"
        assert statements[-1] == "COMMIT"
    # The data version; one look-up of the sources that also finds no tombstone of the ID
    # or the fingerprint and no memory of the ID; the memory, its edge, its pending
    # search row, its audit row.
    assert len(written) == 8
    # The data version; the memory with its edges and their receipts; the status, the
    # vector flag; the removal copied from the merged entry; its terms no other entry may
    # hold; the audit row.
    assert len(sealed) == 9
    # The data version; the memory with its edges and their receipts; the status, the
    # vector flag; the pending row; the addition; the audit row.
    assert len(restored) == 9
