"""The store interface the services use; embedded SQLite and rqlite both provide it."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from concurrent.futures import Future
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from kma.store.batch import Batch, Params, WriteResult
from kma.store.cluster_view import NodeStatus, ReplicationLag


class Store(Protocol):
    path: Path

    @property
    def deferring(self) -> bool:
        """Commits a `Batch.deferred` to a local outbox (a cluster KMA's `kma serve`); else ignores it."""

    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]: ...
    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None: ...
    def scalar(self, sql: str, params: Params = ()) -> Any: ...
    def snapshot(self) -> AbstractContextManager[sqlite3.Connection]: ...
    def write(self, batch: Batch) -> WriteResult: ...
    def submit(self, batch: Batch) -> Future[WriteResult]: ...
    def cluster_nodes(self) -> list[NodeStatus]: ...
    def replication_lag(self) -> ReplicationLag: ...
    # What a deferred change (`Batch.deferred`) shows until this KMA's replica holds it.
    def unshipped(self, name: str) -> Mapping[str, Any] | None: ...
    def unshipped_all(self) -> list[Mapping[str, Any]]: ...
    def backup(self, path: Path) -> None: ...  # a consistent SQLite copy, taken while serving
    def close(self) -> None: ...


__all__ = ["Store"]
