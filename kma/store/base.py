"""The store interface the services use; embedded SQLite and rqlite both provide it."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from concurrent.futures import Future
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from kma.store.batch import Batch, Done, Params, WriteResult
from kma.store.cluster_view import NodeStatus, ReplicationLag


class Cluster(Protocol):
    """The Raft cluster a store is a node of (rqlite's store interface carries the same two:
    `Nodes`, `Remove`). The embedded store has none: `Store.cluster` is None."""

    def members(self) -> list[str]: ...  # the IDs of the Raft members, voters or not
    def remove(self, node_id: str) -> None: ...  # out of the Raft configuration (needs a leader)
    def use_certificate(self, cert: Path, key: Path) -> None: ...  # a renewed node certificate
    def node_restarting(self) -> None: ...  # agents wait until the rebuilt replica caught up again


class Store(Protocol):
    path: Path

    @property
    def cluster(self) -> Cluster | None:
        """The Raft cluster this store is a node of; None when embedded (one KMA, no Raft)."""

    @property
    def deferring(self) -> bool:
        """Commits a `Batch.deferred` to a local outbox (a cluster KMA's `kma serve`); else ignores it."""

    def caught_up(self, wait: float = 0.0) -> bool:
        """This KMA's reads hold everything the cluster had committed when it started (embedded:
        always); until then it serves no agent and issues no pool key. `wait`: seconds to wait for
        it, at most."""

    def replica_rebuilds(self) -> int:
        """How many times this KMA's replica began to be rebuilt (its rqlited restarted; embedded:
        never). A read that found nothing (no such agent, no such key) is believed only when this,
        and `caught_up`, did not change around it: the file it read may have been a bare snapshot."""

    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]: ...
    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None: ...
    def scalar(self, sql: str, params: Params = ()) -> Any: ...
    # The cluster's newest state (a linearizable read through the Raft leader; raises
    # ClusterUnavailable without one): to tell a stale replica from a real refusal.
    def query_leader(self, sql: str, params: Params = ()) -> list[list[Any]]: ...
    def snapshot(self) -> AbstractContextManager[sqlite3.Connection]: ...
    def write(self, batch: Batch) -> WriteResult: ...
    def submit(self, batch: Batch) -> Future[WriteResult]: ...
    def submit_with(self, batch: Batch, done: Done) -> None: ...  # as submit, `done` told on the writer
    def cluster_nodes(self) -> list[NodeStatus]: ...
    def replication_lag(self) -> ReplicationLag: ...
    # What a deferred change (`Batch.deferred`) shows until this KMA's replica holds it.
    def unshipped(self, name: str) -> Mapping[str, Any] | None: ...
    def unshipped_all(self) -> list[Mapping[str, Any]]: ...
    def backup(self, path: Path) -> None: ...  # a consistent SQLite copy, taken while serving
    def close(self) -> None: ...


__all__ = ["Cluster", "Store"]
