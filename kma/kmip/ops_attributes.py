"""Get Attributes, Get Attribute List, Add/Modify/Delete Attribute, Set and Adjust Attribute
(KMIP 2.x: Add or Modify as the key holds the attribute; a number or a time moved); Locate is
kma/kmip/ops_locate.py.

What an agent may change: a key's data unit while it has none (Name, x-Data-Unit or x-Barcode,
or Application Specific Information in the LIBRARY-LTO namespace: a key protects one tape, and
only writing from beginning of tape lets go of it), and what clients keep on a key (their own
`x-` attributes of any type, Alternative Name, Contact Information, Description, Application
Specific Information of other namespaces). Everything else is the KMA's to set.
"""

from __future__ import annotations

from typing import Any

from kma.kmip import attributes, key_view, objects, ttlv
from kma.kmip.attributes import DATA_UNIT_ALIASES, Attr, field_error
from kma.kmip.context import Call
from kma.kmip.enums import AdjustmentType, ItemType, ResultReason, Tag
from kma.kmip.key_view import KeyView
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item
from kma.services.agent_keys import key_access, key_attributes, key_lifecycle, key_undo


def view(call: Call, uid: str, material: bool = False) -> KeyView:
    """The key through KMIP; `material`: with its plain material (for a Digest, a certificate's
    length or subject)."""
    row = call.key(uid, material=material)
    plain = None
    if material and row["material_wrapped"] is not None:
        plain = objects.material(row, call.kma.vault.master().unwrap(f"key:{uid}", row["material_wrapped"]))
    custom = key_attributes.custom_attributes(call.kma, uid)
    return KeyView(row, call.now, custom, plain, sent=key_access.material_sent(call.kma, uid))


async def get_attributes(call: Call, payload: Item) -> bytes:
    uid = call.uid(payload)
    names = [n.value for n in payload.all(Tag.ATTRIBUTE_NAME) if isinstance(n.value, str)]
    key = view(call, uid, material=not names or not key_view.FROM_MATERIAL.isdisjoint(names))
    encoded = key_view.encode_attributes(key, names or None, call.version)
    await call.audit("kmip.get_attributes", f"read {len(encoded)} attributes of key {uid}")
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + b"".join(encoded)


async def get_attribute_list(call: Call, payload: Item) -> bytes:
    uid = call.uid(payload)
    names = key_view.attribute_names(view(call, uid), call.version)
    await call.audit("kmip.get_attribute_list", f"listed the attributes of key {uid}")
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + b"".join(ttlv.text(Tag.ATTRIBUTE_NAME, n) for n in names)


def _one_attribute(payload: Item) -> Attr:
    item = payload.find(Tag.ATTRIBUTE)
    if item is None:
        raise KmipError(ResultReason.MISSING_DATA, "the request has no Attribute")
    return attributes.parse_attribute(item)


def _read_only(name: str) -> KmipError:
    """The KMA sets it (KMIP 2.x: Attribute Read Only); a lifecycle date follows the key's state
    (2.x: Wrong Key Lifecycle State)."""
    lifecycle = name.endswith(" Date")
    return KmipError(
        ResultReason.PERMISSION_DENIED,
        f"attribute '{name[:80]}' is set by the KMA, not by agents",
        v2_reason=ResultReason.WRONG_KEY_LIFECYCLE_STATE if lifecycle else ResultReason.ATTRIBUTE_READ_ONLY,
    )


def _binds(call: Call, row: Any, attr: Attr) -> str | None:
    """The data unit an added attribute binds the key to, if it names one (in a general key
    group, Name and x-Barcode are free text: only LIBRARY-LTO information and x-Data-Unit bind)."""
    if attr.name == attributes.ASI:
        return attributes.tape_unit(attr)
    general = row["key_group_id"] in call.access.general_groups
    if attr.name == "x-Data-Unit" or (
        not general and (attr.name == "Name" or attr.name in DATA_UNIT_ALIASES)
    ):
        return attributes.data_unit_of(attr)
    return None


def _kept(call: Call, attr: Attr) -> attributes.Kept:
    if attr.name in key_view.STANDARD and attr.name != "Name" or attr.name in key_view.ALIASES:
        raise _read_only(attr.name)
    if not (attr.name.startswith("x-") or attr.name in attributes.CLIENT_SET or attr.name == "Name"):
        raise _read_only(attr.name)
    return attributes.client_attribute(attr)


