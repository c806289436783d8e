"""Who a cluster node's rqlited lets in: the node certificates of the cluster's current KMAs.

The cluster CA signs agents' and listeners' certificates too, so trusting the CA on the Raft port
would let any enrolled drive read and write the store. Each node's rqlited therefore trusts, as
its `-node-ca-cert`, the node certificates themselves (`cluster/nodes.pem`): those of the admitted,
not removed KMAs and witnesses, as the store records them (`kmas.node_cert_pem`, set by the join
and by each KMA at start), and only from entries whose signature by the cluster CA verifies
(kma/crypto/entry_signature.py): a row written into the store with a leaked node credential pins
nothing. Its HTTP API trusts this node's own certificate only: only its KMA
talks to it. On top of the certificate, every command needs the node credential (`-auth`).

rqlited reads its trusted certificates once, at start. So each node follows the membership:
once a second (the cluster watch, or a witness's loop) it reads the pins from its local replica
and, when they differ from the file, rewrites the file and restarts its rqlited. A removal thus
reaches every live node within a few seconds: the removed machine's connections are closed and
its certificate is refused from then on, whatever files it kept. An admission restarts every
node the same way before the new one can join (it retries).

A cluster made before node pins keeps trusting its CA until every admitted KMA's node certificate
is in the store (each KMA publishes its own at start); then every node moves to the pins.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Mapping

from kma.cluster.node_config import ClusterFiles
from kma.cluster.rqlited import RqliteNode
from kma.crypto import entry_signature
from kma.datadir import write_private
from kma.errors import KmaError

log = logging.getLogger(__name__)


def bundle(pins: Mapping[str, str]) -> bytes:
    """The trusted-nodes file for these node certificates (by KMA ID): one way, so that equal sets
    give equal files."""
    return "".join(pins[kma_id].strip() + "\n" for kma_id in sorted(pins)).encode("ascii")


_SAID: set[tuple[str, str | None]] = set()  # entries logged as not trusted (once each)


def member_pins(files: ClusterFiles) -> dict[str, str | None]:
    """The node certificate of every admitted KMA (None where the store has none yet), read from
    this node's replica; empty when there is no replica yet."""
    if not files.replica.exists():
        return {}
    try:
        db = sqlite3.connect(f"file:{files.replica}?mode=ro", uri=True, timeout=5)
        db.row_factory = sqlite3.Row
        try:
            rows = db.execute(entry_signature.SELECT).fetchall()
        finally:
            db.close()
    except sqlite3.Error:  # a replica not migrated yet, or being replaced by a snapshot
        return {}
    ca, root = files.ca_cert.read_bytes(), files.folder.parent
    signed = entry_signature.marker(root)
    if not signed.exists() and entry_signature.all_signed(ca, rows):
        signed.write_text("every KMA entry carries the cluster CA's signature\n", encoding="utf-8")
    entry_signature.remember_removed(root, ca, rows)
    removed = entry_signature.seen_removed(root)
    pins = {}
    for row in rows:
        why = entry_signature.problem(ca, signed.exists(), row, removed)
        if (
            why is not None
        ):  # the KMAs report it in the audit trail (kma/services/integrity/entry_signatures.py)
            if (row["id"], row["signature"]) not in _SAID and len(_SAID) < 1000:
                _SAID.add((row["id"], row["signature"]))
                log.error("not trusting the node certificate of KMA entry '%s': it %s", row["id"], why)
        elif row["removed_at"] is None and not row["awaiting_join"]:
            pins[str(row["id"])] = row["node_cert_pem"]
    return pins


def wanted(files: ClusterFiles, kma_id: str) -> dict[str, str] | None:
    """The node certificates (by KMA ID) this node should trust, or None to keep what it has: when
    some admitted KMA's node certificate is not known yet (a cluster made before pins), or this node
    is no admitted KMA with the certificate it holds (a removed machine cannot pin itself back in)."""
    pins = member_pins(files)
    own = files.node_cert.read_text(encoding="ascii").strip()
    if not pins or any(pem is None for pem in pins.values()) or (pins.get(kma_id) or "").strip() != own:
        return None
    return {i: pem for i, pem in pins.items() if pem is not None}


def raft_members(node: RqliteNode) -> set[str] | None:
    """The node IDs in this node's Raft configuration; None when its rqlited does not answer."""
    client = node.client()
    try:
        return {str(n["id"]) for n in client.get_json("/nodes", ver="2", nonvoters="")["nodes"]}
    except KmaError:
        return None
    finally:
        client.close()


def follow_membership(node: RqliteNode, restarting: Callable[[], None] | None = None) -> bool:
    """Bring the node's trusted certificates in line with the cluster's members; restart its
    rqlited when they changed (`restarting` told while it is down). True when it did."""
    files = node.files
    pins = wanted(files, node.config.node_id)
    want = None if pins is None else bundle(pins)
    if want is None or (files.trusted_nodes.exists() and files.trusted_nodes.read_bytes() == want):
        if node.process is None:  # a restart here failed (NodeFailed) a round ago: try again
            node.start()
        return False
    # A removed KMA leaves Raft first (its removal does that, the cluster watch again if need be):
    # refused while still a voter, it could leave the others without a majority to remove it.
    members = raft_members(node)
    if members is None or not members <= set(pins or ()):
        return False
    tmp = files.trusted_nodes.with_suffix(".tmp")
    write_private(tmp, want)
    os.replace(tmp, files.trusted_nodes)
    log.info("the cluster's members changed: restarting rqlited to trust their node certificates only")
    node.stop()
    # Told once its rqlited is down, not before: a catch-up begun while the old rqlited still ran
    # would end at once on the old replica, and the KMA would then read the rebuilt one, a bare
    # snapshot for a moment ("not an enrolled agent"), as if caught up.
    if restarting is not None:
        restarting()
    node.start()
    return True
