"""Builders of synthetic drafts and commands shared by the conformance tests, and a
backend-neutral look into storage (:func:`found_in_storage`)."""

from __future__ import annotations

import contextlib
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from trueheart_core import (
    CanonicalClaimExtractor,
    CapsuleDecision,
    ClaimDraft,
    ClaimQuery,
    ClaimSet,
    ClaimStatus,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    MemoryCapsule,
    MemoryDraft,
    MemoryPage,
    MemoryRecord,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.domain.search.stopwords import STOP_WORDS
from trueheart_core.ports import SupportsForensics

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)
SCOPE = Scope("tenant", "owner", "subject")
OTHER_SCOPE = Scope("tenant", "owner", "other-subject")

RAW_TTL = timedelta(days=7)
CLEAR_FOR = timedelta(days=30)
RECALL_FOR = timedelta(days=90)


def msg(text: str) -> str:
    """An anchored regular expression that matches exactly ``text``."""
    return "^" + re.escape(text) + "$"


def source(
    *,
    source_id: str = "source-1",
    source_type: str = "synthetic",
    occurred_at: datetime = NOW,
    trust: TrustLevel = TrustLevel.OBSERVED,
    metadata: Mapping[str, Any] | None = None,
) -> SourceRef:
    return SourceRef(
        source_id, source_type, occurred_at, trust, {} if metadata is None else metadata
    )


def event(
    event_id: str = "evt-1",
    *,
    scope: Scope = SCOPE,
    content: str = "synthetic message",
    trust: TrustLevel = TrustLevel.OBSERVED,
    occurred_at: datetime = NOW,
    raw_ttl: timedelta = RAW_TTL,
    clear_for: timedelta = CLEAR_FOR,
    recall_for: timedelta = RECALL_FOR,
    metadata: Mapping[str, Any] | None = None,
    source_metadata: Mapping[str, Any] | None = None,
    source_id: str = "source-1",
    source_type: str = "synthetic",
) -> RawEventDraft:
    return RawEventDraft(
        event_id,
        scope,
        source(
            source_id=source_id,
            source_type=source_type,
            occurred_at=occurred_at,
            trust=trust,
            metadata=source_metadata,
        ),
        content,
        RetentionPolicy(raw_ttl, clear_for, recall_for),
        {} if metadata is None else metadata,
    )


def ingest_ids(
    service: TrueHeart, *event_ids: str, recall_for: timedelta = timedelta(days=400)
) -> None:
    """Ingest one synthetic event per ID in ``SCOPE``, clear for a day, recallable for
    ``recall_for``."""
    for event_id in event_ids:
        service.ingest_event(event(event_id, clear_for=timedelta(days=1), recall_for=recall_for))


def memory(
    memory_id: str = "mem-1",
    sources: Sequence[str] = ("evt-1",),
    *,
    scope: Scope = SCOPE,
    content: str = "derived synthetic memory",
    kind: str = "fact",
    trust: TrustLevel = TrustLevel.OBSERVED,
    created_at: datetime = NOW,
    metadata: Mapping[str, Any] | None = None,
) -> MemoryDraft:
    return MemoryDraft(
        memory_id,
        scope,
        content,
        tuple(sources),
        kind,
        trust,
        created_at,
        {} if metadata is None else metadata,
    )