async def add_attribute(call: Call, payload: Item, event: str = "kmip.add_attribute") -> bytes:
    uid = call.uid(payload)
    attr = _one_attribute(payload)
    row = call.key(uid)
    unit = _binds(call, row, attr)
    if unit is not None:
        call.cannot_undo(f"binding key {uid} to data unit '{unit}'")
        if row["data_unit_id"] is not None:
            raise KmipError(
                ResultReason.PERMISSION_DENIED,
                f"key {uid} already belongs to data unit '{row['data_unit_id']}'; a key is "
                "bound to one data unit until the tape is written from its beginning",
            )
        statements = key_lifecycle.bind_data_unit(call.kma, call.access, row, unit, call.now)
        if attr.name == attributes.ASI:
            keep = attributes.client_attribute(attr)
            statements.append(key_attributes.add_custom_attribute(uid, keep.name, keep.text, keep.item))
        await call.commit(
            event,
            [*statements, key_lifecycle.touch(uid, call.now)],
            f"bound key {uid} to data unit '{unit}'",
        )
        return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.struct_(Tag.ATTRIBUTE, *_raw(attr))
    keep = _kept(call, attr)
    if attr.name == "Name" and _holds(call, uid, attr.name, keep.text):
        raise KmipError(
            ResultReason.ILLEGAL_OPERATION,
            f"key {uid} has the Name '{keep.text[:80]}' already",
            v2_reason=ResultReason.NON_UNIQUE_NAME_ATTRIBUTE,
        )
    if attr.name in attributes.SINGLE_VALUED and _holds(call, uid, attr.name):
        raise KmipError(
            ResultReason.ILLEGAL_OPERATION,
            f"key {uid} has a {attr.name} already; it has one value (Modify Attribute changes it)",
            v2_reason=ResultReason.ATTRIBUTE_SINGLE_VALUED,
        )
    await call.commit(
        event,
        [
            key_lifecycle.guard_key(call.access, uid, call.now),
            key_attributes.add_custom_attribute(uid, keep.name, keep.text, keep.item),
            key_lifecycle.touch(uid, call.now),
        ],
        f"added attribute '{attr.name}' to key {uid}",
    )
    index = (
        call.kma.store.scalar(
            "SELECT max(idx) FROM key_custom_attributes WHERE key_id = ? AND name = ?", (uid, attr.name)
        )
        or 0
    )
    if call.undoing:
        call.undoable(
            uid,
            f"added attribute '{attr.name}' to key {uid}",
            key_undo.unadd_custom_attribute(uid, keep.name, index, keep.text, keep.item),
            key_undo.untouch(uid, call.now, row["changed_at"]),
        )
    value = Item(Tag.ATTRIBUTE_VALUE, attr.value.type, attr.value.value).encode()
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + key_view.attribute(attr.name, value, index)


def _raw(attr: Attr) -> list[bytes]:
    parts = [ttlv.text(Tag.ATTRIBUTE_NAME, attr.name)]
    if attr.index:
        parts.append(ttlv.integer(Tag.ATTRIBUTE_INDEX, attr.index))
    return [*parts, attr.value.encode()]


def _holds(call: Call, uid: str, name: str, text: str | None = None) -> bool:
    """Whether the key keeps attribute `name` (with this text, when given)."""
    sql = "SELECT 1 FROM key_custom_attributes WHERE key_id = ? AND name = ?"
    if text is None:
        return call.kma.store.query_one(sql, (uid, name)) is not None
    return call.kma.store.query_one(f"{sql} AND value = ?", (uid, name, text)) is not None


async def modify_attribute(call: Call, payload: Item, event: str = "kmip.modify_attribute") -> bytes:
    uid = call.uid(payload)
    attr = _one_attribute(payload)
    row = call.key(uid)
    unit = _binds(call, row, attr)
    if unit is not None and not (attr.name != attributes.ASI and _holds(call, uid, attr.name)):
        if row["data_unit_id"] != unit:
            raise KmipError(
                ResultReason.PERMISSION_DENIED,
                f"key {uid} stays bound to its data unit; write the tape from its beginning "
                "to let its keys go",
            )
        await call.audit(event, f"kept key {uid} bound to data unit '{unit}' (no change)")
        return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.struct_(Tag.ATTRIBUTE, *_raw(attr))
    keep = _kept(call, attr)
    was = _value_at(call, uid, attr.name, attr.index) if call.undoing else None
    await call.commit(
        event,
        [
            key_lifecycle.guard_key(call.access, uid, call.now),
            key_attributes.modify_custom_attribute(uid, attr.name, attr.index, keep.text, keep.item),
            key_lifecycle.touch(uid, call.now),
        ],
        f"changed attribute '{attr.name}' of key {uid}",
    )
    if was is not None:
        call.undoable(
            uid,
            f"changed attribute '{attr.name}' of key {uid} (its value back)",
            key_undo.restore_custom_attribute(uid, attr.name, attr.index, was, (keep.text, keep.item)),
            key_undo.untouch(uid, call.now, row["changed_at"]),
        )
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.struct_(Tag.ATTRIBUTE, *_raw(attr))


