"""An enrolled agent renews its certificate itself, over mutual TLS, with no passphrase.

Before its certificate expires an agent sends a CSR for a new key (`POST /v1/renew` on the service
listener, kma/kmip/enrollment_http.py) on a connection where it presents that certificate: TLS has
verified it against the cluster CA and its validity. The KMA then signs the CSR only if the
certificate presented is the agent's current one (`agents.certificate_fingerprint`) and the
agent is enabled: a replaced certificate, a disabled agent or a copied-away older key renews
nothing. The new certificate becomes current; the one it replaced is kept as
`previous_certificate_fingerprint`, still accepted until it expires, so connections a drive has
open keep working while it moves to the new files. Enrolling again with a passphrase (a stolen
drive, a replaced one) clears it, so that path still cuts every earlier certificate.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kma.appliance import Appliance
from kma.crypto import CryptoError, load_certificate, sign_agent_csr
from kma.domain.actor import Actor
from kma.errors import Forbidden, KmaError, Unauthenticated, ValidationFailed
from kma.services.certificates.certificate_expiry import cluster_ca, settings
from kma.services.enrollment import MAX_CSR_BYTES, Enrolled, cluster_kmas
from kma.store import Stmt


def _agent_id(presented: x509.Certificate) -> str:
    try:
        usages = presented.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usages = x509.ExtendedKeyUsage([])
    names = presented.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if ExtendedKeyUsageOID.SERVER_AUTH in usages or not names:
        raise Forbidden("Only an agent's certificate can be renewed here.")
    return str(names[0].value)


def _refused(kma: Appliance, actor: Actor, error: KmaError) -> KmaError:
    """`error`, audited (an agent's refused renewal is in its history)."""
    kma.audit(actor, "agent.renew", f"refused: {error.message}", subject=("agent", actor.entity_id))
    error.audited = True
    return error


def renew(
    kma: Appliance, presented_der: bytes, csr_pem: bytes, address: str, own_service_address: str
) -> Enrolled:
    """The agent's next certificate, for the key in its CSR; the same answer as an enrollment."""
    presented = x509.load_der_x509_certificate(presented_der)
    agent_id = _agent_id(presented)
    actor = Actor(agent_id, address, kind="agent")
    old = hashlib.sha256(presented_der).hexdigest()
    row = kma.store.query_one(
        "SELECT enabled, site_id, certificate_fingerprint FROM agents WHERE id = ?", (agent_id,)
    )
    if row is None or row["certificate_fingerprint"] != old:
        raise _refused(
            kma,
            actor,
            Unauthenticated(
                f"This certificate is not agent {agent_id}'s current one (it was replaced); enroll again "
                "with a new enrollment passphrase."
            ),
        )
    if not row["enabled"]:
        raise _refused(
            kma, actor, Forbidden(f"Agent '{agent_id}' is disabled; an Operator must enable it first.")
        )
    if len(csr_pem) > MAX_CSR_BYTES:
        raise _refused(kma, actor, ValidationFailed("The certificate signing request is too large."))
    ca = cluster_ca(kma)
    try:
        validity = timedelta(seconds=settings(kma).agent_validity)
        cert_pem = sign_agent_csr(ca, csr_pem, agent_id, validity=validity)
    except (CryptoError, ValueError) as exc:
        raise _refused(
            kma, actor, ValidationFailed(f"The certificate signing request was refused: {exc}.")
        ) from None
    cert = load_certificate(cert_pem)
    new = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    now = kma.clock.now()
    kma.commit(
        actor,
        "agent.renew",
        [
            Stmt(
                "UPDATE agents SET certificate_fingerprint = :new, previous_certificate_fingerprint = :old, "
                "certificate_not_after = :not_after, updated_at = :now "
                "WHERE id = :id AND enabled = 1 AND certificate_fingerprint = :old",
                {
                    "new": new,
                    "old": old,
                    "not_after": int(cert.not_valid_after_utc.timestamp()),
                    "now": now,
                    "id": agent_id,
                },
                expect=1,
                refusal="the certificate was renewed or replaced a moment ago, or the agent was disabled",
            )
        ],
        f"agent '{agent_id}' renewed its certificate over mutual TLS: sha256 {new[:16]}..., valid until "
        f"{cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC, replacing {old[:16]}... (valid until "
        f"{presented.not_valid_after_utc:%Y-%m-%d %H:%M} UTC)",
        ("agent", agent_id),
    )
    return Enrolled(
        agent_id,
        row["site_id"],
        cert_pem.decode(),
        ca.cert_pem.decode(),
        cluster_kmas(kma, own_service_address),
    )
