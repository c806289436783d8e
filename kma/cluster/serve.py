"""What `kma serve` does first on a cluster node: start its rqlited (a first node's store moves
into rqlite from kma.db at its first start)."""

from __future__ import annotations

from kma.cluster.convert import boot_from_embedded, needs_boot
from kma.cluster.node_config import ClusterFiles
from kma.cluster.rqlited import RqliteNode
from kma.datadir import DataDir


def start_cluster_node(data_dir: DataDir) -> RqliteNode | None:
    """Start the data dir's rqlite node if it is a cluster node, and wait until it serves."""
    files = ClusterFiles.of(data_dir.root)
    if not files.exists():
        return None
    node = RqliteNode(files)
    first_boot = needs_boot(data_dir, files)
    node.start(join=not first_boot)
    if first_boot:
        try:
            boot_from_embedded(data_dir, node)
        except BaseException:
            node.stop()
            raise
    return node
