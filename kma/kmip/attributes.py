"""KMIP attributes of a key: reading them from requests, writing them from a key row.

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

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kma.domain.lifecycle import key_state
from kma.domain.validation import ID_PATTERN
from kma.kmip import objects, ttlv
from kma.kmip.attribute_versions import defined
from kma.kmip.enums import (
    CryptographicAlgorithm,
    HashingAlgorithm,
    ItemType,
    KeyFormatType,
    LinkType,
    NameType,
    ObjectType,
    ResultReason,
    RNGAlgorithm,
    State,
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
    """A text `x-` attribute's value, checked (Locate compares text as text)."""
    check_custom_name(attr.name)
    value = _typed(attr, ItemType.TEXT_STRING)
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


@dataclass
class NewKey:
    """What a Create or Register asks for, checked against what this KMA makes."""

    data_unit: str | None = None
    group: str | None = None
    usage_mask: int = DEFAULT_USAGE
    activate: bool = False
    kept: list[Kept] = field(default_factory=list)
    labels: list[Attr] = field(default_factory=list)  # Name, x-Data-Unit, x-Barcode as sent
    tape_units: list[str] = field(default_factory=list)  # cartridges LIBRARY-LTO information names
    bits: int = KEY_BITS
    quantum_safe: bool = False  # the client asks for an object safe against quantum computers
    protect_stop: int | None = None  # a Protect Stop Date the client set (general key groups)
    deactivation: int | None = None  # a Deactivation Date the client set (general key groups)
    algorithm: int | None = None  # a Cryptographic Algorithm the client named
    length: int | None = None  # a Cryptographic Length the client named
    certificate_type: int | None = None  # a Certificate Type the client named (Register)
    sensitive: bool = False  # KMIP Sensitive: the material never leaves the KMA in the clear
    extractable: bool | None = None  # KMIP Extractable, when the client said


def check_quantum_safe(spec: NewKey, bits: int | None) -> None:
    """An object asked to be quantum safe (KMIP 2.1 Quantum Safe = True) must be: an AES key of
    fewer than 256 bits is not (the answer is General Failure, as the Quantum Safe Profile has it)."""
    if spec.quantum_safe and bits is not None and bits < QUANTUM_SAFE_BITS:
        raise KmipError(
            ResultReason.GENERAL_FAILURE,
            f"NOT_SAFE: an AES-{bits} key is not quantum safe (a quantum search halves its strength); "
            f"ask for AES-{QUANTUM_SAFE_BITS}",
        )


def _algorithm(spec: NewKey, attr: Attr, now: int) -> None:
    """AES (the keys it makes), or the algorithm of a public or private key it is given."""
    value = _typed(attr, ItemType.ENUMERATION)
    if value != CryptographicAlgorithm.AES and value not in objects.ALGORITHM_NAMES:
        raise field_error(
            "this KMA makes AES keys and keeps registered RSA, DSA and ECDSA keys (3DES, which NIST "
            "withdrew, is not offered)"
        )
    spec.algorithm = int(value)


def _length(spec: NewKey, attr: Attr, now: int) -> None:
    """The length a Create asks for (an AES size), or a Register's object has (checked there)."""
    spec.length = int(_typed(attr, ItemType.INTEGER))
    if spec.length in AES_BITS:
        spec.bits = spec.length


def _usage(spec: NewKey, attr: Attr, now: int) -> None:
    spec.usage_mask = int(_typed(attr, ItemType.INTEGER)) & 0xFFFFFFFF


def _label(spec: NewKey, attr: Attr, now: int) -> None:
    spec.labels.append(attr)


def _application(spec: NewKey, attr: Attr, now: int) -> None:
    unit = tape_unit(attr)
    if unit is not None:
        spec.tape_units.append(unit)
    spec.kept.append(client_attribute(attr))


def _client_set(spec: NewKey, attr: Attr, now: int) -> None:
    spec.kept.append(client_attribute(attr))


def _bind(spec: NewKey, unit: str, what: str) -> None:
    if spec.data_unit not in (None, unit):
        raise field_error(f"a key belongs to one data unit: its {what} differ")
    spec.data_unit = unit


