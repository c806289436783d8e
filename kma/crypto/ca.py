"""The cluster CA and the certificates it issues (EC P-256, ECDSA with SHA-256).

P-256/ECDSA keys work with TLS 1.2 ECDHE-ECDSA-AES-GCM suites (older tape drive firmware) and with
TLS 1.3. Every certificate is back-dated by a few minutes so that a KMA or agent whose clock runs
slightly behind does not reject a certificate issued a moment ago.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kma.crypto.errors import CryptoError

__all__ = [
    "CertifiedKey",
    "create_cluster_ca",
    "fingerprint",
    "issue_server_certificate",
    "leaf_certificate",
    "load_ca",
    "load_certificate",
    "renew_cluster_ca",
    "renews",
    "sign_agent_csr",
    "sign_kma_csr",
]

CA_VALIDITY = timedelta(days=20 * 365 + 5)  # 20 years, leap days included
SERVER_VALIDITY = timedelta(days=5 * 365 + 1)  # 5 years
CLOCK_SKEW = timedelta(minutes=5)
MIN_RSA_BITS = 2048
_AGENT_CURVES = (ec.SECP256R1, ec.SECP384R1, ec.SECP521R1)  # curves TLS clients negotiate

_GeneralName = x509.DNSName | x509.IPAddress


@dataclass(frozen=True)
class CertifiedKey:
    """A certificate and its private key, both PEM. The key is unencrypted PKCS#8: callers must
    protect it (e.g. wrap it under the cluster's key-encryption key)."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)


def _now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    # Naive datetimes are taken as UTC, the same convention as cryptography's builder.
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _common_name(value: str) -> x509.Name:
    if not value:
        raise ValueError("a common name is required")
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, value)])


def load_certificate(pem: bytes) -> x509.Certificate:
    """Parse one PEM certificate; CryptoError on anything else."""
    try:
        return x509.load_pem_x509_certificate(pem)
    except (ValueError, TypeError) as exc:
        raise CryptoError(f"not a PEM certificate: {exc}") from None


def fingerprint(cert_pem: bytes) -> str:
    """``SHA256:AB:CD:...`` of the DER encoding: the string users compare when pinning a CA."""
    der = load_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
    return "SHA256:" + hashlib.sha256(der).digest().hex(":").upper()


