"""Search walkthrough: a short chat, memories derived from it, and two searches.

Run it from anywhere: ``python examples/search.py``. It ingests seven turns of a
synthetic travel-planning chat, derives memories from them with lineage, then searches
them twice: in English with a 40-token budget (so the trace shows a memory left out for
``budget``), and in Japanese, which is written without spaces between words. It uses a
fixed clock and a temporary SQLite file that is removed on exit; its output is
deterministic.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from trueheart_core import (
    MemoryCapsule,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)
from trueheart_core.domain.search.tokenize import tokenize

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SCOPE = Scope("synthetic-tenant", "travel-assistant", "synthetic-traveller")
RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=7),
    clear_for=timedelta(days=30),
    recall_for=timedelta(days=180),
)

# (event ID, speaker, text). The user's own words are CONFIRMED, the assistant's OBSERVED.
CHAT: tuple[tuple[str, str, str], ...] = (
    ("turn-1", "user", "I'm planning a trip to Japan in April to see the cherry blossoms."),
    ("turn-2", "assistant", "April is a good choice. Where would you like to stay?"),
    ("turn-3", "user", "Kyoto, in a traditional ryokan rather than a big hotel."),
    ("turn-4", "assistant", "Noted. Any dietary needs for the kaiseki dinners at the ryokan?"),
    ("turn-5", "user", "I'm vegetarian. Also, no flights before 9 am, please."),
    ("turn-6", "user", "京都では静かな旅館に泊まりたいです。"),
    ("turn-7", "assistant", "I will look for quiet ryokan in Kyoto with vegetarian kaiseki."),
)

# (memory ID, kind, content, source event IDs): what the host derived from the chat.
MEMORIES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("mem-trip", "plan", "Plans a trip to Japan in April for the cherry blossoms.", ("turn-1",)),
    (
        "mem-lodging",
        "preference",
        "In Kyoto, wants a traditional ryokan rather than a big hotel.",
        ("turn-2", "turn-3"),
    ),
    (
        "mem-diet",
        "preference",
        "Vegetarian: the ryokan's kaiseki dinners must be vegetarian.",
        ("turn-4", "turn-5"),
    ),
    ("mem-flights", "preference", "No flights before 9 am.", ("turn-5",)),
    ("mem-quiet-ja", "preference", "京都では静かな旅館に泊まりたい。", ("turn-6",)),
)


def _turn(index: int, event_id: str, speaker: str, text: str) -> RawEventDraft:
    trust = TrustLevel.CONFIRMED if speaker == "user" else TrustLevel.OBSERVED
    return RawEventDraft(
        event_id=event_id,
        scope=SCOPE,
        source=SourceRef("chat-1", f"chat/{speaker}", NOW + timedelta(minutes=index), trust),
        content=text,
        retention=RETENTION,
    )


def _print_capsule(capsule: MemoryCapsule) -> None:
    print(
        f"matched {capsule.matched}, considered {capsule.considered}, "
        f"omitted by score {capsule.omitted_by_score}"
    )
    print("items:")
    for item in capsule.items:
        sources = ", ".join(item.source_event_ids)
        print(
            f"  #{item.rank} score {item.score:.3f} clarity {item.clarity:.2f} "
            f"tokens {item.tokens} {item.memory.memory_id}: {item.memory.content} "
            f"[sources: {sources}]"
        )
    print("trace:")
    for entry in capsule.trace:
        print(
            f"  #{entry.rank} {entry.memory_id} {entry.decision} "
            f"tokens {entry.tokens} remaining {entry.remaining_tokens}"
        )
    print(
        f"used {capsule.used_tokens} of {capsule.budget_tokens} tokens "
        f"({capsule.estimator}, {len(capsule.items)} of at most {capsule.limit} items)"
    )


def main(*, temporary_root: Path | None = None) -> None:
    """Run the walkthrough in a temporary directory (under ``temporary_root`` if given)."""
    with (
        tempfile.TemporaryDirectory(dir=temporary_root) as directory,
        TrueHeart(SQLiteRepository(Path(directory) / "memory.db"), clock=lambda: NOW) as memory,
    ):
        memory.ingest_events([_turn(index, *turn) for index, turn in enumerate(CHAT, start=1)])
        created_at = NOW + timedelta(minutes=len(CHAT) + 1)
        for memory_id, kind, content, sources in MEMORIES:
            memory.materialize_once(
                MemoryDraft(
                    memory_id=memory_id,
                    scope=SCOPE,
                    content=content,
                    source_event_ids=sources,
                    kind=kind,
                    trust=TrustLevel.OBSERVED,  # at most the least-trusted source
                    created_at=created_at,
                )
            )
        as_of = NOW + timedelta(days=1)

        # mem-lodging and mem-trip fill the 40 tokens; mem-diet (rank 3) is left out for the
        # budget. "Which", "in", "should" and "I" are stop
        # words: the query's lexical side leaves them out.
        text = "Which ryokan in Kyoto should I book for the blossoms?"
        print(f"search: {text!r}, budget 40 tokens, limit 5")
        capsule = memory.search(
            SearchQuery(scope=SCOPE, text=text, as_of=as_of, budget_tokens=40, limit=5)
        )
        _print_capsule(capsule)

        # Japanese has no spaces between words: the query and the memories are split into
        # overlapping character bigrams, so they meet on 京都 (Kyoto), 泊ま (stay) and
        # 旅館 (ryokan).
        # The time zone of as_of does not matter: it is the same instant.
        text = "京都で泊まる旅館"
        print(f"search: {text!r} -> terms {' '.join(tokenize(text))}")
        tokyo_time = as_of.astimezone(timezone(timedelta(hours=9)))
        capsule = memory.search(SearchQuery(scope=SCOPE, text=text, as_of=tokyo_time))
        _print_capsule(capsule)


if __name__ == "__main__":
    main()
