"""Key policies and key groups (Compliance Officer's area).

A policy's encryption period and cryptoperiod can never change once set: refused here with a
clear message, and refused again by a trigger in the store should anything else try.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.validation import check_id, check_text
from kma.errors import Conflict, NotFound, ValidationFailed
from kma.services.common import describe, patch, require, typed_row
from kma.services.integrity.row_macs import member_of
from kma.services.paging import ListQuery, Page, PageRequest, list_page
from kma.store import Stmt

MAX_PERIOD = 100 * 365 * 86400
FLAGS = ("allow_export", "allow_import", "import_needs_quorum", "agents_may_revoke", "general_keys")
POLICIES = ListQuery(
    select="SELECT * FROM key_policies",
    sort_fields={
        "id": "id",
        "created_at": "created_at",
        "encryption_period": "encryption_period",
        "cryptoperiod": "cryptoperiod",
    },
    default_sort="id",
    search=("id", "description"),
)
GROUPS = ListQuery(
    select=(
        "SELECT g.*, (SELECT group_concat(agent_id, ',') FROM key_group_agents a "
        "WHERE a.key_group_id = g.id) AS agent_ids FROM key_groups g"
    ),
    sort_fields={"id": "id", "policy_id": "policy_id", "created_at": "created_at"},
    default_sort="id",
    search=("id", "description", "policy_id"),
)


@dataclass(frozen=True)
class PolicyRow:
    """A key policy (periods in seconds, times in seconds since the epoch); the API's `KeyPolicy`
    reads it."""

    id: str
    description: str
    encryption_period: int
    cryptoperiod: int
    allow_export: bool
    allow_import: bool
    import_needs_quorum: bool  # an import into its key groups is a quorum operation
    agents_may_revoke: bool
    general_keys: bool  # keys for generic KMIP clients; else tape keys
    rotation_period: int | None  # after a general key's activation, its successor is made
    created_at: int
    updated_at: int


@dataclass(frozen=True)
class GroupRow:
    """A key group and the agents given its keys; the API's `KeyGroup` reads it."""

    id: str
    description: str
    policy_id: str
    agent_ids: list[str]
    created_at: int
    updated_at: int


def _policy(row: Any) -> dict[str, Any]:
    out = dict(row)
    for flag in FLAGS:
        out[flag] = bool(out[flag])
    return out


def _group(row: Any) -> dict[str, Any]:
    out = dict(row)
    out["agent_ids"] = sorted(a for a in (out["agent_ids"] or "").split(",") if a)
    return out


def list_key_policies(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, POLICIES, req)
    return page.with_items([_policy(r) for r in page.items])


def get_key_policy(kma: Appliance, policy_id: str) -> PolicyRow:
    row = kma.store.query_one("SELECT * FROM key_policies WHERE id = ?", (policy_id,))
    if row is None:
        raise NotFound(f"There is no key policy '{policy_id}'.")
    return typed_row(PolicyRow, _policy(row))


def create_key_policy(
    kma: Appliance,
    actor: Actor,
    policy_id: str,
    encryption_period: int,
    cryptoperiod: int,
    description: str = "",
    allow_export: bool = False,
    allow_import: bool = False,
    import_needs_quorum: bool = False,
    agents_may_revoke: bool = False,
    general_keys: bool = False,
    rotation_period: int | None = None,
) -> PolicyRow:
    check_id(policy_id, "The key policy ID")
    check_text(description, "The description")
    if not 0 < encryption_period <= MAX_PERIOD or not 0 < cryptoperiod <= MAX_PERIOD:
        raise ValidationFailed("Periods must be at least one second and at most 100 years.")
    if cryptoperiod < encryption_period:
        raise ValidationFailed("The cryptoperiod cannot be shorter than the encryption period.")
    if rotation_period is not None and not general_keys:
        raise ValidationFailed(
            "A rotation period is for a policy that keeps general keys (tape keys change per tape)."
        )
    if rotation_period is not None and not 0 < rotation_period <= encryption_period:
        raise ValidationFailed(
            "The rotation period must be at least one second and at most the encryption period "
            "(a key's successor is made while the key still protects data)."
        )
    now = kma.clock.now()
    kma.commit(
        actor,
        "key_policy.create",
        [
            Stmt(
                "INSERT INTO key_policies (id, description, encryption_period, cryptoperiod, allow_export, "
                "allow_import, import_needs_quorum, agents_may_revoke, general_keys, rotation_period, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    policy_id,
                    description,
                    encryption_period,
                    cryptoperiod,
                    int(allow_export),
                    int(allow_import),
                    int(import_needs_quorum),
                    int(agents_may_revoke),
                    int(general_keys),
                    rotation_period,
                    now,
                    now,
                ),
            )
        ],
        f"created key policy '{policy_id}': encryption period {encryption_period}s, "
        f"cryptoperiod {cryptoperiod}s"
        + (f", rotation period {rotation_period}s" if rotation_period is not None else ""),
        ("key_policy", policy_id),
    )
    return get_key_policy(kma, policy_id)


