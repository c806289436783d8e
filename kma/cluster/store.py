"""Which store a data dir's KMA runs on: embedded SQLite, or rqlite when it is a cluster node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kma.cluster.node_config import ClusterFiles
from kma.store.base import Store

if TYPE_CHECKING:
    from kma.audit.chain import AuditChain
    from kma.datadir import DataDir


def open_store(data_dir: DataDir, kma_id: str, chain: AuditChain | None = None) -> Store:
    """The KMA's store. A cluster node's store needs its rqlited running (`kma serve` starts it)."""
    files = ClusterFiles.of(data_dir.root)
    if not files.exists():
        from kma.store.sqlite import SQLiteStore

        return SQLiteStore(data_dir.db, chain)
    from kma.cluster.rqlited import RqliteNode
    from kma.store.rqlite import RqliteStore

    return RqliteStore(RqliteNode(files).client(), files.replica, kma_id, chain, files.folder / "outbox.db")
