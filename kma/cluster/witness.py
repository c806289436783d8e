"""`kma serve` on a witness: a Raft voter with no key service.

Two sites with two KMAs each have four voters: losing either site leaves two of four, no majority,
and management writes stop. A fifth voter at a third place (the witness) keeps a majority (3 of 5)
through the loss of either site. It holds a replica, as every node does (wrapped keys only: it
never holds the master key), but runs no listeners, no agents and no key pool: it is admitted
like a KMA (a quorum-approved entry marked witness, its one-time passphrase, `kma init` join) and
`kma serve` runs only its rqlited, restarting it if it ends, and when the cluster's members change
(to trust their node certificates only, kma/cluster/trust.py). The cluster sees its health through
Raft itself (rqlite's node status: reachable, last contact), as it sees every node's. Once the
cluster has a leader it checks the cluster version and records its release in its row, as a KMA
does at every start (kma/store/cluster_version.py: the version is raised only once every member,
witnesses too, runs a release that supports it).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from kma import __version__
from kma.cluster.node_config import ClusterFiles
from kma.cluster.rqlited import NodeFailed, RqliteNode
from kma.cluster.trust import follow_membership
from kma.cluster.witness_renewal import WitnessRenewal
from kma.crypto import fingerprint
from kma.datadir import DataDir
from kma.errors import ClusterUnavailable
from kma.store import cluster_version
from kma.store.rqlite_http import StatementFailed
from kma.store.schema import latest_schema_version
from kma.systemd import notify

log = logging.getLogger(__name__)
CHECK_S = 1.0
RESTART_PAUSE_S = 5.0


def is_witness(data_dir: DataDir) -> bool:
    files = ClusterFiles.of(data_dir.root)
    return files.exists() and files.load().witness


def serve_witness(
    data_dir: DataDir, ready_file: Path | None, announce: Callable[[str], None], stop: threading.Event
) -> None:
    """Run the witness's rqlited until `stop` is set; restart it when it ends on its own."""
    files = ClusterFiles.of(data_dir.root)
    node = RqliteNode(files)
    node.start()
    config = node.config
    announce(f"Witness {config.node_id}: a Raft voter with no key service")
    announce(f"raft        {config.raft_address}")
    announce(f"CA fingerprint {fingerprint(files.ca_cert.read_bytes())}")
    if ready_file is not None:
        tmp = ready_file.with_suffix(".tmp")
        tmp.write_text(
            json.dumps({"witness": config.node_id, "raft_address": config.raft_address, "pid": os.getpid()})
        )
        tmp.replace(ready_file)
    notify(f"READY=1\nSTATUS=Witness {config.node_id}: Raft on {config.raft_address}")
    recorded = False
    renewal = WitnessRenewal(data_dir, node)
    try:
        while not stop.wait(CHECK_S):
            process = node.process
            if process is None or process.poll() is None:
                recorded = recorded or _record_release(node)
                try:  # it trusts the current members' node certificates only, as a KMA's node does
                    follow_membership(node)
                except NodeFailed as exc:
                    log.error("witness %s: %s", config.node_id, exc.message)
                _renew(renewal, config.node_id)
                continue
            log.warning(
                "rqlited of witness %s ended (status %s); starting it again",
                config.node_id,
                process.returncode,
            )
            if stop.wait(RESTART_PAUSE_S):
                break
            try:
                node.start()
            except NodeFailed as exc:
                log.error("witness %s: %s", config.node_id, exc.message)
    finally:
        notify("STOPPING=1")
        node.stop()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)


def _renew(renewal: WitnessRenewal, node_id: str) -> None:
    """Its node certificate before it expires (a KMA signs it); tried again next round on failure,
    without ending the witness."""
    try:
        renewal.step()
    except (ClusterUnavailable, StatementFailed) as exc:  # no leader for a moment
        log.info("witness %s: renewal waits: %s", node_id, exc)
    except Exception:
        log.exception("witness %s: node certificate renewal failed; tried again", node_id)


def _record_release(node: RqliteNode) -> bool:
    """Check the cluster version (a witness too old for it stops, naming the release it needs),
    then record this release in the witness's row (`version` and `schema_version`, as a KMA's start does);
    False while the cluster has no leader. A witness has no audit trail of its own: its row says
    what it runs, as a KMA's does."""
    client = node.client()
    try:
        version, needs_release = cluster_version.current(client.query(cluster_version.CURRENT_SQL))
        cluster_version.check(version, needs_release)
        sql = (
            "UPDATE kmas SET version = ?, schema_version = ? WHERE id = ? AND witness = 1 "
            "AND (version, schema_version) IS NOT (?, ?)"
        )
        known = latest_schema_version()
        client.execute([[sql, __version__, known, node.config.node_id, __version__, known]])
    except (ClusterUnavailable, StatementFailed):  # no leader yet; or a store not migrated yet
        return False
    finally:
        client.close()
    return True
