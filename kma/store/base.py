"""The store interface the services use; embedded SQLite and rqlite both provide it."""

from __future__ import annotations

import sqlite3
from concurrent.futures import Future
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from kma.store.batch import Batch, Params, WriteResult
from kma.store.cluster_view import NodeStatus, ReplicationLag


class Store(Protocol):
    path: Path

    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]: ...
    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None: ...
    def scalar(self, sql: str, params: Params = ()) -> Any: ...
    def snapshot(self) -> AbstractContextManager[sqlite3.Connection]: ...
    def write(self, batch: Batch) -> WriteResult: ...
    def submit(self, batch: Batch) -> Future[WriteResult]: ...
    def cluster_nodes(self) -> list[NodeStatus]: ...
    def replication_lag(self) -> ReplicationLag: ...
    def backup(self, path: Path) -> None: ...  # a consistent SQLite copy, taken while serving
    def close(self) -> None: ...


__all__ = ["Store"]
