"""A key's life as an agent drives it: given to its group from the pool (or registered with the
agent's own material), activated, revoked, destroyed, bound to a data unit and released from it.

Key states as KMIP names them: a key an agent made sits in its key group before activation
(Pre-Active: `key_group_id` set, `activated_at` NULL; pool keys have no group). Activation starts
the encryption period and the cryptoperiod from the group's policy.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from kma.appliance import Appliance
from kma.domain.lifecycle import DATA_UNIT_SHREDDED, DESTROYABLE_SQL
from kma.services.agent_keys.key_access import (
    AGENT_GROUPS,
    MAY_IMPORT,
    MAY_REVOKE,
    PROTECTING,
    AgentAccess,
    group_policy,
    may_use,
    mine,
    pending_name,
    policy_value,
)
from kma.services.integrity import key_macs
from kma.store import Stmt
from kma.store.batch import Deferred


def _activation(group: str) -> str:
    """The policy's periods from now; a Protect Stop Date a client set earlier stays (a pre-active
    key has one only if a client of a general key group set it)."""
    protect = f":now + {policy_value('encryption_period', group)}"
    return (
        f"activated_at = :now, protect_until = min(coalesce(protect_until, {protect}), {protect}), "
        f"deactivate_at = :now + {policy_value('cryptoperiod', group)}"
    )


def set_protect_stop(key_id: str, when: int) -> Stmt:
    """A client's Protect Stop Date (a general key group's key): the key protects nothing after
    it; never later than its policy's encryption period allows."""
    return Stmt(
        "UPDATE keys SET protect_until = CASE WHEN activated_at IS NULL THEN :when "
        "ELSE min(protect_until, :when) END WHERE id = :id",
        {"id": key_id, "when": when},
        expect=1,
    )


def deferred_assignment(
    kma: Appliance,
    key_id: str,
    agent_id: str,
    group_id: str,
    data_unit_id: str | None,
    now: int,
    activate: bool,
) -> Deferred | None:
    """`assign_pool_key` as it may reach the cluster later: this KMA's own pool key (no other KMA
    issues it), its periods from the group's policy as they are now. The agent's permission was
    checked when it asked (chosen_group); it is not checked again at shipping time, since by
    then the agent may have written data with the key. The data unit row is made if missing (two
    KMAs cut off from each other may both give a tape a key: both stay bound to it, the newer
    one is its write key). None when the group has no policy (the ordinary batch then refuses)."""
    policy = group_policy(kma, group_id)
    if policy is None:
        return None
    shows: dict[str, Any] = {
        "id": key_id,
        "key_group_id": group_id,
        "data_unit_id": data_unit_id,
        "agent_id": agent_id,
        "activated_at": now if activate else None,
        "protect_until": now + policy["encryption_period"] if activate else None,
        "deactivate_at": now + policy["cryptoperiod"] if activate else None,
        "issued_at": now,
    }
    shows["mac"] = key_macs.mac(
        kma.vault.row_mac_key(), key_id, key_group_id=group_id, data_unit_id=data_unit_id, agent_id=agent_id
    )
    statements = [register_data_unit(data_unit_id, now)] if data_unit_id else []
    statements.append(
        Stmt(
            "UPDATE keys SET key_group_id = :key_group_id, data_unit_id = :data_unit_id, "
            "agent_id = :agent_id, activated_at = :activated_at, protect_until = :protect_until, "
            "deactivate_at = :deactivate_at, issued_at = :issued_at, mac = :mac "
            "WHERE id = :id AND kma_id = :kma AND key_group_id IS NULL AND activated_at IS NULL "
            "AND destroyed_at IS NULL AND withheld_at IS NULL AND compromised_at IS NULL "
            "AND registered_by IS NULL",
            {**shows, "kma": kma.kma_id},
            expect=1,
            refusal=f"pool key {key_id} of KMA '{kma.kma_id}' was no longer unassigned in the cluster",
        )
    )
    return Deferred(pending_name(key_id), shows, statements)


def register_data_unit(data_unit_id: str, now: int) -> Stmt:
    """Make the data unit if it is new; either way it was updated now and has a key: every batch
    that binds a key to a unit starts with this (a refused bind rolls the batch back), which is
    what keeps has_keys, the "no key" filter's column (migration 0015), true."""
    return Stmt(
        "INSERT INTO data_units (id, created_at, updated_at, has_keys) VALUES (?, ?, ?, 1) "
        "ON CONFLICT (id) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at), has_keys = 1",
        (data_unit_id, now, now),
    )


