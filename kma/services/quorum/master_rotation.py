"""Rotating the master key: a quorum operation that makes the next generation (docs/backups.md).

Its batch (one audit event) makes generation N+1, a fresh random key wrapped under the quorum's root
secret in place of generation N; keeps N under N+1 and N+1 under N (`master_key_generations`) while
the background re-wrap runs (kma/services/master_rewrap.py); seals the key split members' rows again
under the new row MAC key; and, as a key split change does, starts a new key split generation with a
new backup key, so that the core security backups taken before are superseded and database backups
wait for a new one (a database backup from now on holds blobs of N+1, which an older core security
backup cannot open). The key split itself (its members, passphrases and shares) is unchanged, so
approvals already given to pending operations still count.

Refused while a key split change is pending (its new split wraps the master key it was submitted
under) or another rotation runs, and on a cluster where a KMA's token holds the master key (the new
generation would have to reach that token: not yet done, docs/hsm.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.backup.fileformat import DATABASE_BACKUP, backup_key_context
from kma.crypto import WrappingKey
from kma.crypto.generations import FIRST, MasterKeys
from kma.errors import Conflict
from kma.services.change import Change
from kma.services.master_keys import key_context, next_context
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.services.row_macs import SPLIT_MEMBERS, seal
from kma.store import Stmt
from kma.vault import row_mac_key, wrap_master_for_root

SCHEMA_WITH_GENERATIONS = 55  # migration 0055: a release that reads blobs of any generation

# Blobs under the master key, by table: counted at the start, re-wrapped by kma/services/master_rewrap.py.
BLOB_COUNT = (
    "SELECT (SELECT count(*) FROM keys WHERE material_wrapped IS NOT NULL)"
    " + (SELECT count(*) FROM audit_signing_keys) + (SELECT count(*) FROM backup_keys) + 1"
    " + (SELECT count(*) FROM pending_quorum_ops WHERE escrow_wrapped IS NOT NULL)"
    " + (SELECT count(*) FROM key_split_enrolments WHERE share_wrapped IS NOT NULL)"
)


def refusal(kma: Appliance) -> str | None:
    """Why a rotation cannot start now, or None."""
    if kma.store.scalar("SELECT count(*) FROM master_key_generations"):
        return "A master key rotation is still under way: it must end before another starts."
    if kma.store.scalar(
        "SELECT count(*) FROM pending_quorum_ops WHERE state = 'pending' AND type = 'change_key_split'"
    ):
        return (
            "A key split change is pending: it holds the master key as it was when submitted. Let it run "
            "(the rotation can follow it) or delete it first."
        )
    rows = kma.store.query(
        "SELECT id, master_key, schema_version FROM kmas WHERE removed_at IS NULL AND awaiting_join = 0 ORDER BY id"
    )
    old = [r["id"] for r in rows if (r["schema_version"] or 0) < SCHEMA_WITH_GENERATIONS]
    if old:
        return f"Every KMA must run a release that knows master key generations first; still older: {', '.join(old)}."
    tokens = [r["id"] for r in rows if r["master_key"] == "pkcs11"]
    if tokens and len(rows) > 1:
        return (
            f"The cluster's master key is in the HSM of KMA {', '.join(tokens)}: a new generation cannot reach "
            "a token yet (docs/hsm.md). Rotate on a cluster of software KMAs."
        )
    return None


def _prepare(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    if why := refusal(kma):
        raise Conflict(why)
    generation = int(kma.store.scalar("SELECT master_generation FROM cluster") or FIRST)
    summary = (
        f"Rotate the master key: make generation {generation + 1}, re-wrap every stored key and secret under it "
        f"in the background, then destroy generation {generation}; a new core security backup will be needed"
    )
    return Prepared(
        summary, {"to_generation": generation + 1}, {"to_generation": generation + 1}, exclusive=True
    )


def _backup_key_statements(old: WrappingKey, new: MasterKeys, split_generation: int, now: int) -> list[Stmt]:
    """A new backup key for the new key split generation; and the first generation's (derived from
    the old master key, which is going) kept under the new one, for backups taken under it."""
    statements = [
        Stmt(
            "INSERT INTO backup_keys (generation, key_wrapped, created_at) VALUES (?, ?, ?)",
            (
                split_generation + 1,
                new.wrap(backup_key_context(split_generation + 1), WrappingKey.generate().raw()),
                now,
            ),
        )
    ]
    first = new.wrap(backup_key_context(FIRST), old.derive(DATABASE_BACKUP).raw())
    statements.append(
        Stmt(
            "INSERT OR IGNORE INTO backup_keys (generation, key_wrapped, created_at) VALUES (?, ?, ?)",
            (FIRST, first, now),
        )
    )
    return statements


def _execute(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    if why := refusal(kma):
        raise Conflict(why)
    to_generation = int(p["to_generation"])
    old = quorum.master.current if isinstance(quorum.master, MasterKeys) else quorum.master
    if quorum.master.generation != to_generation - 1:
        raise Conflict(f"The master key is no longer of generation {to_generation - 1}.")
    new_key = WrappingKey(quorum.master.random(32))
    new = MasterKeys(new_key, to_generation)
    cluster = kma.store.query_one("SELECT split_generation FROM cluster")
    assert cluster is not None
    split_generation, now = int(cluster[0]), kma.clock.now()
    requested_by = kma.store.scalar("SELECT requested_by FROM pending_quorum_ops WHERE id = ?", (op_id,))
    mac_key = row_mac_key(new)
    members = kma.store.query(
        "SELECT name, share_sealed FROM key_split_members WHERE generation = ?", (split_generation,)
    )
    statements = [
        Stmt(
            "UPDATE cluster SET master_wrapped_by_root = ?, master_generation = ?, split_generation = ? "
            "WHERE id = 1 AND master_generation = ? AND split_generation = ?",
            (
                wrap_master_for_root(quorum.root_secret, new_key),
                to_generation,
                split_generation + 1,
                to_generation - 1,
                split_generation,
            ),
            expect=1,
            refusal="the master key or the key split changed meanwhile",
        ),
        Stmt(
            "INSERT INTO master_key_generations (generation, key_wrapped, next_wrapped, created_at) VALUES (?, ?, ?, ?)",
            (
                to_generation - 1,
                new_key.wrap(key_context(to_generation - 1), old.raw()),
                old.wrap(next_context(to_generation - 1), new_key.raw()),
                now,
            ),
        ),
        Stmt(
            "INSERT INTO master_key_rotations (to_generation, op_id, started_at, started_by, blobs_total) "
            f"VALUES (?, ?, ?, ?, ({BLOB_COUNT}))",
            (to_generation, op_id, now, str(requested_by or "quorum")),
        ),
        *_backup_key_statements(old, new, split_generation, now),
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
            "UPDATE pending_quorum_ops SET split_generation = ? WHERE state = 'pending' AND split_generation = ?",
            (split_generation + 1, split_generation),
        ),
    ]
    message = (
        f"started the master key rotation to generation {to_generation}: every stored key and secret is "
        f"re-wrapped in the background, then generation {to_generation - 1} is destroyed; the key split is "
        f"unchanged (generation {split_generation + 1}); database backups from now on use a new backup key: "
        "take a new core security backup"
    )

    def take_up() -> None:
        from kma.services.master_rewrap import rewrap  # the worker imports this module's BLOB_COUNT

        kma.vault.unlock(new_key, to_generation, {to_generation - 1: old})
        rewrap(kma).wake()

    return Outcome(
        Change("cluster.master_key_rotation", statements, message, ("cluster", "master_key")), take_up
    )


ROTATE_MASTER_KEY = OpType("rotate_master_key", _prepare, _execute)