def update_key_policy(kma: Appliance, actor: Actor, policy_id: str, **changes: Any) -> PolicyRow:
    changes = {k: v for k, v in changes.items() if v is not None}
    if {"encryption_period", "cryptoperiod"} & changes.keys():
        require(kma, "key policy", policy_id)
        kma.audit(
            actor,
            "key_policy.update",
            "refused: key policy periods cannot change once set",
            subject=("key_policy", policy_id),
        )
        raise Conflict(
            "A key policy's periods cannot change once set; create a new policy instead.", audited=True
        )
    if changes.get("import_needs_quorum") is False and get_key_policy(kma, policy_id).import_needs_quorum:
        # Else one Compliance Officer could clear it, import alone, and set it again.
        kma.audit(
            actor,
            "key_policy.update",
            "refused: an import's quorum cannot be turned off once a policy asks for it",
            subject=("key_policy", policy_id),
        )
        raise Conflict(
            "A key policy that asks for a quorum to import keeps asking; create a new policy instead.",
            audited=True,
        )
    if "description" in changes:
        check_text(changes["description"], "The description")
    changes = {k: int(v) if k in FLAGS else v for k, v in changes.items()}
    if changes:
        kma.commit(
            actor,
            "key_policy.update",
            [patch("key policy", policy_id, changes, kma.clock.now())],
            f"changed key policy '{policy_id}': {describe(changes)}",
            ("key_policy", policy_id),
        )
    return get_key_policy(kma, policy_id)


def list_key_groups(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, GROUPS, req)
    return page.with_items([_group(r) for r in page.items])


def get_key_group(kma: Appliance, group_id: str) -> GroupRow:
    row = kma.store.query_one(f"SELECT * FROM ({GROUPS.select}) WHERE id = ?", (group_id,))
    if row is None:
        raise NotFound(f"There is no key group '{group_id}'.")
    return typed_row(GroupRow, _group(row))


def create_key_group(
    kma: Appliance, actor: Actor, group_id: str, policy_id: str, description: str = ""
) -> GroupRow:
    check_id(group_id, "The key group ID")
    check_text(description, "The description")
    require(kma, "key policy", policy_id)
    now = kma.clock.now()
    kma.commit(
        actor,
        "key_group.create",
        [
            Stmt(
                "INSERT INTO key_groups (id, description, policy_id, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (group_id, description, policy_id, now, now),
            )
        ],
        f"created key group '{group_id}' under policy '{policy_id}'",
        ("key_group", group_id),
    )
    return get_key_group(kma, group_id)


def update_key_group(kma: Appliance, actor: Actor, group_id: str, description: str | None = None) -> GroupRow:
    if description is not None:
        check_text(description, "The description")
        kma.commit(
            actor,
            "key_group.update",
            [patch("key group", group_id, {"description": description}, kma.clock.now())],
            f"changed key group '{group_id}' description",
            ("key_group", group_id),
        )
    return get_key_group(kma, group_id)


def set_key_group_agents(kma: Appliance, actor: Actor, group_id: str, agent_ids: Sequence[str]) -> GroupRow:
    require(kma, "key group", group_id)
    wanted = sorted(set(agent_ids))
    for agent_id in wanted:
        require(kma, "agent", agent_id)
    statements = [Stmt("DELETE FROM key_group_agents WHERE key_group_id = ?", (group_id,))]
    statements += [stmt for a in wanted for stmt in member_of(kma, group_id, a)]
    # An agent always keeps access to its own default key group.
    statements.append(
        Stmt(
            "UPDATE key_groups SET id = id WHERE id = :g AND NOT EXISTS (SELECT 1 FROM agents "
            "WHERE default_key_group_id = :g AND id NOT IN (SELECT agent_id FROM key_group_agents "
            "WHERE key_group_id = :g))",
            {"g": group_id},
            expect=1,
            refusal="an agent cannot lose access to its default key group",
        )
    )
    kma.commit(
        actor,
        "key_group.set_agents",
        statements,
        f"key group '{group_id}' agents: {', '.join(wanted) or 'none'}",
        ("key_group", group_id),
    )
    return get_key_group(kma, group_id)
