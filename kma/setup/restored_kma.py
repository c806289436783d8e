"""The restored KMA's own part of a restore (kma/setup/restore.py checks the backups first): in the
staging folder, its TLS certificate from the cluster CA for this machine's addresses, its identity,
its unlock key, the backup file kept among its backups, and one audited commit that moves its entry
to its new addresses, ends every session and withholds the pool keys the backup held as unassigned.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kma.backup.fileformat import (
    DATABASE_SUFFIX,
    BadBackup,
    DatabaseBackup,
    file_sha256,
)
from kma.clock import Clock
from kma.crypto import (
    CertifiedKey,
    WrappingKey,
    entry_signature,
    fingerprint,
    issue_server_certificate,
)
from kma.crypto.hsm_settings import HsmSettings
from kma.datadir import DataDir, Identity, write_private
from kma.domain.actor import Actor
from kma.steps import step
from kma.store import Stmt


@dataclass(frozen=True)
class Restored:
    cluster_name: str
    kma_id: str
    backup_id: str
    backup_created_at: int
    keys: int
    audit_events: int
    ca_fingerprint: str
    master_key: str  # where the restored KMA holds the master key, as its restore event says
    master: WrappingKey | None = field(default=None, repr=False, compare=False)  # serves unlocked at once


def _own_entry_signed(
    kma: Any, ca_key_pem: bytes, management_address: str, service_address: str
) -> tuple[str, str]:
    """The signatures of the restored KMA's entry (`kma`: its Appliance) at its new addresses (the
    backup's entry is genuine)."""
    sql = "{} WHERE id = ?"
    own = kma.store.query_one(sql.format(entry_signature.SELECT), (kma.kma_id,))
    routes = kma.store.query_one(sql.format(entry_signature.SELECT_ROUTES), (kma.kma_id,))
    return (
        entry_signature.sign(ca_key_pem, {**dict(own or {}), "service_address": service_address}),
        entry_signature.sign_routes(
            ca_key_pem, {**dict(routes or {}), "management_address": management_address}
        ),
    )


def set_up(
    stage: DataDir,
    backup: DatabaseBackup,
    master: WrappingKey,
    addresses: tuple[str, str],
    autonomous_unlock: bool,
    tokens: tuple[HsmSettings | None, dict[str, str] | None],
    clock: Clock | None,
) -> Restored:
    """`tokens`: the restored KMA's token, and what the backup records of the one that made it."""
    hsm, recorded = tokens
    master_key = f"in the HSM {hsm.token_name}" if hsm else "in software"
    if recorded and not hsm:
        master_key += f" (the KMA that made the backup held it in its HSM {recorded.get('token', '?')})"
    kma_id, site_id, cluster_name, ca = _read_the_restored_cluster(stage, backup, master)
    _issue_the_server_certificate(stage, ca, kma_id, addresses)
    _write_the_identity(stage, Identity(kma_id, site_id, *addresses), hsm)
    autounlock = _keep_the_autonomous_unlock_key(stage, kma_id, master, autonomous_unlock)
    kept = _keep_the_backup_file(stage, backup)
    entry = (cluster_name, ca, addresses, autounlock, master_key)
    _record_the_restore(stage, clock, backup, kept, entry, autonomous_unlock)
    counts = backup.manifest["counts"]
    return Restored(
        cluster_name,
        kma_id,
        str(backup.manifest["backup_id"]),
        int(backup.manifest["created_at"]),
        int(counts["keys"]),
        int(counts["audit_events"]),
        fingerprint(ca.cert_pem),
        master_key,
    )


@step("restore")
def _read_the_restored_cluster(
    stage: DataDir, backup: DatabaseBackup, master: WrappingKey
) -> tuple[str, str, str, CertifiedKey]:
    """(KMA ID, its site, the cluster's name, the cluster CA) as the restored database holds them."""
    kma_id = str(backup.manifest["kma_id"])
    conn = sqlite3.connect(stage.db)
    try:
        site = conn.execute("SELECT site_id FROM kmas WHERE id = ?", (kma_id,)).fetchone()
        cluster_name, ca_pem, ca_key_wrapped = conn.execute(
            "SELECT name, ca_cert_pem, ca_key_wrapped FROM cluster"
        ).fetchone()
    finally:
        conn.close()
    if site is None:
        raise BadBackup(f"The backup names KMA '{kma_id}', which its own database does not hold.")
    ca = CertifiedKey(ca_pem.encode("ascii"), master.unwrap("cluster-ca-key", ca_key_wrapped))
    return kma_id, str(site[0]), str(cluster_name), ca


@step("restore")
def _issue_the_server_certificate(
    stage: DataDir, ca: CertifiedKey, kma_id: str, addresses: tuple[str, str]
) -> None:
    hosts = {a.rpartition(":")[0].strip("[]") for a in addresses}
    server = issue_server_certificate(ca, kma_id, sorted(h for h in hosts if h not in ("0.0.0.0", "::")))
    stage.ca_cert.parent.mkdir(parents=True, exist_ok=True)
    stage.ca_cert.write_bytes(ca.cert_pem)
    stage.server_cert.write_bytes(server.cert_pem + ca.cert_pem)
    write_private(stage.server_key, server.key_pem)