def claim(
    claim_id: str = "claim-1",
    sources: Sequence[str] = ("evt-1",),
    *,
    scope: Scope = SCOPE,
    subject: str = "user:ada",
    predicate: str = "prefers_theme",
    value: str = "dark",
    trust: TrustLevel = TrustLevel.OBSERVED,
    created_at: datetime = NOW,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    confidence: float = 1.0,
    authority: str = "application",
    supersedes: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ClaimDraft:
    return ClaimDraft(
        claim_id,
        scope,
        subject,
        predicate,
        value,
        tuple(sources),
        trust,
        created_at,
        valid_from,
        valid_to,
        confidence,
        authority,
        supersedes,
        {} if metadata is None else metadata,
    )


def claim_views(claims: ClaimSet) -> list[tuple[str, ClaimStatus, tuple[str, ...]]]:
    """Each view of a claim set as ``(claim_id, status, superseded_by)``, in order."""
    return [(v.claim.claim_id, v.status, v.superseded_by) for v in claims.claims]


def ask_claims(
    service: TrueHeart, as_of: datetime, known_at: datetime | None = None, **filters: Any
) -> ClaimSet:
    """The claims of ``SCOPE`` known at ``known_at`` (default ``as_of``) as of ``as_of``."""
    return service.claims(ClaimQuery(SCOPE, as_of, known_at, **filters))


def views_at(
    service: TrueHeart, as_of: datetime, known_at: datetime | None = None, **filters: Any
) -> list[tuple[str, ClaimStatus, tuple[str, ...]]]:
    """``claim_views`` of ``ask_claims``."""
    return claim_views(ask_claims(service, as_of, known_at, **filters))


def conflict_ids(claims: ClaimSet) -> list[tuple[str, ...]]:
    """The claim IDs of each conflict of a claim set, in order."""
    return [conflict.claim_ids for conflict in claims.conflicts]


def command(
    action: GovernanceAction,
    entity_id: str = "mem-1",
    *,
    entity_type: EntityType = EntityType.MEMORY,
    scope: Scope = SCOPE,
    occurred_at: datetime = NOW,
    reason: str = "synthetic request",
) -> GovernanceCommand:
    return GovernanceCommand(scope, action, entity_type, entity_id, occurred_at, reason)


def found_in_storage(repository: object, texts: Iterable[str | bytes]) -> list[str | bytes]:
    """The ``texts`` (a ``str`` as UTF-8) that occur anywhere in the repository's storage,
    in the order given, as its own forensic search finds them (``Capability.FORENSICS``)."""
    assert isinstance(repository, SupportsForensics), "needs requires(Capability.FORENSICS)"
    wanted = list(texts)
    needles = [text.encode("utf-8") if isinstance(text, str) else text for text in wanted]
    found = repository.residue(needles)
    assert isinstance(found, frozenset) and found <= set(needles)
    return [text for text, needle in zip(wanted, needles, strict=True) if needle in found]


class CountingClock:
    """A clock that returns a settable instant and counts its calls."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now
        self.calls = 0

    def __call__(self) -> datetime:
        self.calls += 1
        return self.now


ClockFn = Callable[[], datetime]


def assert_not_chained(error: BaseException) -> None:
    """A translated library error shows no chained cause or context."""
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__


BM25_K1 = 1.2
BM25_B = 0.75
CORRECTION_WEIGHT = 0.5
INFLECTION_WEIGHT = 0.8


def ascii_terms(text: str) -> list[str]:
    """The search terms of plain ASCII text: lower-case runs of letters and digits."""
    assert text.isascii(), "the reference tokeniser covers ASCII text only"
    return re.findall(r"[a-z0-9]+", text.lower())


def edit_distance(a: str, b: str) -> int:
    """The optimal string alignment distance: the fewest deletions, insertions,
    replacements and transpositions of adjacent characters (each character edited at
    most once) that turn ``a`` into ``b``; computed by dynamic programming."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


_VOWEL = "aeiou"


def _reference_stems(word: str) -> set[str]:
    """The documented stems of an English word: an ending taken off (-s -es -d -ed -ing
    -er -ers, with a final e put back after -ed -ing -er -ers; -ies and -ied with a final
    y put back), and a doubled final consonant undone after -ed -ing -er -ers; at least
    three letters each."""
    stems = set()
    for ending in ("s", "es", "d", "ed", "ing", "er", "ers", "ies", "ied"):
        if not word.endswith(ending):
            continue
        head = word[: len(word) - len(ending)]
        if ending in ("ies", "ied"):
            candidates = [head + "y"]
        elif ending in ("ed", "ing", "er", "ers"):
            candidates = [head, head + "e"]
            if len(head) >= 4 and head[-1] == head[-2] and head[-1] not in _VOWEL:
                candidates.append(head[:-1])
        else:
            candidates = [head]
        stems.update(stem for stem in candidates if len(stem) >= 3)
    return stems


def _reference_forms(base: str) -> set[str]:
    """The documented forms of a base word: -s -es -ed -ing, or after a final e -s -d
    and -ing in its place; -ies -ied for a final y; the final consonant doubled before
    -ed and -ing after consonant, vowel, consonant (the last not w, x or y)."""
    if base[-1] == "e":
        return {base + "s", base + "d", base[:-1] + "ing"}
    forms = {base + "s", base + "es", base + "ed", base + "ing"}
    if base[-1] == "y":
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}
    c1, v, c2 = base[-3:]
    if c1 not in _VOWEL and v in _VOWEL and c2 not in _VOWEL + "wxy":
        forms |= {base + c2 + "ed", base + c2 + "ing"}
    return forms


