"""Certificates of KMAs that were removed or replaced stop working at once on both listeners.

Every certificate the cluster CA issues at a join is recorded by serial (`kma_certificates`), and
revoked when its KMA is removed or its entry is taken over by a new machine. A KMA certificate is
also refused when its subject names a removed KMA (the first KMA's certificates come from set-up,
before there was anyone to record them). The check is one primary-key lookup in the local store,
made once per TLS connection that presents a client certificate.
"""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kma.appliance import Appliance


def _is_kma_certificate(cert: x509.Certificate) -> bool:
    """KMA certificates are for servers too; agents' are client-only."""
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return False
    return ExtendedKeyUsageOID.SERVER_AUTH in usages


def refusal(kma: Appliance, der: bytes) -> str | None:
    """Why a client certificate must be refused, or None."""
    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError:
        return None  # TLS verified it already; nothing of ours
    serial = format(cert.serial_number, "x")
    row = kma.store.query_one(
        "SELECT kma_id FROM kma_certificates WHERE serial = ? AND revoked_at IS NOT NULL", (serial,)
    )
    if row is not None:
        return f"certificate {serial} of KMA '{row['kma_id']}' was revoked (the KMA was removed or replaced)"
    if not _is_kma_certificate(cert):
        return None
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    kma_id = str(names[0].value) if names else ""
    if kma.store.scalar("SELECT 1 FROM kmas WHERE id = ? AND removed_at IS NOT NULL", (kma_id,)):
        return f"the certificate of KMA '{kma_id}', which was removed from the cluster"
    return None
