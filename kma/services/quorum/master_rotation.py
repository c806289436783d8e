"""Rotating the master key: a quorum operation that makes the next generation (docs/backups.md).

Its batch (one audit event) makes generation N+1, a fresh random key wrapped under the quorum's root
secret in place of generation N; keeps N under N+1 and N+1 under N (`master_key_generations`) while
the background re-wrap runs (kma/services/master_key/master_rewrap.py); seals the key split members'
rows again under the new row MAC key; and, as a key split change does, starts a new key split
generation with a new backup key, so that the core security backups taken before are superseded and
database backups wait for a new one (a database backup from now on holds blobs of N+1, which an
older core security backup cannot open). The key split itself (its members, passphrases and shares)
is unchanged, so approvals already given to pending operations still count.

Refused while a key split change is pending (its new split wraps the master key it was submitted
under) or another rotation runs. A KMA whose HSM token holds the cluster's master key takes the new
generation into its token when it takes it up (docs/hsm.md#master-key-rotation-with-an-hsm-in-a-cluster).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.backup.fileformat import DATABASE_BACKUP, backup_key_context
from kma.crypto import WrappingKey
from kma.crypto.generations import FIRST, MasterKeys
from kma.crypto.hsm_settings import HsmUnavailable
from kma.errors import Conflict
from kma.services.change import Change
from kma.services.integrity.row_macs import SPLIT_MEMBERS, seal
from kma.services.master_key.master_keys import key_context, next_context
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt
from kma.vault import row_mac_key, wrap_master_for_root

log = logging.getLogger(__name__)

SCHEMA_WITH_GENERATIONS = 55  # migration 0055: a release that reads blobs of any generation


# Blobs under the master key, by table: counted at the start, re-wrapped by
# kma/services/master_key/master_rewrap.py.
BLOB_COUNT = (
    "SELECT (SELECT count(*) FROM keys WHERE material_wrapped IS NOT NULL)"
    " + (SELECT count(*) FROM audit_signing_keys) + (SELECT count(*) FROM backup_keys) + 1"
    " + (SELECT count(*) FROM pending_quorum_ops WHERE escrow_wrapped IS NOT NULL)"
    " + (SELECT count(*) FROM key_split_enrolments WHERE share_wrapped IS NOT NULL)"
)


def refusal(kma: Appliance, op_id: str = "") -> str | None:
    """Why a rotation cannot start now, or None (`op_id`: a key split change that rotates too)."""
    if kma.store.scalar("SELECT count(*) FROM master_key_generations"):
        return "A master key rotation is still under way: it must end before another starts."
    if kma.store.scalar(
        "SELECT count(*) FROM pending_quorum_ops WHERE state = 'pending' AND type = "
        "'change_key_split' AND id <> ?",
        (op_id,),
    ):
        return (
            "A key split change is pending: it holds the master key as it was when submitted. Let it run "
            "(the rotation can follow it) or delete it first."
        )
    rows = kma.store.query(
        "SELECT id, schema_version FROM kmas WHERE removed_at IS NULL AND "
        "awaiting_join = 0 AND witness = 0 ORDER BY id"  # a witness opens no blob
    )
    old = [r["id"] for r in rows if (r["schema_version"] or 0) < SCHEMA_WITH_GENERATIONS]
    if old:
        return (
            f"Every KMA must run a release that knows master key generations first; still "
            f"older: {', '.join(old)}."
        )
    return None


def _prepare(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    if why := refusal(kma):
        raise Conflict(why)
    generation = int(kma.store.scalar("SELECT master_generation FROM cluster") or FIRST)
    summary = (
        f"Rotate the master key: make generation {generation + 1}, re-wrap every stored "
        f"key and secret under it "
        f"in the background, then destroy generation {generation}; a new core security backup will be needed"
    )
    return Prepared(
        summary, {"to_generation": generation + 1}, {"to_generation": generation + 1}, exclusive=True
    )


def first_backup_key(old: WrappingKey, new: MasterKeys, now: int) -> Stmt:
    """The first key split generation's backup key is derived from the master key, which is going:
    kept under the new one (once; a later rotation re-wraps it), for the backups taken under it."""
    first = new.wrap(backup_key_context(FIRST), old.derive(DATABASE_BACKUP).raw())
    return Stmt(
        "INSERT OR IGNORE INTO backup_keys (generation, key_wrapped, created_at) VALUES (?, ?, ?)",
        (FIRST, first, now),
    )


def start_statements(kma: Appliance, op_id: str, old: WrappingKey, new: MasterKeys) -> list[Stmt]:
    """What starts a rotation from `old` to `new` (both of the quorum's opening), besides the new
    `master_wrapped_by_root` and key split generation its operation writes: the generation itself,
    the two keys under each other while the re-wrap runs, and the rotation's row."""
    generation, now = new.generation, kma.clock.now()
    requested_by = kma.store.scalar("SELECT requested_by FROM pending_quorum_ops WHERE id = ?", (op_id,))
    return [
        Stmt(
            "UPDATE cluster SET master_generation = ? WHERE id = 1 AND master_generation = ?",
            (generation, generation - 1),
            expect=1,
            refusal="the master key was rotated meanwhile",
        ),
        Stmt(
            "INSERT INTO master_key_generations (generation, key_wrapped, next_wrapped, created_at) "
            "VALUES (?, ?, ?, ?)",
            (
                generation - 1,
                new.current.wrap(key_context(generation - 1), old.raw()),
                old.wrap(next_context(generation - 1), new.current.raw()),
                now,
            ),
        ),
        Stmt(
            "INSERT INTO master_key_rotations (to_generation, op_id, started_at, started_by, blobs_total) "
            f"VALUES (?, ?, ?, ?, ({BLOB_COUNT}))",
            (generation, op_id, now, str(requested_by or "quorum")),
        ),
        first_backup_key(old, new, now),
    ]


def take_up(kma: Appliance, old: WrappingKey, new: MasterKeys) -> None:
    """Once the rotation is committed: this KMA (if unlocked) wraps under the new generation at once."""
    from kma.services.master_key.master_rewrap import rewrap  # the worker imports this module's BLOB_COUNT

    if not kma.vault.locked:
        try:
            kma.vault.unlock(new.current, new.generation, {new.generation - 1: old})
        except HsmUnavailable as exc:  # its token did not take the new generation: the re-wrap tries again
            log.error("the HSM did not take master key generation %d up yet: %s", new.generation, exc)
    rewrap(kma).wake()


def _execute(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    if why := refusal(kma):
        raise Conflict(why)
    to_generation = int(p["to_generation"])
    if quorum.master.generation != to_generation - 1:
        raise Conflict(f"The master key is no longer of generation {to_generation - 1}.")
    old = quorum.master.current
    new = MasterKeys(WrappingKey(quorum.master.random(32)), to_generation)
    split_generation, now = int(kma.store.scalar("SELECT split_generation FROM cluster")), kma.clock.now()
    mac_key = row_mac_key(new)
    members = kma.store.query(
        "SELECT name, share_sealed FROM key_split_members WHERE generation = ?", (split_generation,)
    )
    statements = [
        Stmt(
            "UPDATE cluster SET master_wrapped_by_root = ?, split_generation = ? "
            "WHERE id = 1 AND split_generation = ?",
            (wrap_master_for_root(quorum.root_secret, new.current), split_generation + 1, split_generation),
            expect=1,
            refusal="the key split changed meanwhile",
        ),
        *start_statements(kma, op_id, old, new),
        Stmt(
            "INSERT INTO backup_keys (generation, key_wrapped, created_at) VALUES (?, ?, ?)",
            (
                split_generation + 1,
                new.wrap(backup_key_context(split_generation + 1), WrappingKey.generate().raw()),
                now,
            ),
        ),
        Stmt(
            "UPDATE key_split_members SET generation = ? WHERE generation = ?",
            (split_generation + 1, split_generation),
        ),
        *(
            seal(
                mac_key,
                SPLIT_MEMBERS,
                {"name": m["name"], "share_sealed": m["share_sealed"], "generation": split_generation + 1},
            )
            for m in members
        ),
        # The same shares rebuild the same root secret: approvals given meanwhile still count.
        Stmt(
            "UPDATE pending_quorum_ops SET split_generation = ? WHERE state = 'pending' AND "
            "split_generation = ?",
            (split_generation + 1, split_generation),
        ),
    ]
    message = (
        f"started the master key rotation to generation {to_generation}: every stored key and secret is "
        f"re-wrapped in the background, then generation {to_generation - 1} is destroyed; the key split is "
        f"unchanged (generation {split_generation + 1}); database backups from now on use a new backup key: "
        "take a new core security backup"
    )
    change = Change("cluster.master_key_rotation", statements, message, ("cluster", "master_key"))
    return Outcome(change, lambda: take_up(kma, old, new))


ROTATE_MASTER_KEY = OpType("rotate_master_key", _prepare, _execute)