def shredded_note(kma: Appliance, data_unit_id: str | None) -> str:
    """For the audit message of a key given to a shredded data unit: it becomes readable again,
    which must not happen silently (a read of the state for the message only; the write does not
    depend on it)."""
    if not data_unit_id:
        return ""
    if not kma.store.scalar(f"SELECT {DATA_UNIT_SHREDDED}", {"id": data_unit_id}):
        return ""
    return (
        f"; data unit '{data_unit_id}' was shredded (every key destroyed) and is readable "
        "again from now on with this key"
    )


def assign_pool_key(
    key_id: str,
    agent_id: str | None,
    group_id: str,
    data_unit_id: str | None,
    now: int,
    activate: bool,
    only_if_no_write_key: bool = False,
    agent_asks: bool = True,
    groups: frozenset[str] = frozenset(),
    *,
    mac: str,
) -> Stmt:
    """Give a pool key to a group (and data unit), activated or Pre-Active. `agent_asks`: the
    agent must be enabled and may use the group (else an Operator issues it, to the group);
    `groups`: the agent's verified key groups (`AgentAccess.groups`); `mac`: the key row's MAC
    as this writes it (`key_macs.mac`)."""
    refusal = (
        f"agent '{agent_id}' is disabled or may not use key group '{group_id}'"
        if agent_asks
        else "the key could not be activated"
    )
    if only_if_no_write_key:
        refusal += ", or another write key was issued for the data unit a moment ago"
    params = {
        "id": key_id,
        "agent": agent_id,
        "groups": json.dumps(sorted(groups)),
        "g": group_id,
        "du": data_unit_id,
        "now": now,
        "mac": mac,
    }
    return Stmt(_assignment(activate, agent_asks, only_if_no_write_key), params, expect=1, refusal=refusal)


@functools.cache
def _assignment(activate: bool, agent_asks: bool, only_if_no_write_key: bool) -> str:
    """The UPDATE of `assign_pool_key`: one text per form, built once (every issued key has one)."""
    sets = "key_group_id = :g, data_unit_id = :du, agent_id = :agent, issued_at = :now, mac = :mac"
    if activate:
        sets += ", " + _activation(":g")
    allowed = may_use(":g") if agent_asks else "EXISTS (SELECT 1 FROM key_groups WHERE id = :g)"
    sql = (
        f"UPDATE keys SET {sets} WHERE id = :id AND key_group_id IS NULL AND activated_at IS NULL "
        "AND destroyed_at IS NULL AND withheld_at IS NULL AND compromised_at IS NULL "
        f"AND registered_by IS NULL AND {allowed}"
    )
    if only_if_no_write_key:
        sql += (
            f" AND NOT EXISTS (SELECT 1 FROM keys c WHERE c.data_unit_id = :du AND "
            f"c.key_group_id IN {AGENT_GROUPS} AND {PROTECTING.format(t='c.')})"
        )
    return sql


def insert_registered_key(
    key_id: str,
    kma_id: str,
    wrapped: bytes,
    agent: AgentAccess,
    group_id: str,
    data_unit_id: str | None,
    now: int,
    activate: bool,
    mac: str,
) -> Stmt:
    """A key with the agent's own material, only into a group whose policy allows import (`mac`:
    its row's, `key_macs.mac`)."""
    columns = "id, kma_id, material_wrapped, key_group_id, data_unit_id, agent_id, registered_by, "
    columns += "created_at, issued_at, mac"
    values = ":id, :kma, :material, :g, :du, :agent, :agent, :now, :now, :mac"
    if activate:
        columns += ", activated_at, protect_until, deactivate_at"
        values += (
            f", :now, :now + {policy_value('encryption_period', ':g')}, "
            f":now + {policy_value('cryptoperiod', ':g')}"
        )
    return Stmt(
        f"INSERT INTO keys ({columns}) SELECT {values} WHERE {may_use(':g')} AND {MAY_IMPORT} "
        # an Import's identifier, taken meanwhile (in any case)
        "AND NOT EXISTS (SELECT 1 FROM keys WHERE id = :id COLLATE NOCASE)",
        {
            "id": key_id,
            "kma": kma_id,
            "material": wrapped,
            **mine(agent),
            "g": group_id,
            "du": data_unit_id,
            "now": now,
            "mac": mac,
        },
        expect=1,
        refusal=f"agent '{agent.agent_id}' is disabled, may not use key group '{group_id}', its policy "
        f"does not allow import, or an object {key_id} exists already",
    )


