"""Which fields each operation's request payload may hold, by KMIP version.

A field the request may not hold is refused (Invalid Field, naming it), never ignored: a KMIP
2.0 Locate that puts Object Type and Name directly in its payload, as 1.x's Attribute structures
would have been, without the Attributes structure 2.0 requires, would otherwise be answered with
every key the agent may see. The tables follow the request payloads of the KMIP specifications
(1.0 to 1.4, 2.0 and 2.1) for the operations this KMA serves; the tape operations are its own.
"""

from __future__ import annotations

from kma.kmip.enums import Operation, ResultReason, Tag
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item
from kma.kmip.v2 import ATTRIBUTE_REFERENCE, ATTRIBUTES, CURRENT_ATTRIBUTE, NEW_ATTRIBUTE

_UID = frozenset({Tag.UNIQUE_IDENTIFIER})
_OBJECTS = frozenset(
    {
        Tag.SYMMETRIC_KEY,
        Tag.PUBLIC_KEY,
        Tag.PRIVATE_KEY,
        Tag.CERTIFICATE,
        Tag.SECRET_DATA,
        Tag.OPAQUE_OBJECT,
        Tag.SPLIT_KEY,
        Tag.TEMPLATE,
        Tag.PGP_KEY,
    }
)
_SENDING = _UID | {
    Tag.KEY_FORMAT_TYPE,
    Tag.KEY_WRAP_TYPE,
    Tag.KEY_COMPRESSION_TYPE,
    Tag.KEY_WRAPPING_SPECIFICATION,
}
_LOCATING = frozenset({Tag.MAXIMUM_ITEMS, Tag.OFFSET_ITEMS, Tag.STORAGE_STATUS_MASK, Tag.OBJECT_GROUP_MEMBER})
_TAPE = frozenset({Tag.DATA_UNIT, Tag.OBJECT_GROUP})
# Attributes a client may wrongly put directly in a 2.x payload (a 1.x habit).
_AS_ATTRIBUTES = frozenset({Tag.NAME, Tag.OBJECT_GROUP, Tag.STATE, Tag.CRYPTOGRAPHIC_ALGORITHM})

# Fields every version has; an operation missing here takes the same fields in 1.x and 2.x.
COMMON: dict[int, frozenset[int]] = {
    Operation.DISCOVER_VERSIONS: frozenset({Tag.PROTOCOL_VERSION}),
    Operation.QUERY: frozenset({Tag.QUERY_FUNCTION}),
    Operation.LOG: frozenset({Tag.LOG_MESSAGE}),
    Operation.INTEROP: frozenset({Tag.INTEROP_FUNCTION, Tag.INTEROP_IDENTIFIER}),
    Operation.GET: _SENDING,
    Operation.EXPORT: _SENDING,
    Operation.ACTIVATE: _UID,
    Operation.DESTROY: _UID,
    Operation.GET_ATTRIBUTE_LIST: _UID,
    Operation.REVOKE: _UID | {Tag.REVOCATION_REASON, Tag.COMPROMISE_OCCURRENCE_DATE},
    Operation.CHECK: _UID | {Tag.USAGE_LIMITS_COUNT, Tag.CRYPTOGRAPHIC_USAGE_MASK, Tag.LEASE_TIME},
    Operation.SET_ENDPOINT_ROLE: frozenset({Tag.ENDPOINT_ROLE}),
    Operation.WRITE_KEY: _TAPE,
    Operation.WRITE_FROM_BEGINNING: _TAPE,
}
V1: dict[int, frozenset[int]] = {
    Operation.REKEY: _UID | {Tag.OFFSET, Tag.TEMPLATE_ATTRIBUTE},
    Operation.CREATE: frozenset({Tag.OBJECT_TYPE, Tag.TEMPLATE_ATTRIBUTE}),
    Operation.REGISTER: frozenset({Tag.OBJECT_TYPE, Tag.TEMPLATE_ATTRIBUTE}) | _OBJECTS,
    Operation.LOCATE: _LOCATING | {Tag.ATTRIBUTE},
    Operation.GET_ATTRIBUTES: _UID | {Tag.ATTRIBUTE_NAME},
    Operation.ADD_ATTRIBUTE: _UID | {Tag.ATTRIBUTE},
    Operation.MODIFY_ATTRIBUTE: _UID | {Tag.ATTRIBUTE},
    Operation.DELETE_ATTRIBUTE: _UID | {Tag.ATTRIBUTE_NAME, Tag.ATTRIBUTE_INDEX},
}
V2: dict[int, frozenset[int]] = {
    # PyKMIP 0.11 sends a 2.x Re-Key its 1.x (empty) Template-Attribute: taken, and Re-Key refuses
    # any attribute set there as in 1.x
    Operation.REKEY: _UID | {Tag.OFFSET, ATTRIBUTES, Tag.TEMPLATE_ATTRIBUTE},
    Operation.CREATE: frozenset({Tag.OBJECT_TYPE, ATTRIBUTES, Tag.PROTECTION_STORAGE_MASKS}),
    Operation.REGISTER: frozenset({Tag.OBJECT_TYPE, ATTRIBUTES, Tag.PROTECTION_STORAGE_MASKS}) | _OBJECTS,
    Operation.IMPORT: _UID
    | {Tag.OBJECT_TYPE, Tag.REPLACE_EXISTING, Tag.KEY_WRAP_TYPE, ATTRIBUTES}
    | _OBJECTS,
    Operation.LOCATE: _LOCATING | {ATTRIBUTES},
    Operation.GET_ATTRIBUTES: _UID | {ATTRIBUTE_REFERENCE},
    Operation.ADD_ATTRIBUTE: _UID | {NEW_ATTRIBUTE},
    Operation.SET_ATTRIBUTE: _UID | {NEW_ATTRIBUTE},
    Operation.MODIFY_ATTRIBUTE: _UID | {CURRENT_ATTRIBUTE, NEW_ATTRIBUTE},
    Operation.DELETE_ATTRIBUTE: _UID | {CURRENT_ATTRIBUTE, ATTRIBUTE_REFERENCE},
    Operation.ADJUST_ATTRIBUTE: _UID | {ATTRIBUTE_REFERENCE, Tag.ADJUSTMENT_TYPE, Tag.ADJUSTMENT_VALUE},
}


def _name(tag: int) -> str:
    try:
        return Tag(tag).name.replace("_", " ").title()
    except ValueError:
        return f"0x{tag:06X}"


def check(operation: int, payload: Item, version: tuple[int, int]) -> None:
    """Refuse a request payload holding a field its operation does not take in this version."""
    table = V2 if version >= (2, 0) else V1
    allowed = COMMON.get(operation) or table.get(operation)
    if allowed is None:
        return  # an operation this KMA does not serve is refused as such
    for item in payload:
        if item.tag not in allowed:
            family = "2.x" if version >= (2, 0) else "1.x"
            hint = ""
            if version >= (2, 0) and item.tag in _AS_ATTRIBUTES | {Tag.OBJECT_TYPE}:
                hint = " (KMIP 2.x puts attributes in an Attributes structure)"
            raise KmipError(
                ResultReason.INVALID_FIELD,
                f"a KMIP {family} {Operation(operation).name.replace('_', ' ').title()} request does not "
                f"take a {_name(item.tag)} field{hint}",
            )
