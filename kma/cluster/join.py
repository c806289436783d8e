"""The join handshake, on a KMA of the cluster: a new machine proves it is the approved KMA entry
with its one-time KMA passphrase and receives certificates for key pairs it made itself.

The new machine sends two certificate signing requests (its Raft node key and its listeners'
key: the private keys never travel). This KMA checks the passphrase against the entry's Argon2id
hash (a failure slot is taken first, per source address and over all, like signing in:
`kma.services.sign_in.lockout`, kind 'kma'), signs
both CSRs with the cluster CA (CN = the KMA ID, whatever the CSR says), and in one guarded batch
spends the passphrase (only if it is still the hash that was checked: two joins racing with one
passphrase, one wins), marks the entry joined and locked, revokes the certificates of any earlier
machine of this entry, and records the new certificates' serials.

The answer holds the cluster CA, the cluster's name, the entry, the Raft addresses and node
certificates of the members to join (the only certificates its rqlited is to trust), and the node
credential rqlited asks of every command (kma/cluster/trust.py). Nothing else secret: the master
key reaches the new KMA only as stored (wrapped under the root secret) through the replicated
store, and the new KMA has no unlock key file, so it starts locked until a quorum unlocks it.
A KMA with an HSM also sends the public key its token made for this join; the answer then holds
the cluster's master key RSA-OAEP-wrapped to it, which only that token can unwrap (into a
non-extractable key object: docs/hsm.md#clusters).

A wrong passphrase for an entry that awaits its join is audited one by one (the lockout bounds
how many). A join as a KMA ID with no entry or no passphrase set, and any try while locked out,
is a stranger's refusal, audited at the bounded rate (kma/services/refusals.py): each new ID is
a new count, and nothing else bounds them.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Any

from cryptography.hazmat.primitives import serialization

from kma import metrics
from kma.appliance import Appliance
from kma.cluster.node_config import ClusterFiles
from kma.crypto import (
    CertifiedKey,
    CryptoError,
    fingerprint,
    hash_passphrase,
    load_certificate,
    sign_kma_csr,
    verify_passphrase,
)
from kma.crypto.hsm import wrap_for_join
from kma.domain.actor import Actor
from kma.domain.validation import ID_PATTERN
from kma.errors import Conflict, KmaError, LockedOut, Unauthenticated, ValidationFailed
from kma.services import refusals
from kma.services.integrity import entry_signatures
from kma.services.sign_in import lockout
from kma.steps import step
from kma.store import Batch, Stmt

MAX_CSR_BYTES = 16384
PASSPHRASE_LIFETIME = 7 * 86400  # as an agent's enrollment passphrase
WRONG = (
    "The KMA ID or KMA passphrase is wrong, the passphrase was already used, or the quorum has not "
    "approved this KMA's entry yet."
)
_KMA_ID = re.compile(ID_PATTERN)
LOCKED = "Too many wrong KMA passphrases for this KMA ID from here; try again in 15 minutes."


class _OnePerAddress:
    """The joins being checked, by source address: one at a time each, so that one address cannot
    run many Argon2id checks at once (each takes a core for a while); another from the same address
    waits up to `WAIT_S` for its turn, then is refused. Other addresses never wait on it."""

    WAIT_S = 2.0

    def __init__(self) -> None:
        self._turns = threading.Condition()
        self._running: dict[str, int] = {}  # only addresses with a check running: no more entries
        self._peak = 0

    @contextmanager
    def turn(self, address: str) -> Iterator[bool]:
        """True while this join holds its address's turn; False when none came in time."""
        with self._turns:
            mine = self._turns.wait_for(lambda: address not in self._running, self.WAIT_S)
            if mine:
                self._running[address] = running = self._running.get(address, 0) + 1
                if running > self._peak:
                    self._peak = running
                    metrics.JOIN_CHECKS_PEAK.set(running)
        if not mine:  # refused outside the lock: its audit event is a store write
            metrics.JOIN_CHECKS.labels("busy").inc()
            yield False
            return
        metrics.JOIN_CHECKS.labels("checked").inc()
        try:
            yield True
        finally:
            with self._turns:
                self._running[address] -= 1
                if not self._running[address]:
                    del self._running[address]
                self._turns.notify_all()


_CHECKS = _OnePerAddress()
BUSY = "Another join from this address is being checked; try again in a moment."


@cache
def _decoy_hash() -> str:
    """Checked when there is no real hash, so an unknown or spent entry costs the same time."""
    return hash_passphrase("no KMA passphrase is set for this entry")


