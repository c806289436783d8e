"""Locking a KMA, unlocking it with a quorum, and switching autonomous unlock.

A Security Officer locks a KMA alone (locking only ever makes things safer); unlocking needs the
master key, which only a quorum can rebuild, so it is a quorum operation. A lock is recorded in
`kmas.locked` and outlives a restart: autonomous unlock never undoes a Security Officer's lock,
or restarting the KMA would be a way around it.

Autonomous unlock keeps the master key wrapped under a local unlock key file on this KMA
(`DIR/unlock.key`), so a restart unlocks at once. Turning it on or off needs the master key
from the quorum, not from the vault, so the switch is cryptographically quorum-bound. Each KMA
keeps its own unlock key file: the switch applies to the KMA that serves the request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.crypto import CryptoError, WrappingKey
from kma.crypto.hsm_settings import HsmUnavailable
from kma.datadir import write_private
from kma.domain.actor import Actor
from kma.errors import Conflict, HsmFailed, KmaError, ValidationFailed
from kma.services.change import Change
from kma.services.common import require
from kma.services.integrity import entry_signatures, key_macs, row_macs
from kma.services.keypool import key_pool
from kma.services.kmas import KmaRow, get_kma
from kma.services.master_key import master_keys
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt

log = logging.getLogger(__name__)


def this_kma_only(kma: Appliance, kma_id: str, what: str) -> None:
    require(kma, "KMA", kma_id)
    if kma_id != kma.kma_id:
        raise Conflict(
            f"KMA '{kma_id}' can only be {what} through its own management address; "
            f"this is KMA '{kma.kma_id}'."
        )


def lock_kma(kma: Appliance, actor: Actor, kma_id: str) -> KmaRow:
    """Lock at once: this KMA's vault forgets the master key before anything else can go wrong;
    another KMA of the cluster locks itself as soon as it sees the replicated lock (within a
    second: kma/cluster/watch.py)."""
    require(kma, "KMA", kma_id)
    if kma.store.scalar("SELECT witness FROM kmas WHERE id = ?", (kma_id,)):
        raise Conflict(f"'{kma_id}' is a witness: it holds and serves no key, so there is nothing to lock.")
    here = kma_id == kma.kma_id
    if (
        here
        and kma.vault.locked
        or not here
        and kma.store.scalar("SELECT locked FROM kmas WHERE id = ?", (kma_id,))
    ):
        raise Conflict(f"KMA '{kma_id}' is already locked.")
    if here:
        kma.vault.lock()
    elsewhere = "" if here else "; it locks itself as soon as it sees this (within a second)"
    kma.commit(
        actor,
        "kma.lock",
        [
            Stmt(
                "UPDATE kmas SET locked = 1, updated_at = ? WHERE id = ? AND removed_at IS NULL",
                (kma.clock.now(), kma_id),
                expect=1,
                missing=True,
                refusal=f"KMA '{kma_id}' was removed from the cluster",
            ),
        ],
        f"locked KMA '{kma_id}': it serves no keys until a quorum unlocks it{elsewhere}",
        ("kma", kma_id),
    )
    return get_kma(kma, kma_id)


# --- unlock ------------------------------------------------------------------------------
def _prepare_unlock(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    kma_id = str(request["kma_id"])
    this_kma_only(kma, kma_id, "unlocked")
    if not kma.vault.locked:
        raise Conflict(f"KMA '{kma_id}' is not locked.")
    return Prepared(f"Unlock KMA '{kma_id}'", {"kma_id": kma_id}, {"kma_id": kma_id}, kma_id, exclusive=True)


def _execute_unlock(kma: Appliance, quorum: Quorum, op_id: str, payload: Mapping[str, Any]) -> Outcome:
    kma_id = str(payload["kma_id"])
    if kma_id != kma.kma_id:
        raise Conflict(f"Only KMA '{kma_id}' itself can run its unlock.")
    try:
        kma.vault.check_hsm()  # a missing token or wrong PIN fails the unlock, with why, before it commits
    except HsmUnavailable as exc:
        raise HsmFailed(f"{exc} The KMA stays locked; fix the HSM, then unlock again.") from None
    now = kma.clock.now()
    statements = [
        Stmt(
            "UPDATE kmas SET locked = 0, updated_at = ? WHERE id = ?",
            (now, kma_id),
            expect=1,
            refusal=f"there is no KMA '{kma_id}'",
        ),
        Stmt(
            "UPDATE pending_quorum_ops SET state = 'failed', updated_at = ?, result = ? "
            "WHERE state = 'pending' AND type = 'unlock_kma' AND target_kma_id = ? AND id <> ?",
            (now, f"KMA '{kma_id}' was unlocked by quorum operation {op_id}", kma_id, op_id),
        ),
    ]

    def unlock() -> None:
        master_keys.unlock(kma, quorum.master)
        row_macs.after_unlock(kma)
        key_macs.seal_existing(kma)
        entry_signatures.after_unlock(kma)
        key_pool(kma).take_notice()

    change = Change("kma.unlock", statements, f"unlocked KMA '{kma_id}'", ("kma", kma_id))
    return Outcome(change, unlock)


UNLOCK_KMA = OpType("unlock_kma", _prepare_unlock, _execute_unlock)


# --- autonomous unlock -------------------------------------------------------------------
def unlock_autonomously(kma: Appliance) -> bool:
    """Open the vault with this KMA's local unlock key, if autonomous unlock is on and no Security
    Officer's lock stands; False (and still locked) otherwise. Writes nothing."""
    path = kma.data_dir.unlock_key
    # A Security Officer's lock (kmas.locked) outlives a restart: only a quorum lifts it.
    row = kma.store.query_one(
        "SELECT autounlock_master, master_generation FROM kmas WHERE id = ? AND locked = 0", (kma.kma_id,)
    )
    if row is None or row[0] is None or not path.exists():
        return False
    try:
        local = WrappingKey(path.read_bytes())
        master = WrappingKey(local.unwrap(f"autounlock:{kma.kma_id}", row[0]))
        master_keys.unlock(kma, master, int(row[1]))  # its generation: maybe the one a rotation replaces
    except HsmUnavailable as exc:
        log.error("the HSM cannot be used; staying locked: %s", exc)
        return False
    except (CryptoError, ValueError, OSError):
        log.error("the local unlock key does not open the master key; staying locked")
        return False
    except KmaError as exc:
        log.error("staying locked: %s", exc)
        return False
    return True