def settle(spec: NewKey, general: bool, group: str) -> None:
    """What the key group's policy makes of the request. Tape keys (the default): AES-256;
    LIBRARY-LTO information names the data unit, and then Name and x-Barcode are the library's
    labels, kept; without it, Name / x-Data-Unit / x-Barcode name it (and must agree). General
    keys: any AES size; Name and x-Barcode are free text, kept; LIBRARY-LTO information or
    x-Data-Unit still bind the key to a data unit."""
    if spec.bits != KEY_BITS and not general:
        raise field_error(
            f"the policy of key group '{group}' keeps tape keys: AES-256 only (a policy for general "
            "keys allows AES-128 and AES-192)"
        )
    if (spec.protect_stop is not None or spec.deactivation is not None) and not general:
        raise field_error(
            f"the policy of key group '{group}' sets its tape keys' dates; a Protect Stop or Deactivation "
            "Date is set on keys of a key group whose policy keeps general keys"
        )
    if spec.deactivation is not None and not spec.activate:
        raise field_error(
            "a Deactivation Date is set with an Activation Date (the object active from now): a "
            "pre-active object's dates start when it is activated"
        )
    if spec.extractable is not None and spec.extractable == spec.sensitive:
        if spec.sensitive:
            raise field_error(
                "a Sensitive object is not Extractable here: its material never leaves the KMA, "
                "in the clear or wrapped"
            )
        spec.sensitive = True  # not Extractable: its material never leaves the KMA
    for unit in spec.tape_units:
        _bind(spec, unit, "Application Specific Information values")
    for label in spec.labels:
        if label.name == "x-Data-Unit" or not (general or spec.tape_units):
            _bind(spec, data_unit_of(label), "Name, x-Data-Unit or Application Specific Information")
        else:
            spec.kept.append(client_attribute(label))


def _quantum_safe(spec: NewKey, attr: Attr, now: int) -> None:
    spec.quantum_safe = bool(_typed(attr, ItemType.BOOLEAN))
    spec.kept.append(kept(attr))  # set once, with the object: it is a promise about its material


def _protect_stop(spec: NewKey, attr: Attr, now: int) -> None:
    spec.protect_stop = int(_typed(attr, ItemType.DATE_TIME))


def _deactivation(spec: NewKey, attr: Attr, now: int) -> None:
    spec.deactivation = int(_typed(attr, ItemType.DATE_TIME))


def _sensitive(spec: NewKey, attr: Attr, now: int) -> None:
    spec.sensitive = bool(_typed(attr, ItemType.BOOLEAN))


def _certificate_type(spec: NewKey, attr: Attr, now: int) -> None:
    spec.certificate_type = int(_typed(attr, ItemType.ENUMERATION))


def _group(spec: NewKey, attr: Attr, now: int) -> None:
    spec.group = str(_typed(attr, ItemType.TEXT_STRING))


def _activation(spec: NewKey, attr: Attr, now: int) -> None:
    if _typed(attr, ItemType.DATE_TIME) > now + ACTIVATION_SKEW:
        raise field_error(
            "an Activation Date in the future is not supported; activate the key when it is needed"
        )
    spec.activate = True


def _extractable(spec: NewKey, attr: Attr, now: int) -> None:
    spec.extractable = bool(_typed(attr, ItemType.BOOLEAN))


def _fresh(spec: NewKey, attr: Attr, now: int) -> None:
    """A client registering material that has been elsewhere says Fresh = False, and it stays so;
    True is what every new object is here until its material is first sent."""
    if not _typed(attr, ItemType.BOOLEAN):
        spec.kept.append(kept(attr))


def _ignored(spec: NewKey, attr: Attr, now: int) -> None:
    """Accepted, without effect here (operation policies are the KMA's key policies)."""


ON_CREATE: dict[str, Callable[[NewKey, Attr, int], None]] = {
    "Cryptographic Algorithm": _algorithm,
    "Cryptographic Length": _length,
    "Cryptographic Usage Mask": _usage,
    "Name": _label,
    **dict.fromkeys(DATA_UNIT_ALIASES, _label),
    ASI: _application,
    "Alternative Name": _client_set,
    "Contact Information": _client_set,
    "Description": _client_set,
    "Protection Level": _client_set,
    "Protection Period": _client_set,
    QUANTUM_SAFE: _quantum_safe,
    "Object Group": _group,
    "Activation Date": _activation,
    "Protect Stop Date": _protect_stop,
    "Deactivation Date": _deactivation,
    "Sensitive": _sensitive,
    "Extractable": _extractable,
    "Certificate Type": _certificate_type,
    "Operation Policy Name": _ignored,
    "Fresh": _fresh,
}