def own_raft_address(kma: Appliance) -> str:
    """This KMA's Raft address from its cluster/node.toml, when it runs as an rqlite node."""
    files = ClusterFiles.of(kma.data_dir.root)
    return files.load().raft_address if files.exists() else ""


def members(kma: Appliance, joining: str) -> list[dict[str, Any]]:
    """The joined KMAs a new node may name in its join list, with their node certificates (the
    ones its rqlited is to trust; None for a KMA of a cluster made before node pins)."""
    out = []
    own = own_raft_address(kma)
    genuine = entry_signatures.genuine_ids(kma)  # a forged entry's certificate is pinned nowhere
    for r in kma.store.query(
        "SELECT id, raft_address, voter, node_cert_pem FROM kmas WHERE awaiting_join = 0 "
        "AND removed_at IS NULL AND id <> ? ORDER BY id",
        (joining,),
    ):
        if r["id"] not in genuine:
            continue
        address = own if r["id"] == kma.kma_id and own else r["raft_address"]
        if address:
            out.append(
                {
                    "id": r["id"],
                    "raft_address": address,
                    "voter": bool(r["voter"]),
                    "node_certificate_pem": r["node_cert_pem"],
                }
            )
    return out


def _sign(kma: Appliance, ca: CertifiedKey, csr: str, kma_id: str, hosts: list[str]) -> bytes:
    if len(csr) > MAX_CSR_BYTES:
        raise ValidationFailed("A certificate signing request is too large.")
    try:
        validity = timedelta(seconds=kma.data_dir.certificate_settings().kma_validity)
        return sign_kma_csr(ca, csr.encode("ascii", "replace"), kma_id, hosts, validity=validity)
    except (CryptoError, ValueError) as exc:
        raise ValidationFailed(f"The certificate signing request was refused: {exc}.") from None


def _serial(cert_pem: bytes) -> tuple[str, int]:
    cert = load_certificate(cert_pem)
    return format(cert.serial_number, "x"), int(cert.not_valid_after_utc.timestamp())


def _wrap_master_for(kma: Appliance, public_pem: str) -> bytes:
    """The cluster's master key wrapped to a joining token's join key (RSA-OAEP)."""
    if kma.store.scalar("SELECT count(*) FROM master_key_generations"):
        raise Conflict(
            "A master key rotation is under way: the token could receive only the new generation, and "
            "blobs of the old one are still stored. Join this KMA once the rotation has ended (the Cluster "
            "page shows its progress). The KMA passphrase was not spent."
        )
    try:
        public = serialization.load_pem_public_key(public_pem.encode("ascii", "replace"))
        der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        return wrap_for_join(der, kma.vault.master())
    except (ValueError, TypeError) as exc:
        raise ValidationFailed(f"The joining KMA's master key join key was refused: {exc}.") from None
    except Conflict as exc:  # its master key is in its own token, which never gives it out
        raise Conflict(
            f"{exc.message} KMA '{kma.kma_id}' cannot hand on the cluster's master key: join through a "
            "software KMA of the cluster. The KMA passphrase was not spent."
        ) from None


def join(
    kma: Appliance,
    kma_id: str,
    passphrase: str,
    node_csr: str,
    server_csr: str,
    address: str,
    master_key_public_pem: str | None = None,
) -> dict[str, Any]:
    """Blocking (Argon2id, signing, a durable commit); one at a time per source address."""
    with _CHECKS.turn(address) as mine:
        if not mine:
            refused = LockedOut(BUSY)
            refusals.audit_anonymous(
                kma, address, "kma.join", f"refused a join as KMA '{kma_id[:64]}': {BUSY}", "security"
            )
            refused.audited = True
            raise refused
        return _join(kma, kma_id, passphrase, node_csr, server_csr, address, master_key_public_pem)


@dataclass(frozen=True)
class _Attempt:
    """One join being checked: who claims to join, from where, and the failure slots it holds."""

    kma: Appliance
    kma_id: str
    address: str
    counters: tuple[lockout.Counter, lockout.Counter]  # (this address, everywhere): `lockout.for_join`

    @property
    def actor(self) -> Actor:
        return Actor(self.kma_id[:64] or "unknown", self.address, kind="kma")

    @property
    def subject(self) -> tuple[str, str]:
        return ("kma", self.kma_id[:64])

    def refuse(self, error: KmaError, reason: str, stranger: bool = False) -> KmaError:
        message = f"refused a join as KMA '{self.kma_id[:64]}': {reason}"
        if stranger:
            refusals.audit_anonymous(self.kma, self.address, "kma.join", message, "security", self.subject)
        else:
            self.kma.audit(self.actor, "kma.join", message, subject=self.subject, event_class="security")
        error.audited = True
        return error

    def give_back(self) -> None:
        """The passphrase was right: its failure slots are returned."""
        self.kma.store.write(Batch([lockout.give_back(c) for c in self.counters]))


