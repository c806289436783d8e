"""KMIP Locate: the keys the agent may see by data unit, name, key group, state, usage, lifecycle
date or kept attribute, newest first; when it finds exactly one, that key is the ID placeholder for
the next batch items (KMIP 1.0)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kma.kmip import attributes, objects, ttlv
from kma.kmip.attributes import DATA_UNIT_ALIASES, Attr, field_error
from kma.kmip.context import Call
from kma.kmip.enums import CryptographicAlgorithm, ItemType, ObjectType, Tag
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item
from kma.services.agent_keys import key_locate
from kma.services.agent_keys.key_locate import LocateFilter

MAX_LOCATED = 1000  # IDs in one Locate answer; Located Items (KMIP 1.3+) still counts them all


def _by_algorithm(wanted: LocateFilter, algorithm: int) -> None:
    """AES: the symmetric keys; RSA, DSA, ECDSA: the public and private keys registered as such;
    anything else matches nothing."""
    if algorithm == CryptographicAlgorithm.AES:
        wanted.object_types.append(ObjectType.SYMMETRIC_KEY)
    elif algorithm in objects.ALGORITHM_NAMES:
        wanted.algorithms.append(algorithm)
    else:
        wanted.nothing = True


def _by_data_unit(wanted: LocateFilter, attr: Attr) -> None:
    try:
        wanted.data_units.append(attributes.data_unit_of(attr))
    except KmipError:
        wanted.nothing = True  # not a data unit ID: no key has that name


def _by_name(wanted: LocateFilter, attr: Attr) -> None:
    """A Name is the data unit's, or one a client set (a library's own label)."""
    value = attr.value.get(Tag.NAME_VALUE) if attr.value.type == ItemType.STRUCTURE else None
    if not isinstance(value, str):
        raise field_error("a Name attribute needs a Name Value text string")
    wanted.names.append(value)


def _by_application(wanted: LocateFilter, attr: Attr) -> None:
    """LIBRARY-LTO information names a data unit; other namespaces are kept as sent."""
    try:
        unit = attributes.tape_unit(attr)
    except KmipError:
        wanted.nothing = True  # not a cartridge this KMA could hold
        return
    if unit is not None:
        wanted.data_units.append(unit)
    else:
        _by_kept(wanted, attr)


def _by_kept(wanted: LocateFilter, attr: Attr) -> None:
    keep = attributes.client_attribute(attr)
    wanted.custom.append((keep.name, keep.text, keep.item))


def _typed_rule(
    typ: ItemType, add: Callable[[LocateFilter, Any], None]
) -> Callable[[LocateFilter, Attr], None]:
    def rule(wanted: LocateFilter, attr: Attr) -> None:
        if attr.value.type != typ:
            raise field_error(f"attribute '{attr.name}' must be a {typ.name.lower().replace('_', ' ')}")
        add(wanted, attr.value.value)

    return rule


def _by_state(wanted: LocateFilter, state: int) -> None:
    if state in key_locate.STATE_SQL:
        wanted.states.append(state)
    else:
        wanted.nothing = True


def _by_usage(wanted: LocateFilter, mask: int) -> None:
    wanted.usage_mask = (wanted.usage_mask or 0) | mask


# Lifecycle dates a Locate may name (one value: that date; two: the range between them).
DATE_COLUMNS = {
    "Initial Date": "issued_at",
    "Activation Date": "activated_at",
    "Protect Stop Date": "protect_until",
    "Deactivation Date": "deactivate_at",
    "Compromise Date": "compromised_at",
    "Destroy Date": "destroyed_at",
}


def _by_date(wanted: LocateFilter, attr: Attr) -> None:
    if attr.value.type != ItemType.DATE_TIME:
        raise field_error(f"attribute '{attr.name}' must be a date-time")
    dates = wanted.dates.setdefault(DATE_COLUMNS[attr.name], [])
    if len(dates) == 2:
        raise field_error(f"Locate takes one '{attr.name}' (that date) or two (a range), not more")
    dates.append(int(attr.value.value))


LOCATE_BY: dict[str, Callable[[LocateFilter, Attr], None]] = {
    **dict.fromkeys(DATE_COLUMNS, _by_date),
    "Object Type": _typed_rule(ItemType.ENUMERATION, lambda w, v: w.object_types.append(v)),
    "Cryptographic Algorithm": _typed_rule(ItemType.ENUMERATION, _by_algorithm),
    "Cryptographic Length": _typed_rule(ItemType.INTEGER, lambda w, v: w.bits.append(v)),
    "Certificate Type": _typed_rule(ItemType.ENUMERATION, lambda w, v: w.certificate_types.append(v)),
    "Name": _by_name,
    **dict.fromkeys(DATA_UNIT_ALIASES, _by_data_unit),
    attributes.ASI: _by_application,
    "Alternative Name": _by_kept,
    "Contact Information": _by_kept,
    "Description": _by_kept,
    "Object Group": _typed_rule(ItemType.TEXT_STRING, lambda w, v: w.groups.append(v)),
    "State": _typed_rule(ItemType.ENUMERATION, _by_state),
    "Unique Identifier": _typed_rule(ItemType.TEXT_STRING, lambda w, v: w.key_ids.append(v)),
    "Cryptographic Usage Mask": _typed_rule(ItemType.INTEGER, _by_usage),
}


def _locate_filter(attrs: list[Attr]) -> LocateFilter:
    wanted = LocateFilter([], [], [], [], [])
    for attr in attrs:
        rule = LOCATE_BY.get(attr.name)
        if rule is not None:
            rule(wanted, attr)
        elif attr.name.startswith("x-"):
            _by_kept(wanted, attr)
        else:
            raise field_error(f"Locate cannot look for attribute '{attr.name[:80]}'")
    if len(set(wanted.states)) > 1 or len(set(wanted.data_units)) > 1 or len(set(wanted.groups)) > 1:
        wanted.nothing = True  # a key has one state, one data unit, one group
    return wanted


async def locate(call: Call, payload: Item) -> bytes:
    wanted = _locate_filter(attributes.request_attributes(payload))
    limit = payload.get(Tag.MAXIMUM_ITEMS, MAX_LOCATED)
    offset = payload.get(Tag.OFFSET_ITEMS, 0)
    if not isinstance(limit, int) or not isinstance(offset, int) or limit < 0 or offset < 0:
        raise field_error("Maximum Items and Offset Items must be non-negative integers")
    ids, total = key_locate.locate(call.kma, call.access, call.now, wanted, offset, min(limit, MAX_LOCATED))
    what = ", ".join(f"data unit '{u}'" for u in wanted.data_units) or "all visible keys"
    await call.audit(
        "kmip.locate",
        f"located {len(ids)} of {total} keys ({what})",
        subject=("data_unit", wanted.data_units[0]) if wanted.data_units else None,
    )
    if total == 1 and ids:
        call.placeholder = ids[0]
    # Located Items (KMIP 1.3+, optional) for a client that pages (names Maximum or Offset Items)
    pages = payload.find(Tag.MAXIMUM_ITEMS) is not None or payload.find(Tag.OFFSET_ITEMS) is not None
    located = ttlv.integer(Tag.LOCATED_ITEMS, total) if call.version >= (1, 3) and pages else b""
    return located + b"".join(ttlv.text(Tag.UNIQUE_IDENTIFIER, i) for i in ids)
