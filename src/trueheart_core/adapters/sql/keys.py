"""Keys that SQL backends store in place of caller text in their indexes."""

from __future__ import annotations

import hashlib


def text_key(text: str) -> int:
    """The indexed form of a claim's subject or predicate: a signed 64-bit BLAKE2b hash
    of its UTF-8 bytes. Every backend stores the same keys, so that a store's keys mean
    the same wherever it is moved (and ``ClaimStore.stale_keys`` finds the same rows)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8, person=b"trueheart.claim")
    return int.from_bytes(digest.digest(), "big", signed=True)