def new_key(attrs: Iterable[Attr], now: int) -> NewKey:
    """The attributes of a Create or Register, each checked by its rule in `ON_CREATE`."""
    spec = NewKey()
    for attr in attrs:
        rule = ON_CREATE.get(attr.name)
        if rule is not None:
            rule(spec, attr, now)
        elif attr.name.startswith("x-"):
            spec.kept.append(client_attribute(attr))
        else:
            raise field_error(f"attribute '{attr.name[:80]}' cannot be set by a client of this KMA")
    return spec


# --- writing a key's attributes -------------------------------------------------------------
class KeyView:
    """A key row seen through KMIP, at one instant (`material`: its plain bytes, when a Digest
    is asked for)."""

    __slots__ = ("custom", "material", "now", "row", "sent")

    def __init__(
        self,
        row: Any,
        now: int,
        custom: Iterable[Any] = (),
        material: bytes | None = None,
        sent: bool | None = None,
    ) -> None:
        self.row = row
        self.now = now
        self.custom = list(custom)
        self.material = material
        self.sent = sent  # whether its material was ever sent (None: not looked up)

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
            key_state(
                self.now,
                r["activated_at"],
                r["protect_until"],
                r["deactivate_at"],
                r["destroyed_at"],
                in_key_group=_get(r, "key_group_id") is not None,
                withheld=_get(r, "withheld_at") is not None,
            )
        )

    @property
    def sensitive(self) -> bool:
        return bool(_get(self.row, "sensitive"))

    @property
    def usage_mask(self) -> int:
        mask = self.row["usage_mask"]
        return DEFAULT_USAGE if mask is None else int(mask)

    @property
    def last_change(self) -> int:
        """The latest thing that happened to the key (KMIP: Last Change Date always has a value)."""
        r = self.row
        times = [r["created_at"], r["compromised_at"], r["destroyed_at"], _get(r, "changed_at")]
        times += [t for t in (r["activated_at"], r["deactivate_at"]) if t is not None and t <= self.now]
        return int(max(t for t in times if t is not None))


def _get(row: Any, column: str) -> Any:
    try:
        return row[column]
    except (KeyError, IndexError):
        return None


V = Tag.ATTRIBUTE_VALUE


def _date(column: str) -> Callable[[KeyView], bytes | None]:
    def encode(k: KeyView) -> bytes | None:
        value = _get(k.row, column)
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


def digest(material: bytes) -> bytes:
    return hashlib.sha256(material).digest()


def _digest(k: KeyView) -> bytes | None:
    """SHA-256 of the key's Raw material, of a public or private key's material in the Key Format
    Type it was registered in, of a certificate's DER (kept when the material was destroyed;
    computed when asked for)."""
    value = digest(k.material) if k.material is not None else _get(k.row, "digest")
    if value is None:
        return None
    kind = objects.object_type(k.row)
    fmt = objects.key_format(k.row) if kind in objects.ASYMMETRIC else KeyFormatType.RAW
    if kind == ObjectType.CERTIFICATE:  # optional for a certificate, yet clients (PyKMIP) read one
        fmt = KeyFormatType.X_509
    return ttlv.struct_(
        V,
        ttlv.enum(Tag.HASHING_ALGORITHM, HashingAlgorithm.SHA_256),
        ttlv.byte_string(Tag.DIGEST_VALUE, bytes(value)),
        ttlv.enum(Tag.KEY_FORMAT_TYPE, fmt or KeyFormatType.RAW),
    )


def _generator(k: KeyView) -> bytes | None:
    """The KMA made the key (its pool: the operating system's CSPRNG); a registered key's
    generator is unknown, so it has none."""
    if _get(k.row, "registered_by") is not None or not objects.is_symmetric(k.row):
        return None
    return ttlv.struct_(
        V,
        ttlv.enum(Tag.RNG_ALGORITHM, RNGAlgorithm.UNSPECIFIED),
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, KEY_BITS),
    )