async def set_attribute(call: Call, payload: Item) -> bytes:
    """Set Attribute (KMIP 2.x): an attribute's value, added when the key has none, replaced when
    it has one, under the rules of Add and Modify Attribute (so a data unit stays bound)."""
    uid = call.uid(payload)
    attr = _one_attribute(payload)
    held = _values(call, uid, attr.name)
    if len(held) > 1:
        raise KmipError(
            ResultReason.ILLEGAL_OPERATION,
            f"key {uid} has {len(held)} values of '{attr.name[:80]}'; Set Attribute changes an attribute "
            "with one value (Modify Attribute names the one to change)",
            v2_reason=ResultReason.MULTI_VALUED_ATTRIBUTE,
        )
    row = call.key(uid)
    bound = row["data_unit_id"] is not None and _binds(call, row, attr) is not None
    if held:  # the one value, wherever its index is (earlier deletes may have left it at 1 or more)
        named = Item(Tag.ATTRIBUTE_INDEX, ItemType.INTEGER, held[0][0])
        one = Item(
            Tag.ATTRIBUTE,
            ItemType.STRUCTURE,
            [Item(Tag.ATTRIBUTE_NAME, ItemType.TEXT_STRING, attr.name), named, attr.value],
        )
        payload = Item(
            payload.tag, ItemType.STRUCTURE, [*(i for i in payload if i.tag != Tag.ATTRIBUTE), one]
        )
    if held or bound:
        return await modify_attribute(call, payload, "kmip.set_attribute")
    return await add_attribute(call, payload, "kmip.set_attribute")


def _value_at(call: Call, uid: str, name: str, index: int) -> tuple[str, bytes | None] | None:
    """(text, TTLV item) of one kept value, if the key holds it."""
    row = call.kma.store.query_one(
        "SELECT value, item FROM key_custom_attributes WHERE key_id = ? AND name = ? AND idx = ?",
        (uid, name, index),
    )
    return None if row is None else (row["value"], None if row["item"] is None else bytes(row["item"]))


def _values(call: Call, uid: str, name: str) -> list[Any]:
    return call.kma.store.query(
        "SELECT idx, value, item FROM key_custom_attributes WHERE key_id = ? AND name = ? ORDER BY idx",
        (uid, name),
    )


# What Adjust Attribute may change: numbers and times, each within its type's range.
ADJUSTABLE: dict[int, tuple[int, int]] = {
    ItemType.INTEGER: (-(2**31), 2**31 - 1),
    ItemType.LONG_INTEGER: (-(2**63), 2**63 - 1),
    ItemType.BIG_INTEGER: (-(2**1023), 2**1023 - 1),
    ItemType.INTERVAL: (0, 2**32 - 1),
    ItemType.DATE_TIME: (0, 2**63 - 1),
}


def _adjusted(name: str, value: Item, how: Any, by: Item | None) -> int:
    if value.type not in ADJUSTABLE:
        raise KmipError(
            ResultReason.INVALID_FIELD,
            f"attribute '{name[:80]}' is not a number or a time: Adjust Attribute cannot change it",
            v2_reason=ResultReason.INVALID_DATA_TYPE,
        )
    if how == AdjustmentType.NEGATE:
        if value.type in (ItemType.INTERVAL, ItemType.DATE_TIME):
            raise field_error(f"attribute '{name[:80]}' is an interval or a time: it has no negative")
        new = -int(value.value)
    elif how in (AdjustmentType.INCREMENT, AdjustmentType.DECREMENT):
        step = 1 if by is None else by.value
        if (
            not isinstance(step, int)
            or isinstance(step, bool)
            or by is not None
            and by.type not in ADJUSTABLE
        ):
            raise field_error("the Adjustment Value must be a number")
        new = int(value.value) + (step if how == AdjustmentType.INCREMENT else -step)
    else:
        raise field_error("Adjustment Type must be Increment, Decrement or Negate")
    low, high = ADJUSTABLE[value.type]
    if not low <= new <= high:
        raise KmipError(
            ResultReason.INVALID_FIELD,
            f"attribute '{name[:80]}' would leave its type's range ({new})",
            v2_reason=ResultReason.NUMERIC_RANGE,
        )
    return new


