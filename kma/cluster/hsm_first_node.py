"""A KMA whose master key is in an HSM becomes a cluster's first node (docs/hsm.md#clusters).

On its own, such a KMA seals every blob in two layers, `unlock_key.AES-GCM(token_key.AES-GCM(x))`,
and the token key never leaves its token, so no other KMA could open them. A cluster's blobs are
sealed under one master key every KMA opens: here it is the unlock key itself (the bytes the key
split already protects as `master_wrapped_by_root`, so the key split and the core security backups
stay as they are), held on this KMA only in its token.

At the first start after `kma convert-to-cluster`, before the store moves into rqlite, the copy that
rqlite boots from is sealed again (`seal_for_cluster`): every blob is opened through the token and
sealed under the cluster's master key alone; the unlock key goes into the token (wrapped to an RSA
key pair the token made for it, unwrapped there into a non-extractable key object labelled
`<key_label>-cluster`), and autonomous unlock is turned off (it would keep the master key on disk
under the local unlock key file). The old token key stays in the token: `kma.db.before-cluster` and
backups taken before need it. A failure before the boot leaves the KMA embedded, as it was.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from pathlib import Path

from kma.audit.signing import WRAP_CONTEXT
from kma.backup.fileformat import backup_key_context
from kma.crypto import CryptoError, WrappingKey
from kma.crypto.generations import MasterKeys
from kma.crypto.hsm import HsmMasterKey, Token
from kma.crypto.hsm_settings import CLUSTER_MASTER_KEY, HsmSettings, HsmUnavailable
from kma.datadir import DataDir
from kma.errors import ValidationFailed
from kma.vault import put_in_token


# (table, key column, blob column, context of a row's key) of every blob under the master key that
# outlives a quorum operation. Pending operations' escrow and enrolment blobs are refused instead.
def _key(key: object) -> str:
    return f"key:{key}"


def _ca(_: object) -> str:
    return "cluster-ca-key"


def _audit_signing(public_key: object) -> str:
    return f"{WRAP_CONTEXT}:{bytes(public_key).hex()}"  # type: ignore[call-overload]


SEALED: tuple[tuple[str, str, str, Callable[[object], str]], ...] = (
    ("keys", "id", "material_wrapped", _key),
    ("cluster", "id", "ca_key_wrapped", _ca),
    ("audit_signing_keys", "public_key", "private_wrapped", _audit_signing),
)


def cluster_settings(hsm: HsmSettings) -> HsmSettings:
    """The `[hsm]` table of the first node: the cluster's master key, under its own label."""
    return dataclasses.replace(hsm, key_label=f"{hsm.key_label}-cluster", holds=CLUSTER_MASTER_KEY)


def _unlock_key(data_dir: DataDir, db: sqlite3.Connection, kma_id: str) -> WrappingKey:
    row = db.execute("SELECT autounlock_master FROM kmas WHERE id = ? AND locked = 0", (kma_id,)).fetchone()
    if row is None or row[0] is None or not data_dir.unlock_key.exists():
        raise ValidationFailed(
            "A KMA with its master key in an HSM needs autonomous unlock on (and not "
            "locked) to become a cluster's first node."
        )
    try:
        local = WrappingKey(data_dir.unlock_key.read_bytes())
        return WrappingKey(local.unwrap(f"autounlock:{kma_id}", row[0]))
    except (CryptoError, ValueError) as exc:
        raise ValidationFailed(f"The local unlock key does not open the master key: {exc}") from None


def _reseal(db: sqlite3.Connection, old: WrappingKey, new: WrappingKey) -> None:
    pending = db.execute(
        "SELECT (SELECT count(*) FROM pending_quorum_ops WHERE escrow_wrapped IS NOT NULL) + "
        "(SELECT count(*) FROM key_split_enrolments WHERE share_wrapped IS NOT NULL)"
    ).fetchone()[0]
    if db.execute("SELECT count(*) FROM master_key_generations").fetchone()[0]:
        raise ValidationFailed(
            "A master key rotation is under way: let it end before this KMA becomes a cluster's first node."
        )
    if pending:
        raise ValidationFailed(
            "Quorum operations or key split enrolments are pending: finish or cancel "
            "them before this KMA becomes a cluster's first node."
        )
    for table, key, blob, context in SEALED:
        rows = db.execute(f"SELECT {key}, {blob} FROM {table} WHERE {blob} IS NOT NULL").fetchall()  # noqa: S608
        for row_key, sealed in rows:
            ctx = context(row_key)
            db.execute(
                f"UPDATE {table} SET {blob} = ? WHERE {key} = ?",  # noqa: S608
                (new.wrap(ctx, old.unwrap(ctx, bytes(sealed))), row_key),
            )
    # Backup keys were wrapped by the key split change under the quorum's master key: the unlock
    # key alone, already the cluster's format. Any other is sealed again.
    for generation, sealed in db.execute("SELECT generation, key_wrapped FROM backup_keys").fetchall():
        ctx = backup_key_context(int(generation))
        try:
            new.unwrap(ctx, bytes(sealed))
        except CryptoError:
            db.execute(
                "UPDATE backup_keys SET key_wrapped = ? WHERE generation = ?",
                (new.wrap(ctx, old.unwrap(ctx, bytes(sealed))), generation),
            )


def seal_for_cluster(data_dir: DataDir, hsm: HsmSettings, copy: Path) -> HsmSettings:
    """Seal the boot copy `copy` of kma.db for the cluster (see the module); returns the `[hsm]`
    table the node runs with from then on. Raises ValidationFailed with the reason."""
    kma_id = data_dir.identity().kma_id
    db = sqlite3.connect(copy, isolation_level=None)
    try:
        unlock_key = _unlock_key(data_dir, db, kma_id)
        try:
            token = Token(hsm)
            try:
                (generation,) = db.execute("SELECT master_generation FROM cluster").fetchone()
                old = MasterKeys(HsmMasterKey(unlock_key.raw(), token, token.master_key()), generation)
                db.execute("BEGIN IMMEDIATE")
                _reseal(db, old, MasterKeys(unlock_key, generation))  # blobs keep their generation
                db.execute("UPDATE kmas SET autounlock_master = NULL WHERE id = ?", (kma_id,))
            finally:
                token.close()
            settings = cluster_settings(hsm)
            put_in_token(settings, unlock_key)
        except HsmUnavailable as exc:
            raise ValidationFailed(str(exc)) from None
        db.execute("COMMIT")
    finally:
        db.close()
    return settings
