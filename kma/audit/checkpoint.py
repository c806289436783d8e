"""Signed checkpoints: what lets the chain be pruned and still verify.

A checkpoint states, for one KMA's chain, "up to `chain_seq` the chain ends in `hash`, and the
events still kept up to there are exactly these (`retained_count` of them, whose (seq, hash)
pairs digest to `retained_digest`)". It is signed with the cluster's audit signing key. A
verifier that trusts the signature checks each kept event's own hash and the digest below the
checkpoint, and the ordinary links above it, so events removed below a checkpoint leave no hole,
while a changed, removed or re-hashed kept event still shows. Pure code: no store, no keys.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FORMAT = "kma-audit-checkpoint/1"


@dataclass(frozen=True)
class Checkpoint:
    id: int
    kma_id: str
    chain_seq: int
    hash: str
    created_at: int
    retained_count: int
    retained_digest: str
    signing_key_id: int
    signature: bytes

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Checkpoint:
        return cls(**{f: row[f] for f in cls.__dataclass_fields__})

    def message(self) -> bytes:
        """The bytes the signature covers (the row's ID is not part of it: it is a label)."""
        return signed_message(
            self.kma_id, self.chain_seq, self.hash, self.created_at, self.retained_count, self.retained_digest
        )


def signed_message(
    kma_id: str, chain_seq: int, head_hash: str, created_at: int, retained_count: int, retained_digest: str
) -> bytes:
    fields = [FORMAT, kma_id, chain_seq, head_hash, created_at, retained_count, retained_digest]
    return json.dumps(fields, separators=(",", ":")).encode()


class RetainedDigest:
    """A running digest over the (chain_seq, hash) of the events kept below a checkpoint."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.count = 0

    def add(self, chain_seq: int, event_hash: str) -> None:
        self._sha.update(f"{chain_seq}:{event_hash}\n".encode())
        self.count += 1

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def retained_digest(pairs: Iterable[tuple[int, str]]) -> tuple[int, str]:
    digest = RetainedDigest()
    for seq, event_hash in pairs:
        digest.add(seq, event_hash)
    return digest.count, digest.hexdigest()