async def adjust_attribute(call: Call, payload: Item) -> bytes:
    """Adjust Attribute (KMIP 2.x): add to, subtract from or negate a number or a time a client
    keeps on a key (its own x- attribute, Protection Period); the KMA's own attributes are
    read-only here as in Modify Attribute."""
    uid = call.uid(payload)
    name = payload.get(Tag.ATTRIBUTE_NAME)  # KMIP 2.x's Attribute Reference, as 1.4 names it
    if not isinstance(name, str):
        raise KmipError(ResultReason.MISSING_DATA, "Adjust Attribute needs an Attribute Reference")
    row = call.key(uid)
    if name in key_view.STANDARD or not (name.startswith("x-") or name in attributes.CLIENT_SET):
        raise _read_only(name)
    held = _values(call, uid, name)
    if not held:
        raise KmipError(
            ResultReason.ITEM_NOT_FOUND,
            f"key {uid} has no attribute '{name[:80]}' to adjust",
            v2_reason=ResultReason.ATTRIBUTE_NOT_FOUND,
        )
    if len(held) > 1:
        raise KmipError(
            ResultReason.ILLEGAL_OPERATION,
            f"key {uid} has {len(held)} values of '{name[:80]}'; Adjust Attribute changes one with one value",
            v2_reason=ResultReason.MULTI_VALUED_ATTRIBUTE,
        )
    index, _, item = held[0]
    if item is None:  # kept as text
        raise KmipError(
            ResultReason.INVALID_FIELD,
            f"attribute '{name[:80]}' is text, not a number or a time: Adjust Attribute cannot change it",
            v2_reason=ResultReason.INVALID_DATA_TYPE,
        )
    value = ttlv.decode(bytes(item))
    how = payload.get(Tag.ADJUSTMENT_TYPE)
    new = _adjusted(name, value, how, payload.find(Tag.ADJUSTMENT_VALUE))
    keep = attributes.kept(Attr(name, index, Item(Tag.ATTRIBUTE_VALUE, value.type, new)))
    await call.commit(
        "kmip.adjust_attribute",
        [
            key_lifecycle.guard_key(call.access, uid, call.now),
            key_attributes.adjust_custom_attribute(
                uid, name, index, bytes(item), keep.text, keep.item or b""
            ),
            key_lifecycle.touch(uid, call.now),
        ],
        f"adjusted attribute '{name}' of key {uid}: {AdjustmentType(how).name.lower()} to {keep.text}",
    )
    if call.undoing:
        call.undoable(
            uid,
            f"adjusted attribute '{name}' of key {uid} (back to {held[0][1]})",
            key_undo.restore_custom_attribute(
                uid, name, index, (held[0][1], bytes(item)), (keep.text, keep.item or b"")
            ),
            key_undo.untouch(uid, call.now, row["changed_at"]),
        )
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)


async def delete_attribute(call: Call, payload: Item) -> bytes:
    uid = call.uid(payload)
    name = payload.get(Tag.ATTRIBUTE_NAME)
    index = payload.get(Tag.ATTRIBUTE_INDEX, 0)
    if not isinstance(name, str) or not isinstance(index, int):
        raise KmipError(ResultReason.MISSING_DATA, "Delete Attribute needs an Attribute Name")
    row = call.key(uid)
    kept_here = _holds(call, uid, name) and name not in (attributes.ASI, attributes.QUANTUM_SAFE)
    if not kept_here and (
        not name.startswith("x-") or name in key_view.STANDARD or name in DATA_UNIT_ALIASES
    ):
        raise _read_only(name)
    old = call.kma.store.query_one(
        "SELECT value, item FROM key_custom_attributes WHERE key_id = ? AND name = ? AND idx = ?",
        (uid, name, index),
    )
    await call.commit(
        "kmip.delete_attribute",
        [
            key_lifecycle.guard_key(call.access, uid, call.now),
            key_attributes.delete_custom_attribute(uid, name, index),
            key_lifecycle.touch(uid, call.now),
        ],
        f"deleted attribute '{name}' of key {uid}",
    )
    if call.undoing and old is not None:
        call.undoable(
            uid,
            f"deleted attribute '{name}' of key {uid} (put back)",
            key_undo.readd_custom_attribute(
                uid, name, index, old["value"], None if old["item"] is None else bytes(old["item"])
            ),
            key_undo.untouch(uid, call.now, row["changed_at"]),
        )
    value = key_view.kept_value(old) if old is not None else ttlv.text(Tag.ATTRIBUTE_VALUE, "")
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + key_view.attribute(name, value, index)