def set_form(
    key_id: str,
    object_type: int | None,
    bits: int | None,
    data_type: int | None,
    key_format: int | None = None,
    algorithm: int | None = None,
) -> Stmt:
    """What the key is when it is not an AES-256 symmetric key (kma/kmip/objects.py), the Key
    Format Type a client registered it in, and a public or private key's algorithm."""
    return Stmt(
        "INSERT INTO key_kmip (key_id, object_type, bits, data_type, key_format, algorithm) "
        "VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (key_id) DO UPDATE SET object_type = excluded.object_type, bits = excluded.bits, "
        "data_type = excluded.data_type, key_format = excluded.key_format, algorithm = excluded.algorithm",
        (key_id, object_type, bits, data_type, key_format, algorithm),
    )


def set_sensitive(key_id: str) -> Stmt:
    """KMIP Sensitive, set with the object: its material is never sent in the clear."""
    return Stmt(
        "INSERT INTO key_kmip (key_id, sensitive) VALUES (?, 1) "
        "ON CONFLICT (key_id) DO UPDATE SET sensitive = 1",
        (key_id,),
    )


def set_deactivation(key_id: str, when: int) -> Stmt:
    """A client's Deactivation Date for an object it activates at Create or Register: the
    cryptoperiod ends then (at once when that is past), never later than its policy's."""
    return Stmt(
        "UPDATE keys SET deactivate_at = max(activated_at, min(deactivate_at, :when)), "
        "protect_until = max(activated_at, min(protect_until, :when)) "
        "WHERE id = :id AND activated_at IS NOT NULL",
        {"id": key_id, "when": when},
        expect=1,
    )


def set_usage_mask(key_id: str, mask: int) -> Stmt:
    return Stmt(
        "INSERT INTO key_kmip (key_id, usage_mask) VALUES (?, ?) ON CONFLICT (key_id) "
        "DO UPDATE SET usage_mask = excluded.usage_mask",
        (key_id, mask),
    )


def guard_key(agent: AgentAccess, key_id: str, now: int) -> Stmt:
    """Changes nothing; refuses the batch unless the agent may still change this live key."""
    return Stmt(
        f"UPDATE keys SET id = id WHERE id = :id AND destroyed_at IS NULL AND {may_use('keys.key_group_id')}",
        {"id": key_id, **mine(agent), "now": now},
        expect=1,
        refusal="the key was destroyed, or the agent may no longer use its key group",
    )


def activate(agent: AgentAccess, key_id: str, now: int) -> Stmt:
    return Stmt(
        f"UPDATE keys SET {_activation('keys.key_group_id')} WHERE id = :id AND activated_at IS NULL "
        "AND destroyed_at IS NULL AND compromised_at IS NULL AND key_group_id IS NOT NULL "
        f"AND {may_use('keys.key_group_id')}",
        {"id": key_id, **mine(agent), "now": now},
        expect=1,
        refusal="only a Pre-Active key can be activated",
    )


def revoke(
    kma: Appliance,
    agent: AgentAccess,
    key: key_macs.KeyRow,
    now: int,
    compromised_at: int | None,
    reason: int,
    message: str | None,
    occurred: int | None = None,
) -> list[Stmt]:
    """Compromise (any live key) or deactivate now (a key not yet deactivated). `key`: its row as
    read before (`visible_key`)."""
    key_id = key["id"]
    params = {"id": key_id, **mine(agent), "now": now, "when": compromised_at}
    guard = f"AND {may_use('keys.key_group_id')} AND {MAY_REVOKE}"
    if compromised_at is not None:
        change = Stmt(
            f"UPDATE keys SET compromised_at = :when WHERE id = :id AND compromised_at IS NULL "
            f"AND destroyed_at IS NULL {guard}",
            params,
            expect=1,
            refusal="the key is already compromised or destroyed",
        )
        sealed = [key_macs.reseal(kma, key, compromised_at=compromised_at)]
    else:
        sealed = []
        change = Stmt(
            "UPDATE keys SET activated_at = coalesce(activated_at, :now), "
            "protect_until = min(coalesce(protect_until, :now), :now), "
            "deactivate_at = min(coalesce(deactivate_at, :now), :now) "
            "WHERE id = :id AND destroyed_at IS NULL AND compromised_at IS NULL "
            f"AND (deactivate_at IS NULL OR deactivate_at > :now) {guard}",
            params,
            expect=1,
            refusal="the key is already deactivated, compromised or destroyed",
        )
    record = Stmt(
        "INSERT INTO key_kmip (key_id, revocation_reason, revocation_message, compromise_occurrence_at, "
        "changed_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (key_id) DO UPDATE SET revocation_reason = excluded.revocation_reason, "
        "revocation_message = excluded.revocation_message, changed_at = excluded.changed_at, "
        "compromise_occurrence_at = coalesce(excluded.compromise_occurrence_at, compromise_occurrence_at)",
        (key_id, reason, message, occurred, now),
    )
    return [change, *sealed, record]


