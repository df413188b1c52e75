"""Claims walkthrough: a preference that changes, a conflict, two times, and forgetting.

Run it from anywhere: ``python examples/claims.py``. Ada picks a dark theme in April
and a light one in May; the application writes each choice as a canonical claim
sentence, which ``ingest_extracted`` reads into claims in the transaction that stores the
event. A profile imported from a CRM says her language is French while her own settings
say English: the two current claims are shown as a conflict, not resolved. The example
then asks what was believed in April about June, and what is known in June, and finally
deletes the imported event, which takes its claim with it. It uses synthetic data, fixed
times and a temporary SQLite file that is removed on exit; its output is deterministic.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trueheart_core import (
    CanonicalClaimExtractor,
    ClaimDraft,
    ClaimQuery,
    ClaimSet,
    ClaimStatus,
    EntityDeleted,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SCOPE = Scope("synthetic-tenant", "settings-assistant", "synthetic-ada")
RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=30),
    clear_for=timedelta(days=90),
    recall_for=timedelta(days=365),  # a claim is known until its recall deadline
)
APRIL = datetime(2026, 4, 2, 9, 0, tzinfo=UTC)
IMPORT = datetime(2026, 4, 20, 12, 0, tzinfo=UTC)
LATE_APRIL = datetime(2026, 4, 25, 12, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 10, 18, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)

# What the application writes when Ada changes a setting: a human-readable line, then the
# same facts in the canonical grammar that CanonicalClaimExtractor reads (and nothing else).
APRIL_SETTINGS = (
    "Ada chose the dark theme and English.\n"
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=dark; "
    "valid_from=2026-04-02T09:00:00Z.\n"
    "Canonical claim: subject=user:ada; predicate=prefers_language; value=English."
)
# "april-theme" is a key of the application's own; claim_ids_by_source maps it to a claim.
# The last sentence has no value: it yields no claim, only a diagnostic code.
MAY_SETTINGS = (
    "Ada switched to the light theme.\n"
    "Canonical claim: subject=user:ada; predicate=prefers_theme; value=light; "
    "valid_from=2026-05-10T18:00:00Z; supersedes=april-theme.\n"
    "Canonical claim: subject=user:ada; predicate=prefers_font_size."
)


class StoryClock:
    """Ingest time that the walkthrough moves forward by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _event(event_id: str, source: SourceRef, content: str) -> RawEventDraft:
    return RawEventDraft(
        event_id=event_id, scope=SCOPE, source=source, content=content, retention=RETENTION
    )


def _settings(event_id: str, when: datetime, content: str) -> RawEventDraft:
    # Ada's own choices in the settings screen: confirmed.
    source = SourceRef("settings-screen", "settings", when, TrustLevel.CONFIRMED)
    return _event(event_id, source, content)


def _theme(
    as_of: datetime, known_at: datetime | None = None, statuses: tuple[ClaimStatus, ...] = ()
) -> ClaimQuery:
    return ClaimQuery(SCOPE, as_of, known_at, "user:ada", "prefers_theme", statuses)


def _print_claims(title: str, answer: ClaimSet) -> None:
    print(f"{title} (known at {answer.known_at:%Y-%m-%d}, as of {answer.as_of:%Y-%m-%d}):")
    for view in answer.claims:
        claim = view.claim
        line = f"  {claim.subject} {claim.predicate} {claim.value}: {view.status}"
        if view.superseded_by:
            line += f" by {', '.join(view.superseded_by)}"
        print(line)
    for conflict in answer.conflicts:
        print(f"  conflict: {', '.join(conflict.claim_ids)}")


def main(*, temporary_root: Path | None = None) -> None:
    """Run the walkthrough in a temporary directory (under ``temporary_root`` if given)."""
    clock = StoryClock(APRIL)
    extractor = CanonicalClaimExtractor()
    with (
        tempfile.TemporaryDirectory(dir=temporary_root) as directory,
        TrueHeart(SQLiteRepository(Path(directory) / "memory.db"), clock=clock) as memory,
    ):
        # April: the event and the claims read from it, in one transaction.
        april = memory.ingest_extracted(
            _settings("settings-april", APRIL, APRIL_SETTINGS), extractor
        )
        dark = april.claims[0]
        print(f"{april.extraction.extractor} read {len(april.claims)} claims from settings-april:")
        for claim, span in zip(april.claims, april.extraction.spans, strict=True):
            print(f"  {claim.claim_id} = {claim.memory.content} [span {span.start}-{span.end}]")

        # Late April: the host derives a claim from an imported profile itself.
        clock.now = IMPORT
        crm = SourceRef("crm", "import", IMPORT, TrustLevel.OBSERVED)
        memory.ingest_event(_event("crm-import", crm, "Profile import: language French."))
        french_draft = ClaimDraft(
            claim_id="claim-crm-language",
            scope=SCOPE,
            subject="user:ada",
            predicate="prefers_language",
            value="French",
            source_event_ids=("crm-import",),
            trust=TrustLevel.OBSERVED,  # never more than its source
            created_at=IMPORT,
            confidence=0.6,
            authority="crm-import",
        )
        memory.materialize_claim(french_draft)

        # May: the new choice supersedes the April one, through the application's key.
        clock.now = MAY
        may = memory.ingest_extracted(
            _settings("settings-may", MAY, MAY_SETTINGS),
            extractor,
            claim_ids_by_source={"april-theme": dark.claim_id},
        )
        (light,) = may.claims
        record = memory.get_extraction(SCOPE, "settings-may")
        codes = ", ".join(d.code for d in record.diagnostics)
        print(f"settings-may: {len(record.claim_ids)} claim, diagnostics: {codes}")
        print(f"  {light.claim_id} supersedes {light.supersedes}")

        # Transaction time (known_at) and valid time (as_of) are separate questions.
        _print_claims(
            "In April, about June", memory.claims(_theme(as_of=JUNE, known_at=LATE_APRIL))
        )
        _print_claims("In June, about June", memory.claims(_theme(as_of=JUNE)))
        # Supersession closes the April claim from May on, whatever the valid time asked.
        _print_claims("In June, about late April", memory.claims(_theme(LATE_APRIL, JUNE)))
        current = memory.claims(_theme(JUNE, statuses=(ClaimStatus.CURRENT,)))
        print(f"current theme: {', '.join(v.claim.value for v in current.claims)}")

        # Two current claims about her language: shown side by side, never resolved.
        language = ClaimQuery(SCOPE, as_of=JUNE, subject="user:ada", predicate="prefers_language")
        _print_claims("Language in June", memory.claims(language))

        # Deleting the imported event takes the claim derived from it with it.
        result = memory.govern(
            GovernanceCommand(
                SCOPE,
                GovernanceAction.DELETE,
                EntityType.RAW_EVENT,
                "crm-import",
                JUNE + timedelta(days=1),
                "user request",
            )
        )
        print(f"delete of crm-import affected: {', '.join(result.affected_ids)}")
        try:  # the claim's tombstone forbids its ID in this scope for good
            memory.materialize_claim(french_draft)
        except EntityDeleted as error:
            print(f"replaying the imported claim: {type(error).__name__}: {error}")
        later = JUNE + timedelta(days=2)
        after = memory.claims(replace(language, as_of=later, known_at=later))
        languages = ", ".join(f"{v.claim.value} ({v.status})" for v in after.claims)
        print(f"language after the delete: {languages}; conflicts: {len(after.conflicts)}")


if __name__ == "__main__":
    main()