def is_inflection(word: str, other: str) -> bool:
    """Whether ``other`` is an English inflection of the query word ``word`` by the
    documented rules: a stem of it; it with -s -es -d -ed -ing -er -ers added (-ies and
    -ied for a final y, -ing for a final e); or a form of it or of one of its stems."""
    if word == other or not (word.isascii() and word.isalpha()) or len(word) < 3:
        return False
    stems = _reference_stems(word)
    grown = {word + ending for ending in ("s", "es", "d", "ed", "ing", "er", "ers")}
    if word.endswith("y"):
        grown |= {word[:-1] + "ies", word[:-1] + "ied"}
    if word.endswith("e"):
        grown.add(word[:-1] + "ing")
    every = stems | grown | set().union(*(_reference_forms(base) for base in {word, *stems}))
    return other in every


def reference_weights(query: str, corpus: Sequence[str]) -> dict[str, float]:
    """The weighted query terms of the documented lexical ranking, for ASCII text: the
    query's distinct words without its stop words (all of them when every one is a stop
    word); each that some memory of ``corpus`` holds, at its idf; every word of the
    corpus (not a stop word, not a query word) that is an inflection of a query word, at
    ``INFLECTION_WEIGHT`` times the lesser of its idf and that word's (a word the corpus
    lacks at the idf of no memory), the best over the query's words; and, for each query
    word of three letters or more, letters only, that none holds, itself or in another
    form, every other word of the corpus (letters only) one edit away from it, at half
    its idf."""
    docs = [set(ascii_terms(text)) for text in corpus]
    vocabulary = set().union(*docs)
    count = len(docs)

    def idf(term: str) -> float:
        df = sum(1 for doc in docs if term in doc)
        return math.log(1.0 + (count - df + 0.5) / (df + 0.5))

    words = set(ascii_terms(query))
    words = {word for word in words if word not in STOP_WORDS} or words
    weights = {word: idf(word) for word in words if word in vocabulary}
    others = sorted(vocabulary - words - STOP_WORDS)
    inflected: dict[str, float] = {}
    for word in sorted(words):
        for other in others:
            if is_inflection(word, other):
                weight = INFLECTION_WEIGHT * min(idf(other), idf(word))
                inflected[other] = max(weight, inflected.get(other, 0.0))
    for word in sorted(words - vocabulary):
        if len(word) < 3 or not word.isalpha():
            continue
        if any(is_inflection(word, held) for held in vocabulary - STOP_WORDS - {word}):
            continue  # held in another form: taken as meant
        for other in others:
            # Its own forms count as forms; another word's form also as a correction,
            # at the better weight.
            own_form = is_inflection(word, other)
            if other.isalpha() and not own_form and edit_distance(word, other) == 1:
                weight = CORRECTION_WEIGHT * idf(other)
                inflected[other] = max(weight, inflected.get(other, 0.0))
    return {**weights, **inflected}


def reference_ceiling(query: str, corpus: Sequence[str]) -> float:
    """The documented lexical ceiling of an ASCII query: over its content words (as in
    :func:`reference_weights`), the idf of each word the corpus holds, else the best
    weight of its inflections and corrections, else the idf of a term no memory holds."""
    weights = reference_weights(query, corpus)
    docs = [set(ascii_terms(text)) for text in corpus]
    vocabulary = set().union(*docs)
    count = len(docs)

    def idf(df: int) -> float:
        return math.log(1.0 + (count - df + 0.5) / (df + 0.5))

    words = set(ascii_terms(query))
    words = {word for word in words if word not in STOP_WORDS} or words
    parts = []
    for word in sorted(words):
        if word in vocabulary:
            parts.append(idf(sum(1 for doc in docs if word in doc)))
            continue
        fixes = [
            weight
            for other, weight in sorted(weights.items())
            if other not in words
            and len(word) >= 3
            and word.isalpha()
            and (is_inflection(word, other) or edit_distance(word, other) == 1)
        ]
        parts.append(max(fixes) if fixes else idf(0))
    return math.fsum(parts)