def load_ca(ca: CertifiedKey) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = load_certificate(ca.cert_pem)
    try:
        key = serialization.load_pem_private_key(ca.key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise CryptoError(f"the CA private key cannot be loaded: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CryptoError("the CA private key is not an EC key")
    if key.public_key() != cert.public_key():
        raise CryptoError("the CA private key does not match the CA certificate")
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise CryptoError("this certificate is not a cluster CA (made by create_cluster_ca)")
    return cert, key


def create_cluster_ca(cluster_name: str, now: datetime | None = None) -> CertifiedKey:
    """A self-signed CA for one cluster, valid 20 years; it may sign end-entity certificates only
    (path length 0)."""
    start = _now(now)
    key = _new_key()
    if not cluster_name:
        raise ValueError("a cluster name is required")
    name = _common_name(f"{cluster_name} cluster CA")
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - CLOCK_SKEW)
        .not_valid_after(start + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertifiedKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def renew_cluster_ca(ca: CertifiedKey, validity: timedelta, now: datetime | None = None) -> bytes:
    """The cluster CA's next certificate (PEM): the same name, key and key identifier, valid
    `validity` from now. Everything the CA's key signed (agents', KMAs' and audit signing keys'
    certificates, KMA entries) verifies under it unchanged, and a party still holding the previous
    certificate verifies what the CA signs from now on with that one until it expires: the new
    certificate is at once self-signed and signed by the old one, since both are the same key."""
    old, key = load_ca(ca)
    start = _now(now)
    builder = (
        x509.CertificateBuilder()
        .subject_name(old.subject)
        .issuer_name(old.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - CLOCK_SKEW)
        .not_valid_after(start + validity)
    )
    for extension in old.extensions:
        builder = builder.add_extension(extension.value, extension.critical)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def renews(trusted_pem: bytes, offered_pem: bytes) -> bool:
    """Whether `offered` is a renewal of the CA certificate `trusted` (`renew_cluster_ca`): the same
    name and key, and a valid self-signature, so only the holder of the trusted CA's key made it."""
    try:
        trusted, offered = load_certificate(trusted_pem), load_certificate(offered_pem)
        offered.verify_directly_issued_by(offered)
    except (CryptoError, ValueError, TypeError, InvalidSignature):
        return False
    return offered.subject == trusted.subject and offered.public_key() == trusted.public_key()


def leaf_certificate(
    ca_cert: x509.Certificate,
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey | ed25519.Ed25519PublicKey,
    start: datetime,
    *,
    validity: timedelta,
    usages: Sequence[x509.ObjectIdentifier] = (),
    content_commitment: bool = False,
) -> x509.CertificateBuilder:
    """An end-entity certificate under the cluster CA (server, agent, audit signing key): signs only,
    back-dated by CLOCK_SKEW, never valid beyond the CA itself. `content_commitment` marks a key
    whose signatures are evidence (the audit signing key)."""
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - CLOCK_SKEW)
        .not_valid_after(min(start + validity, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=content_commitment,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
    return builder.add_extension(
        x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False
    ).add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)


def _general_name(host: str) -> _GeneralName:
    host = host.strip()
    if not host:
        raise ValueError("an empty host name cannot go in a certificate")
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    return x509.DNSName(host.lower())


def _kma_names(hosts: Sequence[str]) -> list[_GeneralName]:
    names: list[_GeneralName] = []
    for host in [*hosts, "localhost", "127.0.0.1"]:
        general_name = _general_name(host)
        if general_name not in names:
            names.append(general_name)
    return names


def issue_server_certificate(
    ca: CertifiedKey,
    common_name: str,
    hosts: Sequence[str],
    now: datetime | None = None,
    validity: timedelta = SERVER_VALIDITY,
) -> CertifiedKey:
    """A KMA's TLS certificate, valid 5 years unless `validity` says otherwise (kma.toml
    [certificates]), for both listeners and for replication.

    It names every host given plus ``localhost`` and ``127.0.0.1`` (the bundled local KMA and the
    installer connect over loopback), and allows serverAuth and clientAuth because KMAs
    authenticate to each other with it when replicating.
    """
    names = _kma_names(hosts)
    ca_cert, ca_key = load_ca(ca)
    key = _new_key()
    cert = (
        leaf_certificate(
            ca_cert,
            _common_name(common_name),
            key.public_key(),
            _now(now),
            validity=validity,
            usages=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
        )
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return CertifiedKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _agent_public_key(csr_pem: bytes) -> ec.EllipticCurvePublicKey | rsa.RSAPublicKey:
    try:
        csr = x509.load_pem_x509_csr(csr_pem)
        public_key = csr.public_key()
    except (ValueError, TypeError) as exc:
        raise CryptoError(f"not a valid PEM certificate signing request: {exc}") from None
    if not csr.is_signature_valid:
        raise CryptoError("the certificate signing request's signature is invalid")
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        if not isinstance(public_key.curve, _AGENT_CURVES):
            raise CryptoError(f"unsupported elliptic curve {public_key.curve.name}")
        return public_key
    if isinstance(public_key, rsa.RSAPublicKey):
        if public_key.key_size < MIN_RSA_BITS:
            raise CryptoError(
                f"RSA key of {public_key.key_size} bits refused, at least {MIN_RSA_BITS} needed"
            )
        return public_key
    raise CryptoError("only EC (P-256/384/521) or RSA (2048 bits or more) agent keys are accepted")


def sign_agent_csr(
    ca: CertifiedKey,
    csr_pem: bytes,
    agent_id: str,
    now: datetime | None = None,
    days: int = 3650,
    validity: timedelta | None = None,
) -> bytes:
    """Issue an enrolling agent's client certificate (PEM) for the key in its CSR.

    The subject is always ``CN=agent_id``: the KMA decides who the agent is, whatever the CSR
    claims. The CSR's own signature proves the agent holds the private key. `validity`, when
    given (kma.toml [certificates] agent_validity), replaces `days`.
    """
    if validity is None:
        if days < 1:
            raise ValueError(f"validity must be at least one day, got {days}")
        validity = timedelta(days=days)
    if validity <= timedelta(0):
        raise ValueError(f"validity must be positive, got {validity}")
    public_key = _agent_public_key(csr_pem)
    ca_cert, ca_key = load_ca(ca)
    cert = leaf_certificate(
        ca_cert,
        _common_name(agent_id),
        public_key,
        _now(now),
        validity=validity,
        usages=[ExtendedKeyUsageOID.CLIENT_AUTH],
    ).sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM)


def sign_kma_csr(
    ca: CertifiedKey,
    csr_pem: bytes,
    kma_id: str,
    hosts: Sequence[str],
    now: datetime | None = None,
    validity: timedelta = SERVER_VALIDITY,
) -> bytes:
    """A joining KMA's certificate (PEM) for the key in its CSR: the same names, usages and
    validity as `issue_server_certificate`, but the private key never left the joining machine.
    The subject is ``CN=kma_id`` whatever the CSR claims."""
    public_key = _agent_public_key(csr_pem)
    ca_cert, ca_key = load_ca(ca)
    cert = (
        leaf_certificate(
            ca_cert,
            _common_name(kma_id),
            public_key,
            _now(now),
            validity=validity,
            usages=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
        )
        .add_extension(x509.SubjectAlternativeName(_kma_names(hosts)), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)