def destroy(kma: Appliance, agent: AgentAccess, key: key_macs.KeyRow, now: int, comment: str) -> list[Stmt]:
    """Deactivated or compromised keys, and Pre-Active ones (KMIP allows it: such a key has never
    protected data, its material can go). `key`: its row as read before (`visible_key`)."""
    key_id = key["id"]
    change = Stmt(
        "UPDATE keys SET destroyed_at = :now, destroy_comment = :comment, material_wrapped = NULL "
        f"WHERE id = :id AND ({DESTROYABLE_SQL} OR (destroyed_at IS NULL AND activated_at IS NULL)) "
        f"AND key_group_id IS NOT NULL AND {may_use('keys.key_group_id')} AND {MAY_REVOKE}",
        {"id": key_id, **mine(agent), "now": now, "comment": comment},
        expect=1,
        refusal="only pre-active, deactivated or compromised keys can be destroyed",
    )
    return [change, key_macs.reseal(kma, key, destroyed_at=now)]


def keep_digest(key_id: str, digest: bytes) -> Stmt:
    """The Digest of material about to be destroyed (it stays the object's attribute)."""
    return Stmt(
        "INSERT INTO key_kmip (key_id, digest) VALUES (?, ?) "
        "ON CONFLICT (key_id) DO UPDATE SET digest = excluded.digest",
        (key_id, digest),
    )


def touch(key_id: str, now: int) -> Stmt:
    """An agent changed the key's attributes now (its KMIP Last Change Date)."""
    return Stmt(
        "INSERT INTO key_kmip (key_id, changed_at) VALUES (?, ?) "
        "ON CONFLICT (key_id) DO UPDATE SET changed_at = excluded.changed_at",
        (key_id, now),
    )


def bind_data_unit(
    kma: Appliance, agent: AgentAccess, key: key_macs.KeyRow, data_unit_id: str, now: int
) -> list[Stmt]:
    """`key`: its row as read before (`visible_key`)."""
    key_id = key["id"]
    return [
        register_data_unit(data_unit_id, now),
        Stmt(
            "UPDATE keys SET data_unit_id = :du WHERE id = :id AND data_unit_id IS NULL "
            f"AND destroyed_at IS NULL AND {may_use('keys.key_group_id')}",
            {"id": key_id, "du": data_unit_id, **mine(agent)},
            expect=1,
            refusal="the key is already bound to a data unit",
        ),
        key_macs.reseal(kma, key, data_unit_id=data_unit_id),
    ]


def release_data_unit(kma: Appliance, agent: AgentAccess, data_unit_id: str, now: int) -> list[Stmt]:
    """Writing from beginning of tape: the data unit's keys (that the agent sees) let go of it, each
    sealed again. A key whose row fails its MAC is left as it is (and reported), never sealed."""
    rows = kma.store.query(
        f"SELECT {key_macs.COLUMNS} FROM keys k WHERE k.data_unit_id = :du "
        f"AND k.key_group_id IN {AGENT_GROUPS}",
        {"du": data_unit_id, **mine(agent)},
    )
    held = [r for r in rows if key_macs.verified(kma, r)]
    params = {
        "du": data_unit_id,
        "agent": agent.agent_id,
        "now": now,
        "held": json.dumps([r["id"] for r in held]),
    }
    these = "data_unit_id = :du AND id IN (SELECT value FROM json_each(:held))"
    return [
        Stmt(
            "INSERT INTO data_unit_released_keys (key_id, data_unit_id, agent_id, released_at) "
            f"SELECT id, data_unit_id, :agent, :now FROM keys WHERE {these}",
            params,
        ),
        Stmt(f"UPDATE keys SET data_unit_id = NULL WHERE {these}", params),
        *(key_macs.reseal(kma, row, data_unit_id=None) for row in held),
    ]
