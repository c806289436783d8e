"""Which keys an encryption agent sees, and reading one (kma/services/agent_keys/__init__.py).

On a cluster KMA, a pool key's assignment (Create, Write Key) waits in the KMA's outbox until
the cluster holds it (kma/store/outbox.py; `key_lifecycle.deferred_assignment`), also while the KMA
is cut off from the Raft majority. The reads here (`visible_key`, `current_write_key`) and Locate
see such unshipped assignments too, so a drive's Get or Locate right after its Write Key finds the key.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.lifecycle import HELD_OR_REPLICATED, KeyState, key_in_state
from kma.services import withheld_keys
from kma.services.integrity import key_macs, row_macs
from kma.services.withheld_keys import UNBOUND

Row = sqlite3.Row


# The agent's key groups: a membership row counts only while it is in the cluster (a removal
# works at once) and among the groups whose row MAC this KMA verified (:groups, `AgentAccess.groups`,
# kma/services/integrity/row_macs.py), so a row written into the store without the KMA grants nothing.
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


def policy_value(column: str, group: str) -> str:
    return (
        f"(SELECT p.{column} FROM key_groups g JOIN key_policies p ON p.id = g.policy_id "
        f"WHERE g.id = {group})"
    )


MAY_REVOKE = f"{policy_value('agents_may_revoke', 'keys.key_group_id')} = 1"


MAY_IMPORT = f"{policy_value('allow_import', ':g')} = 1"


# Active for writing by agent :agent: Protect-and-Process, not compromised; and made by the
# cluster, or registered by this very agent, or in a group whose policy allows import. Otherwise
# one drive could plant key bytes of its choosing (named like a tape) and have every other drive
# write that tape under them.
PROTECTING = key_in_state(KeyState.PROTECT_AND_PROCESS, "{t}") + (
    " AND {t}compromised_at IS NULL AND ({t}registered_by IS NULL "
    "OR {t}registered_by = :agent OR (SELECT p.allow_import FROM key_groups g JOIN key_policies p "
    "ON p.id = g.policy_id WHERE g.id = {t}key_group_id) = 1)"
)


KEY_COLUMNS = (
    "k.id, k.key_group_id, k.data_unit_id, k.agent_id, k.kma_id, k.created_at, k.issued_at, k.activated_at, "
    "k.protect_until, k.deactivate_at, k.compromised_at, k.destroyed_at, k.registered_by, m.usage_mask, "
    "m.revocation_reason, m.revocation_message, m.changed_at, m.compromise_occurrence_at, m.digest, "
    "m.object_type, m.bits, m.data_type, m.key_format, m.algorithm, m.sensitive, m.replacement_id, "
    "m.replaced_id, k.mac, k.imported_at"
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
    # The certificate a renewal replaced: still accepted until it expires
    # (kma/services/certificates/agent_renewal.py)
    previous_fingerprint: str | None = None

    @functools.cached_property
    def groups_json(self) -> str:
        """`groups` as the JSON array `AGENT_GROUPS` reads: made once, not on every request."""
        return json.dumps(sorted(self.groups))


def mine(agent: AgentAccess | None) -> dict[str, str | None]:
    """The parameters `AGENT_GROUPS` and `may_use` read: the agent and its verified key groups."""
    if agent is None:
        return {"agent": None, "groups": "[]"}
    return {"agent": agent.agent_id, "groups": agent.groups_json}


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
        found = _genuine(kma, kma.store.query_one(f"{sql} AND {READABLE_BY_ID}", params))
        return _read_by_id(kma, agent, key_id, found, actor)
    if row is not None or shows is None:
        return _genuine(kma, row)
    row = _genuine(kma, kma.store.query_one(sql, params))
    if row is None:
        return None
    group = shows["key_group_id"] if row["key_group_id"] is None else row["key_group_id"]
    if not may_see(kma, agent, group):
        return None
    return {**dict(row), **shows} if row["key_group_id"] is None else row


def _genuine(kma: Appliance, row: Row | None) -> Row | None:
    """The row, unless its MAC fails (kma/services/integrity/key_macs.py): a key forged or moved in the store
    is served to nobody, and reported."""
    return row if row is None or key_macs.verified(kma, row) else None


def _read_by_id(
    kma: Appliance, agent: AgentAccess, key_id: str, row: Row | None, actor: Actor | None
) -> Row | Mapping[str, Any] | None:
    """A key `READABLE_BY_ID` found: a withheld one is bound to the agent's group first."""
    if row is None or row["key_group_id"] is not None or not kma.store.query(UNBOUND, (key_id,)):
        return row  # a key whose assignment to this agent the cluster refused
    if actor is None:
        return None
    group = withheld_keys.bind(kma, actor, key_id, agent.groups, agent.default_group)
    return {**dict(row), "key_group_id": group} if group and may_see(kma, agent, group) else None


