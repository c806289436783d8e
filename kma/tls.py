"""The one TLS policy of both listeners: what agents and managers need, and nothing weaker.

- The KMA's certificate is EC P-256 (ECDSA/SHA-256), issued by the cluster CA at `kma init`.
- TLS 1.3 with OpenSSL's suites (AES-256-GCM, ChaCha20-Poly1305, AES-128-GCM): PyKMIP's client
  with its defaults, current Go and Java clients, the manager (httpx).
- TLS 1.2 with ECDHE-ECDSA and AES-GCM only (forward secrecy, AEAD): what PyKMIP offers with its
  TLS 1.2 settings, Go's crypto/tls and Java's JSSE all have in common with an ECDSA certificate.
  No CBC, no RSA key exchange, no SHA-1 MACs, no TLS 1.0/1.1, no compression, no renegotiation.
- On the service listener, client certificates are verified against the cluster CA only,
  strictly (RFC 5280). They are optional at the TLS layer because enrollment comes before an
  agent has one; KMIP itself refuses a connection without one (Authentication Not Successful).
  The management listener asks for none: managers sign in with a passphrase.

docs/tls.md explains each choice.
"""

from __future__ import annotations

import ssl
from pathlib import Path

TLS12_CIPHERS = "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"


def server_context(cert: Path, key: Path, client_ca: Path | None = None) -> ssl.SSLContext:
    """The listeners' context; with `client_ca`, clients may present a certificate it issued."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION | ssl.OP_CIPHER_SERVER_PREFERENCE
    ctx.load_cert_chain(str(cert), str(key))
    if client_ca is not None:
        ctx.load_verify_locations(str(client_ca))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    return ctx
