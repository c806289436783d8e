"""Putting back a write of a batch with Undo (kma/kmip/undo.py). Each statement applies only while
the object still holds what the batch wrote, and refuses otherwise: someone changed the object
meanwhile, and the undo must not overwrite that."""

from __future__ import annotations

from kma.services.agent_keys.key_access import AgentAccess
from kma.store import Stmt

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