# Keys an agent reads by ID though they are not in its groups: a key a restore withheld and no read
# has bound to a group yet (the backup held it unassigned, but it may have been issued after; the
# restored KMA cannot know to whom: the first read binds it, kma/services/withheld_keys.py), and a
# key whose assignment to this agent the cluster refused (its tape was written with it all the same).
READABLE_BY_ID = (
    "((k.withheld_at IS NOT NULL AND k.key_group_id IS NULL) OR EXISTS (SELECT 1 FROM "
    "unrecorded_bindings u WHERE u.key_id = k.id AND u.agent_id = :agent))"
)


def held(kma: Appliance, key_id: str) -> bool:
    """Whether the key is held beyond this KMA's own store: by another KMA of the cluster, or by a
    database backup that began after its `backup_mark` (`HELD_OR_REPLICATED`). An imported key's
    material waits for it: the partner's copy is not this cluster's to count on, and a restore of
    an earlier backup would lose a key a drive has already written with."""
    sql = f"SELECT {HELD_OR_REPLICATED.format(t='')} FROM keys WHERE id = ?"
    return bool(kma.store.scalar(sql, (key_id,)))


def key_id_taken(kma: Appliance, key_id: str) -> str | None:
    """The ID of the key whose ID is `key_id` in any case (IDs are unique regardless of case)."""
    found = kma.store.scalar("SELECT id FROM keys WHERE id = ? COLLATE NOCASE LIMIT 1", (key_id,))
    return None if found is None else str(found)


# What sends an object's material to a client (KMIP Get, and Export, which is a Get).
SENDING = ("kmip.get", "kmip.export")


class _Sent:
    """Keys whose material this KMA saw was sent: a send stays sent (Fresh never comes back), so a
    drive's repeated Gets of its key read the audit trail for it once."""

    MOST = 200_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[str] = set()

    def __contains__(self, key_id: str) -> bool:
        return key_id in self._keys

    def add(self, key_id: str) -> None:
        with self._lock:
            if len(self._keys) >= self.MOST:
                self._keys.clear()
            self._keys.add(key_id)


_SENT = _Sent()


def material_sent(kma: Appliance, key_id: str) -> bool:
    """Whether the object's material was ever sent to a client (KMIP Fresh is its opposite). The
    audit trail is the record: the event of a first send is kept long (`Retention.LONG`), and a
    cluster KMA cut off from the majority ships it from its outbox like any event."""
    if key_id in _SENT:
        return True
    sent = (
        kma.store.query_one(
            "SELECT 1 FROM audit_events WHERE subject_type = 'key' AND subject_id = ? "
            f"AND operation IN {SENDING} AND condition = 'success' LIMIT 1",
            (key_id,),
        )
        is not None
    )
    if sent:
        _SENT.add(key_id)
    return sent


def group_policy(kma: Appliance, group_id: str) -> Row | None:
    return kma.store.query_one(
        "SELECT p.id, p.encryption_period, p.cryptoperiod, p.agents_may_revoke, p.allow_import, "
        "p.allow_export FROM key_groups g JOIN key_policies p ON p.id = g.policy_id WHERE g.id = ?",
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
        and may_see(kma, agent, s["key_group_id"])
    ]
    if issued_here:
        return str(max(issued_here, key=lambda s: (s["activated_at"], s["id"]))["id"])
    rows = kma.store.query(  # the newest whose MAC verifies: a forged one is passed over, reported
        f"SELECT {key_macs.COLUMNS} FROM keys k WHERE k.data_unit_id = :du "
        f"AND k.key_group_id IN {AGENT_GROUPS} AND {PROTECTING.format(t='k.')} "
        "ORDER BY k.activated_at DESC, k.id LIMIT 8",
        {"du": data_unit_id, **mine(agent), "now": now},
    )
    return next(iter(key_macs.genuine_ids(kma, rows)), None)


def may_see(kma: Appliance, agent: AgentAccess, group_id: str) -> bool:
    return group_id in agent.groups and (
        kma.store.query_one(
            "SELECT 1 FROM key_group_agents WHERE agent_id = ? AND key_group_id = ?",
            (agent.agent_id, group_id),
        )
        is not None
    )


def pending_name(key_id: str) -> str:
    return f"key:{key_id}"
