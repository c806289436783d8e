"""The cluster's audit signing key: Ed25519, certified by the cluster CA.

Why a certificate: the public key sits in the database, where someone who can rewrite the
database could also swap it. The cluster CA (whose private key is wrapped under the master key)
certifies it, so a verifier that trusts the CA fingerprint it already pins for TLS also knows
which audit key is genuine. The private key is stored only wrapped under the master key, so a
locked KMA signs nothing.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

from kma.crypto.ca import CertifiedKey, leaf_certificate, load_ca

VALIDITY = timedelta(days=20 * 365 + 5)
WRAP_CONTEXT = "audit-signing-key"


def key_fingerprint(public_key: bytes) -> str:
    """``SHA256:AB:CD:...`` of the raw public key: what a person compares by eye."""
    return "SHA256:" + hashlib.sha256(public_key).digest().hex(":").upper()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)


@dataclass(frozen=True)
class NewSigningKey:
    """A freshly made key: the raw private bytes exist only until they are wrapped."""

    public_key: bytes
    certificate_pem: str
    private_raw: bytes = field(repr=False)


def make_signing_key(
    ca_cert_pem: bytes, ca_key_pem: bytes, cluster_name: str, kma_id: str, now: datetime | None = None
) -> NewSigningKey:
    private = ed25519.Ed25519PrivateKey.generate()
    public = private.public_key()
    ca_cert, ca_key = load_ca(CertifiedKey(ca_cert_pem, ca_key_pem))
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, f"{cluster_name} audit signing key"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, f"made by KMA {kma_id}"),
        ]
    )
    start = now or datetime.now(UTC)
    cert = leaf_certificate(ca_cert, name, public, start, validity=VALIDITY, content_commitment=True).sign(
        ca_key, hashes.SHA256()
    )
    raw_public = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    raw_private = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return NewSigningKey(raw_public, cert.public_bytes(serialization.Encoding.PEM).decode(), raw_private)


class Signer:
    """Signs with one unwrapped audit key; kept in memory only while the KMA is unlocked."""

    def __init__(self, key_id: int, private_raw: bytes, public_key: bytes, certificate_pem: str) -> None:
        self.key_id = key_id
        self._private = ed25519.Ed25519PrivateKey.from_private_bytes(private_raw)
        self.public_key = public_key
        self.certificate_pem = certificate_pem

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)

    def __repr__(self) -> str:
        return f"Signer(key_id={self.key_id}, {key_fingerprint(self.public_key)})"


def signature_checks(public_key: bytes, signature: bytes, message: bytes) -> bool:
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def certificate_problem(certificate_pem: str, public_key: bytes, ca_cert_pem: bytes) -> str | None:
    """Why this certificate does not vouch for `public_key` under the CA, or None when it does."""
    try:
        cert = x509.load_pem_x509_certificate(certificate_pem.encode())
        ca = x509.load_pem_x509_certificate(ca_cert_pem)
    except ValueError:
        return "the signing key's certificate cannot be read"
    try:
        cert.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError):
        return "the signing key's certificate was not issued by this cluster's CA"
    certified = cert.public_key()
    if (
        not isinstance(certified, ed25519.Ed25519PublicKey)
        or certified.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw) != public_key
    ):
        return "the signing key's certificate is for another key"
    return None