def _key_format(k: KeyView) -> bytes | None:
    fmt = objects.key_format(k.row)
    return None if fmt is None else ttlv.enum(V, fmt)


def _algorithm_of(k: KeyView) -> bytes | None:
    algorithm = objects.algorithm(k.row)
    return None if algorithm is None else ttlv.enum(V, algorithm)


def _certificate(k: KeyView) -> bool:
    """A live certificate whose DER is at hand (read when a certificate attribute is asked for)."""
    return objects.object_type(k.row) == ObjectType.CERTIFICATE and k.material is not None


def _subject_cn(k: KeyView) -> bytes | None:
    name = objects.certificate_subject_cn(k.material) if k.material is not None and _certificate(k) else None
    return None if name is None else ttlv.text(V, name)


def links(k: KeyView) -> list[bytes]:
    """Re-Key's Links (kma/kmip/ops_rekey.py): to the key that replaced this one, and to the key
    this one replaced; a key in the middle of a chain has both."""
    out = []
    for link_type, column in (
        (LinkType.REPLACEMENT_OBJECT, "replacement_id"),
        (LinkType.REPLACED_OBJECT, "replaced_id"),
    ):
        other = _get(k.row, column)
        if other is not None:
            out.append(
                ttlv.struct_(
                    V, ttlv.enum(Tag.LINK_TYPE, link_type), ttlv.text(Tag.LINKED_OBJECT_IDENTIFIER, other)
                )
            )
    return out


def _revocation(k: KeyView) -> bytes | None:
    code = _get(k.row, "revocation_reason")
    if code is None:
        return None
    message = _get(k.row, "revocation_message")
    return ttlv.struct_(
        V,
        ttlv.enum(Tag.REVOCATION_REASON_CODE, code),
        ttlv.text(Tag.REVOCATION_MESSAGE, message) if message else b"",
    )


# Attribute name -> encoder of its value (None: the key has no such attribute), in the order
# "all attributes" lists them.
STANDARD: dict[str, Callable[[KeyView], bytes | None]] = {
    "Unique Identifier": lambda k: ttlv.text(V, k.row["id"]),
    "Short Unique Identifier": lambda k: ttlv.byte_string(V, hashlib.sha256(k.row["id"].encode()).digest()),
    "Object Type": lambda k: ttlv.enum(V, objects.object_type(k.row)),
    "Cryptographic Algorithm": _algorithm_of,
    "Cryptographic Length": lambda k: (
        ttlv.integer(V, objects.bits(k.row)) if objects.algorithm(k.row) is not None else None
    ),
    "Certificate Type": lambda k: (
        ttlv.enum(V, int(k.row["data_type"] or objects.X509))
        if objects.object_type(k.row) == ObjectType.CERTIFICATE
        else None
    ),
    "Certificate Length": lambda k: (
        ttlv.integer(V, len(k.material)) if k.material and _certificate(k) else None
    ),
    "Certificate Subject CN": _subject_cn,
    # Sensitive is set with the object and never changed: it was always so, and then never
    # leaves the KMA, in the clear or wrapped (not Extractable, never was).
    "Sensitive": lambda k: ttlv.boolean(V, k.sensitive),
    "Always Sensitive": lambda k: ttlv.boolean(V, k.sensitive),
    "Extractable": lambda k: ttlv.boolean(V, not k.sensitive),
    "Never Extractable": lambda k: ttlv.boolean(V, k.sensitive),
    "Fresh": lambda k: None if k.sent is None else ttlv.boolean(V, not k.sent),
    # Every object's material is kept in the KMA's database, wrapped under its master key (even
    # when that key is in an HSM): software storage.
    "Protection Storage Mask": lambda k: ttlv.integer(V, SOFTWARE_STORAGE),
    "Cryptographic Usage Mask": lambda k: ttlv.integer(V, k.usage_mask),
    "Digest": _digest,
    "State": lambda k: ttlv.enum(V, k.state),
    # Initial Date: when it became an agent's object; Original Creation Date: when its material
    # was made (a pool key is made ahead of its Create)
    "Initial Date": lambda k: ttlv.date_time(V, _get(k.row, "issued_at") or k.row["created_at"]),
    "Original Creation Date": _date("created_at"),
    "Last Change Date": lambda k: ttlv.date_time(V, k.last_change),
    "Activation Date": _date("activated_at"),
    "Process Start Date": _date("activated_at"),
    "Protect Stop Date": _date("protect_until"),
    "Deactivation Date": _date("deactivate_at"),
    "Compromise Occurrence Date": _date("compromise_occurrence_at"),
    "Compromise Date": _date("compromised_at"),
    "Revocation Reason": _revocation,
    "Destroy Date": _date("destroyed_at"),
    "Random Number Generator": _generator,
    "Key Format Type": _key_format,
    "Name": _name,
    "Object Group": _text_column("key_group_id"),
    "x-Data-Unit": _text_column("data_unit_id"),
    "x-Key-State": lambda k: ttlv.text(V, k.kma_state),
    "x-KMA": _text_column("kma_id"),
}
# Answered when asked for by name only, not among "all attributes" nor in Get Attribute List: every
# object holds its value until destroyed (no Key Value Location here), so it tells what State
# does, and clients that predate it (PyKMIP 0.11) cannot decode a whole answer that holds it.
ON_REQUEST: dict[str, Callable[[KeyView], bytes | None]] = {
    "Key Value Present": lambda k: ttlv.boolean(V, k.row["destroyed_at"] is None),
}
# Attributes that may hold several values (each answered with its Attribute Index), when asked
# for by name and in Get Attribute List, not among "all attributes": PyKMIP 0.11 cannot decode a
# Link, and would fail a whole answer that holds one.
MULTIPLE: dict[str, Callable[[KeyView], list[bytes]]] = {"Link": links}
ALIASES = {"x-Barcode": "x-Data-Unit"}
# Attributes read from the object's material (so Get Attributes unwraps it when they are asked for).
FROM_MATERIAL = frozenset({"Digest", "Certificate Length", "Certificate Subject CN"})


