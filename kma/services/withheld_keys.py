"""Keys a restore withheld, read by their ID after it (docs/backups.md "One key, one tape after a
restore").

A withheld key was an unassigned pool key in the backup: the KMA that made the backup may have
issued it after, to a drive whose tape now needs it, and the restored KMA cannot know which drive.
A key's ID is no secret (a drive records it with the tape, the audit trail names it, a cartridge
moves between sites), so "readable by ID to every agent" would open it to every key group. Instead
the first agent to read it binds it: the key joins that agent's default key group (one of its
groups if that is not), in an audited write the officer sees (`key.withheld_bound`, a warning, and
the dashboard's count of withheld keys goes down). From then on it is an ordinary key of that group:
an agent of another group is answered as for any key it may not see. A Get names no tape, so its data
unit stays unknown, as it was in the backup.
"""

from __future__ import annotations

from kma.appliance import Appliance
from kma.audit.record import Condition
from kma.domain.actor import Actor
from kma.errors import Conflict, NotFound
from kma.services.integrity import key_macs
from kma.store import Batch, Refused, Stmt

BOUND = "key.withheld_bound"


def _group(groups: frozenset[str], default: str) -> str | None:
    return default if default in groups else min(groups, default=None)


UNBOUND = "SELECT 1 FROM keys WHERE id = ? AND withheld_at IS NOT NULL AND key_group_id IS NULL"


def bind(kma: Appliance, actor: Actor, key_id: str, groups: frozenset[str], default_group: str) -> str | None:
    """Bind the withheld, unbound key to the reading agent's key group; the group the key is in
    now (another's when another agent bound it a moment before), None when the agent has none."""
    group = _group(groups, default_group)
    if group is None:
        return None
    message = (
        f"bound key '{key_id}', withheld by a restore, to key group '{group}' at its first read by ID "
        f"(agent '{actor.entity_id}'): the backup held it unassigned, it may have been issued after; "
        "from now on only agents of that group read it"
    )
    try:
        row = key_macs.sealed_key(kma, key_id)
    except (Conflict, NotFound):
        return None  # a forged row is bound to nobody (its tamper event says so)
    event = kma.record(actor, BOUND, message, subject=("key", key_id), condition=Condition.WARNING)
    stmt = Stmt(
        "UPDATE keys SET key_group_id = ? WHERE id = ? AND key_group_id IS NULL AND withheld_at IS NOT NULL "
        "AND destroyed_at IS NULL",
        (group, key_id),
        expect=1,
        refusal=f"key '{key_id}' was bound by another agent's read a moment ago",
    )
    try:
        kma.store.write(Batch([stmt, key_macs.reseal(kma, row, key_group_id=group)], event))
    except (Refused, Conflict):
        bound = kma.store.query_leader("SELECT key_group_id FROM keys WHERE id = ?", (key_id,))
        return str(bound[0][0]) if bound and bound[0][0] else None
    return group
