"""A key's KMIP attributes as an agent reads them (`KeyView`, `encode_attributes`): what each
standard attribute is in the KMA's model, and the values a client kept, as it sent them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from kma.domain.lifecycle import key_state
from kma.kmip import objects, ttlv
from kma.kmip.attribute_versions import defined
from kma.kmip.attributes import DEFAULT_USAGE, KEY_BITS, SOFTWARE_STORAGE
from kma.kmip.enums import (
    CryptographicAlgorithm,
    HashingAlgorithm,
    KeyFormatType,
    LinkType,
    NameType,
    ObjectType,
    RNGAlgorithm,
    State,
    Tag,
)


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
