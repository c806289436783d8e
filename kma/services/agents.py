"""Agents (Operator's area): records, enable/disable, one-time enrollment passphrases.

The enrollment passphrase is shown once and only its Argon2id hash is kept; enrolling (the
service listener) clears it, so it works once.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.crypto import hash_passphrase
from kma.domain import media
from kma.domain.actor import Actor
from kma.domain.validation import check_id, check_text
from kma.errors import NotFound, ValidationFailed
from kma.services.common import describe, patch, refuse_taken, require, typed_row
from kma.services.integrity.row_macs import member_of
from kma.services.paging import (
    Filter,
    ListQuery,
    Page,
    PageRequest,
    SearchIndex,
    boolean,
    indexed_rows,
    list_page,
)
from kma.store import Stmt

WEEK = 7 * 86400

# An agent's health from what the KMA already records (every KMIP request is an audit event
# with the agent as its entity): its newest event is the last entry of the audit_entity index,
# ordered by (entity_id, id). The keys it was sent this week (the last seven UTC days, today
# included) are the store's per-agent daily counts, kept by a trigger on the audit trail
# (migration 0015): a few rows per agent, where counting its Get events read every one of them.
HEALTH = (
    "(SELECT created_at FROM audit_events WHERE id = "
    "(SELECT max(id) FROM audit_events WHERE entity_id = agents.id)) AS last_contact_at, "
    "(SELECT coalesce(sum(served), 0) FROM agent_keys_served WHERE agent_id = agents.id "
    f"AND day > (:now - {WEEK}) / 86400) AS keys_served_7d, "
    "certificate_not_after AS certificate_expires_at"
)

DRIVE = "drive_model, drive_generation, library, library_partition"  # docs/media.md

LIST = ListQuery(
    select=(
        "SELECT id, description, site_id, default_key_group_id, enabled, "
        "enrolled_at IS NOT NULL AS enrolled, enrollment_passphrase_hash IS NOT NULL AS "
        f"enrollment_pending, enrolled_at, created_at, updated_at, {HEALTH}, {DRIVE} FROM agents"
    ),
    sort_fields={"id": "id", "site_id": "site_id", "created_at": "created_at"},
    default_sort="id",
    search=("id", "description", "site_id"),
    search_index=SearchIndex("id", indexed_rows("agents_text", "id")),
    filters={
        "site_id": Filter("site_id = :value"),
        "enabled": Filter("enabled = :value", boolean),
        "drive_generation": Filter("drive_generation = :value"),
        "library": Filter("library = :value"),
        "key_group_id": Filter(
            "EXISTS (SELECT 1 FROM key_group_agents ga "
            "WHERE ga.agent_id = listed.id AND ga.key_group_id = :value)"
        ),
        # days, on the machine's clock as TLS judges certificates; an agent never enrolled has none
        "expires_within_days": Filter(
            "certificate_expires_at <= CAST(strftime('%s', 'now') AS INTEGER) + :value * 86400", int
        ),
    },
    filtered_sorts={
        "site_id": frozenset({"site_id", "enabled", "key_group_id"}),
        "created_at": frozenset({"enabled", "key_group_id"}),
    },
)


@dataclass(frozen=True)
class AgentRow:
    """An agent (a tape drive or another KMIP client) with its health, as the API shows it (times
    in seconds since the epoch); the API's `Agent` reads it."""

    id: str
    description: str
    site_id: str
    default_key_group_id: str
    enabled: bool
    enrolled: bool
    enrollment_pending: bool  # a one-time enrollment passphrase waits to be used
    created_at: int
    updated_at: int
    last_contact_at: int | None  # its newest request on the service listener
    certificate_expires_at: int | None  # of the certificate it enrolled with last
    keys_served_7d: int  # keys sent to it (KMIP Get) in the last seven days
    drive_model: str  # docs/media.md
    drive_generation: str | None
    library: str
    library_partition: str


def _row(row: Any) -> dict[str, Any]:
    out = dict(row)
    for flag in ("enabled", "enrolled", "enrollment_pending"):
        out[flag] = bool(out[flag])
    return out


def list_agents(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req, {"now": kma.clock.now()})
    return page.with_items([_row(r) for r in page.items])


def get_agent(kma: Appliance, agent_id: str) -> AgentRow:
    row = kma.store.query_one(
        f"SELECT * FROM ({LIST.select}) WHERE id = :id", {"id": agent_id, "now": kma.clock.now()}
    )
    if row is None:
        raise NotFound(f"There is no agent '{agent_id}'.")
    return typed_row(AgentRow, _row(row))


