"""Export of a store as portable JSON Lines and its import into an empty store: a rich
store round-trips with every read answer unchanged, a scope export holds only that
scope, a damaged or foreign file is refused naming the line only and leaves the target
empty, erased subjects stay erased, and the export is streamed."""

from __future__ import annotations

import dataclasses
import enum
import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conformance_builders import (
    CLEAR_FOR,
    ERASED_AT,
    NOW,
    OTHER_SCOPE,
    RECALL_FOR,
    SCOPE,
    claim,
    command,
    event,
    memory,
    populate_subject,
)

from trueheart_core import (
    AsyncTrueHeart,
    ClaimQuery,
    EntityDeleted,
    EntityType,
    ExportReceipt,
    GovernanceAction,
    HashingEmbedder,
    ImportReceipt,
    ImportRefused,
    MemoryStatus,
    RecallQuery,
    RepositoryCorruption,
    Scope,
    SearchQuery,
    TrueHeart,
    TrueHeartError,
    ValidationError,
)
from trueheart_core.domain import portable as fmt
from trueheart_core.domain.validation import MAX_CONTENT_BYTES, MAX_METADATA_BYTES
from trueheart_core.ports import ClaimRow, Repository
from trueheart_core.service import records
from trueheart_core.service.portable import MAX_LINE_BYTES
from trueheart_core.service.records.claims import _claim_digest

ERASED_SCOPE = Scope("tenant", "owner", "erased-subject")
THIRD_SCOPE = Scope("tenant-2", "owner-2", "subject")
LATER = NOW + timedelta(days=3)


def populate(service: TrueHeart) -> None:
    """Every kind of row: several scopes, events with and without bodies, memories with
    lineage (active, sealed, forgotten, deleted), claims (one superseded), an extraction,
    expired retention, an erased subject, a deleted event, and their audit records."""
    populate_subject(service)
    service.ingest_events(
        [
            event("evt-s", content="supersede source"),
            event("evt-d", content="to be deleted"),
            event("evt-e1", scope=ERASED_SCOPE, content="zqxerasedraw body"),
            event("evt-t", scope=THIRD_SCOPE, content="third scope raw", metadata={"k": [1, 2.5]}),
        ]
    )
    service.materialize_claim(
        claim("claim-2", ("evt-s",), value="light", supersedes="claim-1", created_at=LATER)
    )
    service.materialize_once(memory("mem-d", ("evt-d",), content="depends on deleted"))
    service.materialize_once(memory("mem-del", ("evt-s",), content="deleted memory zqx"))
    service.materialize_once(
        memory("mem-e1", ("evt-e1",), scope=ERASED_SCOPE, content="zqxerasedmem note")
    )
    service.materialize_once(
        memory(
            "mem-t",
            ("evt-t",),
            scope=THIRD_SCOPE,
            content="third scope memory shared",
            kind="plan",
            metadata={"nested": {"ü": "✓"}},
        )
    )
    service.govern(command(GovernanceAction.DELETE, "mem-del"))
    service.govern(command(GovernanceAction.DELETE, "evt-d", entity_type=EntityType.RAW_EVENT))
    service.erase_subject(ERASED_SCOPE, occurred_at=ERASED_AT)


SCOPES = (SCOPE, OTHER_SCOPE, ERASED_SCOPE, THIRD_SCOPE)


def _outcome(call: Callable[[], object]) -> object:
    try:
        return call()
    except TrueHeartError as error:
        return (type(error).__name__, str(error))


def _stats(service: TrueHeart, scope: Scope | None) -> object:
    found = service.stats(scope)
    # Sizes are the storage's own; every count must match.
    return dataclasses.replace(
        found, database_bytes=None, wal_bytes=None, storage_bytes=None, storage_detail=()
    )


IDS = [
    "evt-0",
    "evt-1",
    "evt-2",
    "evt-3",
    "evt-4",
    "evt-5",
    "evt-old",
    "evt-x",
    "evt-s",
    "evt-d",
    "evt-e1",
    "evt-t",
    "mem-0",
    "mem-1",
    "mem-2",
    "mem-3",
    "mem-4",
    "mem-5",
    "mem-sealed",
    "mem-old",
    "mem-d",
    "mem-del",
    "mem-e1",
    "mem-t",
    "claim-1",
    "claim-2",
    "missing",
]


def answers(service: TrueHeart) -> dict[str, object]:
    """Every read answer of the populated store."""
    found: dict[str, object] = {
        "scopes": service.scopes(),
        "stats": _stats(service, None),
        "integrity": service.verify_integrity(),
    }
    for scope in SCOPES:
        name = "/".join((scope.tenant_id, scope.owner_id, scope.subject_id))
        for as_of in (NOW, LATER, NOW + timedelta(days=200)):
            found[f"{name} recall {as_of}"] = service.recall(RecallQuery(scope, as_of))
            found[f"{name} search {as_of}"] = service.search(SearchQuery(scope, "shared", as_of))
            found[f"{name} claims {as_of}"] = service.claims(ClaimQuery(scope, as_of))
        for status in (None, MemoryStatus.SEALED):
            found[f"{name} list {status}"] = service.list_memories(scope, status=status)
        found[f"{name} audit"] = service.audit(scope, limit=100)
        found[f"{name} stats"] = _stats(service, scope)
        found[f"{name} verify"] = service.verify_integrity(scope)
        for entity_id in IDS:
            found[f"{name} memory {entity_id}"] = _outcome(
                lambda s=scope, i=entity_id: service.get_memory(s, i)
            )
            found[f"{name} receipt {entity_id}"] = _outcome(
                lambda s=scope, i=entity_id: service.get_receipt(s, i)
            )
            found[f"{name} extraction {entity_id}"] = _outcome(
                lambda s=scope, i=entity_id: service.get_extraction(s, i)
            )
    return found


