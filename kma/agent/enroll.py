"""Enroll an agent: a new EC P-256 key stays here; the KMA signs its CSR.

Trust: the KMA's CA is fetched from the service listener (`GET /v1/ca`) and, when the operator
gives the fingerprint they read off the KMA (`kma serve` prints it), must match it; without one
the fingerprint is shown and trusted on first use, as the manager does. The passphrase is sent
only over a connection verified against that CA.

The output directory then holds everything a KMIP client needs, PyKMIP's included:

    agent.key    the private key (0600)       agent.pem   the certificate (CN = agent ID)
    ca.pem       the cluster CA               kmas.json   the cluster's KMAs, for discovery
    pykmip.conf  a [client] section for PyKMIP's ProxyKmipClient(config_file=...)
    agent.json   agent ID, site, KMA address and CA fingerprint
"""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kma.crypto import fingerprint, renews
from kma.datadir import write_private
from kma.kmip.tls import agent_context
from kma.limits import ENROLLMENT_DEADLINE


class EnrollmentError(Exception):
    pass


@dataclass(frozen=True)
class Enrolled:
    agent_id: str
    out_dir: Path
    ca_fingerprint: str
    kmas: list[dict[str, Any]]


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise EnrollmentError(f"'{address}' is not HOST:PORT")
    return host.strip("[]"), int(port)


def service_request(
    host: str, port: int, context: ssl.SSLContext, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    conn = http.client.HTTPSConnection(host, port, context=context, timeout=ENROLLMENT_DEADLINE + 15)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        payload: dict[str, Any] = json.loads(response.read() or b"{}")
    except (OSError, ssl.SSLError, http.client.HTTPException, ValueError) as exc:
        raise EnrollmentError(f"could not reach the KMA's service listener at {host}:{port}: {exc}") from None
    finally:
        conn.close()
    if response.status != 200:
        error = payload.get("error", {})
        raise EnrollmentError(error.get("message") or f"the KMA answered HTTP {response.status}")
    return payload


def fetch_ca(address: str) -> tuple[bytes, str, list[bytes]]:
    """The CA the service listener presents, and its earlier certificates (unverified: the caller
    compares fingerprints)."""
    host, port = split_address(address)
    unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    answer = service_request(host, port, unverified, "GET", "/v1/ca")
    ca_pem = answer["ca_pem"].encode()
    return ca_pem, fingerprint(ca_pem), [p.encode() for p in answer.get("previous_ca_pems", [])]


def pinned(ca_pem: bytes, found: str, previous: list[bytes], ca_fingerprint: str | None) -> str:
    """The fingerprint to record for `ca_pem`: it must be the expected CA's, or the renewal of the
    expected CA's certificate (the same name and key, kma/services/certificates/ca_renewal.py)."""
    if ca_fingerprint is None or found.upper() == ca_fingerprint.strip().upper():
        return found
    expected = [p for p in previous if fingerprint(p).upper() == ca_fingerprint.strip().upper()]
    if expected and renews(expected[0], ca_pem):
        return found
    raise EnrollmentError(f"the KMA presents CA {found}, not the expected {ca_fingerprint}; not enrolling")


def make_csr(agent_id: str) -> tuple[bytes, bytes]:
    """(private key PEM, CSR PEM) for a fresh EC P-256 key."""
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, agent_id)]))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem, csr.public_bytes(serialization.Encoding.PEM)


def pykmip_config(host: str, port: int, out: Path) -> str:
    """PyKMIP's client reads these keys; PROTOCOL_TLS negotiates TLS 1.3 (or 1.2)."""
    return (
        "[client]\n"
        f"host={host}\nport={port}\n"
        f"certfile={out / 'agent.pem'}\nkeyfile={out / 'agent.key'}\nca_certs={out / 'ca.pem'}\n"
        "cert_reqs=CERT_REQUIRED\nssl_version=PROTOCOL_TLS\n"
        "do_handshake_on_connect=True\nsuppress_ragged_eofs=True\ntimeout=30\n"
    )


def enroll(
    address: str,
    agent_id: str,
    passphrase: str,
    out_dir: Path,
    ca_fingerprint: str | None = None,
    drive: dict[str, str] | None = None,
) -> Enrolled:
    """`drive`: what the drive says it is (drive_model, drive_generation, library,
    library_partition; docs/media.md), recorded with its enrollment."""
    host, port = split_address(address)
    ca_pem, found, previous = fetch_ca(address)
    pinned(ca_pem, found, previous, ca_fingerprint)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "ca.pem").write_bytes(ca_pem)
    key_pem, csr_pem = make_csr(agent_id)
    try:
        verified = agent_context(out_dir / "ca.pem")
        answer = service_request(
            host,
            port,
            verified,
            "POST",
            "/v1/enroll",
            {"agent_id": agent_id, "passphrase": passphrase, "csr_pem": csr_pem.decode()}
            | ({"drive": drive} if drive else {}),
        )
    except (OSError, ssl.SSLError) as exc:
        raise EnrollmentError(f"the KMA's certificate does not match its CA: {exc}") from None
    if fingerprint(answer["ca_pem"].encode()) != found:
        raise EnrollmentError("the KMA answered with a different CA than it presented; not enrolling")
    write_private(out_dir / "agent.key", key_pem)
    (out_dir / "agent.pem").write_text(answer["certificate_pem"])
    (out_dir / "kmas.json").write_text(json.dumps(answer["kmas"], indent=2) + "\n")
    (out_dir / "pykmip.conf").write_text(pykmip_config(host, port, out_dir.resolve()))
    (out_dir / "agent.json").write_text(
        json.dumps(
            {
                "agent_id": agent_id,
                "site_id": answer.get("site_id"),
                "kma": address,
                "ca_fingerprint": found,
            },
            indent=2,
        )
        + "\n"
    )
    return Enrolled(agent_id, out_dir, found, answer["kmas"])
