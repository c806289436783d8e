"""Keys as an encryption agent sees and changes them: the store side of the KMIP service.

An agent sees the keys of the key groups it may use (`key_group_agents`, each row's MAC verified:
kma/services/row_macs.py) and nothing else. Every
statement that changes a key checks again, inside the SQL, that the agent is enabled and may
use the key's group (and, for revoke and destroy, that the group's policy lets agents revoke),
so a permission withdrawn a moment ago holds even for a request already in flight. The
functions here only read or build statements; the caller commits them with their audit event.

Key states as KMIP names them: a key an agent made sits in its key group before activation
(Pre-Active: `key_group_id` set, `activated_at` NULL; pool keys have no group). Activation starts
the encryption period and the cryptoperiod from the group's policy.

On a cluster KMA, a pool key's assignment (Create, Write Key) waits in the KMA's outbox until
the cluster holds it (kma/store/outbox.py; `deferred_assignment`), also while the KMA is cut off
from the Raft majority. The reads here (`visible_key`, `current_write_key`, `locate`) see such
unshipped assignments too, so a drive's Get or Locate right after its Write Key finds the key.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.lifecycle import DATA_UNIT_SHREDDED, DESTROYABLE_SQL, KeyState, key_in_state
from kma.services import row_macs, withheld_keys
from kma.services.withheld_keys import UNBOUND
from kma.store import Stmt
from kma.store.batch import Deferred

MAX_CUSTOM_ATTRIBUTES = 32  # instances of x-... attributes per key
Row = sqlite3.Row

# The agent's key groups: a membership row counts only while it is in the cluster (a removal
# works at once) and among the groups whose row MAC this KMA verified (:groups, `AgentAccess.groups`,
# kma/services/row_macs.py), so a row written into the store without the KMA grants nothing.
AGENT_GROUPS = (
    "(SELECT key_group_id FROM key_group_agents WHERE agent_id = :agent "
    "AND key_group_id IN (SELECT value FROM json_each(:groups)))"
)


def may_use(group: str) -> str:
    """SQL: the agent (:agent) is enabled and may use key group `group` (an SQL expression)."""
    return (
        "EXISTS (SELECT 1 FROM agents a JOIN key_group_agents ga ON ga.agent_id = a.id "
        f"WHERE a.id = :agent AND a.enabled = 1 AND ga.key_group_id = {group} "
        "AND ga.key_group_id IN (SELECT value FROM json_each(:groups)))"
    )


def _policy_value(column: str, group: str) -> str:
    return (
        f"(SELECT p.{column} FROM key_groups g JOIN key_policies p ON p.id = g.policy_id "
        f"WHERE g.id = {group})"
    )


MAY_REVOKE = f"{_policy_value('agents_may_revoke', 'keys.key_group_id')} = 1"
MAY_IMPORT = f"{_policy_value('allow_import', ':g')} = 1"
# Active for writing by agent :agent: Protect-and-Process, not compromised; and made by the
# cluster, or registered by this very agent, or in a group whose policy allows import. Otherwise
# one drive could plant key bytes of its choosing (named like a tape) and have every other drive
# write that tape under them.
PROTECTING = key_in_state(KeyState.PROTECT_AND_PROCESS, "{t}") + (
    " AND {t}compromised_at IS NULL AND ({t}registered_by IS NULL "
    "OR {t}registered_by = :agent OR (SELECT p.allow_import FROM key_groups g JOIN key_policies p "
    "ON p.id = g.policy_id WHERE g.id = {t}key_group_id) = 1)"
)


def _activation(group: str) -> str:
    """The policy's periods from now; a Protect Stop Date a client set earlier stays (a pre-active
    key has one only if a client of a general key group set it)."""
    protect = f":now + {_policy_value('encryption_period', group)}"
    return (
        f"activated_at = :now, protect_until = min(coalesce(protect_until, {protect}), {protect}), "
        f"deactivate_at = :now + {_policy_value('cryptoperiod', group)}"
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


KEY_COLUMNS = (
    "k.id, k.key_group_id, k.data_unit_id, k.agent_id, k.kma_id, k.created_at, k.issued_at, k.activated_at, "
    "k.protect_until, k.deactivate_at, k.compromised_at, k.destroyed_at, k.registered_by, m.usage_mask, "
    "m.revocation_reason, m.revocation_message, m.changed_at, m.compromise_occurrence_at, m.digest, "
    "m.object_type, m.bits, m.data_type, m.key_format, m.algorithm, m.sensitive, m.replacement_id, "
    "m.replaced_id"
)


@dataclass(frozen=True)
class AgentAccess:
    """What an agent may do, read once per request (or less often: see the session's TTL)."""

    agent_id: str
    enabled: bool
    site_id: str
    default_group: str
    groups: frozenset[str]
    certificate_fingerprint: str | None
    general_groups: frozenset[str] = frozenset()  # of `groups`: those whose policy keeps general keys
    # The certificate a renewal replaced: still accepted until it expires (kma/services/agent_renewal.py)
    previous_fingerprint: str | None = None


def mine(agent: AgentAccess | None) -> dict[str, Any]:
    """The parameters `AGENT_GROUPS` and `may_use` read: the agent and its verified key groups."""
    if agent is None:
        return {"agent": None, "groups": "[]"}
    return {"agent": agent.agent_id, "groups": json.dumps(sorted(agent.groups))}


def agent_access(kma: Appliance, agent_id: str) -> AgentAccess | None:
    """The agent's permissions; its key groups are those whose membership row's MAC verifies."""
    row = kma.store.query_one(
        "SELECT enabled, site_id, default_key_group_id, certificate_fingerprint, "
        "previous_certificate_fingerprint, "
        "(SELECT group_concat(key_group_id || char(9) || coalesce(mac, ''), char(10)) FROM key_group_agents "
        "WHERE agent_id = agents.id) AS groups, "
        "(SELECT group_concat(ga.key_group_id, char(10)) FROM key_group_agents ga "
        "JOIN key_groups g ON g.id = ga.key_group_id JOIN key_policies p ON p.id = g.policy_id "
        "WHERE ga.agent_id = agents.id AND p.general_keys = 1) AS general FROM agents WHERE id = ?",
        (agent_id,),
    )
    if row is None:
        return None
    groups = frozenset(
        group
        for line in (row["groups"] or "").split("\n")
        if line
        for group, mac in [line.split("\t", 1)]
        if row_macs.member_genuine(kma, group, agent_id, mac or None)
    )
    return AgentAccess(
        agent_id,
        bool(row["enabled"]),
        row["site_id"],
        row["default_key_group_id"],
        groups,
        row["certificate_fingerprint"],
        frozenset(g for g in (row["general"] or "").split("\n") if g) & groups,
        row["previous_certificate_fingerprint"],
    )


def visible_key(
    kma: Appliance, agent: AgentAccess, key_id: str, material: bool = False, actor: Actor | None = None
) -> Row | Mapping[str, Any] | None:
    """The key if the agent may see it (its group is one the agent may use), else None. A key a
    restore withheld is bound to the agent's group at its first read (`actor`: the reading agent;
    kma/services/withheld_keys.py)."""
    # What this KMA issued and has not shipped, looked at first: it is forgotten only once the
    # replica holds it, so one of the two reads below finds the key.
    shows = kma.store.unshipped(pending_name(key_id))
    extra = ", k.material_wrapped" if material else ""
    sql = f"SELECT {KEY_COLUMNS}{extra} FROM keys k LEFT JOIN key_kmip m ON m.key_id = k.id WHERE k.id = :id"
    params = {"id": key_id, **mine(agent)}
    row = kma.store.query_one(f"{sql} AND k.key_group_id IN {AGENT_GROUPS}", params)
    if row is None and shows is None:
        return _read_by_id(
            kma, agent, key_id, kma.store.query_one(f"{sql} AND {READABLE_BY_ID}", params), actor
        )
    if row is not None or shows is None:
        return row
    row = kma.store.query_one(sql, params)
    if row is None:
        return None
    group = shows["key_group_id"] if row["key_group_id"] is None else row["key_group_id"]
    if not _may_see(kma, agent, group):
        return None
    return {**dict(row), **shows} if row["key_group_id"] is None else row


def _read_by_id(
    kma: Appliance, agent: AgentAccess, key_id: str, row: Row | None, actor: Actor | None
) -> Row | Mapping[str, Any] | None:
    """A key `READABLE_BY_ID` found: a withheld one is bound to the agent's group first."""
    if row is None or row["key_group_id"] is not None or not kma.store.query(UNBOUND, (key_id,)):
        return row  # a key whose assignment to this agent the cluster refused
    if actor is None:
        return None
    group = withheld_keys.bind(kma, actor, key_id, agent.groups, agent.default_group)
    return {**dict(row), "key_group_id": group} if group and _may_see(kma, agent, group) else None


# Keys an agent reads by ID though they are not in its groups: a key a restore withheld and no read
# has bound to a group yet (the backup held it unassigned, but it may have been issued after; the
# restored KMA cannot know to whom: the first read binds it, kma/services/withheld_keys.py), and a
# key whose assignment to this agent the cluster refused (its tape was written with it all the same).
READABLE_BY_ID = (
    "((k.withheld_at IS NOT NULL AND k.key_group_id IS NULL) OR EXISTS (SELECT 1 FROM "
    "unrecorded_bindings u WHERE u.key_id = k.id AND u.agent_id = :agent))"
)


def key_id_taken(kma: Appliance, key_id: str) -> str | None:
    """The ID of the key whose ID is `key_id` in any case (IDs are unique regardless of case)."""
    found = kma.store.scalar("SELECT id FROM keys WHERE id = ? COLLATE NOCASE LIMIT 1", (key_id,))
    return None if found is None else str(found)


# What sends an object's material to a client (KMIP Get, and Export, which is a Get).
SENDING = ("kmip.get", "kmip.export")


def material_sent(kma: Appliance, key_id: str) -> bool:
    """Whether the object's material was ever sent to a client (KMIP Fresh is its opposite). The
    audit trail is the record: the event of a first send is kept long (`Retention.LONG`), and a
    cluster KMA cut off from the majority ships it from its outbox like any event."""
    return (
        kma.store.query_one(
            "SELECT 1 FROM audit_events WHERE subject_type = 'key' AND subject_id = ? "
            f"AND operation IN {SENDING} AND condition = 'success' LIMIT 1",
            (key_id,),
        )
        is not None
    )


def custom_attributes(kma: Appliance, key_id: str) -> list[Row]:
    return kma.store.query(
        "SELECT name, idx, value, item FROM key_custom_attributes WHERE key_id = ? ORDER BY name, idx",
        (key_id,),
    )


def group_policy(kma: Appliance, group_id: str) -> Row | None:
    return kma.store.query_one(
        "SELECT p.id, p.encryption_period, p.cryptoperiod, p.agents_may_revoke, p.allow_import "
        "FROM key_groups g JOIN key_policies p ON p.id = g.policy_id WHERE g.id = ?",
        (group_id,),
    )


def current_write_key(kma: Appliance, agent: AgentAccess, data_unit_id: str, now: int) -> str | None:
    """The data unit's newest key still in its encryption period, among those the agent sees
    (one this KMA issued a moment ago, not yet in its replica, first)."""
    issued_here = [
        s
        for s in kma.store.unshipped_all()
        if s["data_unit_id"] == data_unit_id
        and s["activated_at"] is not None
        and s["protect_until"] > now
        and s["deactivate_at"] > now
        and _may_see(kma, agent, s["key_group_id"])
    ]
    if issued_here:
        return str(max(issued_here, key=lambda s: (s["activated_at"], s["id"]))["id"])
    value = kma.store.scalar(
        f"SELECT k.id FROM keys k WHERE k.data_unit_id = :du AND k.key_group_id IN {AGENT_GROUPS} "
        f"AND {PROTECTING.format(t='k.')} ORDER BY k.activated_at DESC, k.id LIMIT 1",
        {"du": data_unit_id, **mine(agent), "now": now},
    )
    return None if value is None else str(value)


def _may_see(kma: Appliance, agent: AgentAccess, group_id: str) -> bool:
    return group_id in agent.groups and (
        kma.store.query_one(
            "SELECT 1 FROM key_group_agents WHERE agent_id = ? AND key_group_id = ?",
            (agent.agent_id, group_id),
        )
        is not None
    )


# --- a pool key's assignment, as it waits in a cluster KMA's outbox -------------------------
def pending_name(key_id: str) -> str:
    return f"key:{key_id}"


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
    statements = [register_data_unit(data_unit_id, now)] if data_unit_id else []
    statements.append(
        Stmt(
            "UPDATE keys SET key_group_id = :key_group_id, data_unit_id = :data_unit_id, "
            "agent_id = :agent_id, activated_at = :activated_at, protect_until = :protect_until, "
            "deactivate_at = :deactivate_at, issued_at = :issued_at "
            "WHERE id = :id AND kma_id = :kma AND key_group_id IS NULL "
            "AND activated_at IS NULL AND destroyed_at IS NULL AND withheld_at IS NULL",
            {**shows, "kma": kma.kma_id},
            expect=1,
            refusal=f"pool key {key_id} of KMA '{kma.kma_id}' was no longer unassigned in the cluster",
        )
    )
    return Deferred(pending_name(key_id), shows, statements)


# --- statements -----------------------------------------------------------------------------
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
) -> Stmt:
    """Give a pool key to a group (and data unit), activated or Pre-Active. `agent_asks`: the
    agent must be enabled and may use the group (else an Operator issues it, to the group);
    `groups`: the agent's verified key groups (`AgentAccess.groups`)."""
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
    }
    return Stmt(_assignment(activate, agent_asks, only_if_no_write_key), params, expect=1, refusal=refusal)


