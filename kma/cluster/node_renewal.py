"""A cluster KMA renews its node certificate (Raft and its rqlited) with no gap in node trust.

Every node's rqlited lets in only the node certificates pinned in the KMAs' signed entries
(kma/cluster/trust.py), and reads them at its start. So the new certificate is trusted everywhere
before it is used, in three steps of the cluster watch's round, each safe to repeat after a crash:

1. Staged: a new key and certificate from the cluster CA for the same names, kept beside the
   current ones (`node.next.crt`, `node.next.key`); the KMA's own entry then pins both (it records
   its entry first-hand, kma/services/integrity/entry_signatures.py), so every other node restarts its
   rqlited trusting both.
2. Once every other member's Raft port lets the new certificate in (a real mutual-TLS handshake,
   tried every few seconds), the KMA moves to it: the files are renamed over the current ones, its
   own client of rqlited presents it, and its rqlited restarts with it.
3. Its entry then pins the new certificate only; the others drop the old one as they follow.

When: `renew_before` ahead of the node certificate's expiry (kma.toml [certificates]), or when a
Security Officer renews its listener certificate (kma/services/certificates/certificate_renewal.py leaves
`DataDir.node_renewal_asked`); one KMA at a time (none stages while another's entry pins two).
Only an unlocked KMA renews (the CA's key); a witness, which holds no master key, does not.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import time
from datetime import timedelta
from pathlib import Path

from kma.appliance import Appliance
from kma.cluster.node_config import ClusterFiles, issue_node_certificate
from kma.cluster.rqlited import RqliteNode
from kma.crypto import load_certificate
from kma.datadir import write_private
from kma.services.certificates.certificate_expiry import (
    cluster_ca,
    real_now,
    recorded,
    serial_and_expiry,
    settings,
)
from kma.services.certificates.certificate_renewal import hosts_of

log = logging.getLogger(__name__)
PROBE_EVERY_S = 5.0  # a staged certificate is tried on the other nodes' Raft ports this often
PROBE_TIMEOUT_S = 1.0  # an accepted node connection is sent nothing: this long silent means let in


def next_files(files: ClusterFiles) -> tuple[Path, Path]:
    return files.folder / "node.next.crt", files.folder / "node.next.key"


def lets_in(address: str, cert: Path, key: Path) -> bool:
    """Whether the node at this Raft address keeps a mutual-TLS connection made with this
    certificate open (a refused one gets an alert, and the connection is closed)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only whether it lets us in matters here
    context.load_cert_chain(str(cert), str(key))
    host, _, port = address.rpartition(":")
    try:
        raw = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
    except OSError:  # not listening (restarting): not yet
        return False
    try:
        with raw, context.wrap_socket(raw) as tls:
            tls.settimeout(PROBE_TIMEOUT_S)
            try:
                return tls.recv(1) != b""
            except TimeoutError:  # an accepted node is sent nothing
                return True
    except (ssl.SSLError, OSError):  # an alert: the certificate is not trusted there
        return False


# The Raft addresses of the cluster's other nodes, which must let a new node certificate in first
OTHER_NODES = (
    "SELECT raft_address FROM kmas WHERE removed_at IS NULL AND awaiting_join = 0 AND id <> ? "
    "AND raft_address <> ''"
)

# Other KMAs whose entry pins two node certificates: renewing theirs now
RENEWING = (
    "SELECT count(*) FROM kmas WHERE id <> ? AND removed_at IS NULL AND instr(substr(node_cert_pem, "
    "instr(node_cert_pem, 'END CERTIFICATE') + 1), 'END CERTIFICATE') > 0"
)


