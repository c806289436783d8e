"""What the store knows about the cluster it belongs to (one node when embedded)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeStatus:
    kma_id: str
    leader: bool
    voter: bool
    reachable: bool
    rqlite_version: str | None  # the rqlited release the node reports; None: embedded, or it did not say
    last_contact_seconds: float | None


@dataclass(frozen=True)
class ReplicationLag:
    depth: int  # agent-path writes (key assignments, audit events) not yet in the cluster's store
    age_seconds: float  # age of the oldest of them; 0.0 when depth is 0
