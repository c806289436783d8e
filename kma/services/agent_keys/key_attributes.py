"""The attributes a client keeps on a key as it sent them (kma/kmip/attributes.py `Kept`): its own
`x-...` attributes, Name, Contact Information and the like, several values each (by index)."""

from __future__ import annotations

from kma.appliance import Appliance
from kma.services.agent_keys.key_access import Row
from kma.store import Stmt

MAX_CUSTOM_ATTRIBUTES = 32  # instances of x-... attributes per key


def custom_attributes(kma: Appliance, key_id: str) -> list[Row]:
    return kma.store.query(
        "SELECT name, idx, value, item FROM key_custom_attributes WHERE key_id = ? ORDER BY name, idx",
        (key_id,),
    )


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