def _join(
    kma: Appliance,
    kma_id: str,
    passphrase: str,
    node_csr: str,
    server_csr: str,
    address: str,
    master_key_public_pem: str | None,
) -> dict[str, Any]:
    attempt = _take_a_failure_slot(kma, kma_id, address)
    row = _check_the_kma_passphrase(attempt, passphrase)
    joining = _list_the_nodes_to_join(attempt)
    cluster, ca = _open_the_cluster_ca(kma)
    node_pem, server_pem = _sign_the_certificates(attempt, ca, row, node_csr, server_csr)
    wrapped = _wrap_the_master_key(attempt, row, master_key_public_pem)
    _record_the_join(attempt, row, node_pem, server_pem, wrapped)
    return _grant(kma, cluster, row, node_pem, server_pem, joining, wrapped)


@step("join")
def _take_a_failure_slot(kma: Appliance, kma_id: str, address: str) -> _Attempt:
    attempt = _Attempt(kma, kma_id, address, lockout.for_join(kma_id[:64], address))
    if not lockout.take_slots(kma, attempt.counters):
        raise attempt.refuse(
            LockedOut(LOCKED),
            f"locked out after wrong KMA passphrases (from {address} or from everywhere)",
            stranger=True,
        )
    return attempt


@step("join")
def _check_the_kma_passphrase(attempt: _Attempt, passphrase: str) -> Any:
    """The entry's row, if the passphrase is its own, still fresh, and the entry genuine."""
    kma, kma_id, row = attempt.kma, attempt.kma_id, None
    if _KMA_ID.fullmatch(kma_id) and len(passphrase) <= 256:
        row = kma.store.query_one(
            "SELECT id, name, site_id, management_address, service_address, raft_address, voter, witness, "
            "awaiting_join, removed_at, node_cert_pem, join_passphrase_hash, signature, key_pool_size, "
            "route_signature, join_passphrase_hash AS hash, join_passphrase_set_at AS set_at "
            "FROM kmas WHERE id = ?",
            (kma_id,),
        )
    if row is not None and not (
        entry_signatures.genuine(kma, row) and entry_signatures.routes_genuine(kma, row)
    ):
        row = None  # written into the store without the KMA: no one joins as it (reported)
    stored = row["hash"] if row is not None else None
    if not verify_passphrase(passphrase, stored or _decoy_hash()) or stored is None or row is None:
        reason = (
            "no such KMA entry"
            if row is None
            else "no KMA passphrase is set"
            if stored is None
            else ("wrong KMA passphrase")
        )
        raise attempt.refuse(Unauthenticated(WRONG), reason, stranger=row is None or stored is None)
    if kma.clock.now() - int(row["set_at"] or 0) > PASSPHRASE_LIFETIME:
        attempt.give_back()  # right, but too old
        raise attempt.refuse(
            Unauthenticated("This KMA passphrase has expired (they last 7 days); ask for a new one."),
            "the KMA passphrase has expired",
        )
    return row


@step("join")
def _list_the_nodes_to_join(attempt: _Attempt) -> list[dict[str, Any]]:
    joining = members(attempt.kma, attempt.kma_id)
    if not joining:  # a node with an empty join list would start a cluster of its own
        attempt.give_back()
        raise attempt.refuse(
            Conflict(
                f"KMA '{attempt.kma.kma_id}' is not a cluster node yet, so there is no Raft cluster to join: "
                "make it the first node first (kma convert-to-cluster, then restart it). The KMA passphrase "
                "was not spent."
            ),
            "no cluster node to join yet",
        )
    return joining


@step("join")
def _open_the_cluster_ca(kma: Appliance) -> tuple[Any, CertifiedKey]:
    cluster = kma.store.query_one("SELECT name, ca_cert_pem, ca_key_wrapped FROM cluster WHERE id = 1")
    assert cluster is not None
    key = kma.vault.master().unwrap("cluster-ca-key", cluster["ca_key_wrapped"])
    return cluster, CertifiedKey(cluster["ca_cert_pem"].encode(), key)


@step("join")
def _sign_the_certificates(
    attempt: _Attempt, ca: CertifiedKey, row: Any, node_csr: str, server_csr: str
) -> tuple[bytes, bytes]:
    addresses = (row["management_address"], row["service_address"], row["raft_address"])
    # A witness has a Raft address only (its other two are empty).
    hosts = sorted({a.rpartition(":")[0].strip("[]") for a in addresses} - {"0.0.0.0", "::", ""})
    try:
        return (
            _sign(attempt.kma, ca, node_csr, attempt.kma_id, hosts),
            _sign(attempt.kma, ca, server_csr, attempt.kma_id, hosts),
        )
    except KmaError as exc:
        raise attempt.refuse(exc, exc.message) from None


