"""KMIP 2.0 and 2.1: the same operations, with attributes named by their tags.

KMIP 2.0 dropped Template-Attribute and the name/value Attribute structure: a request carries an
Attributes structure whose children are the attributes themselves (a Cryptographic Algorithm item,
a Name structure, ...), refers to an attribute by an Attribute Reference (an enumeration whose
value is the attribute's tag), and adds or changes one with New Attribute / Current Attribute.
Everything else these operations carry is as in 1.4.

So a 2.0 request is translated into its 1.4 form before the operation runs, and its answer back:
one implementation of each operation, one set of rules. A client's own attributes travel in 2.x
as Vendor Attributes (an Attribute structure: Vendor Identification, Attribute Name, Attribute
Value); those of vendor "x" are the 1.x client's `x-` attributes (`x` + `ID` is `x-ID`), others
are refused, saying so. Get Attributes naming an attribute the KMA does not keep leaves it out,
as 1.4 does, instead of failing the request.
"""

from __future__ import annotations

from kma.kmip import ttlv
from kma.kmip.enums import ItemType, Operation, ResultReason, Tag
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item

VERSION = (2, 0)
CLIENT_VENDOR = "x"  # KMIP 1.x's client attributes "x-..." are 2.x's vendor "x" attributes

# The standard attributes this KMA reads or writes, by name and by tag.
TAG_OF: dict[str, int] = {
    "Unique Identifier": Tag.UNIQUE_IDENTIFIER,
    "Object Type": Tag.OBJECT_TYPE,
    "Link": Tag.LINK,
    "Cryptographic Algorithm": Tag.CRYPTOGRAPHIC_ALGORITHM,
    "Cryptographic Length": Tag.CRYPTOGRAPHIC_LENGTH,
    "Cryptographic Usage Mask": Tag.CRYPTOGRAPHIC_USAGE_MASK,
    "State": Tag.STATE,
    "Initial Date": Tag.INITIAL_DATE,
    "Activation Date": Tag.ACTIVATION_DATE,
    "Process Start Date": Tag.PROCESS_START_DATE,
    "Protect Stop Date": Tag.PROTECT_STOP_DATE,
    "Deactivation Date": Tag.DEACTIVATION_DATE,
    "Compromise Date": Tag.COMPROMISE_DATE,
    "Destroy Date": Tag.DESTROY_DATE,
    "Name": Tag.NAME,
    "Object Group": Tag.OBJECT_GROUP,
    "Operation Policy Name": Tag.OPERATION_POLICY_NAME,
    "Alternative Name": 0x4200BF,
    "Application Specific Information": 0x420004,
    "Contact Information": Tag.CONTACT_INFORMATION,
    "Description": Tag.DESCRIPTION,
    "Protection Level": Tag.PROTECTION_LEVEL,
    "Protection Period": Tag.PROTECTION_PERIOD,
    "Quantum Safe": Tag.QUANTUM_SAFE,
    "Digest": Tag.DIGEST,
    "Last Change Date": Tag.LAST_CHANGE_DATE,
    "Original Creation Date": Tag.ORIGINAL_CREATION_DATE,
    "Random Number Generator": Tag.RANDOM_NUMBER_GENERATOR,
    "Compromise Occurrence Date": Tag.COMPROMISE_OCCURRENCE_DATE,
    "Revocation Reason": Tag.REVOCATION_REASON,
    "Key Format Type": Tag.KEY_FORMAT_TYPE,
    "Certificate Type": Tag.CERTIFICATE_TYPE,
    "Certificate Length": Tag.CERTIFICATE_LENGTH,
    "Certificate Subject CN": Tag.CERTIFICATE_SUBJECT_CN,
    "Sensitive": Tag.SENSITIVE,
    "Always Sensitive": Tag.ALWAYS_SENSITIVE,
    "Extractable": Tag.EXTRACTABLE,
    "Never Extractable": Tag.NEVER_EXTRACTABLE,
    "Fresh": Tag.FRESH,
    "Key Value Present": Tag.KEY_VALUE_PRESENT,
    "Short Unique Identifier": Tag.SHORT_UNIQUE_IDENTIFIER,
    "Protection Storage Mask": Tag.PROTECTION_STORAGE_MASK,
}
NOT_KEPT = "?"  # the 1.4 name of an attribute this KMA does not keep: it matches nothing
NAME_OF: dict[int, str] = {tag: name for name, tag in TAG_OF.items()}

