"""A demo KMA made the first node of its cluster, for the membership tests (issue 11)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kma.cluster.convert import cluster_ca, make_first_node
from kma.datadir import DataDir
from tests.support.kma_process import RunningKma

FIRST_RAFT = "127.0.0.1:14001"


def demo_first_node(tmp: Path, **demo: Any) -> RunningKma:
    """A running demo KMA with cluster/node.toml written (its Raft address is `FIRST_RAFT`); the
    process keeps its embedded store until it restarts, so nothing else changes for it."""
    kma = RunningKma.demo_in(tmp, **demo)
    data_dir = DataDir(kma.data_dir)
    old = os.umask(0o077)  # as every `kma` command does: the data dir stays its owner's only
    try:
        make_first_node(data_dir, FIRST_RAFT, "127.0.0.1:14000", cluster_ca(data_dir))
    finally:
        os.umask(old)
    return kma
