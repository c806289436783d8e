"""The cluster's audit signing key, made at first use and kept in memory only while unlocked.

The first checkpoint or signed export on a cluster makes the key: an Ed25519 key certified by
the cluster CA (whose private key, like the new one, is stored wrapped under the master key).
"""

from __future__ import annotations

import threading

from kma.appliance import Appliance
from kma.audit.record import Retention
from kma.audit.signing import WRAP_CONTEXT, Signer, key_fingerprint, make_signing_key
from kma.store import Stmt


class Signing:
    """This KMA's audit signer once opened, and the locks of those who sign and prune."""

    def __init__(self, kma: Appliance) -> None:
        self.lock = threading.Lock()
        self.prune_lock = threading.Lock()
        self.signer: Signer | None = None


def signing(kma: Appliance) -> Signing:
    return kma.part(Signing)


def _context(public_key: bytes) -> str:
    return f"{WRAP_CONTEXT}:{public_key.hex()}"


def signer(kma: Appliance) -> Signer:
    """The audit signer; raises KmaLocked on a locked KMA (which signs nothing)."""
    master = kma.vault.master()
    st = signing(kma)
    with st.lock:
        if st.signer is not None:
            return st.signer
        row = kma.store.query_one("SELECT * FROM audit_signing_keys ORDER BY id DESC LIMIT 1")
        if row is None:
            cluster = kma.store.query_one("SELECT name, ca_cert_pem, ca_key_wrapped FROM cluster")
            assert cluster is not None, "an initialised KMA has a cluster row"
            ca_key_pem = master.unwrap("cluster-ca-key", cluster["ca_key_wrapped"])
            new = make_signing_key(cluster["ca_cert_pem"].encode(), ca_key_pem, cluster["name"], kma.kma_id)
            kma.commit(
                kma.itself,
                "audit.signing_key.create",
                [
                    Stmt(
                        "INSERT INTO audit_signing_keys (public_key, certificate_pem, private_wrapped, "
                        "created_by_kma, created_at) VALUES (?, ?, ?, ?, ?)",
                        (
                            new.public_key,
                            new.certificate_pem,
                            master.wrap(_context(new.public_key), new.private_raw),
                            kma.kma_id,
                            kma.clock.now(),
                        ),
                    )
                ],
                f"made the cluster's audit signing key {key_fingerprint(new.public_key)}, certified by the "
                "cluster CA",
                ("audit", "signing-key"),
                retention=Retention.LONG,
            )
            row = kma.store.query_one("SELECT * FROM audit_signing_keys ORDER BY id DESC LIMIT 1")
            assert row is not None
        public_key = bytes(row["public_key"])
        private_raw = master.unwrap(_context(public_key), bytes(row["private_wrapped"]))
        st.signer = Signer(row["id"], private_raw, public_key, row["certificate_pem"])
        return st.signer
