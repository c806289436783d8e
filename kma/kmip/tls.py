"""TLS for the service listener: what agents in the field need, and nothing weaker.

- The KMA's certificate is EC P-256 (ECDSA/SHA-256), issued by the cluster CA at `kma init`.
- TLS 1.3 with OpenSSL's suites (AES-256-GCM, ChaCha20-Poly1305, AES-128-GCM): PyKMIP's client
  with its defaults, current Go and Java clients.
- TLS 1.2 with ECDHE-ECDSA and AES-GCM only (forward secrecy, AEAD): what PyKMIP offers with its
  TLS 1.2 settings, Go's crypto/tls and Java's JSSE all have in common with an ECDSA certificate.
  No CBC, no RSA key exchange, no SHA-1 MACs, no TLS 1.0/1.1, no compression, no renegotiation.
- Client certificates are verified against the cluster CA only, strictly (RFC 5280). They are
  optional at the TLS layer because enrollment comes before an agent has one; KMIP itself
  refuses a connection without one (Authentication Not Successful).
"""

from __future__ import annotations

import ssl
from pathlib import Path

TLS12_CIPHERS = "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"


def service_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION | ssl.OP_CIPHER_SERVER_PREFERENCE
    ctx.load_cert_chain(str(cert), str(key))
    ctx.load_verify_locations(str(ca))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    return ctx


def agent_context(
    ca: Path, cert: Path | None = None, key: Path | None = None, check_hostname: bool = False
) -> ssl.SSLContext:
    """What `kma agent` (simulator, enrollment) and the bench use to reach the service listener.

    The server is verified against the pinned cluster CA, which certifies KMAs only as servers
    (agents' certificates are for client authentication): any KMA of the cluster may serve the
    agent, under whatever address it is reached by, as with tape drives and PyKMIP's client.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(str(ca))
    ctx.check_hostname = check_hostname
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    return ctx