ATTRIBUTES = 0x420125
ATTRIBUTE_REFERENCE = 0x42013B
CURRENT_ATTRIBUTE = 0x42013C
NEW_ATTRIBUTE = 0x42013D

_WITH_ATTRIBUTES = frozenset(
    {Operation.CREATE, Operation.REGISTER, Operation.LOCATE, Operation.IMPORT, Operation.REKEY}
)
_CHANGING = frozenset(
    {Operation.ADD_ATTRIBUTE, Operation.MODIFY_ATTRIBUTE, Operation.DELETE_ATTRIBUTE, Operation.SET_ATTRIBUTE}
)
_ANSWERED_BY_TAG = _CHANGING | {
    Operation.GET_ATTRIBUTES,
    Operation.GET_ATTRIBUTE_LIST,
    Operation.ADJUST_ATTRIBUTE,
}


def is_v2(version: tuple[int, int]) -> bool:
    return version >= VERSION


# --- requests: 2.0 -> 1.4 -----------------------------------------------------------------
def request_payload(operation: int, payload: Item) -> Item:
    """A 2.0 request payload in the 1.4 form the operations read."""
    if payload.type != ItemType.STRUCTURE:
        return payload
    children: list[Item] = []
    for child in payload:
        if child.tag == ATTRIBUTES and operation in _WITH_ATTRIBUTES:
            children += [_named(attribute) for attribute in _members(child)]
        elif child.tag == ATTRIBUTE_REFERENCE:
            lenient = operation == Operation.GET_ATTRIBUTES
            children.append(Item(Tag.ATTRIBUTE_NAME, ItemType.TEXT_STRING, _referenced(child, lenient)))
        elif child.tag == NEW_ATTRIBUTE and operation in _CHANGING:
            children.append(_named(_single(child, "New Attribute")))
        elif child.tag == CURRENT_ATTRIBUTE and operation in _CHANGING:
            if operation == Operation.DELETE_ATTRIBUTE:  # 1.4 deletes by name
                name = _name_of(_single(child, "Current Attribute"))
                children.append(Item(Tag.ATTRIBUTE_NAME, ItemType.TEXT_STRING, name))
            # Modify: the new value replaces the attribute's (one value each here)
        else:
            children.append(child)
    return Item(payload.tag, payload.type, children)


def _members(attributes: Item) -> list[Item]:
    if attributes.type != ItemType.STRUCTURE:
        raise KmipError(ResultReason.INVALID_FIELD, "Attributes is not a structure")
    return list(attributes)


def _single(holder: Item, what: str) -> Item:
    members = list(holder) if holder.type == ItemType.STRUCTURE else []
    if len(members) != 1:
        raise KmipError(ResultReason.INVALID_FIELD, f"{what} must hold exactly one attribute")
    return members[0]


def _name_of(attribute: Item) -> str:
    name = NAME_OF.get(attribute.tag)
    if name is None:
        raise KmipError(
            ResultReason.FEATURE_NOT_SUPPORTED,
            f"attribute with tag 0x{attribute.tag:06X} is not supported by this KMA over KMIP 2.0"
            " (custom x- attributes need KMIP 1.x)",
        )
    return name


def _vendor_name(attribute: Item) -> str:
    """The 1.x name of a vendor attribute (`x` + `ID` -> `x-ID`); other vendors' are refused."""
    vendor = attribute.get(Tag.VENDOR_IDENTIFICATION)
    name = attribute.get(Tag.ATTRIBUTE_NAME)
    if not isinstance(name, str) or not isinstance(vendor, str):
        raise KmipError(
            ResultReason.INVALID_FIELD, "a vendor attribute needs a Vendor Identification and a name"
        )
    if vendor != CLIENT_VENDOR:
        raise KmipError(
            ResultReason.FEATURE_NOT_SUPPORTED,
            f"vendor attributes of vendor '{vendor[:40]}' are not supported by this KMA (a client's own"
            f" attributes are vendor '{CLIENT_VENDOR}')",
        )
    return f"{CLIENT_VENDOR}-{name}"