def autonomous_unlock_on(kma: Appliance) -> bool:
    return bool(
        kma.store.scalar("SELECT autounlock_master IS NOT NULL FROM kmas WHERE id = ?", (kma.kma_id,))
    )


def _prepare_autonomous(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    enabled = request.get("enabled")
    if not isinstance(enabled, bool):
        raise ValidationFailed("'enabled' must be true or false.")
    if autonomous_unlock_on(kma) == enabled:
        raise Conflict(f"Autonomous unlock is already {'on' if enabled else 'off'} for KMA '{kma.kma_id}'.")
    hsm = kma.vault.hsm
    if enabled and hsm is not None and hsm.holds_cluster_key:  # docs/hsm.md#clusters
        raise ValidationFailed(
            f"KMA '{kma.kma_id}' holds the cluster's master key in its HSM: autonomous unlock would keep "
            "it on disk under a local file key. A quorum unlocks this KMA after each restart."
        )
    word = "on" if enabled else "off"
    shown = {"kma_id": kma.kma_id, "enabled": enabled}
    return Prepared(
        f"Turn autonomous unlock {word} for KMA '{kma.kma_id}'", shown, shown, kma.kma_id, exclusive=True
    )


def _execute_autonomous(kma: Appliance, quorum: Quorum, op_id: str, payload: Mapping[str, Any]) -> Outcome:
    kma_id, enabled = str(payload["kma_id"]), bool(payload["enabled"])
    if kma_id != kma.kma_id:
        raise Conflict(f"Only KMA '{kma_id}' itself can switch its autonomous unlock.")
    now = kma.clock.now()
    path = kma.data_dir.unlock_key
    if enabled:
        # The file is written only after the commit, so a racing or refused run leaves no stray key.
        local = WrappingKey.generate()
        blob = local.wrap(f"autounlock:{kma_id}", quorum.master.raw())
        stmt = Stmt(
            "UPDATE kmas SET autounlock_master = ?, master_generation = ?, updated_at = ? "
            "WHERE id = ? AND autounlock_master IS NULL AND (SELECT master_generation FROM cluster) = ?",
            (blob, quorum.master.generation, now, kma_id, quorum.master.generation),
            expect=1,
            refusal=(
                f"autonomous unlock is already on for KMA '{kma_id}', or the master key was rotated meanwhile"
            ),
        )
        change = Change(
            "kma.autonomous_unlock",
            [stmt],
            f"turned autonomous unlock on for KMA '{kma_id}'",
            ("kma", kma_id),
        )
        return Outcome(change, lambda: write_private(path, local.raw()))
    stmt = Stmt(
        "UPDATE kmas SET autounlock_master = NULL, updated_at = ? "
        "WHERE id = ? AND autounlock_master IS NOT NULL",
        (now, kma_id),
        expect=1,
        refusal=f"autonomous unlock is already off for KMA '{kma_id}'",
    )
    change = Change(
        "kma.autonomous_unlock",
        [stmt],
        f"turned autonomous unlock off for KMA '{kma_id}': after a restart it waits locked for a quorum",
        ("kma", kma_id),
    )
    return Outcome(change, lambda: path.unlink(missing_ok=True))


SET_AUTONOMOUS_UNLOCK = OpType("set_autonomous_unlock", _prepare_autonomous, _execute_autonomous)
