"""A witness renews its node certificate, with no gap in node trust, though it holds no CA key.

A KMA renews its own (kma/cluster/node_renewal.py): it signs with the cluster CA's key, unwrapped
under the master key. A witness never holds the master key, so it asks, through its own entry in
the store, and an unlocked KMA of the cluster answers. The same three steps as a KMA's, each safe
to repeat after either side crashes:

1. Asked: `renew_before` ahead of its node certificate's expiry (its kma.toml [certificates]), or
   when a Security Officer asks (`certificate_renewal_requested_at`), and no other entry pins two
   certificates, the witness makes a new key (`node.next.key`, never leaving its machine) and
   writes a certificate signing request for it, signed too by its current node key, into its entry
   (`node_csr_pem`).
2. Signed: an unlocked KMA checks the request (its signature; the names and validity are the
   KMA's, from the current certificate and its own settings), signs it with the cluster CA and
   pins the new certificate beside the current one in the witness's entry, signed; every node then
   restarts its rqlited trusting both.
3. Moved: the witness takes the certificate pinned for its new key (issued by its cluster CA),
   waits until every other node's Raft port lets it in, moves its files and restarts its rqlited
   with it, then clears its request. The KMA, seeing both pinned and no request, pins the new
   certificate alone, records it and audits it; the others drop the old one as they follow.

A request grants nothing by itself: it carries a signature over the CSR by the witness's current
node key (`request_text`), which the KMA checks against the certificate the entry pins now
(`checked_request`), and the certificate names the witness whatever the request says. A request
written into the store with a leaked node credential alone is refused, audited and removed.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import sqlite3
import time
from datetime import timedelta
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

from kma.appliance import Appliance
from kma.cluster.node_config import ClusterFiles
from kma.cluster.node_renewal import OTHER_NODES, PROBE_EVERY_S, RENEWING, lets_in, next_files
from kma.cluster.rqlited import RqliteNode
from kma.crypto import load_certificate
from kma.crypto.ca import sign_kma_csr
from kma.crypto.errors import CryptoError
from kma.datadir import DataDir, write_private
from kma.errors import KmaError
from kma.services.certificates.certificate_expiry import (
    cluster_ca,
    real_now,
    recorded,
    serial_and_expiry,
    settings,
)
from kma.services.certificates.certificate_renewal import hosts_of
from kma.services.integrity import entry_signatures
from kma.store import Stmt

log = logging.getLogger(__name__)
END = "-----END CERTIFICATE-----"
PROOF = ("-----BEGIN NODE KEY PROOF-----", "-----END NODE KEY PROOF-----")


def pinned(node_cert_pem: str | None) -> list[str]:
    """The certificates an entry pins, each as one PEM block ending in a newline."""
    blocks = (node_cert_pem or "").split(END)[:-1]
    return [block.strip() + "\n" + END + "\n" for block in blocks]


def _spki(key: PublicKeyTypes) -> bytes:
    """A public key as bytes to compare (its SubjectPublicKeyInfo)."""
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _public(pem: bytes) -> bytes:
    return _spki(load_certificate(pem).public_key())


class WitnessRenewal:
    """The witness's side (steps 1 and 3), for its loop in kma/cluster/witness.py (`step`)."""

    def __init__(self, data_dir: DataDir, node: RqliteNode) -> None:
        self.data_dir = data_dir
        self.node = node
        self._next_probe = 0.0

    @property
    def files(self) -> ClusterFiles:
        return self.node.files

    def step(self) -> None:
        if time.monotonic() < self._next_probe:
            return
        self._next_probe = time.monotonic() + PROBE_EVERY_S
        client = self.node.client()
        try:
            rows = client.query(
                "SELECT node_cert_pem, node_csr_pem, certificate_renewal_requested_at IS NOT NULL, "
                f"({RENEWING}) FROM kmas WHERE id = ?",
                (self.node.config.node_id, self.node.config.node_id),
            )
        finally:
            client.close()
        if not rows:
            return
        pins, csr, asked, others_renewing = pinned(rows[0][0]), rows[0][1], bool(rows[0][2]), rows[0][3]
        current = self.files.node_cert.read_bytes()
        if len(pins) == 2 and pins[1].encode("ascii").strip() == current.strip():
            if csr is not None:  # moved (perhaps before a crash): the KMA may pin it alone now
                self._write("UPDATE kmas SET node_csr_pem = NULL WHERE id = ?")
            return
        cert, key = next_files(self.files)
        if len(pins) == 2 and csr is not None and key.exists() and self._ours(pins[1], key):
            self._move(pins[1], cert, key)
        elif csr is not None and not key.exists():  # its new key lost (a data dir put back): anew
            self._ask(current, key)
        elif csr is None and len(pins) == 1 and not others_renewing and (asked or self._due(current)):
            self._ask(current, key)

    def _due(self, current: bytes) -> bool:
        _, not_after = serial_and_expiry(current.decode("ascii").strip() + "\n")
        return not_after - real_now() <= self.data_dir.certificate_settings().renew_before

    def _ask(self, current: bytes, key_file: Path) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        write_private(
            key_file,
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
        subject = load_certificate(current).subject
        csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
        node_key = serialization.load_pem_private_key(self.files.node_key.read_bytes(), None)
        assert isinstance(node_key, ec.EllipticCurvePrivateKey)  # node keys are P-256 (kma/crypto/ca.py)
        self._write(
            "UPDATE kmas SET node_csr_pem = ?, certificate_renewal_requested_at = NULL WHERE id = ?",
            request_text(csr, node_key),
        )
        log.info("witness %s asked the cluster for a new node certificate", self.node.config.node_id)

    def _ours(self, pem: str, key_file: Path) -> bool:
        """Whether the pinned certificate is for the key this witness made, from its cluster CA."""
        key = serialization.load_pem_private_key(key_file.read_bytes(), None).public_key()
        if _spki(key) != _public(pem.encode("ascii")):
            return False
        try:
            cert = load_certificate(pem.encode("ascii"))
            cert.verify_directly_issued_by(load_certificate(self.files.ca_cert.read_bytes()))
        except (ValueError, TypeError, InvalidSignature):
            return False
        return True

    def _move(self, pem: str, cert: Path, key: Path) -> None:
        write_private(cert, pem.encode("ascii"))
        others = self._others()
        waiting = [a for a in others if not lets_in(a, cert, key)]
        if waiting:
            log.info("new node certificate pinned; not yet trusted by the nodes at %s", ", ".join(waiting))
            return
        os.replace(key, self.files.node_key)
        os.replace(cert, self.files.node_cert)
        self.node.stop()
        self.node.start()
        self._write("UPDATE kmas SET node_csr_pem = NULL WHERE id = ?")
        log.info("witness %s moved to its new node certificate", self.node.config.node_id)

    def _others(self) -> list[str]:
        client = self.node.client()
        try:
            rows = client.query(OTHER_NODES, (self.node.config.node_id,))
        finally:
            client.close()
        return [str(r[0]) for r in rows]

    def _write(self, sql: str, *params: str) -> None:
        client = self.node.client()
        try:
            client.execute([[sql, *params, self.node.config.node_id]])
        finally:
            client.close()


# Witness entries to answer: a request not yet signed for its key, or moved and pinning two
_WITNESSES = (
    "SELECT id, node_cert_pem, node_csr_pem FROM kmas WHERE witness = 1 AND removed_at IS NULL "
    "AND awaiting_join = 0 AND node_cert_pem IS NOT NULL"
)


def answer_witnesses(kma: Appliance) -> None:
    """The KMA's side (step 2, and the end of step 3), for an unlocked KMA's cluster watch round. The
    renewed certificate is recorded as the witness's (`kma_certificates`, as its join recorded the
    first), so its expiry is on the dashboard, the Cluster page, in `kma status` and in /metrics."""
    if kma.vault.locked:
        return
    for row in kma.store.query(_WITNESSES):
        pins, csr = pinned(row["node_cert_pem"]), row["node_csr_pem"]
        sign = csr is not None and (len(pins) == 1 or _public(pins[1].encode()) != _csr_public(csr))
        if not (sign or (csr is None and len(pins) == 2)) or not _current(kma, row):
            continue
        try:
            if sign:
                _sign(kma, row["id"], row["node_cert_pem"], pins[0], csr)
            else:
                _pin_alone(kma, row["id"], row["node_cert_pem"], pins)
        except KmaError as exc:  # another KMA answered first, or the entry changed meanwhile
            log.info("witness %s's node certificate: %s", row["id"], exc.message)


def _current(kma: Appliance, row: sqlite3.Row) -> bool:
    """Whether the leader holds the entry as this KMA's replica shows it: a replica behind (this
    KMA's own answer not in it yet, or the witness's next step) would answer a request twice."""
    sql = "SELECT node_cert_pem, node_csr_pem FROM kmas WHERE id = ?"
    return kma.store.query_leader(sql, (row["id"],)) == [[row["node_cert_pem"], row["node_csr_pem"]]]


def request_text(csr: x509.CertificateSigningRequest, node_key: ec.EllipticCurvePrivateKey) -> str:
    """What a witness writes into `node_csr_pem`: the CSR, then its proof that it holds the current
    node key, a signature over the CSR by that key. Only the witness itself can ask: a row written
    with a leaked node credential alone gets no certificate signed."""
    der = csr.public_bytes(serialization.Encoding.DER)
    proof = base64.b64encode(node_key.sign(der, ec.ECDSA(hashes.SHA256()))).decode("ascii")
    return csr.public_bytes(serialization.Encoding.PEM).decode("ascii") + f"{PROOF[0]}\n{proof}\n{PROOF[1]}\n"


def checked_request(text: str, current_pem: str) -> bytes:
    """The CSR (PEM) of a witness's request, once its proof verifies under the public key of the
    certificate its entry pins now; CryptoError saying why not."""
    try:
        csr_pem, rest = text.split(PROOF[0], 1)
        proof = base64.b64decode(rest.split(PROOF[1], 1)[0].strip(), validate=True)
        der = x509.load_pem_x509_csr(csr_pem.encode("ascii")).public_bytes(serialization.Encoding.DER)
    except (ValueError, binascii.Error):
        raise CryptoError("it is not a certificate signing request with its proof") from None
    holder = load_certificate(current_pem.encode("ascii")).public_key()
    if not isinstance(holder, ec.EllipticCurvePublicKey):
        raise CryptoError("its current node certificate has no EC key to check the proof with")
    try:
        holder.verify(proof, der, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise CryptoError("its proof was not made with the witness's current node key") from None
    return csr_pem.encode("ascii")


def _csr_public(text: str) -> bytes | None:
    try:
        csr_pem = text.split(PROOF[0], 1)[0]
        return _spki(x509.load_pem_x509_csr(csr_pem.encode("ascii")).public_key())
    except ValueError:
        return None


def _unchanged(witness_id: str, pins: str, csr: str | None, sets: str, **values: str) -> Stmt:
    """`sets` on the witness's entry only if it still pins `pins` and holds the request `csr`: two
    KMAs answering at once must not pin two different certificates (the witness moves to one)."""
    return Stmt(
        f"UPDATE kmas SET {sets} WHERE id = :id AND node_cert_pem IS :pins AND node_csr_pem IS :csr",
        {"id": witness_id, "pins": pins, "csr": csr, **values},
        expect=1,
        refusal=f"witness {witness_id}'s entry changed meanwhile (another KMA answered it)",
    )


def _sign(kma: Appliance, witness_id: str, pinned_now: str, current: str, csr: str) -> None:
    validity = timedelta(seconds=settings(kma).kma_validity)
    hosts = hosts_of(load_certificate(current.encode("ascii")))
    try:
        csr_pem = checked_request(csr, current)
        made = sign_kma_csr(cluster_ca(kma), csr_pem, witness_id, hosts, validity=validity)
    except (CryptoError, ValueError) as exc:  # not what a witness writes: removed, said once
        kma.commit(
            kma.itself,
            "kma.node_certificate_renew",
            [_unchanged(witness_id, pinned_now, csr, "node_csr_pem = NULL")],
            f"refused witness {witness_id}'s request for a new node certificate and removed it: {exc}",
            ("kma", witness_id),
        )
        return
    new = made.decode("ascii")
    both = current + new
    serial, _ = serial_and_expiry(new)
    kma.commit(
        kma.itself,
        "kma.node_certificate_renew",
        [
            _unchanged(witness_id, pinned_now, csr, "node_cert_pem = :new", new=both),
            entry_signatures.resign(kma, witness_id, node_cert_pem=both),
        ],
        f"signed witness {witness_id}'s request for a new node certificate ({serial}); its entry pins it "
        "beside the current one, so every node trusts it before the witness uses it",
        ("kma", witness_id),
    )


def _pin_alone(kma: Appliance, witness_id: str, pinned_now: str, pins: list[str]) -> None:
    old_serial, _ = serial_and_expiry(pins[0])
    serial, not_after = serial_and_expiry(pins[1])
    until = time.strftime("%Y-%m-%d %H:%M", time.gmtime(not_after))
    kma.commit(
        kma.itself,
        "kma.node_certificate_renew",
        [
            _unchanged(witness_id, pinned_now, None, "node_cert_pem = :new", new=pins[1]),
            entry_signatures.resign(kma, witness_id, node_cert_pem=pins[1]),
            recorded(witness_id, "node", pins[1]),
        ],
        f"renewed witness {witness_id}'s node certificate: serial {serial}, valid until {until} UTC, "
        f"replaces {old_serial}; every node trusted it before the witness's rqlited restarted with it, "
        "and its entry now pins it alone",
        ("kma", witness_id),
    )