def create_agent(
    kma: Appliance,
    actor: Actor,
    agent_id: str,
    site_id: str,
    default_key_group_id: str,
    description: str = "",
    **drive: str | None,
) -> AgentRow:
    """`drive`: a tape drive's drive_model, drive_generation, library, library_partition."""
    check_id(agent_id, "The agent ID")
    check_text(description, "The description")
    drive = {k: v for k, v in drive_fields(drive).items() if v}
    require(kma, "site", site_id)
    require(kma, "key group", default_key_group_id)
    refuse_taken(kma, "agent", agent_id)
    now = kma.clock.now()
    kma.commit(
        actor,
        "agent.create",
        [
            Stmt(
                "INSERT INTO agents (id, description, site_id, default_key_group_id, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (agent_id, description, site_id, default_key_group_id, now, now),
            ),
            *member_of(kma, default_key_group_id, agent_id),
            *([patch("agent", agent_id, drive, now)] if drive else []),
        ],
        f"created agent '{agent_id}' at site '{site_id}', default key group '{default_key_group_id}'"
        + (f"; drive {describe(drive)}" if drive else ""),
        ("agent", agent_id),
    )
    return get_agent(kma, agent_id)


def drive_fields(drive: Mapping[str, str | None]) -> dict[str, str | None]:
    """The drive fields given, checked; an empty generation clears it (not a tape drive)."""
    given = {k: v for k, v in drive.items() if v is not None}
    for name in ("drive_model", "library", "library_partition"):
        if name in given:
            check_text(given[name], f"The {name.replace('_', ' ')}")
    out: dict[str, str | None] = dict(given)
    if "drive_generation" in given:
        try:
            generation = given["drive_generation"]
            out["drive_generation"] = media.check_generation(generation) if generation else None
        except ValueError as bad:
            raise ValidationFailed(f"The drive generation {bad}.") from None
    return out


def update_agent(kma: Appliance, actor: Actor, agent_id: str, **changes: Any) -> AgentRow:
    changes = {k: v for k, v in changes.items() if v is not None}
    if "description" in changes:
        check_text(changes["description"], "The description")
    if "site_id" in changes:
        require(kma, "site", changes["site_id"])
    statements = []
    if "default_key_group_id" in changes:
        require(kma, "key group", changes["default_key_group_id"])
        statements += member_of(kma, changes["default_key_group_id"], agent_id)
    if "enabled" in changes:
        changes["enabled"] = int(changes["enabled"])
    changes.update(drive_fields({k: changes.pop(k) for k in DRIVE.split(", ") if k in changes}))
    if changes:
        statements.insert(0, patch("agent", agent_id, changes, kma.clock.now()))
        kma.commit(
            actor,
            "agent.update",
            statements,
            f"changed agent '{agent_id}': {describe(changes)}",
            ("agent", agent_id),
        )
    return get_agent(kma, agent_id)


def new_enrollment_passphrases(kma: Appliance, actor: Actor, agent_ids: list[str]) -> list[dict[str, str]]:
    """A passphrase for each agent, each set and audited as `new_enrollment_passphrase` does (the
    agent's history shows it); every agent must exist before any passphrase changes."""
    wanted = list(dict.fromkeys(agent_ids))
    marks = ",".join("?" * len(wanted))
    known = {r["id"] for r in kma.store.query(f"SELECT id FROM agents WHERE id IN ({marks})", wanted)}
    missing = [a for a in wanted if a not in known]
    if missing:
        raise NotFound(f"There is no agent {', '.join(repr(a) for a in missing[:5])}; no passphrase was set.")
    return [{"agent_id": a, "passphrase": new_enrollment_passphrase(kma, actor, a)} for a in wanted]


def new_enrollment_passphrase(kma: Appliance, actor: Actor, agent_id: str) -> str:
    """A fresh one-time passphrase; it replaces any earlier one. Returned once, never stored."""
    passphrase = "-".join(secrets.token_hex(3).upper() for _ in range(4))
    kma.commit(
        actor,
        "agent.enrollment_passphrase",
        [
            Stmt(
                "UPDATE agents SET enrollment_passphrase_hash = ?, updated_at = ? WHERE id = ?",
                (hash_passphrase(passphrase), kma.clock.now(), agent_id),
                expect=1,
                missing=True,
                refusal=f"there is no agent '{agent_id}'",
            )
        ],
        f"set a new one-time enrollment passphrase for agent '{agent_id}'",
        ("agent", agent_id),
    )
    return passphrase