@step("restore")
def _write_the_identity(stage: DataDir, identity: Identity, hsm: HsmSettings | None) -> None:
    stage.identity_file.write_text(identity.to_toml() + (hsm.to_toml() if hsm else ""), encoding="utf-8")


@step("restore")
def _keep_the_autonomous_unlock_key(
    stage: DataDir, kma_id: str, master: WrappingKey, autonomous_unlock: bool
) -> bytes | None:
    if not autonomous_unlock:
        return None
    local = WrappingKey.generate()
    write_private(stage.unlock_key, local.raw())
    return local.wrap(f"autounlock:{kma_id}", master.raw())


@step("restore")
def _keep_the_backup_file(stage: DataDir, backup: DatabaseBackup) -> Path:
    """The backup restored from, among the restored KMA's backups: it holds every key it copied."""
    kept = stage.root / "backups" / f"{backup.manifest['backup_id']}{DATABASE_SUFFIX}"
    kept.parent.mkdir(mode=0o700)
    shutil.copyfile(backup.path, kept)
    os.chmod(kept, 0o600)
    return kept


@step("restore")
def _record_the_restore(
    stage: DataDir,
    clock: Clock | None,
    backup: DatabaseBackup,
    kept: Path,
    entry: tuple[str, CertifiedKey, tuple[str, str], bytes | None, str],
    autonomous_unlock: bool,
) -> None:
    """One audited commit: this KMA's entry at its new addresses, the backup, the pool withheld."""
    from kma.appliance import Appliance
    from kma.cluster.store import open_store
    from kma.services.backups import withheld_warning

    cluster_name, ca, (management_address, service_address), autounlock, master_key = entry
    manifest = backup.manifest
    kma_id = str(manifest["kma_id"])
    kma = Appliance(stage, open_store, clock)  # brings an older backup's schema up to date
    try:
        now = kma.clock.now()
        counts = manifest["counts"]
        installer = Actor("installer", "local console", kind="kma")
        withheld = int(kma.store.scalar(f"SELECT count(*) FROM keys WHERE {UNASSIGNED}"))
        signature, route_signature = _own_entry_signed(kma, ca.key_pem, management_address, service_address)
        kma.commit(
            installer,
            "backup.restore",
            [
                Stmt(
                    "UPDATE kmas SET management_address = ?, service_address = ?, autounlock_master = ?, "
                    "master_generation = (SELECT master_generation FROM cluster), "
                    "locked = 0, updated_at = ?, signature = ?, route_signature = ? WHERE id = ?",
                    (
                        management_address,
                        service_address,
                        autounlock,
                        now,
                        signature,
                        route_signature,
                        kma_id,
                    ),
                    expect=1,
                ),
                Stmt("DELETE FROM sessions"),
                # The backup restored from holds every key it copied: they stay Ready.
                Stmt(
                    "INSERT INTO backups (id, kma_id, created_at, created_by, scheduled, file_name, size, "
                    "sha256, schema_version, keys, audit_events) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)",
                    (
                        manifest["backup_id"],
                        kma_id,
                        manifest["created_at"],
                        manifest["created_by"],
                        kept.name,
                        kept.stat().st_size,
                        file_sha256(kept),
                        backup.schema_version,
                        counts["keys"],
                        counts["audit_events"],
                    ),
                ),
                Stmt(
                    "UPDATE keys SET backup_mark = ? "
                    "WHERE backup_mark IS NULL AND material_wrapped IS NOT NULL",
                    (manifest["created_at"],),
                ),
                # One key, one tape: every pool key the backup holds as unassigned may have been issued
                # after it was taken (to a tape this backup does not know of). None is issued again;
                # each stays readable by its ID (kma/services/agent_keys/key_access.py READABLE_BY_ID),
                # and the pool is made anew.
                Stmt(f"UPDATE keys SET withheld_at = ? WHERE {UNASSIGNED}", (now,)),
            ],
            f"restored KMA '{kma_id}' of cluster '{cluster_name}' from backup {manifest['backup_id']} "
            f"(made {manifest['created_at']}: {counts['keys']} keys, {counts['audit_events']} audit events) "
            f"with a quorum of the key split; autonomous unlock {'on' if autonomous_unlock else 'off'}; "
            f"the master key {master_key}" + (f"; {withheld_warning(withheld)}" if withheld else ""),
            ("kma", kma_id),
        )
    finally:
        kma.close()


# The pool keys a backup holds as unassigned, of every KMA (any of them may have issued its own after).
UNASSIGNED = "activated_at IS NULL AND destroyed_at IS NULL AND key_group_id IS NULL AND withheld_at IS NULL"