@step("join")
def _wrap_the_master_key(attempt: _Attempt, row: Any, master_key_public_pem: str | None) -> bytes | None:
    """For a KMA with an HSM: the master key wrapped to its token's join key."""
    try:
        if master_key_public_pem is not None and row["witness"]:
            raise ValidationFailed("A witness holds no master key: join it without [hsm].")
        return None if master_key_public_pem is None else _wrap_master_for(attempt.kma, master_key_public_pem)
    except KmaError as exc:
        attempt.give_back()
        raise attempt.refuse(exc, exc.message) from None


@step("join")
def _record_the_join(
    attempt: _Attempt, row: Any, node_pem: bytes, server_pem: bytes, wrapped: bytes | None
) -> None:
    """One guarded batch: the passphrase spent, the entry joined, the certificates recorded."""
    kma, kma_id = attempt.kma, attempt.kma_id
    here, everywhere = attempt.counters
    backend = "software" if wrapped is None else "pkcs11"
    now = kma.clock.now()
    issued = [(purpose, *_serial(pem)) for purpose, pem in (("node", node_pem), ("server", server_pem))]
    kma.commit(
        attempt.actor,
        "kma.join",
        [
            Stmt(
                "UPDATE kmas SET join_passphrase_hash = NULL, join_passphrase_set_at = NULL, "
                "awaiting_join = 0, locked = 1 - witness, "  # a witness holds no key to lock
                "node_cert_pem = ?, master_key = ?, updated_at = ? "
                "WHERE id = ? AND join_passphrase_hash = ?",
                (node_pem.decode("ascii"), backend, now, kma_id, row["hash"]),
                expect=1,
                refusal="the KMA passphrase was used by another join a moment ago",
            ),
            entry_signatures.sign_entry(
                kma,
                {
                    **dict(row),
                    "awaiting_join": 0,
                    "node_cert_pem": node_pem.decode("ascii"),
                    "join_passphrase_hash": None,
                },
            ),
            Stmt(
                "UPDATE kma_certificates SET revoked_at = ? WHERE kma_id = ? AND revoked_at IS NULL",
                (now, kma_id),
            ),
            *(
                Stmt(
                    "INSERT INTO kma_certificates (serial, kma_id, purpose, not_after, issued_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (serial, kma_id, purpose, not_after, now),
                )
                for purpose, serial, not_after in issued
            ),
            lockout.forget(here),
            lockout.give_back(everywhere),
        ],
        f"KMA '{kma_id}' joined from {attempt.address}: node certificate {issued[0][1]}, server certificate "
        f"{issued[1][1]}; earlier certificates of this KMA revoked, and every node now trusts the new "
        "node certificate instead; "
        + ("the cluster's master key sent wrapped to the join key of its HSM token; " if wrapped else "")
        + ("it votes as a witness, with no key service" if row["witness"] else "it starts locked"),
        attempt.subject,
    )


def _grant(
    kma: Appliance,
    cluster: Any,
    row: Any,
    node_pem: bytes,
    server_pem: bytes,
    joining: list[dict[str, Any]],
    wrapped: bytes | None,
) -> dict[str, Any]:
    """The answer to the joining machine."""
    return {
        "cluster_name": cluster["name"],
        "ca_pem": cluster["ca_cert_pem"],
        "ca_fingerprint": fingerprint(cluster["ca_cert_pem"].encode()),
        "kma": {
            "id": row["id"],
            "name": row["name"],
            "site_id": row["site_id"],
            "management_address": row["management_address"],
            "service_address": row["service_address"],
            "raft_address": row["raft_address"],
            "voter": bool(row["voter"]),
            "witness": bool(row["witness"]),
        },
        "node_certificate_pem": node_pem.decode(),
        "server_certificate_pem": server_pem.decode(),
        "members": joining,
        "node_credential": own_credential(kma),
        "master_key_wrapped": None if wrapped is None else base64.b64encode(wrapped).decode("ascii"),
    }


def own_credential(kma: Appliance) -> str | None:
    """The cluster's node credential, as this node holds it (None on a cluster made before it):
    handed to a machine that has just proven its KMA passphrase, over the CA-pinned connection."""
    files = ClusterFiles.of(kma.data_dir.root)
    credential = files.credential() if files.exists() else None
    return credential[1] if credential else None
