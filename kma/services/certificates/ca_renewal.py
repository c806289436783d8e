"""The cluster CA rolls over before its certificate expires (issue 38; docs/security.md).

The CA's certificate is renewed, not its key: a new self-signed certificate for the same name,
key and key identifier, valid `ca_validity` from now (kma.toml [certificates]). That is the
equivalent of cross-signing the new CA with the old one and the old with the new, without a second
key: every certificate the CA signed before (agents', KMAs', audit signing keys') and every KMA
entry it signed verify under the new certificate unchanged, and a drive or manager that still
trusts only the old certificate verifies everything the CA signs from now on with it, until the old
certificate's own end. So nothing stops at the rollover, and each party moves to the new
certificate at its next contact: an agent as it renews its certificate (the answer carries the new
CA, `kma agent` saves it), a manager at sign-in (kms_client accepts a renewal of the CA it pinned).

When: automatically once the CA certificate has `ca_renew_before` left (5 years by default), by
whichever KMA's certificate watch sees it first, or when a Security Officer decides, under quorum
(kma/services/quorum/ca_rollover.py). Each KMA then follows within `check_every`: it writes the new
certificate to its trust file, loads it into its listeners and re-issues its listener certificate in
place (it ended with the old CA certificate). A cluster node's Raft trust is not touched: it pins node
certificates, not the CA (kma/cluster/trust.py); a node certificate renews `renew_before` its end as
always (kma/cluster/node_renewal.py), from then on under the new CA certificate, without restarting
every rqlited at the rollover. The certificate it replaces is kept in
`ca_certificates`: `GET /ca` shows it to a client that pinned it, backups keep naming the cluster by
its first one, and it is retired (left out of the trust files) when it expires.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kma.appliance import Appliance
from kma.crypto import CertifiedKey, WrappingKey, renew_cluster_ca
from kma.datadir import write_private
from kma.errors import Conflict
from kma.services.certificates.certificate_expiry import (
    first_certificate,
    real_now,
    serial_and_expiry,
    settings,
)
from kma.services.change import Change
from kma.store import Stmt


def day(moment: int) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M UTC")


def renewal(kma: Appliance, master: WrappingKey, why: str) -> Change:
    """The change that gives the cluster CA its next certificate (`master` opens the CA's key)."""
    row = kma.store.query_one("SELECT ca_cert_pem, ca_key_wrapped FROM cluster WHERE id = 1")
    assert row is not None
    old_pem = row["ca_cert_pem"]
    ca = CertifiedKey(old_pem.encode("ascii"), master.unwrap("cluster-ca-key", row["ca_key_wrapped"]))
    new_pem = renew_cluster_ca(ca, timedelta(seconds=settings(kma).ca_validity)).decode("ascii")
    old_serial, old_end = serial_and_expiry(old_pem)
    serial, end = serial_and_expiry(new_pem)
    statements = [
        Stmt(
            "INSERT INTO ca_certificates (serial, cert_pem, not_after, replaced_at) VALUES (?, ?, ?, ?)",
            (old_serial, old_pem, old_end, real_now()),
        ),
        Stmt(
            "UPDATE cluster SET ca_cert_pem = ? WHERE id = 1 AND ca_cert_pem = ?",
            (new_pem, old_pem),
            expect=1,
            refusal="the cluster CA certificate was renewed a moment ago",
        ),
    ]
    message = (
        f"renewed the cluster CA certificate ({why}): serial {serial}, valid until {day(end)}, replaces "
        f"{old_serial} (valid until {day(old_end)}); the same name and key, so drives and managers that "
        "trust the old certificate keep working until it expires; each KMA re-issues its certificates "
        "under the new one, agents take it as they renew"
    )
    return Change("cluster.ca_renew", statements, message, ("cluster", "ca"))


def renew_if_due(kma: Appliance) -> bool:
    """Renew the CA certificate once `ca_renew_before` is reached; True when this KMA did."""
    if kma.vault.locked:
        return False
    pem = kma.store.scalar("SELECT ca_cert_pem FROM cluster WHERE id = 1")
    _, end = serial_and_expiry(str(pem))
    left = end - real_now()
    if left > settings(kma).ca_renew_before:
        return False
    change = renewal(kma, kma.vault.master(), f"{max(left, 0)} s before it expires")
    try:
        kma.commit(kma.itself, change.operation, change.statements, change.message, change.subject)
    except Conflict:  # another KMA renewed it a moment ago: this one follows it
        return False
    return True


def trusted_pem(kma: Appliance) -> str:
    """What this KMA trusts for the cluster CA: its current certificate, then the earlier ones not
    yet expired (a client or agent certificate verifies under either: the same key)."""
    now = real_now()
    current = str(kma.store.scalar("SELECT ca_cert_pem FROM cluster WHERE id = 1"))
    earlier = kma.store.query(
        "SELECT cert_pem FROM ca_certificates WHERE not_after > ? ORDER BY replaced_at DESC", (now,)
    )
    return current + "".join(r["cert_pem"] for r in earlier)


def previous(kma: Appliance) -> list[str]:
    """The CA's earlier certificates, newest first (`GET /ca`: a client that pinned one of them)."""
    rows = kma.store.query("SELECT cert_pem FROM ca_certificates ORDER BY replaced_at DESC")
    return [r["cert_pem"] for r in rows]


def _replace(path: Path, text: str) -> None:
    fresh = path.with_name(path.name + ".new")
    write_private(fresh, text.encode("ascii"))
    os.replace(fresh, path)


def follow(kma: Appliance) -> bool:
    """Bring this KMA's trust files up to the cluster's CA certificates (a new one first, an expired
    one retired); True when the current one changed: the caller then re-issues this KMA's own
    certificates under it."""
    wanted = trusted_pem(kma)
    had = kma.data_dir.ca_cert.read_text(encoding="ascii")
    if had.strip() == wanted.strip():
        return False
    _replace(kma.data_dir.ca_cert, wanted)
    return first_certificate(had).strip() != first_certificate(wanted).strip()