def attribute(name: str, value: bytes, index: int = 0) -> bytes:
    parts = [ttlv.text(Tag.ATTRIBUTE_NAME, name)]
    if index:
        parts.append(ttlv.integer(Tag.ATTRIBUTE_INDEX, index))
    return ttlv.struct_(Tag.ATTRIBUTE, *parts, value)


def kept_value(row: Any) -> bytes:
    """A kept attribute's Attribute Value, as the client sent it."""
    item = row["item"]
    return bytes(item) if item is not None else ttlv.text(V, row["value"])


def encode_attributes(key: KeyView, names: list[str] | None, version: tuple[int, int]) -> list[bytes]:
    """The key's attributes named (all when `names` is None) that the client's KMIP version has;
    absent ones are left out. What a client set is answered as it sent it (a library's own Name
    or x-Barcode included)."""
    kept_names = dict.fromkeys(c["name"] for c in key.custom)
    out = []
    every = [*(n for n in STANDARD if n not in kept_names), *kept_names]
    for name in names if names is not None else every:
        if not defined(name, version):
            continue
        if name in kept_names:
            out += [attribute(name, kept_value(c), c["idx"]) for c in key.custom if c["name"] == name]
            continue
        if name in MULTIPLE:
            out += [attribute(name, value, i) for i, value in enumerate(MULTIPLE[name](key))]
            continue
        encoder = STANDARD.get(ALIASES.get(name, name)) or ON_REQUEST.get(name)
        value = encoder(key) if encoder is not None else None
        if value is not None:
            out.append(attribute(name, value))
    return out


def attribute_names(key: KeyView, version: tuple[int, int]) -> list[str]:
    """What "all attributes" would hold for this version, in the same order, and the Links (named
    only: see MULTIPLE)."""
    kept_names = list(dict.fromkeys(c["name"] for c in key.custom))
    names = [n for n, encoder in STANDARD.items() if n not in kept_names and encoder(key) is not None]
    names += [n for n, values in MULTIPLE.items() if values(key)]
    if "Digest" not in names and (key.row["destroyed_at"] is None or _get(key.row, "digest") is not None):
        names.append("Digest")  # a live key has one; its value is read when asked for
    if objects.object_type(key.row) == ObjectType.CERTIFICATE and key.row["destroyed_at"] is None:
        names += ["Certificate Length", "Certificate Subject CN"]  # read likewise
    return [n for n in names + kept_names if defined(n, version)]