def bm25_reference(query: str, corpus: Sequence[str], document: str) -> float:
    """The documented lexical score of ``document`` within ``corpus`` (the scope's
    searchable contents, ``document`` among them): Okapi BM25 (k1 = 1.2, b = 0.75) over
    :func:`reference_weights`, each term once."""
    assert document in corpus
    average = sum(len(ascii_terms(text)) for text in corpus) / len(corpus)
    terms = ascii_terms(document)
    parts = []
    for term, weight in sorted(reference_weights(query, corpus).items()):
        tf = terms.count(term)
        if not tf:
            continue
        norm = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * len(terms) / average)
        parts.append(weight * tf * (BM25_K1 + 1.0) / norm)
    return math.fsum(parts)


def materialize_all(
    service: TrueHeart,
    contents: Mapping[str, str],
    *,
    scope: Scope = SCOPE,
    event_id: str = "evt-1",
    **fields: Any,
) -> dict[str, MemoryRecord]:
    """Ingest one source event and materialize one memory per ``memory_id -> content``."""
    service.ingest_event(event(event_id, scope=scope))
    return {
        memory_id: service.materialize_once(
            memory(memory_id, (event_id,), scope=scope, content=content, **fields)
        )
        for memory_id, content in contents.items()
    }


def assert_bm25_reference(capsule: MemoryCapsule, query: str, corpus: dict[str, str]) -> None:
    """Every item scores as BM25 over exactly ``corpus`` says, and nothing else matches."""
    texts = list(corpus.values())
    scores = {item.memory.memory_id: item.score for item in capsule.items}
    expected = {
        memory_id: bm25_reference(query, texts, content)
        for memory_id, content in corpus.items()
        if bm25_reference(query, texts, content) > 0
    }
    assert set(scores) == set(expected)
    assert capsule.matched == len(expected)
    for memory_id, score in scores.items():
        assert math.isclose(score, expected[memory_id], rel_tol=1e-12), memory_id


def check_capsule(capsule: MemoryCapsule) -> None:
    """The invariants every capsule keeps: items are the INCLUDED trace entries in rank
    order, whole, within the budget and the limit, priced as the trace says."""
    included = [e for e in capsule.trace if e.decision is CapsuleDecision.INCLUDED]
    assert [e.rank for e in capsule.trace] == list(range(1, len(capsule.trace) + 1))
    assert [i.memory.memory_id for i in capsule.items] == [e.memory_id for e in included]
    assert [(i.rank, i.score, i.clarity, i.tokens) for i in capsule.items] == [
        (e.rank, e.score, e.clarity, e.tokens) for e in included
    ]
    assert capsule.used_tokens == sum(i.tokens for i in capsule.items) <= capsule.budget_tokens
    assert len(capsule.items) <= capsule.limit
    assert capsule.considered == len(capsule.trace) <= 2 * capsule.limit
    assert capsule.omitted_by_score == capsule.matched - capsule.considered >= 0
    assert len({e.memory_id for e in capsule.trace}) == len(capsule.trace)
    for item in capsule.items:
        assert item.memory.scope == capsule.scope


# --- a subject with every kind of artifact, for the subject erasure tests ---------------

ERASED_AT = NOW + timedelta(days=2)
# Words that only the erased subject's bodies hold, and words of the scope kept.
SUBJECT_WORDS = (
    "zqxsubjraw",
    "zqxsubjmem",
    "zqxsubjsealed",
    "zqxsubjexpired",
    "zqxsubjclaim",
    "zqxsubjvalue",
    "zqxsubjextracted",
)
OTHER_WORDS = ("zqxotherraw", "zqxothermem", "zqxotherclaim")