@functools.cache
def _assignment(activate: bool, agent_asks: bool, only_if_no_write_key: bool) -> str:
    """The UPDATE of `assign_pool_key`: one text per form, built once (every issued key has one)."""
    sets = "key_group_id = :g, data_unit_id = :du, agent_id = :agent, issued_at = :now"
    if activate:
        sets += ", " + _activation(":g")
    allowed = may_use(":g") if agent_asks else "EXISTS (SELECT 1 FROM key_groups WHERE id = :g)"
    sql = (
        f"UPDATE keys SET {sets} WHERE id = :id AND key_group_id IS NULL AND activated_at IS NULL "
        f"AND destroyed_at IS NULL AND withheld_at IS NULL AND {allowed}"
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
) -> Stmt:
    """A key with the agent's own material, only into a group whose policy allows import."""
    columns = "id, kma_id, material_wrapped, key_group_id, data_unit_id, agent_id, registered_by, "
    columns += "created_at, issued_at"
    values = ":id, :kma, :material, :g, :du, :agent, :agent, :now, :now"
    if activate:
        columns += ", activated_at, protect_until, deactivate_at"
        values += (
            f", :now, :now + {_policy_value('encryption_period', ':g')}, "
            f":now + {_policy_value('cryptoperiod', ':g')}"
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


# --- putting back a write of a batch with Undo (kma/kmip/undo.py) ----------------------------
USED_BY_OTHERS = (
    "SELECT entity_id, operation FROM audit_events WHERE subject_type = 'key' AND subject_id = :id "
    "AND entity_id <> :agent AND created_at >= :since ORDER BY id LIMIT 1"
)


def unused_by_others(agent_id: str, key_id: str, since: int, who: str) -> Stmt:
    """Changes nothing; refuses the batch once anyone but the agent used the key since `since` (its
    Undo batch began): a Get, a tape's Write Key, a user's change are each an event naming the key."""
    return Stmt(
        f"UPDATE keys SET id = id WHERE id = :id AND NOT EXISTS ({USED_BY_OTHERS})",
        {"id": key_id, "agent": agent_id, "since": since},
        expect=1,
        refusal=f"key {key_id} was used by {who} after this batch wrote it, so the batch's write stays",
    )


# Each applies only while the object still holds what the batch wrote (else it refuses: someone
# changed the object meanwhile, and the undo must not overwrite that).
def unactivate(key_id: str, activated_at: int, protect_until: int | None, deactivate_at: int | None) -> Stmt:
    """Back to Pre-Active with the periods it had, unless revoked, compromised or destroyed since."""
    return Stmt(
        "UPDATE keys SET activated_at = NULL, protect_until = :protect, deactivate_at = :deactivate "
        "WHERE id = :id AND activated_at = :at AND deactivate_at > :at AND compromised_at IS NULL "
        "AND destroyed_at IS NULL",
        {"id": key_id, "at": activated_at, "protect": protect_until, "deactivate": deactivate_at},
        expect=1,
        refusal=f"key {key_id} was revoked, compromised or destroyed since it was activated",
    )


def unregister(agent: AgentAccess, key_id: str, registered_at: int, activated: bool) -> list[Stmt]:
    """The registered object and its attributes removed, unless it changed state or was bound to
    a data unit since (the refused last statement rolls back the first two)."""
    params = {"id": key_id, "agent": agent.agent_id, "at": registered_at, "active": int(activated)}
    return [
        Stmt("DELETE FROM key_custom_attributes WHERE key_id = :id", params),
        Stmt("DELETE FROM key_kmip WHERE key_id = :id", params),
        Stmt(
            "DELETE FROM keys WHERE id = :id AND registered_by = :agent AND created_at = :at "
            "AND (activated_at IS NOT NULL) = :active AND compromised_at IS NULL AND destroyed_at IS NULL "
            "AND data_unit_id IS NULL "
            "AND NOT EXISTS (SELECT 1 FROM data_unit_released_keys r WHERE r.key_id = :id)",
            params,
            expect=1,
            refusal=f"object {key_id} was activated, revoked, destroyed or bound to a data unit since",
        ),
    ]


def unadd_custom_attribute(key_id: str, name: str, index: int, value: str, item: bytes | None) -> Stmt:
    return Stmt(
        "DELETE FROM key_custom_attributes WHERE key_id = ? AND name = ? AND idx = ? AND value = ? "
        "AND item IS ?",
        (key_id, name, index, value, item),
        expect=1,
        refusal=f"attribute '{name}' of key {key_id} was changed or deleted since",
    )


def restore_custom_attribute(
    key_id: str, name: str, index: int, was: tuple[str, bytes | None], wrote: tuple[str, bytes | None]
) -> Stmt:
    """A kept value (text, TTLV item) back to what it `was`, while it holds what was `wrote`."""
    return Stmt(
        "UPDATE key_custom_attributes SET value = ?, item = ? WHERE key_id = ? AND name = ? AND idx = ? "
        "AND value = ? AND item IS ?",
        (*was, key_id, name, index, *wrote),
        expect=1,
        refusal=f"attribute '{name}' of key {key_id} was changed or deleted since",
    )


def readd_custom_attribute(key_id: str, name: str, index: int, value: str, item: bytes | None) -> Stmt:
    """A deleted kept value back at its index, unless another took that place or the key was destroyed."""
    return Stmt(
        "INSERT INTO key_custom_attributes (key_id, name, idx, value, item) SELECT :id, :name, :idx, :value, "
        ":item WHERE NOT EXISTS (SELECT 1 FROM key_custom_attributes WHERE key_id = :id AND name = :name "
        "AND idx = :idx) AND EXISTS (SELECT 1 FROM keys WHERE id = :id AND destroyed_at IS NULL)",
        {"id": key_id, "name": name, "idx": index, "value": value, "item": item},
        expect=1,
        refusal=f"attribute '{name}' of key {key_id} was set again, or the key destroyed, since",
    )


def untouch(key_id: str, now: int, changed_at: int | None) -> Stmt:
    """The Last Change Date it had, unless the key changed again since."""
    return Stmt(
        "UPDATE key_kmip SET changed_at = :was WHERE key_id = :id AND changed_at = :now",
        {"id": key_id, "now": now, "was": changed_at},
    )


def revoke(
    agent: AgentAccess,
    key_id: str,
    now: int,
    compromised_at: int | None,
    reason: int,
    message: str | None,
    occurred: int | None = None,
) -> list[Stmt]:
    """Compromise (any live key) or deactivate now (a key not yet deactivated)."""
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
    else:
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
    return [change, record]


def destroy(agent: AgentAccess, key_id: str, now: int, comment: str) -> Stmt:
    """Deactivated or compromised keys, and Pre-Active ones (KMIP allows it: such a key has never
    protected data, its material can go)."""
    return Stmt(
        "UPDATE keys SET destroyed_at = :now, destroy_comment = :comment, material_wrapped = NULL "
        f"WHERE id = :id AND ({DESTROYABLE_SQL} OR (destroyed_at IS NULL AND activated_at IS NULL)) "
        f"AND key_group_id IS NOT NULL AND {may_use('keys.key_group_id')} AND {MAY_REVOKE}",
        {"id": key_id, **mine(agent), "now": now, "comment": comment},
        expect=1,
        refusal="only pre-active, deactivated or compromised keys can be destroyed",
    )


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


def bind_data_unit(agent: AgentAccess, key_id: str, data_unit_id: str, now: int) -> list[Stmt]:
    return [
        register_data_unit(data_unit_id, now),
        Stmt(
            "UPDATE keys SET data_unit_id = :du WHERE id = :id AND data_unit_id IS NULL "
            f"AND destroyed_at IS NULL AND {may_use('keys.key_group_id')}",
            {"id": key_id, "du": data_unit_id, **mine(agent)},
            expect=1,
            refusal="the key is already bound to a data unit",
        ),
    ]


def release_data_unit(agent: AgentAccess, data_unit_id: str, now: int) -> list[Stmt]:
    """Writing from beginning of tape: the data unit's keys (that the agent sees) let go of it."""
    params = {"du": data_unit_id, **mine(agent), "now": now}
    return [
        Stmt(
            "INSERT INTO data_unit_released_keys (key_id, data_unit_id, agent_id, released_at) "
            f"SELECT id, data_unit_id, :agent, :now FROM keys WHERE data_unit_id = :du "
            f"AND key_group_id IN {AGENT_GROUPS}",
            params,
        ),
        Stmt(
            "UPDATE keys SET data_unit_id = NULL "
            f"WHERE data_unit_id = :du AND key_group_id IN {AGENT_GROUPS}",
            params,
        ),
    ]


def add_custom_attribute(key_id: str, name: str, value: str, item: bytes | None = None) -> Stmt:
    """A kept attribute's next value (`item`: its TTLV Attribute Value unless it is text)."""
    return Stmt(
        "INSERT INTO key_custom_attributes (key_id, name, idx, value, item) "
        "SELECT :id, :name, coalesce(max(idx) + 1, 0), :value, :item FROM key_custom_attributes "
        "WHERE key_id = :id AND name = :name "
        "HAVING (SELECT count(*) FROM key_custom_attributes WHERE key_id = :id) < :most",
        {"id": key_id, "name": name, "value": value, "item": item, "most": MAX_CUSTOM_ATTRIBUTES},
        expect=1,
        refusal=f"a key holds at most {MAX_CUSTOM_ATTRIBUTES} custom attribute values",
    )


def modify_custom_attribute(
    key_id: str, name: str, index: int, value: str, item: bytes | None = None
) -> Stmt:
    return Stmt(
        "UPDATE key_custom_attributes SET value = ?, item = ? WHERE key_id = ? AND name = ? AND idx = ?",
        (value, item, key_id, name, index),
        expect=1,
        refusal=f"the key has no attribute '{name}' at index {index}",
    )


def adjust_custom_attribute(key_id: str, name: str, index: int, was: bytes, value: str, item: bytes) -> Stmt:
    """A kept number's new value, only if it still holds the one it was computed from (two
    adjustments at once: the later is refused, never lost)."""
    return Stmt(
        "UPDATE key_custom_attributes SET value = ?, item = ? WHERE key_id = ? AND name = ? AND idx = ? "
        "AND item = ?",
        (value, item, key_id, name, index, was),
        expect=1,
        refusal=f"attribute '{name}' changed while it was adjusted; adjust it again",
    )


def delete_custom_attribute(key_id: str, name: str, index: int) -> Stmt:
    return Stmt(
        "DELETE FROM key_custom_attributes WHERE key_id = ? AND name = ? AND idx = ?",
        (key_id, name, index),
        expect=1,
        refusal=f"the key has no attribute '{name}' at index {index}",
    )


# --- Locate ---------------------------------------------------------------------------------
def _kmip_state(*states: KeyState, compromised: bool = False) -> str:
    """A KMIP State: the lifecycle's states (kma/domain/lifecycle.py), compromised or not."""
    either = " OR ".join(key_in_state(s, "k.") for s in states)
    return f"({either}) AND k.compromised_at IS {'NOT ' if compromised else ''}NULL"


STATE_SQL = {  # KMIP State -> condition on a key row
    1: _kmip_state(KeyState.GENERATED, KeyState.READY, KeyState.PRE_ACTIVE, KeyState.WITHHELD),  # Pre-Active
    2: _kmip_state(KeyState.PROTECT_AND_PROCESS, KeyState.PROCESS_ONLY),  # Active
    3: _kmip_state(KeyState.DEACTIVATED),
    4: f"NOT {key_in_state(KeyState.DESTROYED, 'k.')} AND k.compromised_at IS NOT NULL",  # Compromised
    5: _kmip_state(KeyState.DESTROYED),
    6: _kmip_state(KeyState.DESTROYED, compromised=True),  # Destroyed Compromised
}


@dataclass
class LocateFilter:
    """What a Locate asks for; every condition must hold (KMIP: all attributes match)."""

    data_units: list[str]
    groups: list[str]
    states: list[int]
    custom: list[tuple[str, str, bytes | None]]  # kept attributes: name, text, TTLV value unless text
    key_ids: list[str]
    names: list[str] = field(default_factory=list)  # Name: the data unit, or a Name a client set
    object_types: list[int] = field(default_factory=list)  # KMIP Object Type
    bits: list[int] = field(default_factory=list)  # Cryptographic Length
    algorithms: list[int] = field(default_factory=list)  # a registered public or private key's
    certificate_types: list[int] = field(default_factory=list)  # a registered certificate's
    usage_mask: int | None = None
    nothing: bool = False  # e.g. an object type other than symmetric keys: no match at all
    # a lifecycle date's column -> the dates asked for: one is that date, two a range (KMIP)
    dates: dict[str, list[int]] = field(default_factory=dict)


def locate(
    kma: Appliance, agent: AgentAccess, now: int, wanted: LocateFilter, offset: int, limit: int
) -> tuple[list[str], int]:
    """(IDs newest first, from `offset`, at most `limit`; how many match in all)."""
    if wanted.nothing:
        return [], 0
    where = [f"k.key_group_id IN {AGENT_GROUPS}"]
    params: dict[str, Any] = {**mine(agent), "now": now}

    def bind(prefix: str, values: Sequence[Any]) -> list[str]:
        names = []
        for i, value in enumerate(values):
            params[f"{prefix}{i}"] = value
            names.append(f":{prefix}{i}")
        return names

    where += [f"k.data_unit_id = {p}" for p in bind("du", wanted.data_units)]
    where += [f"k.key_group_id = {p}" for p in bind("g", wanted.groups)]
    where += [f"k.id = {p}" for p in bind("id", wanted.key_ids)]
    # An attribute's value names the keys that have it, through its index (migration 0050): as a
    # test of each key in turn (EXISTS, or OR-ed with the data unit) a Locate by Name read every
    # key of the agent's groups, 270 ms at a million keys, seconds with 16 drives asking at once.
    for i, (name, value, item) in enumerate(wanted.custom):
        params[f"cn{i}"], params[f"cv{i}"], params[f"ci{i}"] = name, value, item
        where.append(
            f"k.id IN (SELECT c.key_id FROM key_custom_attributes c "
            f"WHERE c.name = :cn{i} AND c.value = :cv{i} AND c.item IS :ci{i})"
        )
    form = "(SELECT {c} FROM key_kmip f WHERE f.key_id = k.id)"
    where += [f"coalesce({form.format(c='object_type')}, 2) = {p}" for p in bind("ot", wanted.object_types)]
    where += [f"coalesce({form.format(c='bits')}, 256) = {p}" for p in bind("bits", wanted.bits)]
    where += [f"{form.format(c='algorithm')} = {p}" for p in bind("alg", wanted.algorithms)]
    where += [  # a certificate (Object Type 1) whose Certificate Type is X.509 (1) unless kept
        f"{form.format(c='object_type')} = 1 AND coalesce({form.format(c='data_type')}, 1) = {p}"
        for p in bind("ct", wanted.certificate_types)
    ]
    for p in bind("nm", wanted.names):
        where.append(
            f"k.id IN (SELECT n.id FROM keys n WHERE n.data_unit_id = {p} UNION ALL "
            f"SELECT c.key_id FROM key_custom_attributes c WHERE c.name = 'Name' AND c.value = {p})"
        )
    for column, (earliest, latest) in _date_ranges(wanted).items():
        params[f"{column}_from"], params[f"{column}_to"] = earliest, latest
        where.append(f"k.{column} BETWEEN :{column}_from AND :{column}_to")
    if wanted.states:
        where.append("(" + " OR ".join(f"({STATE_SQL[s]})" for s in wanted.states) + ")")
    else:
        where.append("k.destroyed_at IS NULL")  # destroyed keys only when asked for by state
    if wanted.usage_mask is not None:
        params["mask"] = wanted.usage_mask
        where.append(
            "(coalesce((SELECT usage_mask FROM key_kmip m WHERE m.key_id = k.id), 12) & :mask) = :mask"
        )
    issued_here = _issued_here(kma, agent, now, wanted)
    # Counted once: one the replica shows by now (its outbox entry not yet forgotten) is left out.
    if issued_here:
        where.append(f"k.id NOT IN ({', '.join(bind('here', issued_here))})")
    condition = " AND ".join(where)
    total = int(kma.store.scalar(f"SELECT count(*) FROM keys k WHERE {condition}", params) or 0)
    total += len(issued_here)
    first = issued_here[offset : offset + limit]  # the newest keys: they come first
    params["limit"], params["offset"] = limit - len(first), max(0, offset - len(issued_here))
    rows = kma.store.query(
        f"SELECT k.id FROM keys k WHERE {condition} ORDER BY k.activated_at IS NULL DESC, "
        "k.activated_at DESC, k.created_at DESC, k.id LIMIT :limit OFFSET :offset",
        params,
    )
    found = first + [str(r[0]) for r in rows]
    if total == 0 and offset == 0:  # a tape the cluster records no key for: one it refused to bind?
        found = _unrecorded(kma, agent, wanted)[:limit]
        total = len(found)
    return found, total


def _unrecorded(kma: Appliance, agent: AgentAccess, wanted: LocateFilter) -> list[str]:
    """The keys whose binding to the asked-for tape the cluster refused, for the agent it went
    to (a drive reading that tape finds the key it wrote with), for a plain tape lookup only."""
    tapes = {*wanted.data_units, *wanted.names}  # a tape's Name is its data unit (a tape key group's rule)
    if len(tapes) != 1 or wanted.groups or wanted.key_ids or wanted.custom or wanted.states:
        return []
    rows = kma.store.query(
        "SELECT key_id FROM unrecorded_bindings WHERE agent_id = ? AND data_unit_id = ? ORDER BY id DESC",
        (agent.agent_id, *tapes),
    )
    return [str(r[0]) for r in rows]


def _date_ranges(wanted: LocateFilter) -> dict[str, tuple[int, int]]:
    return {column: (min(dates), max(dates)) for column, dates in wanted.dates.items()}


def _issued_here(kma: Appliance, agent: AgentAccess, now: int, wanted: LocateFilter) -> list[str]:
    """The keys this KMA issued and has not shipped, which `wanted` finds (they have no custom
    attributes and the default usage mask), newest first."""
    found = []
    for s in kma.store.unshipped_all():
        state = 1 if s["activated_at"] is None else (3 if s["deactivate_at"] <= now else 2)
        if (
            all(s["data_unit_id"] == du for du in [*wanted.data_units, *wanted.names])
            and all(s["key_group_id"] == g for g in wanted.groups)
            and all(s["id"] == k for k in wanted.key_ids)
            and not wanted.custom
            and all(t == 2 for t in wanted.object_types)
            and all(b == 256 for b in wanted.bits)
            and not wanted.algorithms
            and not wanted.certificate_types
            and (not wanted.states or state in wanted.states)
            and (wanted.usage_mask is None or (12 & wanted.usage_mask) == wanted.usage_mask)
            and all(s[c] is not None and a <= s[c] <= b for c, (a, b) in _date_ranges(wanted).items())
            and _may_see(kma, agent, s["key_group_id"])
        ):
            found.append(s)
    found.sort(key=lambda s: (s["activated_at"] is None, -(s["activated_at"] or 0), s["id"]))
    return [str(s["id"]) for s in found]
