"""Turn an embedded KMA into the first node of a cluster, nothing lost.

`make_first_node` writes the node's configuration, certificate, trusted node certificates (its own)
and a new node credential into cluster/ (the KMA may be running: nothing changes for it yet). At
its next start, `kma serve` sees a first node with an embedded store and no rqlite data: it starts
rqlited alone, loads a consistent copy of kma.db (SQLite's backup API) with rqlite's `/boot` (the
file becomes the node's database as it is), and runs on rqlite from then on. The embedded file is
kept beside it, renamed (`kma.db.before-cluster`), as the copy to go back to; the KMA no longer
reads it. A failure before the rename leaves the KMA embedded (the next start tries again).
A KMA whose master key is in an HSM has every blob of that copy sealed again for the cluster
first (kma/cluster/hsm_first_node.py).
The copy holds the key split of its day (sealed shares, the master key under their root secret):
once the cluster's key split has changed, the KMA removes it (`retire_embedded_copy`, each round of
the cluster watch), so the old members' passphrases open no file on the node.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kma.audit.record import Condition
from kma.cluster.hsm_first_node import seal_for_cluster
from kma.cluster.node_config import ClusterFiles, NodeConfig, issue_node_certificate, new_credential
from kma.cluster.rqlited import RqliteNode
from kma.cluster.trust import bundle
from kma.crypto import CryptoError, WrappingKey
from kma.crypto.ca import CertifiedKey
from kma.crypto.hsm import HsmMasterKey, Token
from kma.crypto.hsm_settings import HsmUnavailable, write_hsm_table
from kma.datadir import DataDir
from kma.errors import Conflict, ValidationFailed

if TYPE_CHECKING:
    from kma.appliance import Appliance

EMBEDDED_KEPT = "kma.db.before-cluster"


def consistent_copy(source: Path, destination: Path) -> None:
    """A self-contained copy (no -wal beside it) of a SQLite file another process may hold open."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(destination)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode = DELETE")
    finally:
        dst.close()
        src.close()


def cluster_ca(data_dir: DataDir) -> CertifiedKey:
    """The cluster CA with its key, opened with this KMA's local unlock key (autonomous unlock).
    A KMA without one gets its node certificate through the membership flow instead."""
    db = sqlite3.connect(f"file:{data_dir.db}?mode=ro", uri=True)
    try:
        kma_id = data_dir.identity().kma_id
        row = db.execute(
            "SELECT autounlock_master FROM kmas WHERE id = ? AND locked = 0", (kma_id,)
        ).fetchone()
        cluster = db.execute("SELECT ca_cert_pem, ca_key_wrapped FROM cluster WHERE id = 1").fetchone()
    finally:
        db.close()
    if row is None or row[0] is None or not data_dir.unlock_key.exists():
        raise ValidationFailed(
            "This KMA has no autonomous unlock, so the cluster CA's key cannot be opened here; "
            "give the node certificate from the cluster CA instead."
        )
    hsm = data_dir.hsm()
    token = None
    try:
        local = WrappingKey(data_dir.unlock_key.read_bytes())
        master = WrappingKey(local.unwrap(f"autounlock:{kma_id}", row[0]))
        if hsm is not None:  # the CA's key is sealed in two layers: the token opens the inner one
            token = Token(hsm)
            master = HsmMasterKey(master.raw(), token, token.master_key())
        return CertifiedKey(cluster[0].encode(), master.unwrap("cluster-ca-key", cluster[1]))
    except HsmUnavailable as exc:
        raise ValidationFailed(str(exc)) from None
    except (CryptoError, ValueError) as exc:
        raise ValidationFailed(f"The local unlock key does not open the master key: {exc}") from None
    finally:
        if token is not None:
            token.close()


def make_first_node(
    data_dir: DataDir, raft_address: str, http_address: str, ca: CertifiedKey | None = None
) -> NodeConfig:
    """Make the embedded KMA at `data_dir` the first node of a new cluster: its node configuration
    and certificate go in cluster/; its next `kma serve` moves the store into rqlite (`boot`)."""
    files = ClusterFiles.of(data_dir.root)
    if files.exists():
        raise Conflict(f"{data_dir.root} is already a cluster node ({files.config_file}).")
    if not data_dir.db.exists():
        raise ValidationFailed(f"{data_dir.db} does not exist: there is no embedded store to convert.")
    ca = ca or cluster_ca(data_dir)
    config = NodeConfig(data_dir.identity().kma_id, raft_address, http_address, voter=True, join=())
    host = raft_address.rpartition(":")[0].strip("[]")
    node = issue_node_certificate(ca, config.node_id, [host])
    # It trusts its own node certificate only until others join; it publishes it (and its Raft
    # address) in the store at its next start, for them (kma/runtime/running.py).
    trusted = bundle({config.node_id: node.cert_pem.decode("ascii")})
    files.write(config, ca.cert_pem, node, trusted, new_credential())
    return config


def needs_boot(data_dir: DataDir, files: ClusterFiles) -> bool:
    """A first node whose rqlite store has not been made from the embedded one yet."""
    return data_dir.db.exists() and not files.load().join  # kma.db is set aside once booted


def boot_from_embedded(data_dir: DataDir, node: RqliteNode) -> None:
    """Load the embedded store into the (started, single, empty) rqlite node, then keep the
    embedded file aside so that nothing reads it again."""
    hsm = data_dir.hsm()
    sealed = None
    with tempfile.TemporaryDirectory(dir=data_dir.root) as tmp:
        copy = Path(tmp) / "kma.db"
        consistent_copy(data_dir.db, copy)
        if hsm is not None and not hsm.holds_cluster_key:  # docs/hsm.md#clusters
            sealed = seal_for_cluster(data_dir, hsm, copy)
        client = node.client()
        try:
            client.boot(copy)
        finally:
            client.close()
    node.keep_private()  # the booted file replaced the node's own
    if sealed is not None:
        write_hsm_table(data_dir.identity_file, sealed)
        data_dir.unlock_key.unlink(missing_ok=True)  # autonomous unlock is off on this node now
    data_dir.db.rename(data_dir.root / EMBEDDED_KEPT)
    for suffix in ("-wal", "-shm"):
        Path(f"{data_dir.db}{suffix}").unlink(missing_ok=True)


def retire_embedded_copy(kma: Appliance) -> bool:
    """Remove `kma.db.before-cluster` if the cluster's key split changed since it was set aside;
    True when it did. Going back to it after that would bring back the old split, and its old
    members' passphrases would open it."""
    kept = kma.data_dir.root / EMBEDDED_KEPT
    if not kept.exists():
        return False
    db = sqlite3.connect(f"file:{kept}?mode=ro", uri=True)
    try:
        (kept_generation,) = db.execute("SELECT split_generation FROM cluster WHERE id = 1").fetchone()
    finally:
        db.close()
    generation = int(kma.store.scalar("SELECT split_generation FROM cluster WHERE id = 1") or 0)
    if int(kept_generation) >= generation:
        return False
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{kept}{suffix}").unlink(missing_ok=True)
    kma.audit(
        kma.itself,
        "cluster.key_split",
        f"removed {EMBEDDED_KEPT}, the embedded store set aside when this KMA became the cluster's "
        f"first node: it held key split generation {kept_generation}, superseded by generation "
        f"{generation}",
        condition=Condition.SUCCESS,
        subject=("kma", kma.kma_id),
        event_class="security",
    )
    return True