def populate_subject(service: TrueHeart) -> None:
    """A subject with every kind of artifact, next to another subject of the same owner."""
    service.ingest_events(
        [event(f"evt-{i}", content=f"raw zqxsubjraw{i} body shared") for i in range(6)]
        + [event("evt-old", content="zqxsubjexpired body", raw_ttl=timedelta(days=1))]
        + [
            event(f"evt-{i}", scope=OTHER_SCOPE, content=f"kept zqxotherraw{i} shared")
            for i in range(3)
        ]
    )
    service.ingest_extracted(
        event(
            "evt-x",
            content="Canonical claim: subject=user:zqxsubjextracted; predicate=likes; value=tea.",
        ),
        CanonicalClaimExtractor(),
    )
    for i in range(6):
        service.materialize_once(
            memory(f"mem-{i}", (f"evt-{i}",), content=f"memory zqxsubjmem{i} shared")
        )
    service.materialize_once(memory("mem-sealed", ("evt-0",), content="zqxsubjsealed note"))
    service.materialize_claim(
        claim("claim-1", ("evt-1",), subject="user:zqxsubjclaim", value="zqxsubjvalue")
    )
    service.materialize_once(memory("mem-old", ("evt-old",), content="from an old event"))
    for i in range(3):
        service.materialize_once(
            memory(f"mem-{i}", (f"evt-{i}",), scope=OTHER_SCOPE, content=f"zqxothermem{i} shared")
        )
    service.materialize_claim(
        claim("claim-1", ("evt-0",), scope=OTHER_SCOPE, subject="user:zqxotherclaim")
    )
    service.govern(command(GovernanceAction.SEAL, "mem-sealed"))
    service.govern(command(GovernanceAction.FORGET, "mem-5"))
    assert service.expire_raw_content(as_of=NOW + timedelta(days=1)) == 1


def populate_for_stats(service: TrueHeart) -> None:
    """Receipts (one expired), an extraction, memories of two kinds (one sealed, one
    forgotten), a claim, and a memory in another scope: what the statistics tests count."""
    service.ingest_events(
        [
            event("evt-1"),
            event("evt-2", raw_ttl=timedelta(days=1)),
            event("evt-3"),
            event("evt-1", scope=OTHER_SCOPE),
        ]
    )
    service.ingest_extracted(
        event("evt-x", content="Canonical claim: subject=user:a; predicate=likes; value=tea."),
        CanonicalClaimExtractor(),
    )
    service.materialize_once(memory("mem-1", ("evt-1",), content="alpha beta"))
    service.materialize_once(memory("mem-2", ("evt-2",), content="beta gamma", kind="plan"))
    service.materialize_once(memory("mem-3", ("evt-3",), content="gamma delta"))
    service.materialize_once(memory("mem-4", ("evt-3",), content="delta epsilon", kind="plan"))
    service.materialize_claim(claim("claim-1", ("evt-1",)))
    service.materialize_once(memory("mem-1", ("evt-1",), scope=OTHER_SCOPE, content="alpha"))
    service.govern(command(GovernanceAction.SEAL, "mem-3"))
    service.govern(command(GovernanceAction.FORGET, "mem-4"))
    service.expire_raw_content(as_of=NOW + timedelta(days=1))


def all_pages(service: TrueHeart, limit: int, **filters: Any) -> list[MemoryPage]:
    """Every page of one ``list_memories`` listing of SCOPE, following its cursors."""
    pages = [service.list_memories(SCOPE, limit=limit, **filters)]
    while pages[-1].next_cursor is not None:
        assert len(pages) <= 50
        pages.append(
            service.list_memories(SCOPE, limit=limit, cursor=pages[-1].next_cursor, **filters)
        )
    return pages


def page_ids(pages: list[MemoryPage]) -> list[str]:
    """The memory IDs of these pages, in order."""
    return [m.memory_id for page in pages for m in page.items]


@contextlib.contextmanager
def after_write_unit(operation: str, action: Callable[[], object]) -> Iterator[list[object]]:
    """While the block runs, ``action()`` is called once, in the calling thread, right
    after the first writing unit of work of ``operation`` has ended (its transaction
    committed or rolled back, the repository free again): hooked on the unit's
    ``trueheart_core.slow`` record. Yields the list of what ``action`` returned (empty
    when it was not called)."""
    done: list[object] = []
    prefix = f"write operation {operation} took"

    class Hook(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if not done and record.getMessage().startswith(prefix):
                done.append(action())

    with listening("trueheart_core.slow", Hook(logging.DEBUG)):
        yield done


@contextlib.contextmanager
def listening(name: str, handler: logging.Handler) -> Iterator[None]:
    """``handler`` on the logger ``name``, set to ``DEBUG``, while the block runs; the
    logger's level is put back after."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
