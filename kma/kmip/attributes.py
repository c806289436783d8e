"""KMIP attributes as a request carries them (a Create's rules: kma/kmip/key_creation.py; a key's
attributes as answered: kma/kmip/key_view.py).

The KMA's own model maps onto KMIP like this: the data unit (volser, cartridge) the key is bound
to is named by Application Specific Information in the `LIBRARY-LTO` namespace (the KMIP Tape
Library Profile: its Application Data is the cartridge's identifier) or, for drives that speak
the older dialect, by Name (also `x-Data-Unit` or `x-Barcode`); Object Group = the key group, the
lifecycle dates = the key's times. `x-Key-State` tells an agent the KMA's finer state
(protect_and_process or process_only: may it still write with this key?).

What else a client sets is kept as it sent it (`Kept`): its own `x-` attributes of any KMIP type,
Alternative Name, Application Specific Information of other namespaces, Contact Information, and
Name / x-Barcode when the key's data unit is named by LIBRARY-LTO information (then they are the
library's own labels, as the Tape Library Profile has them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kma.domain.validation import ID_PATTERN
from kma.kmip import objects
from kma.kmip.enums import (
    ItemType,
    ResultReason,
    Tag,
    UsageMask,
)
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item

DEFAULT_USAGE = int(UsageMask.ENCRYPT | UsageMask.DECRYPT)
KEY_BITS = objects.KEY_BITS
AES_BITS = (128, 192, 256)
DATA_UNIT_ALIASES = frozenset({"x-Data-Unit", "x-Barcode"})
TAPE_NAMESPACE = "LIBRARY-LTO"  # KMIP Tape Library Profile: Application Data = the cartridge
ASI = "Application Specific Information"
# Standard attributes a client sets and the KMA keeps as sent (each may have several values, but
# those single-valued); the text ones are not structures.
CLIENT_SET = frozenset(
    {"Alternative Name", ASI, "Contact Information", "Description", "Protection Level", "Protection Period"}
)
SINGLE_VALUED = frozenset({"Description", "Protection Level", "Protection Period"})
CLIENT_PLAIN = frozenset({"Contact Information", "Description", "Protection Level", "Protection Period"})
QUANTUM_SAFE = "Quantum Safe"
# A quantum computer (Grover's search) halves a symmetric key's strength: AES-256 keeps 128 bits.
QUANTUM_SAFE_BITS = 256
CUSTOM_NAME = re.compile(r"^x-[A-Za-z0-9 ._-]{1,62}$")
MAX_CUSTOM_VALUE = 1024
SOFTWARE_STORAGE = 0x1  # KMIP Protection Storage Mask: Software
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


def typed(attr: Attr, typ: ItemType) -> Any:
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
        value = typed(attr, ItemType.TEXT_STRING)
    if not _DATA_UNIT.match(value):
        raise field_error(f"'{value}' is not a data unit ID (a volser: 1-64 letters, digits, '.', '_', '-')")
    return str(value)


def custom_value(attr: Attr) -> str:
    """A text `x-` attribute's value, checked (Locate compares text as text)."""
    check_custom_name(attr.name)
    value = typed(attr, ItemType.TEXT_STRING)
    if len(value) > MAX_CUSTOM_VALUE:
        raise field_error(f"attribute '{attr.name}' is longer than {MAX_CUSTOM_VALUE} characters")
    return str(value)


def check_custom_name(name: str) -> None:
    if not CUSTOM_NAME.match(name):
        raise field_error(
            f"custom attribute names are 'x-' and up to 62 letters, digits or ' ._-': '{name[:80]}'"
        )


@dataclass(frozen=True, slots=True)
class Kept:
    """An attribute kept as the client sent it: its text (shown, and compared by Locate when it
    is a text string) and, unless it is a text string, its TTLV Attribute Value."""

    name: str
    text: str
    item: bytes | None


def _as_text(item: Item) -> str:
    if item.type == ItemType.STRUCTURE:
        return ": ".join(_as_text(child) for child in item)
    if item.type == ItemType.DATE_TIME:
        return datetime.fromtimestamp(item.value, UTC).isoformat()
    if item.type == ItemType.BYTE_STRING:
        return bytes(item.value).hex()
    return str(item.value)


def kept(attr: Attr) -> Kept:
    """The attribute as kept; a size limit keeps a client from filling the store."""
    if attr.value.type == ItemType.TEXT_STRING:
        text = str(attr.value.value)
        if len(text) > MAX_CUSTOM_VALUE:
            raise field_error(f"attribute '{attr.name}' is longer than {MAX_CUSTOM_VALUE} characters")
        return Kept(attr.name, text, None)
    encoded = Item(Tag.ATTRIBUTE_VALUE, attr.value.type, attr.value.value).encode()
    if len(encoded) > 2 * MAX_CUSTOM_VALUE:
        raise field_error(f"attribute '{attr.name}' is larger than {2 * MAX_CUSTOM_VALUE} bytes")
    named = attr.value.type == ItemType.STRUCTURE and attr.name in ("Name", "Alternative Name")
    text = _as_text(next(iter(attr.value))) if named and attr.value.value else _as_text(attr.value)
    return Kept(attr.name, text[:MAX_CUSTOM_VALUE], encoded)


def client_attribute(attr: Attr) -> Kept:
    """A standard attribute a client sets (checked for its shape) or its own `x-` attribute."""
    if attr.name in CLIENT_SET or attr.name == "Name":
        structured = attr.name not in CLIENT_PLAIN
        if structured != (attr.value.type == ItemType.STRUCTURE):
            raise field_error(f"attribute '{attr.name}' has the wrong type")
        if attr.name == ASI:
            application_info(attr)
    else:
        check_custom_name(attr.name)
        if attr.value.type == ItemType.STRUCTURE:
            raise field_error(f"custom attribute '{attr.name}' cannot be a structure")
    return kept(attr)


def application_info(attr: Attr) -> tuple[str, str]:
    """(namespace, data) of an Application Specific Information attribute."""
    namespace = attr.value.get(Tag.APPLICATION_NAMESPACE)
    data = attr.value.get(Tag.APPLICATION_DATA, "")
    if not isinstance(namespace, str) or not isinstance(data, str):
        raise field_error("Application Specific Information needs an Application Namespace and Data")
    return namespace, data


def tape_unit(attr: Attr) -> str | None:
    """The cartridge a LIBRARY-LTO Application Specific Information names (None: another namespace)."""
    namespace, data = application_info(attr)
    if namespace != TAPE_NAMESPACE:
        return None
    if not _DATA_UNIT.match(data):
        raise field_error(
            f"'{data[:80]}' is not a cartridge identifier this KMA keeps as a data unit "
            "(1-64 letters, digits, '.', '_', '-')"
        )
    return data