def exported(service: TrueHeart, scope: Scope | None = None) -> tuple[str, ExportReceipt]:
    out = io.StringIO()
    receipt = service.export_store(out, scope=scope)
    return out.getvalue(), receipt


def _without_exported_at(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    header = json.loads(lines[0])
    header["exported_at"] = ""
    return [json.dumps(header), *lines[1:]]


def _is_empty(service: TrueHeart) -> bool:
    stats = service.stats()
    return (
        stats.events,
        stats.memories,
        stats.claims,
        stats.extraction_records,
        stats.tombstones,
        stats.audit_records,
        stats.search_entries,
    ) == (0, 0, 0, 0, 0, 0, 0) and exported(service)[1].rows == 0


def test_a_rich_store_round_trips_with_every_answer_unchanged(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    populate(service)
    before = answers(service)
    assert before["integrity"] == service.verify_integrity()
    assert service.verify_integrity().problems == ()
    text, receipt = exported(service)
    target = TrueHeart(fresh_repository(), clock=clock)
    imported = target.import_store(io.StringIO(text))
    assert isinstance(imported, ImportReceipt)
    assert (imported.rows, imported.counts, imported.digest) == (
        receipt.rows,
        receipt.counts,
        receipt.digest,
    )
    assert imported.scope is None and imported.search_entries > 0
    after = answers(target)
    assert after.keys() == before.keys()
    for key in before:
        assert after[key] == before[key], key
    assert target.verify_integrity().problems == ()
    counts = dict(receipt.counts)
    assert all(counts[kind] > 0 for kind in fmt.KINDS), counts
    assert receipt.rows == sum(counts.values()) == len(text.splitlines()) - 2


def test_bodies_holding_other_line_breaks_round_trip_split_at_newlines_only(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    # U+2028, U+2029 and U+0085 stay as they are inside a line: the file's lines end at
    # "\n" only (str.splitlines would break them apart, as the format guide warns).
    body = "first\u2028second\u2029third\u0085fourth"
    service.ingest_event(event("evt-1", content=body))
    service.materialize_once(memory("mem-1", ("evt-1",), content=body))
    text, receipt = exported(service)
    assert "\u2028" in text and len(text.split("\n")) == receipt.rows + 3
    for lines in (io.StringIO(text), [line + "\n" for line in text.split("\n")[:-1]]):
        target = TrueHeart(fresh_repository(), clock=clock)
        assert target.import_store(lines).digest == receipt.digest
        assert target.get_memory(SCOPE, "mem-1").content == body
        assert answers(target) == answers(service)


def test_the_export_of_an_import_is_the_same_file_but_its_time(
    service: TrueHeart, fresh_repository: Callable[[], Repository]
) -> None:
    populate(service)
    text, _ = exported(service)
    target = TrueHeart(fresh_repository(), clock=lambda: NOW + timedelta(days=9))
    target.import_store(io.StringIO(text))
    again, receipt = exported(target)
    assert receipt.exported_at == NOW + timedelta(days=9)
    assert again != text
    assert _without_exported_at(again) == _without_exported_at(text)
    assert again.splitlines()[-1] == text.splitlines()[-1]  # the digest ignores the time


def test_the_file_is_the_documented_format(service: TrueHeart) -> None:
    populate(service)
    text, receipt = exported(service)
    lines = text.split("\n")
    assert lines[-1] == ""  # every line ends with a newline
    objects = [json.loads(line) for line in lines[:-1]]
    for line, obj in zip(lines, objects, strict=False):
        assert line == json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    header, rows, trailer = objects[0], objects[1:-1], objects[-1]
    assert header == {
        "format": "trueheart-export",
        "version": 1,
        "schema": fmt.SCHEMA,
        "scope": None,
        "exported_at": "2026-08-13T12:00:00.000000Z",
    }
    chain = fmt.chain_start(json.loads(lines[0]))
    kinds = []
    for obj in rows:
        digest = obj.pop("digest")
        assert digest == fmt.line_digest(obj)
        chain = fmt.chain_next(chain, digest)
        kinds.append(obj["kind"])
    assert kinds == sorted(kinds, key=fmt.KINDS.index)
    assert trailer == {"kind": "end", "rows": len(rows), "digest": chain}
    assert chain == receipt.digest
    by_kind = {obj["kind"]: obj for obj in rows}
    assert by_kind["event"]["ingested_at"] == "2026-08-13T12:00:00.000000Z"
    assert {obj["status"] for obj in rows if obj["kind"] == "event"} == {"active", "expired"}
    assert all(isinstance(obj["content"], str) for obj in rows if obj["kind"] == "body")
    assert {"evt-0", "evt-1"} <= {
        edge["event_id"] for obj in rows if obj["kind"] == "memory" for edge in obj["lineage"]
    }


def test_a_scope_export_holds_only_that_scope(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    populate(service)
    text, receipt = exported(service, THIRD_SCOPE)
    assert receipt.scope == THIRD_SCOPE
    objects = [json.loads(line) for line in text.splitlines()]
    assert objects[0]["scope"] == {
        "tenant_id": "tenant-2",
        "owner_id": "owner-2",
        "subject_id": "subject",
    }
    assert all(obj["scope"] == objects[0]["scope"] for obj in objects[1:-1])
    assert dict(receipt.counts)["memory"] == 1
    target = TrueHeart(fresh_repository(), clock=clock)
    assert target.import_store(io.StringIO(text)).scope == THIRD_SCOPE
    assert target.scopes() == (THIRD_SCOPE,)
    assert target.list_memories(THIRD_SCOPE) == service.list_memories(THIRD_SCOPE)
    assert target.verify_integrity().problems == ()
    # A row of another scope in a scope's file is refused.
    foreign, _ = exported(service, OTHER_SCOPE)
    own = text.splitlines(keepends=True)
    mixed = _rechained(own[:2] + foreign.splitlines(keepends=True)[1:2] + own[2:])
    other = TrueHeart(fresh_repository(), clock=clock)
    with pytest.raises(ImportRefused, match="row outside the exported scope"):
        other.import_store(io.StringIO(mixed))
    assert _is_empty(other)


def test_an_erased_subject_stays_erased_after_import(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    populate(service)
    text, _ = exported(service)
    assert "zqxerased" not in text
    target = TrueHeart(fresh_repository(), clock=clock)
    target.import_store(io.StringIO(text))
    for store in (service, target):
        with pytest.raises(EntityDeleted):
            store.ingest_event(event("evt-e1", scope=ERASED_SCOPE, content="zqxerasedraw body"))
        store.ingest_event(event("evt-new", scope=ERASED_SCOPE))
        with pytest.raises(EntityDeleted):
            store.materialize_once(memory("mem-e1", ("evt-new",), scope=ERASED_SCOPE))
        with pytest.raises(EntityDeleted):
            store.get_memory(ERASED_SCOPE, "mem-e1")
        # The deleted event and memory of a live scope stay deleted too.
        with pytest.raises(EntityDeleted):
            store.ingest_event(event("evt-d", content="to be deleted"))
        with pytest.raises(EntityDeleted):
            store.materialize_once(memory("mem-del", ("evt-s",), content="deleted memory zqx"))
    assert [a.action for a in target.audit(ERASED_SCOPE)] == [
        a.action for a in service.audit(ERASED_SCOPE)
    ]


def test_vectors_are_not_exported_and_sync_re_derives_them(
    repository: Repository,
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
) -> None:
    source = TrueHeart(repository, clock=clock, embedder=HashingEmbedder())
    populate(source)
    status = source.semantic_status(SCOPE)
    assert status.memories > 0 and status.indexed == status.memories
    text, _ = exported(source)
    assert "vector" not in text
    target = TrueHeart(fresh_repository(), clock=clock, embedder=HashingEmbedder())
    target.import_store(io.StringIO(text))
    pending = target.semantic_status(SCOPE)
    assert (pending.memories, pending.indexed) == (status.memories, 0)
    assert len(pending.missing_memory_ids) + len(pending.missing_claim_ids) == status.memories
    synced = target.sync_semantic(SCOPE)
    assert synced == status
    query = SearchQuery(SCOPE, "memory shared", NOW)
    assert target.search(query) == source.search(query)


# --- refusals ---------------------------------------------------------------------------


def _rechained(lines: list[str]) -> str:
    """Lines with fresh row digests and a fresh trailer: a file edited by someone who
    recomputed every digest."""
    header = lines[0].rstrip("\n")
    chain = fmt.chain_start(json.loads(header))
    out = [header + "\n"]
    rows = 0
    for line in lines[1:]:
        obj = json.loads(line)
        if obj["kind"] == "end":
            continue
        obj["digest"] = fmt.line_digest(obj)
        chain = fmt.chain_next(chain, obj["digest"])
        out.append(fmt.canonical(obj) + "\n")
        rows += 1
    out.append(fmt.canonical({"kind": "end", "rows": rows, "digest": chain}) + "\n")
    return "".join(out)


def _line_of(lines: list[str], kind: str, **fields: Any) -> int:
    for number, line in enumerate(lines):
        obj = json.loads(line)
        if obj.get("kind") == kind and all(obj.get(k) == v for k, v in fields.items()):
            return number
    raise AssertionError(kind)


def _edit(lines: list[str], number: int, **changes: Any) -> list[str]:
    obj = json.loads(lines[number])
    obj.update(changes)
    return [*lines[:number], fmt.canonical(obj) + "\n", *lines[number + 1 :]]


def _damaged(text: str) -> Iterator[tuple[str, str, int | None, str]]:
    """``(name, file, line number, problem)`` of each refused file."""
    lines = text.splitlines(keepends=True)
    memory_line = _line_of(lines, "memory", memory_id="mem-1")
    body_line = _line_of(lines, "body")
    yield "truncated", "".join(lines[:-1]), len(lines), "no trailer (the file is truncated)"
    yield "cut in a line", "".join(lines)[:-5], len(lines), "incomplete line"
    yield "row dropped", "".join(lines[:-2] + lines[-1:]), len(lines) - 1, "row count mismatch"
    swapped = [*lines[:1], lines[2], lines[1], *lines[3:]]
    yield "reordered", "".join(swapped), len(lines), "file digest mismatch"
    body = json.loads(lines[body_line])
    body["content"] = body["content"] + "!"
    edited = [*lines[:body_line], fmt.canonical(body) + "\n", *lines[body_line + 1 :]]
    yield "edited", "".join(edited), body_line + 1, "line digest mismatch"
    rechained = _rechained(_edit(lines, body_line, content=body["content"]))
    yield "edited and rechained", rechained, body_line + 1, "invalid row"
    trust = _rechained(_edit(lines, memory_line, trust=2))
    yield "trust raised and rechained", trust, memory_line + 1, "invalid row"
    spaced = [*lines[:1], lines[1].replace(":", ": ", 1), *lines[2:]]
    yield "not canonical", "".join(spaced), 2, "not a line of canonical JSON"
    header = json.loads(lines[0])
    yield (
        "wrong version",
        fmt.canonical({**header, "version": 2}) + "\n" + "".join(lines[1:]),
        1,
        "unsupported format version",
    )
    yield (
        "wrong schema",
        fmt.canonical({**header, "schema": 5}) + "\n" + "".join(lines[1:]),
        1,
        "unsupported schema version",
    )
    yield "not an export", '{"hello":1}\n', 1, "not a TrueHeart export header"
    yield "empty", "", 1, "empty file"
    yield "after the trailer", text + lines[1], len(lines) + 1, "lines after the trailer"
    out_of_order = _rechained(lines[:1] + lines[-2:-1] + lines[1:-2] + lines[-1:])
    yield "kinds out of order", out_of_order, 3, "rows out of order"
    binary = "".join(lines[:2]) + "\udcff\n"
    yield "not text", binary, 3, "not UTF-8 text"
    surrogate = "".join(_edit(lines, body_line, content="\udcff"))
    yield "lone surrogate", surrogate, body_line + 1, "not UTF-8 text"
    lone = _line_of(lines, "body", event_id="evt-5")  # its one memory was forgotten
    no_body = _rechained([*lines[:lone], *lines[lone + 1 :]])
    yield "body dropped", no_body, None, "the imported store does not verify (body_status_mismatch)"
    yield from _inconsistent(lines)


def _inconsistent(lines: list[str]) -> Iterator[tuple[str, str, int | None, str]]:
    """Files whose every digest holds (rechained) but whose rows do not fit together."""

    def twice(number: int) -> list[str]:
        return [*lines[: number + 1], *lines[number:]]

    def without(*numbers: int) -> list[str]:
        return [line for n, line in enumerate(lines) if n not in numbers]

    event_line = _line_of(lines, "event", event_id="evt-s")
    body_line = _line_of(lines, "body", event_id="evt-s")
    memory_line = _line_of(lines, "memory", memory_id="mem-1")
    claim_line = _line_of(lines, "claim", claim_id="claim-2")
    tombstone_line = _line_of(lines, "tombstone")
    for kind, number in (
        ("event", event_line),
        ("body", body_line),
        ("memory", memory_line),
        ("claim", claim_line),
        ("tombstone", tombstone_line),
    ):
        yield f"{kind} twice", _rechained(twice(number)), number + 2, "duplicate row"
    extra = _rechained(_edit(lines, event_line, note="x"))
    yield "an unknown field", extra, event_line + 1, "unexpected or missing fields"
    stray = _rechained(_edit(lines, body_line, event_id="evt-unknown"))
    yield "a body of no event", stray, body_line + 1, "body without an active event"
    edges = json.loads(lines[memory_line])["lineage"]
    doubled = _rechained(_edit(lines, memory_line, lineage=[*edges, *edges]))
    yield "an edge twice", doubled, memory_line + 1, "lineage out of order"
    source = json.loads(lines[memory_line])["lineage"][0]["event_id"]
    sourceless = without(
        _line_of(lines, "event", event_id=source), _line_of(lines, "body", event_id=source)
    )
    number = memory_line - 1  # two lines before it are gone
    yield "a memory of no event", _rechained(sourceless), number, "memory without its source events"
    orphan = _rechained(_edit(lines, claim_line, claim_id="claim-unknown"))
    yield "a claim of no memory", orphan, claim_line + 1, "claim without its memory"
    # The audit log has no index by ID: a repeated audit ID is found once every row is
    # stored, by the final verification.
    repeated = "the imported store does not verify (duplicate_audit_id)"
    audit_line = _line_of(lines, "audit")
    yield "audit twice", _rechained(twice(audit_line)), None, repeated
    taken = json.loads(lines[audit_line])["audit_id"]
    other = _line_of(lines, "audit", action="materialize")
    yield (
        "another audit record's ID",
        _rechained(_forged_audit(lines, other, taken)),
        None,
        repeated,
    )


def _forged_audit(lines: list[str], number: int, audit_id: str) -> list[str]:
    """The audit record of line ``number`` under ``audit_id``, with the row digest a
    store would have written for it."""
    obj = json.loads(lines[number])
    row = records.audit_row(
        audit_id,
        Scope(**obj["scope"]),
        obj["action"],
        EntityType(obj["entity_type"]),
        obj["entity_id"],
        records.from_us(fmt.microseconds(obj["occurred_at"])),
        obj["reason"],
    )
    return _edit(lines, number, audit_id=audit_id, row_digest=row.digest)


def test_a_damaged_or_foreign_file_is_refused_naming_its_line_and_nothing_is_stored(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    populate(service)
    text, _ = exported(service)
    target = TrueHeart(fresh_repository(), clock=clock)
    for name, damaged, number, problem in _damaged(text):
        with pytest.raises(ImportRefused) as caught:
            target.import_store(io.StringIO(damaged))
        message = str(caught.value)
        assert caught.value.line == number, name
        where = "" if number is None else f"line {number}: "
        assert message.startswith(f"import refused: {where}{problem}"), (name, message)
        assert "zqx" not in message and "synthetic" not in message and "shared" not in message
        assert caught.value.__context__ is None and caught.value.__cause__ is None
        assert _is_empty(target), name
    assert target.import_store(io.StringIO(text)).rows > 0


def _forged_tombstone(line: str, **changes: Any) -> str:
    """The tombstone of ``line`` with ``changes`` made to its fields, with the row digest
    a store would have written for it (digests use no key: anyone can recompute one)."""
    obj = {**json.loads(line), **changes}
    row = records.tombstone_row(
        Scope(**obj["scope"]),
        EntityType(obj["entity_type"]),
        obj["entity_id"],
        obj["fingerprint"],
        records.from_us(fmt.microseconds(obj["deleted_at"])),
        obj["reason"],
    )
    obj["row_digest"] = row.digest
    return fmt.canonical(obj) + "\n"


@pytest.mark.parametrize(
    ("entity_type", "tombstoned", "live"),
    [("memory", "mem-5", "mem-1"), ("raw_event", "evt-d", "evt-1")],
)
def test_a_row_that_a_tombstone_of_the_file_forbids_is_refused(
    service: TrueHeart,
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
    entity_type: str,
    tombstoned: str,
    live: str,
) -> None:
    populate(service)
    lines = exported(service)[0].splitlines(keepends=True)
    number = _line_of(lines, "tombstone", entity_type=entity_type, entity_id=tombstoned)
    forged = [
        *lines[:number],
        _forged_tombstone(lines[number], entity_id=live),
        *lines[number + 1 :],
    ]
    target = TrueHeart(fresh_repository(), clock=clock)
    with pytest.raises(ImportRefused) as caught:
        target.import_store(io.StringIO(_rechained(forged)))
    assert str(caught.value) == (
        f"import refused: line {number + 1}: a tombstone forbids a row of the file"
    )
    assert _is_empty(target)
    # The same tombstone naming its own ID imports.
    assert target.import_store(io.StringIO("".join(lines))).rows == len(lines) - 2


# Tombstones whose digest holds (recomputed) but whose values no store writes: the
# reason is always "governance requested", the entity ID text, the fingerprint text for
# a memory and absent for a raw event.
FORGED_TOMBSTONES: dict[str, tuple[str, dict[str, Any]]] = {
    "a reason of free text": ("memory", {"reason": "user said: card 4111 1111 1111 1111"}),
    "a reason of another case": ("raw_event", {"reason": "Governance requested"}),
    "an integer reason": ("memory", {"reason": 7}),
    "a list reason": ("memory", {"reason": ["governance requested"]}),
    "an object reason": ("raw_event", {"reason": {"said": "card 4111"}}),
    "an integer fingerprint": ("memory", {"fingerprint": 7}),
    "a list fingerprint": ("memory", {"fingerprint": ["card 4111"]}),
    "a raw event's fingerprint": ("raw_event", {"fingerprint": "0" * 64}),
    "an integer ID": ("memory", {"entity_id": 7}),
}


@pytest.mark.parametrize("name", sorted(FORGED_TOMBSTONES))
def test_a_tombstone_no_store_could_hold_is_refused_naming_its_line(
    service: TrueHeart,
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
    name: str,
) -> None:
    populate(service)
    lines = exported(service)[0].splitlines(keepends=True)
    entity_type, changes = FORGED_TOMBSTONES[name]
    number = _line_of(lines, "tombstone", entity_type=entity_type)
    forged = [*lines[:number], _forged_tombstone(lines[number], **changes), *lines[number + 1 :]]
    target = TrueHeart(fresh_repository(), clock=clock)
    with pytest.raises(ImportRefused) as caught:
        target.import_store(io.StringIO(_rechained(forged)))
    assert str(caught.value) == f"import refused: line {number + 1}: invalid row"
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert _is_empty(target)


def test_verify_integrity_reports_a_tombstone_whose_reason_no_store_writes(
    service: TrueHeart, repository: Repository
) -> None:
    """A tombstone with a recomputed digest but a reason of free text (behind the
    library's back, through the port) is reported, and the store is not exported."""
    populate(service)
    assert service.verify_integrity().ok
    forged = records.tombstone_row(
        SCOPE, EntityType.MEMORY, "mem-forged", "0" * 64, NOW, "user said: card 4111"
    )
    with repository.unit_of_work("govern", write=True) as uow:
        uow.tombstones.insert(forged)
        uow.commit()
    for report in (service.verify_integrity(), service.verify_integrity(SCOPE)):
        assert [(p.entity_type, p.entity_id, p.scope, p.code) for p in report.problems] == [
            ("tombstone", "mem-forged", SCOPE, "invalid_row")
        ]
    with pytest.raises(RepositoryCorruption, match=r"^repository corruption: invalid tombstone$"):
        exported(service)


def test_a_store_that_is_not_empty_is_refused(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    populate(service)
    text, _ = exported(service)
    target = TrueHeart(fresh_repository(), clock=clock)
    target.ingest_event(event("evt-own"))
    before = exported(target)[0]
    with pytest.raises(ImportRefused, match=r"^import refused: the target store is not empty$"):
        target.import_store(io.StringIO(text))
    assert exported(target)[0] == before
    with pytest.raises(ImportRefused, match="not empty"):
        service.import_store(io.StringIO(text))


def test_bad_arguments_are_validation_errors(service: TrueHeart) -> None:
    with pytest.raises(ValidationError, match=r"^lines: "):
        service.import_store("a string is not a file")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"^lines: "):
        service.import_store(42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"^out: "):
        service.export_store(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"^out: "):
        service.export_store(io.BytesIO())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"^scope: "):
        service.export_store(io.StringIO(), scope="t/o/s")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"^lines: "):
        service.import_store([3])  # type: ignore[list-item]


class _Colour(enum.Enum):
    RED = 1


def test_lines_that_cannot_be_read_are_validation_errors_and_store_nothing(
    service: TrueHeart, tmp_path: Path
) -> None:
    """A closed file (binary or text), a file not open for reading, and an object whose
    ``__iter__`` returns no iterator are the caller's mistake, not a damaged store."""
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"")

    class NotAnIterator:
        def __iter__(self) -> Any:
            return ["a list is iterable but no iterator"]

    closed_binary = open(path, "rb")  # noqa: SIM115
    closed_binary.close()
    closed_text = open(path, encoding="utf-8")  # noqa: SIM115
    closed_text.close()
    with open(path, "ab") as write_only:
        for lines, rule in (
            (closed_binary, "must be readable"),
            (closed_text, "must be readable"),
            (write_only, "must be readable"),
            (NotAnIterator(), "must be an iterable of lines, such as a file"),
            # Its class is iterable (through the metaclass); the member itself is not.
            (_Colour.RED, "must be an iterable of lines, such as a file"),
        ):
            with pytest.raises(ValidationError) as caught:
                service.import_store(lines)  # type: ignore[arg-type]
            assert str(caught.value) == f"lines: {rule}"
            assert caught.value.__context__ is None and caught.value.__cause__ is None
            assert _is_empty(service)


@pytest.mark.parametrize("error", [KeyError("feed offline"), TypeError("feed broke"), OSError(5)])
def test_an_exception_of_the_hosts_own_iter_passes_through_unchanged(
    service: TrueHeart, error: Exception
) -> None:
    class Feed:
        def __iter__(self) -> Iterator[str]:
            raise error

    with pytest.raises(type(error)) as caught:
        service.import_store(Feed())
    assert caught.value is error
    assert _is_empty(service)


def test_a_value_error_of_the_hosts_own_iterator_passes_through_unchanged(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    """Only a file's ``ValueError`` means a closed file; a host's iterator's is its own."""
    source = TrueHeart(fresh_repository(), clock=clock)
    source.ingest_event(event("evt-1"))
    lines = exported(source)[0].splitlines(keepends=True)

    def feed() -> Iterator[str]:
        yield from lines[:2]
        raise ValueError("the feed's own")

    with pytest.raises(ValueError) as caught:
        service.import_store(feed())
    assert caught.value.args == ("the feed's own",)
    assert _is_empty(service)


def test_bytes_lines_are_read_as_utf8(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    populate(service)
    text, receipt = exported(service)
    target = TrueHeart(fresh_repository(), clock=clock)
    assert target.import_store(io.BytesIO(text.encode("utf-8"))).digest == receipt.digest
    other = TrueHeart(fresh_repository(), clock=clock)
    bad = text.encode("utf-8").replace(b"synthetic", b"synth\xfftic", 1)
    with pytest.raises(ImportRefused, match=r"^import refused: line \d+: not UTF-8 text$"):
        other.import_store(io.BytesIO(bad))
    assert _is_empty(other)


# --- the length of a line ----------------------------------------------------------------

_HEADER = fmt.canonical(
    {
        "exported_at": "2026-08-13T12:00:00.000000Z",
        "format": "trueheart-export",
        "schema": fmt.SCHEMA,
        "scope": None,
        "version": 1,
    }
)
TOO_LONG = "line too long (over 16 MiB)"


def _control_id(prefix: str) -> str:
    """An ID of the most bytes a line can spend on one: 128 characters, each a control
    character that canonical JSON escapes as six."""
    return prefix + "\x01" * (128 - len(prefix))


def test_the_longest_rows_fit_in_a_line_with_room_to_spare(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    """Bodies of 256 KiB of control characters (six bytes each in JSON), metadata of 16
    KiB, IDs, kinds and scope parts of 128 such characters, lineage windows of 20
    digits: the lines stay within the arithmetic of ``MAX_LINE_BYTES``, far below it,
    and the file imports."""
    scope = Scope(_control_id("t"), _control_id("o"), _control_id("s"))
    padding = (MAX_METADATA_BYTES - len('{"k":""}')) // 6
    metadata = {"k": "\x01" * padding}
    body = "\x01" * MAX_CONTENT_BYTES
    longest = timedelta(days=999_999_998)
    sources = [_control_id(f"e{i}") for i in range(3)]
    service.ingest_events(
        [
            event(
                event_id,
                scope=scope,
                content=body,
                metadata=metadata,
                source_metadata=metadata,
                source_id=_control_id("src"),
                source_type=_control_id("type"),
                # one source with windows a deadline can be computed from, others longest
                clear_for=CLEAR_FOR if number == 0 else longest,
                recall_for=RECALL_FOR if number == 0 else longest,
            )
            for number, event_id in enumerate(sources)
        ]
    )
    service.materialize_once(
        memory(
            _control_id("m"),
            sources,
            scope=scope,
            content=body,
            kind=_control_id("k"),
            metadata=metadata,
        )
    )
    text, receipt = exported(service)
    sizes = {}
    for line in text.splitlines(keepends=True):
        kind = json.loads(line)["kind"] if '"kind"' in line else "header"
        sizes[kind] = max(sizes.get(kind, 0), len(line.encode("utf-8")))
    # The arithmetic of MAX_LINE_BYTES: under 1.6 MB for one source, at most 935 more
    # bytes for each further one.
    assert sizes["memory"] <= 1_594_532 + 935 * (len(sources) - 1)
    assert max(sizes.values()) == sizes["memory"] < MAX_LINE_BYTES // 10
    target = TrueHeart(fresh_repository(), clock=clock)
    assert target.import_store(io.BytesIO(text.encode("utf-8"))).digest == receipt.digest
    assert target.get_memory(scope, _control_id("m")) == service.get_memory(scope, _control_id("m"))


def _line(size: int, filler: str = "a") -> str:
    """A JSON object line of exactly ``size`` bytes of UTF-8, its newline included."""
    frame = '{"kind":"event","x":""}\n'
    count = (size - len(frame)) // len(filler.encode("utf-8"))
    line = frame[:-3] + filler * count + frame[-3:]
    assert len(line.encode("utf-8")) == size
    return line


def test_a_line_longer_than_the_bound_is_refused_by_its_length(service: TrueHeart) -> None:
    """A line of ``MAX_LINE_BYTES`` bytes, its newline included, is read and refused for
    what it holds; one byte more is refused by its length alone, whether the line comes
    as ``str`` (counted in UTF-8 bytes: ``é`` is two) or ``bytes``."""
    header = _HEADER + "\n"
    within = _line(MAX_LINE_BYTES)
    for lines, problem in (
        ([header, within], "line digest mismatch"),
        ([header.encode(), within.encode()], "line digest mismatch"),
        ([header, _line(MAX_LINE_BYTES + 1)], TOO_LONG),
        ([header.encode(), _line(MAX_LINE_BYTES + 1).encode()], TOO_LONG),
        ([header, _line(MAX_LINE_BYTES + 2, "é")], TOO_LONG),  # fewer characters than bytes
    ):
        with pytest.raises(ImportRefused) as caught:
            service.import_store(lines)  # type: ignore[arg-type]
        assert str(caught.value) == f"import refused: line 2: {problem}"
        assert caught.value.line == 2
        assert _is_empty(service)


class _Generated(io.RawIOBase):
    """A file made as it is read, counting the bytes handed out: the header line, then
    one line of ``size`` bytes."""

    def __init__(self, size: int) -> None:
        self.head = (_HEADER + "\n").encode("utf-8")
        self.total = len(self.head) + size
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        start, end = self.served, min(self.total, self.served + len(view))
        piece = bytearray(b"a" * (end - start))
        head = self.head[start:end]
        piece[: len(head)] = head
        if end == self.total:
            piece[-1:] = b"\n"
        view[: end - start] = piece
        self.served = end
        return end - start


@pytest.mark.parametrize("mode", ["binary", "text"])
def test_a_file_is_read_in_pieces_so_a_line_too_long_is_never_read_whole(
    service: TrueHeart, mode: str
) -> None:
    """A file whose second line is twice the bound: the import refuses it once it has
    read the bound and a little more (the file's buffer), not the whole line."""
    raw = _Generated(2 * MAX_LINE_BYTES)
    buffered = io.BufferedReader(raw)
    source: io.IOBase = buffered
    if mode == "text":
        source = io.TextIOWrapper(buffered, encoding="utf-8", newline="\n")
    with pytest.raises(ImportRefused) as caught:
        service.import_store(source)  # type: ignore[arg-type]
    assert str(caught.value) == f"import refused: line 2: {TOO_LONG}"
    assert raw.served < len(raw.head) + MAX_LINE_BYTES + 1 + 64 * 1024
    assert _is_empty(service)


class _Watching:
    """A writer that records, for each line, how many rows the store had handed out."""

    def __init__(self, handed_out: list[int]) -> None:
        self.handed_out = handed_out
        self.seen: list[int] = []

    def write(self, text: str) -> int:
        self.seen.append(self.handed_out[0])
        return len(text)


class _CountingRepository:
    """A repository whose receipt iterator counts what it hands out."""

    def __init__(self, inner: Repository, handed_out: list[int]) -> None:
        self._inner = inner
        self._handed_out = handed_out
        self.capabilities = inner.capabilities

    def close(self) -> None:
        self._inner.close()

    @contextmanager
    def unit_of_work(self, operation: Any, *, write: bool, erasing: bool = False) -> Iterator[Any]:
        with self._inner.unit_of_work(operation, write=write, erasing=erasing) as uow:
            yield _CountingUnit(uow, self._handed_out)


class _CountingUnit:
    def __init__(self, inner: Any, handed_out: list[int]) -> None:
        self._inner = inner
        self._handed_out = handed_out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def events(self) -> Any:
        return _CountingEvents(self._inner.events, self._handed_out)


class _CountingEvents:
    def __init__(self, inner: Any, handed_out: list[int]) -> None:
        self._inner = inner
        self._handed_out = handed_out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def iter(self, scope: Any) -> Iterator[Any]:
        for row in self._inner.iter(scope):
            self._handed_out[0] += 1
            yield row


def test_the_export_is_streamed_line_by_line(
    repository: Repository, clock: Callable[[], datetime]
) -> None:
    service = TrueHeart(repository, clock=clock)
    service.ingest_events([event(f"evt-{i}") for i in range(50)])
    handed_out = [0]
    counting = TrueHeart(_CountingRepository(repository, handed_out), clock=clock)  # type: ignore[arg-type]
    writer = _Watching(handed_out)
    receipt = counting.export_store(writer)
    assert dict(receipt.counts)["event"] == 50
    event_lines = writer.seen[1:51]
    # The line of the k-th receipt was written when the store had handed out k rows:
    # each line leaves before the next row is read.
    assert event_lines == list(range(1, 51))


def test_the_async_face_exports_and_imports(
    repository: Repository,
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
) -> None:
    import asyncio

    async def run() -> tuple[ExportReceipt, ImportReceipt]:
        async with AsyncTrueHeart(repository, clock=clock) as source:
            await source.ingest_event(event("evt-1"))
            out = io.StringIO()
            exported_receipt = await source.export_store(out)
        async with AsyncTrueHeart(fresh_repository(), clock=clock) as target:
            imported = await target.import_store(io.StringIO(out.getvalue()))
            assert (await target.get_receipt(SCOPE, "evt-1")).event_id == "evt-1"
        return exported_receipt, imported

    exported_receipt, imported = asyncio.run(run())
    assert exported_receipt.digest == imported.digest
    assert exported_receipt.rows == imported.rows == 3  # event, body, audit


def test_the_hosts_own_exceptions_pass_through_unchanged(
    service: TrueHeart, fresh_repository: Callable[[], Repository], clock: Callable[[], datetime]
) -> None:
    # A writer or an iterable that fails with an exception of its own is not a damaged
    # store: the exception comes back as it was raised, arguments included.
    populate(service)
    text, _ = exported(service)

    class Failing:
        def write(self, line: str) -> None:
            raise KeyError("bucket missing")

    with pytest.raises(KeyError) as caught:
        service.export_store(Failing())  # type: ignore[arg-type]
    assert caught.value.args == ("bucket missing",)
    lines = text.splitlines(keepends=True)

    def broken() -> Iterator[str]:
        yield from lines[:3]
        raise LookupError("the feed broke")

    target = TrueHeart(fresh_repository(), clock=clock)
    with pytest.raises(LookupError) as refused:
        target.import_store(broken())
    assert refused.value.args == ("the feed broke",)
    assert _is_empty(target)
    assert target.import_store(lines).rows == len(lines) - 2


def _superseding(lines: list[str], number: int, target: str) -> list[str]:
    """The claim of line ``number`` made to supersede ``target``, with the row digest a
    store would have written for it."""
    obj = {**json.loads(lines[number]), "supersedes": target}
    row = ClaimRow(
        records.scope_key(Scope(**obj["scope"])),
        obj["claim_id"],
        obj["subject"],
        obj["predicate"],
        obj["value"],
        None if obj["valid_from"] is None else fmt.microseconds(obj["valid_from"]),
        None if obj["valid_to"] is None else fmt.microseconds(obj["valid_to"]),
        obj["confidence"],
        obj["authority"],
        obj["supersedes"],
        "",
    )
    obj["row_digest"] = _claim_digest(row)
    return [*lines[:number], fmt.canonical(obj) + "\n", *lines[number + 1 :]]


def test_a_claim_that_supersedes_itself_is_refused(
    service: TrueHeart,
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
) -> None:
    """No write makes a claim supersede itself (it would be superseded for ever): an
    edited file whose every digest holds is refused at that claim's line."""
    populate(service)
    lines = exported(service)[0].splitlines(keepends=True)
    number = _line_of(lines, "claim", claim_id="claim-2")
    forged = _superseding(lines, number, "claim-2")
    target = TrueHeart(fresh_repository(), clock=clock)
    with pytest.raises(ImportRefused) as caught:
        target.import_store(io.StringIO(_rechained(forged)))
    assert str(caught.value) == f"import refused: line {number + 1}: invalid row"
    assert _is_empty(target)


@pytest.mark.parametrize(
    "superseded",
    [
        "mem-1",  # a memory of another kind
        "claim-never",  # no memory and no tombstone of this ID
        "mem-t",  # a memory of another scope
    ],
)
def test_a_claim_that_supersedes_what_no_write_accepts_is_refused(
    service: TrueHeart,
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
    superseded: str,
) -> None:
    """A write supersedes only a claim of its own scope, so a claim names one of them or
    one removed since (its memory tombstone is in the scope); an edited file whose every
    digest holds but whose claim names anything else fails the final verification."""
    populate(service)
    lines = exported(service)[0].splitlines(keepends=True)
    forged = _superseding(lines, _line_of(lines, "claim", claim_id="claim-2"), superseded)
    target = TrueHeart(fresh_repository(), clock=clock)
    with pytest.raises(ImportRefused) as caught:
        target.import_store(io.StringIO(_rechained(forged)))
    assert str(caught.value) == (
        "import refused: the imported store does not verify (supersedes_unknown)"
    )
    assert _is_empty(target)


def test_a_claim_whose_superseded_claim_was_removed_verifies_and_round_trips(
    service: TrueHeart,
    fresh_repository: Callable[[], Repository],
    clock: Callable[[], datetime],
) -> None:
    populate(service)
    service.govern(command(GovernanceAction.FORGET, "claim-1"))
    report = service.verify_integrity()
    assert report.ok, report.problems
    text, _ = exported(service)
    target = TrueHeart(fresh_repository(), clock=clock)
    target.import_store(io.StringIO(text))
    assert target.verify_integrity().ok
    views = target.claims(ClaimQuery(SCOPE, LATER)).claims
    assert views == service.claims(ClaimQuery(SCOPE, LATER)).claims
    assert ("claim-2", "claim-1") in [(v.claim.claim_id, v.claim.supersedes) for v in views]
    assert "claim-1" not in [v.claim.claim_id for v in views]
