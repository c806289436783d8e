"""Trust on first use of a cluster CA, and TLS settings that trust only that CA.

The first contact with a KMA cannot verify anything: `Trust.fetch` reads the CA over unverified
TLS and recomputes its fingerprint, so a person can compare it with the one `kma serve` printed.
From then on the client pins that fingerprint and verifies every connection against that CA only.

The cluster renews its CA's certificate before it expires (the same name and key, a new validity).
A client that pinned the old certificate accepts the new one when the KMA offers it and it is a
renewal of the pinned one (`renews`): only the holder of the pinned CA's key can make that.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes

from ._http import base_url, error_from_response, translated_transport_errors, unreadable_response
from .errors import TrustError
from .reader import read
from .wire import CaInfo


def fingerprint_of(ca_pem: str) -> str:
    """`SHA256:AB:CD:...`: SHA-256 of the certificate's DER, the string `kma serve` prints."""
    try:
        cert = x509.load_pem_x509_certificate(ca_pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError, AttributeError) as exc:
        raise TrustError(f"The cluster CA is not a valid PEM certificate ({exc}).") from exc
    digest = cert.fingerprint(hashes.SHA256())
    return "SHA256:" + ":".join(f"{b:02X}" for b in digest)


def renews(pinned_pem: str, offered_pem: str) -> bool:
    """Whether `offered` is the cluster CA's renewed certificate for the pinned one: the same name and
    key, and a valid self-signature."""
    try:
        pinned = x509.load_pem_x509_certificate(pinned_pem.encode("ascii"))
        offered = x509.load_pem_x509_certificate(offered_pem.encode("ascii"))
        offered.verify_directly_issued_by(offered)
    except (ValueError, TypeError, UnicodeEncodeError, InvalidSignature):
        return False
    return offered.subject == pinned.subject and offered.public_key() == pinned.public_key()


def expired(ca_pem: str) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(ca_pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False  # refused with a plain message where it is used
    return cert.not_valid_after_utc <= datetime.now(UTC)


def normalize_fingerprint(fingerprint: str) -> str:
    """A fingerprint in canonical form, so a pasted lowercase or space-padded one still matches."""
    return fingerprint.strip().upper()


def same_fingerprint(a: str, b: str) -> bool:
    return normalize_fingerprint(a) == normalize_fingerprint(b)


class KmaSocket(ssl.SSLSocket):
    """A TLS connection that, once the cluster CA and host name are verified, also refuses a peer
    whose certificate is not the expected KMA's (its subject names the KMA ID): the cluster CA also
    certifies drives, listeners and every other KMA, and a failover must reach the KMA it chose."""

    def do_handshake(self, block: bool = False) -> None:
        super().do_handshake(block)
        expected = getattr(self.context, "expected_kma", None)
        if expected is not None and (named := peer_common_name(self)) != expected:
            self.close()
            raise ssl.SSLCertVerificationError(f"the certificate there names '{named}', not KMA '{expected}'")


def peer_common_name(sock: ssl.SSLSocket) -> str | None:
    peer: dict[str, Any] = dict(sock.getpeercert() or {})
    names = [pair for rdn in peer.get("subject", ()) for pair in rdn]
    return next((str(value) for key, value in names if key == "commonName"), None)


def ssl_context_for(ca_pem: str) -> ssl.SSLContext:
    """A client context that trusts `ca_pem` only (no system CAs), checks the host name and
    refuses anything older than TLS 1.2. Setting its `expected_kma` to a KMA ID also refuses any
    certificate but that KMA's (`KmaSocket`)."""
    try:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem)
    except ssl.SSLError as exc:
        raise TrustError(f"The cluster CA cannot be loaded ({exc}).") from exc
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.sslsocket_class = KmaSocket
    ctx.expected_kma = None  # type: ignore[attr-defined]
    return ctx


@dataclass(frozen=True)
class Trust:
    """A cluster CA read on first contact; `fingerprint` is recomputed here, not the server's."""

    ca_pem: str
    fingerprint: str
    previous: tuple[str, ...] = ()  # the CA's earlier certificates, newest first (renewed since)

    @classmethod
    def from_pem(cls, ca_pem: str, previous: tuple[str, ...] = ()) -> Trust:
        return cls(ca_pem=ca_pem, fingerprint=fingerprint_of(ca_pem), previous=previous)

    @classmethod
    def fetch(
        cls,
        address: str,
        timeout: float = 5,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> Trust:
        """GET https://ADDRESS/api/v1/ca without verifying TLS (trust on first use).

        Raises `TrustError` if the CA's fingerprint is not the one the KMA claims for it,
        `KmaUnreachable` if the KMA does not answer. Show `fingerprint` to the user to compare
        with the one the KMA printed before pinning it. `transport` is for tests.
        """
        url = base_url(address) + "/ca"
        with (
            httpx.Client(verify=False, timeout=timeout, transport=transport) as http,  # noqa: S501
            translated_transport_errors(address, timeout),
        ):
            response = http.get(url, headers={"Accept": "application/json"})
        if response.is_error:
            raise error_from_response(response)
        try:
            info = read(CaInfo, response.json())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise unreadable_response(response, exc) from exc
        trust = cls.from_pem(info.ca_pem, tuple(info.previous_ca_pems or ()))
        if not same_fingerprint(trust.fingerprint, info.fingerprint):
            raise TrustError(
                f"The KMA at {address} claims its CA has fingerprint {info.fingerprint}, but the "
                f"certificate it sent has {trust.fingerprint}. Do not trust this server."
            )
        return trust


def pinned_ca(
    address: str,
    ca_pem: str | None,
    ca_fingerprint: str,
    timeout: float,
    transport: httpx.BaseTransport | None,
) -> tuple[str, bool]:
    """The CA certificate to trust for the pinned `ca_fingerprint`, and whether it is a renewal of
    the pinned one (the caller may save it). The KMA is asked when no certificate was saved, or the
    saved one has expired; `TrustError` when what it offers is neither the pinned CA nor its renewal."""
    pinned = (
        ca_pem if ca_pem is not None and same_fingerprint(fingerprint_of(ca_pem), ca_fingerprint) else None
    )
    if ca_pem is None or expired(ca_pem):
        trust = Trust.fetch(address, timeout=timeout, transport=transport)
        ca_pem = trust.ca_pem
        found = (p for p in trust.previous if same_fingerprint(fingerprint_of(p), ca_fingerprint))
        pinned = pinned or next(found, None)
    actual = fingerprint_of(ca_pem)
    if same_fingerprint(actual, ca_fingerprint):
        if expired(ca_pem):
            end = x509.load_pem_x509_certificate(ca_pem.encode("ascii")).not_valid_after_utc
            raise TrustError(
                f"The cluster CA certificate you trust for {address} expired on {end:%Y-%m-%d %H:%M} UTC "
                "and the KMA offers no renewal of it, so no connection to it can be verified. Ask the "
                "KMA's administrator: the cluster renews its CA certificate before it expires (a "
                "Security Officer can renew it at once, under quorum)."
            )
        return ca_pem, False
    if pinned is not None and renews(pinned, ca_pem):
        return ca_pem, True
    raise TrustError(
        f"The cluster CA for {address} has fingerprint {actual}, not the pinned "
        f"{ca_fingerprint}. This is not the cluster you trusted; do not sign in. If the "
        "cluster CA really changed, confirm its new fingerprint with the KMA's "
        "administrator and trust it again."
    )
