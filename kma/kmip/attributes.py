"""KMIP attributes of a key: reading them from requests, writing them from a key row.

The KMA's own model maps onto KMIP like this: Name = the data unit (volser) the key is bound
to (also readable and settable as the custom attributes `x-Data-Unit` or `x-Barcode`, the tape
library profile's name for it), Object Group = the key group, the lifecycle dates = the key's
times. `x-Key-State` tells an agent the KMA's finer state (protect_and_process or process_only:
may it still write with this key?). Other `x-` attributes are the client's own, stored as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kma.domain.lifecycle import key_state
from kma.domain.validation import ID_PATTERN
from kma.kmip import ttlv
from kma.kmip.enums import (
    CryptographicAlgorithm,
    ItemType,
    NameType,
    ObjectType,
    ResultReason,
    State,
    Tag,
    UsageMask,
)
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item

DEFAULT_USAGE = int(UsageMask.ENCRYPT | UsageMask.DECRYPT)
KEY_BITS = 256
DATA_UNIT_ALIASES = frozenset({"x-Data-Unit", "x-Barcode"})
CUSTOM_NAME = re.compile(r"^x-[A-Za-z0-9 ._-]{1,62}$")
MAX_CUSTOM_VALUE = 1024
ACTIVATION_SKEW = 5  # an Activation Date this many seconds ahead still means "now"
_DATA_UNIT = re.compile(ID_PATTERN)


def is_data_unit(value: str) -> bool:
    return bool(_DATA_UNIT.match(value))


def field_error(message: str) -> KmipError:
    return KmipError(ResultReason.INVALID_FIELD, message)


# --- reading attributes from a request ------------------------------------------------------
@dataclass(slots=True)
class Attr:
    name: str
    index: int
    value: Item


def parse_attribute(item: Item) -> Attr:
    if item.tag != Tag.ATTRIBUTE or item.type != ItemType.STRUCTURE:
        raise field_error("an attribute is not an Attribute structure")
    name = item.find(Tag.ATTRIBUTE_NAME)
    value = item.find(Tag.ATTRIBUTE_VALUE)
    if name is None or name.type != ItemType.TEXT_STRING:
        raise field_error("an attribute has no name")
    index = item.get(Tag.ATTRIBUTE_INDEX, 0)
    if not isinstance(index, int) or index < 0:
        raise field_error(f"attribute '{name.value}' has an invalid index")
    if value is None:
        raise KmipError(ResultReason.MISSING_DATA, f"attribute '{name.value}' has no value")
    return Attr(name.value, index, value)


def request_attributes(payload: Item) -> list[Attr]:
    """Attributes of a Create/Register/Locate/Add payload (directly or in a Template-Attribute)."""
    attrs = [parse_attribute(a) for a in payload.all(Tag.ATTRIBUTE)]
    for template in payload.all(Tag.TEMPLATE_ATTRIBUTE):
        if template.find(Tag.NAME) is not None:
            raise KmipError(ResultReason.FEATURE_NOT_SUPPORTED, "named templates are not supported")
        attrs += [parse_attribute(a) for a in template.all(Tag.ATTRIBUTE)]
    return attrs


def _typed(attr: Attr, typ: ItemType) -> Any:
    if attr.value.type != typ:
        raise field_error(f"attribute '{attr.name}' must be a {typ.name.lower().replace('_', ' ')}")
    return attr.value.value


def data_unit_of(attr: Attr) -> str:
    """The volser a Name / x-Data-Unit / x-Barcode attribute names, checked."""
    if attr.name == "Name":
        value = attr.value.get(Tag.NAME_VALUE) if attr.value.type == ItemType.STRUCTURE else None
        if not isinstance(value, str):
            raise field_error("a Name attribute needs a Name Value text string")
    else:
        value = _typed(attr, ItemType.TEXT_STRING)
    if not _DATA_UNIT.match(value):
        raise field_error(f"'{value}' is not a data unit ID (a volser: 1-64 letters, digits, '.', '_', '-')")
    return str(value)


def custom_value(attr: Attr) -> str:
    if not CUSTOM_NAME.match(attr.name):
        raise field_error(
            f"custom attribute names are 'x-' and up to 62 letters, digits or ' ._-': '{attr.name[:80]}'"
        )
    value = _typed(attr, ItemType.TEXT_STRING)
    if len(value) > MAX_CUSTOM_VALUE:
        raise field_error(f"attribute '{attr.name}' is longer than {MAX_CUSTOM_VALUE} characters")
    return str(value)


@dataclass
class NewKey:
    """What a Create or Register asks for, checked against what this KMA makes."""

    data_unit: str | None = None
    group: str | None = None
    usage_mask: int = DEFAULT_USAGE
    activate: bool = False
    custom: list[tuple[str, str]] = field(default_factory=list)


def _algorithm(spec: NewKey, attr: Attr, now: int) -> None:
    if _typed(attr, ItemType.ENUMERATION) != CryptographicAlgorithm.AES:
        raise field_error("this KMA makes and holds AES-256 keys only")


def _length(spec: NewKey, attr: Attr, now: int) -> None:
    if _typed(attr, ItemType.INTEGER) != KEY_BITS:
        raise field_error("this KMA makes and holds AES-256 keys only (length 256)")


def _usage(spec: NewKey, attr: Attr, now: int) -> None:
    spec.usage_mask = int(_typed(attr, ItemType.INTEGER)) & 0xFFFFFFFF


def _data_unit(spec: NewKey, attr: Attr, now: int) -> None:
    unit = data_unit_of(attr)
    if spec.data_unit not in (None, unit):
        raise field_error("a key belongs to one data unit: its Name and x-Data-Unit differ")
    spec.data_unit = unit


def _group(spec: NewKey, attr: Attr, now: int) -> None:
    spec.group = str(_typed(attr, ItemType.TEXT_STRING))


def _activation(spec: NewKey, attr: Attr, now: int) -> None:
    if _typed(attr, ItemType.DATE_TIME) > now + ACTIVATION_SKEW:
        raise field_error(
            "an Activation Date in the future is not supported; activate the key when it is needed"
        )
    spec.activate = True


def _ignored(spec: NewKey, attr: Attr, now: int) -> None:
    """Accepted, without effect here (operation policies are the KMA's key policies)."""


ON_CREATE: dict[str, Callable[[NewKey, Attr, int], None]] = {
    "Cryptographic Algorithm": _algorithm,
    "Cryptographic Length": _length,
    "Cryptographic Usage Mask": _usage,
    "Name": _data_unit,
    **dict.fromkeys(DATA_UNIT_ALIASES, _data_unit),
    "Object Group": _group,
    "Activation Date": _activation,
    "Operation Policy Name": _ignored,
}


def new_key(attrs: Iterable[Attr], now: int) -> NewKey:
    """The attributes of a Create or Register, each checked by its rule in `ON_CREATE`."""
    spec = NewKey()
    for attr in attrs:
        rule = ON_CREATE.get(attr.name)
        if rule is not None:
            rule(spec, attr, now)
        elif attr.name.startswith("x-"):
            spec.custom.append((attr.name, custom_value(attr)))
        else:
            raise field_error(f"attribute '{attr.name[:80]}' cannot be set by a client of this KMA")
    return spec


# --- writing a key's attributes -------------------------------------------------------------
class KeyView:
    """A key row seen through KMIP, at one instant."""

    __slots__ = ("custom", "now", "row")

    def __init__(self, row: Any, now: int, custom: Iterable[Any] = ()) -> None:
        self.row = row
        self.now = now
        self.custom = list(custom)

    @property
    def state(self) -> State:
        r = self.row
        if r["destroyed_at"] is not None:
            return State.DESTROYED_COMPROMISED if r["compromised_at"] is not None else State.DESTROYED
        if r["compromised_at"] is not None:
            return State.COMPROMISED
        if r["activated_at"] is None:
            return State.PRE_ACTIVE
        return State.DEACTIVATED if r["deactivate_at"] <= self.now else State.ACTIVE

    @property
    def kma_state(self) -> str:
        r = self.row
        return str(
            key_state(self.now, r["activated_at"], r["protect_until"], r["deactivate_at"], r["destroyed_at"])
        )

    @property
    def usage_mask(self) -> int:
        mask = self.row["usage_mask"]
        return DEFAULT_USAGE if mask is None else int(mask)


V = Tag.ATTRIBUTE_VALUE


def _date(column: str) -> Callable[[KeyView], bytes | None]:
    def encode(k: KeyView) -> bytes | None:
        value = k.row[column]
        return None if value is None else ttlv.date_time(V, value)

    return encode


def _name(k: KeyView) -> bytes | None:
    unit = k.row["data_unit_id"]
    if unit is None:
        return None
    return ttlv.struct_(
        V, ttlv.text(Tag.NAME_VALUE, unit), ttlv.enum(Tag.NAME_TYPE, NameType.UNINTERPRETED_TEXT_STRING)
    )


def _text_column(column: str) -> Callable[[KeyView], bytes | None]:
    def encode(k: KeyView) -> bytes | None:
        value = k.row[column]
        return None if value is None else ttlv.text(V, str(value))

    return encode


# Attribute name -> encoder of its value (None: the key has no such attribute), in the order
# "all attributes" lists them.
STANDARD: dict[str, Callable[[KeyView], bytes | None]] = {
    "Unique Identifier": lambda k: ttlv.text(V, k.row["id"]),
    "Object Type": lambda k: ttlv.enum(V, ObjectType.SYMMETRIC_KEY),
    "Cryptographic Algorithm": lambda k: ttlv.enum(V, CryptographicAlgorithm.AES),
    "Cryptographic Length": lambda k: ttlv.integer(V, KEY_BITS),
    "Cryptographic Usage Mask": lambda k: ttlv.integer(V, k.usage_mask),
    "State": lambda k: ttlv.enum(V, k.state),
    "Initial Date": _date("created_at"),
    "Activation Date": _date("activated_at"),
    "Process Start Date": _date("activated_at"),
    "Protect Stop Date": _date("protect_until"),
    "Deactivation Date": _date("deactivate_at"),
    "Compromise Date": _date("compromised_at"),
    "Destroy Date": _date("destroyed_at"),
    "Name": _name,
    "Object Group": _text_column("key_group_id"),
    "x-Data-Unit": _text_column("data_unit_id"),
    "x-Key-State": lambda k: ttlv.text(V, k.kma_state),
    "x-KMA": _text_column("kma_id"),
}
READ_ONLY = frozenset(STANDARD) - {"Name", "x-Data-Unit"}
ALIASES = {"x-Barcode": "x-Data-Unit"}


def attribute(name: str, value: bytes, index: int = 0) -> bytes:
    parts = [ttlv.text(Tag.ATTRIBUTE_NAME, name)]
    if index:
        parts.append(ttlv.integer(Tag.ATTRIBUTE_INDEX, index))
    return ttlv.struct_(Tag.ATTRIBUTE, *parts, value)


def encode_attributes(key: KeyView, names: list[str] | None) -> list[bytes]:
    """The key's attributes named (all when `names` is None); absent ones are left out."""
    out = []
    for name in names if names is not None else [*STANDARD, *dict.fromkeys(c["name"] for c in key.custom)]:
        encoder = STANDARD.get(ALIASES.get(name, name))
        if encoder is not None:
            value = encoder(key)
            if value is not None:
                out.append(attribute(name, value))
        elif name.startswith("x-"):
            out += [
                attribute(name, ttlv.text(V, c["value"]), c["idx"]) for c in key.custom if c["name"] == name
            ]
    return out


def attribute_names(key: KeyView) -> list[str]:
    names = [n for n, encoder in STANDARD.items() if encoder(key) is not None]
    return names + list(dict.fromkeys(c["name"] for c in key.custom))
