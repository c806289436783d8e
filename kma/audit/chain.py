"""The hash chain over audit events.

Each KMA appends to its own chain (kma_id, chain_seq 1, 2, ...): each event's hash covers its
fields and the previous event's hash, and the head (last seq and hash) is stored beside the
events, so a changed, removed or truncated event breaks verification. Only the store's writer
thread appends, so the in-memory head needs no lock.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kma.audit.checkpoint import Checkpoint, RetainedDigest
from kma.audit.record import AuditRecord
from kma.clock import Clock

GENESIS = "0" * 64
HASHED_FIELDS = (
    "kma_id",
    "chain_seq",
    "created_at",
    "site_id",
    "operation",
    "severity",
    "condition",
    "event_class",
    "entity_id",
    "entity_address",
    "message",
    "retention",
    "subject_type",
    "subject_id",
    "prev_hash",
)


# json.dumps(..., ensure_ascii=False) builds a new encoder at every call; one encoder with the
# same settings gives the same text (the hash of every event written so far) at less cost.
_CANONICAL = json.JSONEncoder(ensure_ascii=False).encode
EVENT_COLUMNS = (*HASHED_FIELDS, "hash")


def event_hash(event: Mapping[str, Any]) -> str:
    canonical = _CANONICAL([event[f] for f in HASHED_FIELDS])
    return hashlib.sha256(canonical.encode()).hexdigest()


class AuditChain:
    def __init__(self, kma_id: str, site_id: str, clock: Clock) -> None:
        self.kma_id = kma_id
        self.site_id = site_id
        self.clock = clock
        self.seq = 0
        self.head = GENESIS

    def load_head(self, conn: sqlite3.Connection) -> None:
        row = conn.execute(
            "SELECT chain_seq, hash FROM audit_heads WHERE kma_id = ?", (self.kma_id,)
        ).fetchone()
        self.seq, self.head = (row[0], row[1]) if row else (0, GENESIS)

    def next_event(self, record: AuditRecord, at: int | None = None) -> dict[str, Any]:
        """`record` as the chain's next event row (hash included); the head advances now
        (the store's writer only). The stored head is not written here: the writer writes it
        once per commit, after the last event of the group (`kma.store.audit_rows.head`), so at
        every commit it names the last event. `at`: when it happened, if not now (an event shipped later)."""
        event: dict[str, Any] = {
            "kma_id": self.kma_id,
            "chain_seq": self.seq + 1,
            "created_at": self.clock.now() if at is None else at,
            "site_id": self.site_id,
            "operation": record.operation,
            "severity": record.severity,
            "condition": str(record.condition),
            "event_class": record.event_class,
            "entity_id": record.entity_id,
            "entity_address": record.entity_address,
            "message": record.message,
            "retention": str(record.retention),
            "subject_type": record.subject_type,
            "subject_id": record.subject_id,
            "prev_hash": self.head,
        }
        event["hash"] = event_hash(event)
        self.seq, self.head = event["chain_seq"], event["hash"]
        return event


@dataclass(frozen=True)
class ChainReport:
    intact: bool
    events_checked: int
    first_bad_event_id: int | None = None
    reason: str | None = None
    # The signed checkpoints verification started from (one per pruned or checkpointed chain).
    checkpoints: tuple[Checkpoint, ...] = ()


class ChainVerifier:
    """Checks events one at a time, in (kma_id, chain_seq) order, so a caller can feed them in
    chunks (a background verification reads a few thousand per query) and report progress.

    `checkpoints` holds, per chain, the latest checkpoint whose signature the caller has checked:
    events up to it are checked one by one (their own hash) and together (the checkpoint's digest
    of what was kept), so events pruned below it leave no gap; above it the links start from the
    checkpoint's hash."""

    def __init__(
        self, heads: Mapping[str, tuple[int, str]], checkpoints: Mapping[str, Checkpoint] | None = None
    ) -> None:
        self.heads = heads
        self.starts = dict(checkpoints or {})
        self.checked = 0
        self.last = {kma_id: (cp.chain_seq, cp.hash) for kma_id, cp in self.starts.items()}
        self.kept = {kma_id: RetainedDigest() for kma_id in self.starts}

    def check(self, event: Mapping[str, Any]) -> ChainReport | None:
        """None while the chain holds; the report naming `event` once it does not."""
        self.checked += 1
        problem = _event_problem(event, self.starts.get(event["kma_id"]), self.last, self.kept)
        return ChainReport(False, self.checked, event["id"], problem) if problem else None

    def finish(self) -> ChainReport:
        """After the last event: the digests below the checkpoints, and each chain's end."""
        problem = _ends_problem(self.starts, self.kept, self.heads, self.last)
        if problem:
            return ChainReport(False, self.checked, None, problem)
        return ChainReport(True, self.checked, checkpoints=tuple(self.starts.values()))


def verify_events(
    events: Iterable[Mapping[str, Any]],
    heads: Mapping[str, tuple[int, str]],
    checkpoints: Mapping[str, Checkpoint] | None = None,
) -> ChainReport:
    """Check every chain: hashes, links, no gaps, and each chain ends at its recorded head.

    `events` must come ordered by (kma_id, chain_seq); see `ChainVerifier` for `checkpoints`."""
    verifier = ChainVerifier(heads, checkpoints)
    for event in events:
        broken = verifier.check(event)
        if broken:
            return broken
    return verifier.finish()


def _event_problem(
    event: Mapping[str, Any],
    cp: Checkpoint | None,
    last: dict[str, tuple[int, str]],
    kept: dict[str, RetainedDigest],
) -> str | None:
    """What is wrong with one event in its place, or None; advances `last` or `kept`."""
    kma_id, event_id, seq_no = event["kma_id"], event["id"], event["chain_seq"]
    if event_hash(event) != event["hash"]:
        return f"event #{event_id} was changed after it was written"
    if cp is not None and seq_no <= cp.chain_seq:
        if seq_no == cp.chain_seq and event["hash"] != cp.hash:
            return f"event #{event_id} is not the one signed checkpoint #{cp.id} names"
        kept[kma_id].add(seq_no, event["hash"])
        return None
    seq, prev = last.get(kma_id, (0, GENESIS))
    if seq_no != seq + 1:
        return f"event missing before #{event_id} (KMA {kma_id})"
    if event["prev_hash"] != prev:
        return f"event #{event_id} does not follow the one before it"
    last[kma_id] = (seq_no, event["hash"])
    return None


def _ends_problem(
    starts: Mapping[str, Checkpoint],
    kept: Mapping[str, RetainedDigest],
    heads: Mapping[str, tuple[int, str]],
    last: Mapping[str, tuple[int, str]],
) -> str | None:
    """Checkpoint digests match what is kept below them, and each chain ends at its head."""
    for kma_id, cp in starts.items():
        digest = kept[kma_id]
        if (digest.count, digest.hexdigest()) != (cp.retained_count, cp.retained_digest):
            return (
                f"events covered by signed checkpoint #{cp.id} (KMA {kma_id}, up to chain "
                f"#{cp.chain_seq}) were removed, added or replaced"
            )
    for kma_id, head in heads.items():
        if last.get(kma_id, (0, GENESIS)) != tuple(head):
            return f"events at the end of KMA {kma_id}'s chain are missing"
    for kma_id in last:
        if kma_id not in heads:
            return f"the recorded head of KMA {kma_id}'s chain is missing"
    return None