def _named(attribute: Item) -> Item:
    """A tagged 2.x attribute (or a vendor attribute) as a 1.4 Attribute structure (name, value)."""
    if attribute.tag == Tag.ATTRIBUTE and attribute.type == ItemType.STRUCTURE:
        found = attribute.find(Tag.ATTRIBUTE_VALUE)
        if found is None:
            raise KmipError(ResultReason.MISSING_DATA, "a vendor attribute has no value")
        name = Item(Tag.ATTRIBUTE_NAME, ItemType.TEXT_STRING, _vendor_name(attribute))
        return Item(Tag.ATTRIBUTE, ItemType.STRUCTURE, [name, found])
    name = Item(Tag.ATTRIBUTE_NAME, ItemType.TEXT_STRING, _name_of(attribute))
    value = Item(Tag.ATTRIBUTE_VALUE, attribute.type, attribute.value)
    return Item(Tag.ATTRIBUTE, ItemType.STRUCTURE, [name, value])


def _referenced(reference: Item, lenient: bool = False) -> str:
    """The 1.4 name an Attribute Reference points to; `lenient` (Get Attributes): one this KMA
    does not keep is left out of the answer, as in 1.4."""
    if reference.type == ItemType.STRUCTURE:  # Vendor Identification + Attribute Name
        return _vendor_name(reference)
    if lenient and reference.value not in NAME_OF:
        return NOT_KEPT
    return _name_of(Item(reference.value, ItemType.ENUMERATION, 0))


# --- answers: 1.4 -> 2.0 ------------------------------------------------------------------
def response_payload(operation: int, payload: bytes) -> bytes:
    """The 2.0 form of a 1.4 answer: attributes by tag; the changing operations answer with
    the Unique Identifier only."""
    if operation not in _ANSWERED_BY_TAG:
        return payload
    items = list(ttlv.decode(ttlv.struct_(Tag.RESPONSE_PAYLOAD, payload)))
    out = [item.encode() for item in items if item.tag == Tag.UNIQUE_IDENTIFIER]
    if operation == Operation.GET_ATTRIBUTES:
        out.append(ttlv.struct_of(ATTRIBUTES, tagged(items)))
    elif operation == Operation.GET_ATTRIBUTE_LIST:
        for i in items:
            if i.tag == Tag.ATTRIBUTE_NAME and i.value in TAG_OF:
                out.append(ttlv.enum(ATTRIBUTE_REFERENCE, TAG_OF[i.value]))
            elif i.tag == Tag.ATTRIBUTE_NAME and str(i.value).startswith(f"{CLIENT_VENDOR}-"):
                out.append(_vendor(ATTRIBUTE_REFERENCE, str(i.value)))
    return b"".join(out)


def tagged(items: list[Item]) -> list[bytes]:
    """1.4 Attribute structures (name, value) as 2.x has them: by tag, or as vendor attributes."""
    out = []
    for attribute in (i for i in items if i.tag == Tag.ATTRIBUTE):
        name = attribute.get(Tag.ATTRIBUTE_NAME)
        tag = TAG_OF.get(name)
        value = attribute.find(Tag.ATTRIBUTE_VALUE)
        if tag is not None and value is not None:
            out.append(Item(tag, value.type, value.value).encode())
        elif isinstance(name, str) and name.startswith(f"{CLIENT_VENDOR}-") and value is not None:
            out.append(_vendor(Tag.ATTRIBUTE, name, value.encode()))
    return out


def _vendor(tag: int, name: str, *rest: bytes) -> bytes:
    """A client attribute `x-Name` as 2.x has it: Vendor Identification `x`, Attribute Name `Name`."""
    return ttlv.struct_(
        tag,
        ttlv.text(Tag.VENDOR_IDENTIFICATION, CLIENT_VENDOR),
        ttlv.text(Tag.ATTRIBUTE_NAME, name[len(CLIENT_VENDOR) + 1 :]),
        *rest,
    )
