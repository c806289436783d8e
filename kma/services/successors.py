"""A general key's successor: what KMIP Re-Key (kma/kmip/ops_rekey.py) and a key policy's rotation
period (the KMA's own Re-Key, below) write besides the new pool key itself.

The new key takes the existing key's size, Cryptographic Usage Mask, Sensitive and client
attributes; the existing key's Names move to it (KMIP removes them from the existing key); Links
are made both ways (the existing key's Replacement Object Link, the new key's Replaced Object
Link). The existing key's state does not change: what it encrypted stays readable, and revoking
it is its client's decision. A key is replaced once: the guard on its link refuses a second
successor made at the same moment (an agent's Re-Key and the rotation, or two KMAs' rotations).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.errors import Conflict, KmaError
from kma.services import key_issue
from kma.services.agent_keys import key_access, key_lifecycle
from kma.services.schedules import TEST_CLOCK_CHECK_S
from kma.store import Stmt
from kma.worker import Worker

NAME = "Name"  # moves to the new key (a general key's Name is kept as a client attribute)
CHECK_S = 60.0  # how often the KMA looks for keys whose rotation is due
LATE_S = 3600  # after which any KMA rotates a key another KMA's pool made


@dataclass(frozen=True)
class Dates:
    """The new key's Activation, Protect Stop and Deactivation Dates (None: unset)."""

    activated: int | None
    protect: int | None
    deactivate: int | None


def shifted(row: Any, start: int) -> Dates:
    """Active from `start`, for the existing key's periods (KMIP Re-Key with an Offset)."""
    shift = start - row["activated_at"]
    protect, deactivate = row["protect_until"], row["deactivate_at"]
    return Dates(
        start,
        None if protect is None else protect + shift,
        None if deactivate is None else deactivate + shift,
    )


def statements(old: str, row: Any, new: str, now: int, dates: Dates) -> list[Stmt]:
    """What makes `new` the successor of `old` (`row`: the existing key, with its key_kmip columns)."""
    out = [
        Stmt(
            "INSERT INTO key_kmip (key_id, replacement_id, changed_at) VALUES (:old, :new, :now) "
            "ON CONFLICT (key_id) DO UPDATE SET replacement_id = excluded.replacement_id, "
            "changed_at = excluded.changed_at WHERE key_kmip.replacement_id IS NULL",
            {"old": old, "new": new, "now": now},
            expect=1,
            refusal=f"key {old} was replaced by another key a moment ago",
        ),
        Stmt(
            "INSERT INTO key_kmip (key_id, replaced_id) VALUES (?, ?) "
            "ON CONFLICT (key_id) DO UPDATE SET replaced_id = excluded.replaced_id",
            (new, old),
        ),
        Stmt(
            "INSERT INTO key_custom_attributes (key_id, name, idx, value, item) "
            "SELECT ?, name, idx, value, item FROM key_custom_attributes WHERE key_id = ?",
            (new, old),
        ),
        Stmt("DELETE FROM key_custom_attributes WHERE key_id = ? AND name = ?", (old, NAME)),
    ]
    if row["bits"] is not None:  # AES-128 or AES-192 (an AES-256 key has none)
        out.append(key_lifecycle.set_form(new, None, int(row["bits"]), None))
    if row["usage_mask"] is not None:
        out.append(key_lifecycle.set_usage_mask(new, int(row["usage_mask"])))
    if row["sensitive"]:
        out.append(key_lifecycle.set_sensitive(new))
    out.append(
        Stmt(
            "UPDATE keys SET activated_at = ?, protect_until = ?, deactivate_at = ? WHERE id = ?",
            (dates.activated, dates.protect, dates.deactivate, new),
        )
    )
    return out


# --- the rotation period: the KMA re-keys by itself --------------------------------------------
# Active general keys (not compromised, not replaced) whose policy's rotation period has passed
# since their activation, oldest first. Each KMA rotates the keys its own pool made; a key whose
# KMA is gone or cut off is rotated by any KMA once an hour late (two at once: one is refused).
DUE = (
    f"SELECT {key_access.KEY_COLUMNS} FROM keys k JOIN key_groups g ON g.id = k.key_group_id "
    "JOIN key_policies p ON p.id = g.policy_id LEFT JOIN key_kmip m ON m.key_id = k.id "
    "WHERE p.general_keys = 1 AND p.rotation_period IS NOT NULL AND k.activated_at IS NOT NULL "
    "AND k.activated_at + p.rotation_period <= :now AND k.deactivate_at > :now "
    "AND k.destroyed_at IS NULL AND k.compromised_at IS NULL AND k.data_unit_id IS NULL "
    "AND coalesce(m.object_type, 2) = 2 AND m.replacement_id IS NULL "
    f"AND (k.kma_id = :me OR k.activated_at + p.rotation_period + {LATE_S} <= :now) "
    "ORDER BY k.activated_at LIMIT 50"
)

ROTATING = "SELECT 1 FROM key_policies WHERE general_keys = 1 AND rotation_period IS NOT NULL LIMIT 1"


def rotate(kma: Appliance, row: Any) -> str:
    """The successor of one key whose rotation is due, active from now: audited on both keys."""
    old, group, now = row["id"], row["key_group_id"], kma.clock.now()
    live = Stmt(
        "UPDATE keys SET id = id WHERE id = ? AND destroyed_at IS NULL AND compromised_at IS NULL",
        (old,),
        expect=1,
        refusal=f"key {old} was destroyed or compromised a moment ago",
    )
    issue = key_issue.prepare(
        kma,
        group,
        None,
        now,
        agent_id=row["agent_id"],
        activate=False,
        agent_asks=False,
        keep=lambda new: [live, *statements(old, row, new, now, shifted(row, now))],
    )
    try:
        kma.commit(
            kma.itself,
            "key.rotate",
            issue.statements,
            f"rotated key {old}: created key {issue.key_id} to replace it (key group '{group}', "
            "its policy's rotation period has passed; active from now for the same periods)",
            ("key", issue.key_id),
        )
    except Conflict:
        issue.give_back()
        raise
    kma.audit(
        kma.itself,
        "key.rotate",
        f"key {old} replaced by key {issue.key_id} (its policy's rotation period has passed); it keeps "
        "its state until it is revoked",
        condition=Condition.SUCCESS,
        subject=("key", old),
        retention=Retention.LONG,
    )
    return issue.key_id


class Rotation(Worker):
    name = "kma-key-rotation"
    pause_s = CHECK_S

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma
        self.check_s = TEST_CLOCK_CHECK_S if kma.test_clock else CHECK_S

    def work(self) -> float:
        if self.kma.vault.locked:
            return self.check_s
        if not self.kma.store.scalar(ROTATING):  # no policy rotates: no scan of the keys
            return self.check_s
        started = time.monotonic()
        for row in self.kma.store.query(DUE, {"now": self.kma.clock.now(), "me": self.kma.kma_id}):
            if self.stopping:
                break
            try:
                rotate(self.kma, row)
            except KmaError as refused:  # replaced, revoked or locked meanwhile (audited as refused)
                self.log.info("rotation of key %s refused: %s", row["id"], refused)
        self.log.debug("rotation round took %.3f s", time.monotonic() - started)
        return self.check_s


def rotation(kma: Appliance) -> Rotation:
    """This KMA's one rotation worker (`kma serve` starts it: kma/runtime/running.py)."""
    return kma.part(Rotation)