class NodeRenewal:
    """The three steps, for the cluster watch of one KMA (`step` each round)."""

    def __init__(self, kma: Appliance, node: RqliteNode) -> None:
        self.kma = kma
        self.node = node
        self._next_probe = 0.0
        self._unrecorded: tuple[str, str] | None = None  # (old, new) switched, not yet audited

    def step(self) -> None:
        kma, files = self.kma, self.node.files
        cert, key = next_files(files)
        if self._unrecorded is not None:  # its rqlited restarted: the cluster takes it once it answers
            self._record(*self._unrecorded)
            self._unrecorded = None
        if kma.vault.locked:
            return
        current = files.node_cert.read_text(encoding="ascii")
        if not (cert.exists() and key.exists()):
            if self._due(current):
                self._stage(current)
            return
        both = current.strip() + "\n" + cert.read_text(encoding="ascii").strip() + "\n"
        kma.own_entry["node_cert_pem"] = both  # pinned both (again, after a restart half-way)
        if time.monotonic() < self._next_probe:
            return
        self._next_probe = time.monotonic() + PROBE_EVERY_S
        waiting = [a for a in self._others() if not lets_in(a, cert, key)]
        if waiting:
            log.info("new node certificate staged; not yet trusted by the nodes at %s", ", ".join(waiting))
            return
        self._switch(current, cert, key)

    def _due(self, current: str) -> bool:
        """Asked, or `renew_before` reached; and no other KMA is renewing its own (its entry pins
        two), so the nodes restart for one KMA at a time."""
        if self.kma.store.scalar(RENEWING, (self.kma.kma_id,)):
            return False
        if self.kma.data_dir.node_renewal_asked.exists():
            return True
        _, not_after = serial_and_expiry(current.strip() + "\n")
        return not_after - real_now() <= settings(self.kma).renew_before

    def _stage(self, current: str) -> None:
        kma, files = self.kma, self.node.files
        cert, key = next_files(files)
        validity = timedelta(seconds=settings(kma).kma_validity)
        hosts = hosts_of(load_certificate(current.encode("ascii")))
        made = issue_node_certificate(cluster_ca(kma), kma.kma_id, hosts, validity)
        write_private(key, made.key_pem)
        write_private(cert, made.cert_pem)
        kma.data_dir.node_renewal_asked.unlink(missing_ok=True)
        kma.own_entry["node_cert_pem"] = current.strip() + "\n" + made.cert_pem.decode("ascii").strip() + "\n"
        serial, _ = serial_and_expiry(made.cert_pem.decode("ascii"))
        kma.audit(
            kma.itself,
            "kma.node_certificate_renew",
            f"staged a new node certificate ({serial}); its entry pins it beside the current one, so every "
            "node trusts it before this KMA uses it",
            subject=("kma", kma.kma_id),
            event_class="security",
        )

    def _others(self) -> list[str]:
        rows = self.kma.store.query(OTHER_NODES, (self.kma.kma_id,))
        return [str(r["raft_address"]) for r in rows]

    def _switch(self, current: str, cert: Path, key: Path) -> None:
        files, store = self.node.files, self.kma.store
        new = cert.read_text(encoding="ascii")
        os.replace(key, files.node_key)
        os.replace(cert, files.node_cert)
        if store.cluster is not None:
            store.cluster.use_certificate(files.node_cert, files.node_key)
        self.kma.own_entry["node_cert_pem"] = new
        self.node.stop()
        if store.cluster is not None:  # once it is down (kma/cluster/trust.py says why)
            store.cluster.node_restarting()
        self.node.start()
        self._unrecorded = (current, new)

    def _record(self, current: str, new: str) -> None:
        kma = self.kma
        old_serial, _ = serial_and_expiry(current.strip() + "\n")
        serial, not_after = serial_and_expiry(new)
        until = time.strftime("%Y-%m-%d %H:%M", time.gmtime(not_after))
        kma.commit(
            kma.itself,
            "kma.node_certificate_renew",
            [recorded(kma.kma_id, "node", new)],
            f"renewed KMA {kma.kma_id}'s node certificate: serial {serial}, valid until {until} UTC, "
            f"replaces {old_serial}; every node trusted it before its rqlited restarted with it, and its "
            "entry now pins it alone",
            ("kma", kma.kma_id),
        )
