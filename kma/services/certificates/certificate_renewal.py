"""A KMA renews its own listener certificate, before it expires or when a Security Officer asks.

The certificate both listeners present (DIR/tls/server.pem) is renewed by the KMA that holds its
key, while it serves: a new key and a certificate from the cluster CA for the same names (the
CA's key is unwrapped under the master key, so only an unlocked KMA renews), written beside the
old files and renamed over them, then loaded into the listeners' TLS contexts in place. New
handshakes get the new certificate; connections already open (a drive in the middle of reading
its keys) keep theirs. The new certificate is recorded in `kma_certificates`, audited, and from
then on it is what the dashboard shows. Agents and managers trust the cluster CA, not the
certificate, so nothing changes for them.

When: `renew_before` ahead of its expiry (kma.toml [certificates]), checked by the certificate
watch (kma/services/certificates/certificate_expiry.py), or at once when a Security Officer asks
(`renew_kma_certificate`): the KMA answering does it itself if the request is for it, else records
it and the named KMA does it within a second (its cluster watch sees the request). Each KMA renews
its own, so a cluster's KMAs renew one by one as their certificates come due, and none stops serving
while it does.
"""

from __future__ import annotations

import os
import ssl
from datetime import timedelta
from pathlib import Path

from cryptography import x509

from kma.appliance import Appliance
from kma.crypto import issue_server_certificate, load_certificate
from kma.datadir import write_private
from kma.domain.actor import Actor
from kma.errors import Conflict
from kma.services.certificates import ca_renewal
from kma.services.certificates.certificate_expiry import (
    announce_warnings,
    cluster_ca,
    first_certificate,
    real_now,
    recorded,
    serial_and_expiry,
    settings,
)
from kma.services.kmas import KmaRow, get_kma
from kma.store import Stmt
from kma.tls import server_context
from kma.worker import Worker


class ListenerTls:
    """The TLS contexts of this KMA's listeners. A renewal never changes a context in use: it makes
    a whole new one from the new files, and each listener's context hands every new handshake to
    the newest (OpenSSL's server-name callback runs for every ClientHello, with or without a name).
    Loading a certificate into a live context would leave, between the certificate and its key,
    an instant in which a connection is accepted with no key to sign for it: the drive would see
    its connection closed (issue 38's CI run saw exactly that)."""

    def __init__(self, kma: Appliance) -> None:
        self.kma = kma
        self._newest: ssl.SSLContext | None = None  # replaced whole: one reference, never half-loaded

    def _made(self) -> ssl.SSLContext:
        d = self.kma.data_dir
        return server_context(d.server_cert, d.server_key, d.ca_cert)

    def context(self) -> ssl.SSLContext:
        made = self._made()
        made.sni_callback = self._to_newest
        return made

    def _to_newest(
        self, connection: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _ctx: ssl.SSLContext
    ) -> None:
        newest = self._newest
        if newest is not None:
            connection.context = newest

    def reload(self) -> None:
        """From the next handshake on, both listeners present DIR/tls/server.pem as it is now, and
        trust the cluster CA certificate as it is now (a renewed one)."""
        self._newest = self._made()


def listener_tls(kma: Appliance) -> ListenerTls:
    return kma.part(ListenerTls)


def _current(kma: Appliance) -> tuple[str, x509.Certificate]:
    first = first_certificate(kma.data_dir.server_cert.read_text(encoding="ascii"))
    return first, load_certificate(first.encode("ascii"))


def hosts_of(cert: x509.Certificate) -> list[str]:
    """The names the certificate gives (loopback is added again by the issuer)."""
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(n.value) for n in names if isinstance(n, x509.DNSName | x509.IPAddress)]


def _replace(path: Path, data: bytes) -> None:
    fresh = path.with_name(path.name + ".new")
    write_private(fresh, data)
    os.replace(fresh, path)


def renew(kma: Appliance, actor: Actor, why: str) -> KmaRow:
    """Renew this KMA's listener certificate now; the KMA's entry as the API shows it."""
    if kma.vault.locked:
        raise Conflict("This KMA is locked: it can renew its certificate once a quorum unlocks it.")
    old_pem, old = _current(kma)
    ca = cluster_ca(kma)
    validity = timedelta(seconds=settings(kma).kma_validity)
    new = issue_server_certificate(ca, kma.kma_id, hosts_of(old), validity=validity)
    _replace(kma.data_dir.server_key, new.key_pem)
    _replace(kma.data_dir.server_cert, new.cert_pem + ca.cert_pem)
    listener_tls(kma).reload()
    old_serial, _ = serial_and_expiry(old_pem)
    serial, not_after = serial_and_expiry(new.cert_pem.decode("ascii"))
    until = load_certificate(new.cert_pem).not_valid_after_utc
    kma.commit(
        actor,
        "kma.certificate_renew",
        [
            recorded(kma.kma_id, "server", new.cert_pem.decode("ascii")),
            # replaced: refused from now on wherever a KMA certificate is checked (a leaked old key)
            Stmt("UPDATE kma_certificates SET revoked_at = ? WHERE serial = ?", (real_now(), old_serial)),
            Stmt("UPDATE kmas SET certificate_renewal_requested_at = NULL WHERE id = ?", (kma.kma_id,)),
        ],
        f"renewed KMA {kma.kma_id}'s listener certificate ({why}): serial {serial}, valid until "
        f"{until:%Y-%m-%d %H:%M} UTC, replaces {old_serial}; both listeners present it from now on",
        ("kma", kma.kma_id),
    )
    return get_kma(kma, kma.kma_id)


