"""What a Create or Register asks for (`NewKey`), read from its attributes, each checked by its rule
(`ON_CREATE`) against what this KMA makes and the key group's kind (`settle`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kma.kmip import objects
from kma.kmip.attributes import (
    ACTIVATION_SKEW,
    AES_BITS,
    ASI,
    DATA_UNIT_ALIASES,
    DEFAULT_USAGE,
    KEY_BITS,
    QUANTUM_SAFE,
    QUANTUM_SAFE_BITS,
    Attr,
    Kept,
    client_attribute,
    data_unit_of,
    field_error,
    kept,
    tape_unit,
    typed,
)
from kma.kmip.enums import (
    CryptographicAlgorithm,
    ItemType,
    ResultReason,
)
from kma.kmip.messages import KmipError


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
    value = typed(attr, ItemType.ENUMERATION)
    if value != CryptographicAlgorithm.AES and value not in objects.ALGORITHM_NAMES:
        raise field_error(
            "this KMA makes AES keys and keeps registered RSA, DSA and ECDSA keys (3DES, which NIST "
            "withdrew, is not offered)"
        )
    spec.algorithm = int(value)


def _length(spec: NewKey, attr: Attr, now: int) -> None:
    """The length a Create asks for (an AES size), or a Register's object has (checked there)."""
    spec.length = int(typed(attr, ItemType.INTEGER))
    if spec.length in AES_BITS:
        spec.bits = spec.length


def _usage(spec: NewKey, attr: Attr, now: int) -> None:
    spec.usage_mask = int(typed(attr, ItemType.INTEGER)) & 0xFFFFFFFF


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
    spec.quantum_safe = bool(typed(attr, ItemType.BOOLEAN))
    spec.kept.append(kept(attr))  # set once, with the object: it is a promise about its material


def _protect_stop(spec: NewKey, attr: Attr, now: int) -> None:
    spec.protect_stop = int(typed(attr, ItemType.DATE_TIME))


def _deactivation(spec: NewKey, attr: Attr, now: int) -> None:
    spec.deactivation = int(typed(attr, ItemType.DATE_TIME))


def _sensitive(spec: NewKey, attr: Attr, now: int) -> None:
    spec.sensitive = bool(typed(attr, ItemType.BOOLEAN))


def _certificate_type(spec: NewKey, attr: Attr, now: int) -> None:
    spec.certificate_type = int(typed(attr, ItemType.ENUMERATION))


def _group(spec: NewKey, attr: Attr, now: int) -> None:
    spec.group = str(typed(attr, ItemType.TEXT_STRING))


def _activation(spec: NewKey, attr: Attr, now: int) -> None:
    if typed(attr, ItemType.DATE_TIME) > now + ACTIVATION_SKEW:
        raise field_error(
            "an Activation Date in the future is not supported; activate the key when it is needed"
        )
    spec.activate = True


def _extractable(spec: NewKey, attr: Attr, now: int) -> None:
    spec.extractable = bool(typed(attr, ItemType.BOOLEAN))


def _fresh(spec: NewKey, attr: Attr, now: int) -> None:
    """A client registering material that has been elsewhere says Fresh = False, and it stays so;
    True is what every new object is here until its material is first sent."""
    if not typed(attr, ItemType.BOOLEAN):
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