def renew_if_due(kma: Appliance) -> bool:
    """Renew when a Security Officer asked for it or `renew_before` is reached; True when it did."""
    if kma.vault.locked:
        return False
    asked = kma.store.query_one(
        "SELECT certificate_renewal_requested_at AS at FROM kmas WHERE id = ?", (kma.kma_id,)
    )
    if asked is not None and asked["at"] is not None:
        renew(kma, kma.itself, "a Security Officer asked for it")
        _node_too(kma)
        return True
    pem, _ = _current(kma)
    _, not_after = serial_and_expiry(pem)
    left = not_after - real_now()
    if left > settings(kma).renew_before:
        return False
    renew(kma, kma.itself, f"{max(left, 0)} s before it expires")
    return True


def _node_too(kma: Appliance) -> None:
    """Asked by a Security Officer: a cluster node renews its node certificate too (its cluster
    watch does, kma/cluster/node_renewal.py)."""
    if kma.store.cluster is not None:
        kma.data_dir.node_renewal_asked.touch()


def follow_request(kma: Appliance) -> None:
    """A request made through another KMA reaches this one's certificate watch at once."""
    if kma.store.scalar("SELECT certificate_renewal_requested_at FROM kmas WHERE id = ?", (kma.kma_id,)):
        certificate_watch(kma).wake()


def renew_kma_certificate(kma: Appliance, actor: Actor, kma_id: str) -> KmaRow:
    """A Security Officer's "renew now": done here if it is this KMA's, else recorded for that KMA."""
    if kma_id == kma.kma_id:
        renewed = renew(kma, actor, f"{actor.entity_id} asked for it")
        _node_too(kma)
        return renewed
    witness = kma.store.scalar("SELECT witness FROM kmas WHERE id = ?", (kma_id,))
    kma.commit(
        actor,
        "kma.certificate_renew_request",
        [
            Stmt(
                "UPDATE kmas SET certificate_renewal_requested_at = ? WHERE id = ? AND removed_at IS NULL "
                "AND awaiting_join = 0",
                (kma.clock.now(), kma_id),
                expect=1,
                refusal=f"there is no KMA or witness '{kma_id}' in the cluster (removed, or not joined yet)",
            )
        ],
        # A witness asks an unlocked KMA to sign a new node certificate (kma/cluster/witness_renewal.py)
        f"asked witness '{kma_id}' to renew its node certificate now"
        if witness
        else f"asked KMA '{kma_id}' to renew its listener certificate now",
        ("kma", kma_id),
    )
    return get_kma(kma, kma_id)


class CertificateWatch(Worker):
    """Every `check_every` (kma.toml [certificates]): the warnings that started since the last look
    become audit events, the cluster CA certificate is renewed when due
    (kma/services/certificates/ca_renewal.py) and followed here, and this KMA renews its own
    listener certificate when it is due."""

    name = "kma-certificates"
    pause_s = 60.0

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma

    def work(self) -> float:
        # Each part on its own: a warning that cannot be announced now holds no renewal back.
        for part in (announce_warnings, self._renew):
            try:
                part(self.kma)
            except Exception:
                self.log.exception("%s: %s failed; tried again next round", self.name, part.__name__)
        return float(settings(self.kma).check_every)

    @staticmethod
    def _renew(kma: Appliance) -> None:
        ca_renewal.renew_if_due(kma)
        if not kma.vault.locked and ca_renewal.follow(kma):
            # in place, no restart; its node certificate renews on its own schedule (renew_before)
            renew(kma, kma.itself, "the cluster CA certificate was renewed")
        else:
            renew_if_due(kma)

    def failed(self, exc: Exception) -> float:
        self.log.error("%s: round failed; retrying", self.name, exc_info=exc)
        return min(self.pause_s, float(settings(self.kma).check_every))


def certificate_watch(kma: Appliance) -> CertificateWatch:
    """This KMA's one certificate watch (`kma serve` starts it: kma/runtime/running.py)."""
    return kma.part(CertificateWatch)
