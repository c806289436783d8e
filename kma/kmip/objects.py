"""What a managed object is: an AES key (256 bits from the pool, or 128/192 bits for a general
key group), Secret Data, an Opaque Object, or (registered in a general key group) a public key,
a private key or an X.509 certificate, and how Register reads and Get sends each.

Every object is a row of `keys` (its material wrapped under the master key, its key group, its
times), so the key groups' isolation, the audit trail, backups and the manager's lists hold for
all of them; `key_kmip` says what it is when it is not an AES-256 key. An AES-128 or AES-192 key
is a pool key whose first 16 or 24 bytes are its material: the pool's keys are in a backup
before they are issued, and so is every AES key the KMA makes, whatever its size.

A public or private key is kept in the Key Format Type it was registered in and sent back in it
(no conversion): its material is the Key Material's bytes (PKCS#1, PKCS#8, X.509), or for a
Transparent format the TTLV encoding of the Key Material structure. The KMA never generates an
asymmetric key; it keeps what a client registers, weak sizes included (RSA-1024, DSA-512: the
client has the key already; refusing to store it protects nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from kma.kmip import ttlv
from kma.kmip.enums import CryptographicAlgorithm, ItemType, KeyFormatType, ObjectType, ResultReason, Tag
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item

# Object types a client may Register (a general key group only, but for AES-256 keys).
REGISTERED: dict[int, int] = {
    ObjectType.SYMMETRIC_KEY: Tag.SYMMETRIC_KEY,
    ObjectType.SECRET_DATA: Tag.SECRET_DATA,
    ObjectType.OPAQUE_OBJECT: Tag.OPAQUE_OBJECT,
    ObjectType.PUBLIC_KEY: Tag.PUBLIC_KEY,
    ObjectType.PRIVATE_KEY: Tag.PRIVATE_KEY,
    ObjectType.CERTIFICATE: Tag.CERTIFICATE,
}
ASYMMETRIC = (ObjectType.PUBLIC_KEY, ObjectType.PRIVATE_KEY)
X509 = 1  # Certificate Type X.509 (PGP certificates are not offered)
ALGORITHM_NAMES: dict[int, str] = {
    CryptographicAlgorithm.RSA: "RSA",
    CryptographicAlgorithm.DSA: "DSA",
    CryptographicAlgorithm.ECDSA: "ECDSA",
}
# Key Format Types a public / private key is registered in: byte strings, or a Transparent
# structure with the fields it must have.
# Raw: the key's bytes as its client has them (PyKMIP registers DER keys so), kept and sent back so.
_BYTES = frozenset({KeyFormatType.RAW, KeyFormatType.PKCS_1, KeyFormatType.PKCS_8, KeyFormatType.X_509})
_FORMATS: dict[int, frozenset[int]] = {
    ObjectType.PUBLIC_KEY: frozenset({KeyFormatType.RAW, KeyFormatType.PKCS_1, KeyFormatType.X_509}),
    ObjectType.PRIVATE_KEY: frozenset({KeyFormatType.RAW, KeyFormatType.PKCS_1, KeyFormatType.PKCS_8}),
}
_TRANSPARENT: dict[int, tuple[int, int, tuple[int, ...]]] = {  # format -> (object, algorithm, fields)
    KeyFormatType.TRANSPARENT_RSA_PUBLIC_KEY: (
        ObjectType.PUBLIC_KEY,
        CryptographicAlgorithm.RSA,
        (Tag.MODULUS, Tag.PUBLIC_EXPONENT),
    ),
    KeyFormatType.TRANSPARENT_RSA_PRIVATE_KEY: (
        ObjectType.PRIVATE_KEY,
        CryptographicAlgorithm.RSA,
        (Tag.MODULUS,),
    ),
    KeyFormatType.TRANSPARENT_DSA_PUBLIC_KEY: (
        ObjectType.PUBLIC_KEY,
        CryptographicAlgorithm.DSA,
        (Tag.P, Tag.Q, Tag.G, Tag.Y),
    ),
    KeyFormatType.TRANSPARENT_DSA_PRIVATE_KEY: (
        ObjectType.PRIVATE_KEY,
        CryptographicAlgorithm.DSA,
        (Tag.P, Tag.Q, Tag.G, Tag.X),
    ),
}
MAX_OBJECT_BYTES = 64 * 1024  # an Opaque Object or Secret Data value
KEY_BITS = 256  # the pool's keys


def field_error(message: str) -> KmipError:
    return KmipError(ResultReason.INVALID_FIELD, message)


def object_type(row: Any) -> int:
    value = _get(row, "object_type")
    return ObjectType.SYMMETRIC_KEY if value is None else int(value)


def bits(row: Any) -> int:
    value = _get(row, "bits")
    return KEY_BITS if value is None else int(value)


def _get(row: Any, column: str) -> Any:
    try:
        return row[column]
    except (KeyError, IndexError):
        return None


def material(row: Any, plain: bytes) -> bytes:
    """The object's material from its unwrapped bytes (a shorter AES key: the first bytes)."""
    if object_type(row) == ObjectType.SYMMETRIC_KEY:
        return plain[: bits(row) // 8]
    return plain


def is_symmetric(row: Any) -> bool:
    return object_type(row) == ObjectType.SYMMETRIC_KEY


def key_format(row: Any) -> int | None:
    """The Key Format Type the object is sent in unless a Get names one: the one it was
    registered in; a key the KMA made is Raw; an Opaque Object and a certificate have none."""
    kind = object_type(row)
    if kind in (ObjectType.OPAQUE_OBJECT, ObjectType.CERTIFICATE):
        return None
    registered = _get(row, "key_format")
    if registered is not None:
        return int(registered)
    return KeyFormatType.OPAQUE if kind == ObjectType.SECRET_DATA else KeyFormatType.RAW


def is_asymmetric(row: Any) -> bool:
    return object_type(row) in ASYMMETRIC


def algorithm(row: Any) -> int | None:
    """The Cryptographic Algorithm of a key (AES, or a registered key's own); None for others."""
    if is_symmetric(row):
        return CryptographicAlgorithm.AES
    value = _get(row, "algorithm")
    return None if value is None or not is_asymmetric(row) else int(value)


def what(row: Any) -> str:
    kind = object_type(row)
    if kind == ObjectType.SECRET_DATA:
        return "secret data"
    if kind == ObjectType.OPAQUE_OBJECT:
        return "opaque object"
    if kind == ObjectType.CERTIFICATE:
        return "X.509 certificate"
    if kind in ASYMMETRIC:
        name = ALGORITHM_NAMES.get(algorithm(row) or 0, "?")
        return f"{name}-{bits(row)} {'public' if kind == ObjectType.PUBLIC_KEY else 'private'} key"
    return f"AES-{bits(row)} key"


def certificate_subject_cn(der: bytes) -> str | None:
    names = x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else None


# --- Register ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Registered:
    """What a Register request carries: the object's type, its material, its Secret or Opaque
    Data Type, the Key Format Type it came in."""

    kind: int
    raw: bytes
    data_type: int | None = None
    key_format: int | None = None
    algorithm: int | None = None  # a public or private key's
    bits: int | None = None  # a public or private key's Cryptographic Length


def registered(payload: Item) -> Registered:
    """The object of a Register request, checked."""
    kind = payload.get(Tag.OBJECT_TYPE)
    tag = REGISTERED.get(kind) if isinstance(kind, int) else None
    if tag is None:
        raise field_error(
            "this KMA registers symmetric keys, public and private keys, X.509 certificates, secret data "
            "and opaque objects (templates and split keys are not offered)"
        )
    holder = payload.find(tag)
    if holder is None:
        raise KmipError(ResultReason.MISSING_DATA, f"Register of {ObjectType(kind).name} carries no object")
    if kind == ObjectType.OPAQUE_OBJECT:
        data_type, value = holder.get(Tag.OPAQUE_DATA_TYPE), holder.get(Tag.OPAQUE_DATA_VALUE)
        if not isinstance(data_type, int) or not isinstance(value, bytes):
            raise KmipError(ResultReason.MISSING_DATA, "an Opaque Object needs an Opaque Data Type and Value")
        return Registered(kind, _sized(value), data_type)
    if kind == ObjectType.CERTIFICATE:
        return _certificate(holder)
    block = holder.find(Tag.KEY_BLOCK)
    if block is None:
        raise KmipError(ResultReason.MISSING_DATA, "the object has no Key Block")
    if kind in ASYMMETRIC:
        return _asymmetric(kind, block)
    raw = block_material(block)
    fmt = block.get(Tag.KEY_FORMAT_TYPE)
    if kind == ObjectType.SECRET_DATA:
        data_type = holder.get(Tag.SECRET_DATA_TYPE)
        if not isinstance(data_type, int):
            raise KmipError(ResultReason.MISSING_DATA, "Secret Data needs a Secret Data Type")
        return Registered(kind, _sized(raw), data_type, fmt)
    algorithm = block.get(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES)
    if algorithm != CryptographicAlgorithm.AES or len(raw) * 8 not in (128, 192, 256):
        raise field_error("this KMA holds AES keys only (16, 24 or 32 bytes of key material)")
    return Registered(kind, raw, None, fmt)


def _certificate(holder: Item) -> Registered:
    kind, value = holder.get(Tag.CERTIFICATE_TYPE), holder.get(Tag.CERTIFICATE_VALUE)
    if not isinstance(kind, int) or not isinstance(value, bytes):
        raise KmipError(ResultReason.MISSING_DATA, "a Certificate needs a Certificate Type and Value")
    if kind != X509:
        raise field_error("this KMA keeps X.509 certificates only (PGP certificates are not offered)")
    try:
        x509.load_der_x509_certificate(_sized(value))
    except ValueError as error:
        raise field_error(f"the Certificate Value is not a DER X.509 certificate: {error}") from None
    return Registered(ObjectType.CERTIFICATE, value, X509)


def _asymmetric(kind: int, block: Item) -> Registered:
    """A public or private key as sent: its format (kept), algorithm and length (checked present)."""
    if block.find(Tag.KEY_WRAPPING_DATA) is not None:
        raise KmipError(ResultReason.FEATURE_NOT_SUPPORTED, "register key material unwrapped, inside TLS")
    fmt, algorithm, length = (
        block.get(Tag.KEY_FORMAT_TYPE),
        block.get(Tag.CRYPTOGRAPHIC_ALGORITHM),
        block.get(Tag.CRYPTOGRAPHIC_LENGTH),
    )
    noun = "public" if kind == ObjectType.PUBLIC_KEY else "private"
    if algorithm not in ALGORITHM_NAMES:
        raise field_error(f"a {noun} key here is RSA, DSA or ECDSA (its Key Block names the algorithm)")
    if not isinstance(length, int) or length <= 0:
        raise KmipError(ResultReason.MISSING_DATA, f"the {noun} key's Key Block needs a Cryptographic Length")
    value = block.find(Tag.KEY_VALUE)
    found = value.find(Tag.KEY_MATERIAL) if value is not None else None
    if found is None:
        raise KmipError(ResultReason.MISSING_DATA, "the key block has no key material")
    transparent = _TRANSPARENT.get(fmt) if isinstance(fmt, int) else None
    if isinstance(fmt, int) and fmt in _FORMATS[kind] and found.type == ItemType.BYTE_STRING:
        raw = bytes(found.value)
    elif transparent is not None and transparent[0] == kind and found.type == ItemType.STRUCTURE:
        if transparent[1] != algorithm:
            named = KeyFormatType(fmt).name
            raise field_error(f"Key Format Type {named} is not for {ALGORITHM_NAMES[algorithm]} keys")
        missing = [Tag(t).name.replace("_", " ").title() for t in transparent[2] if found.find(t) is None]
        if missing:
            raise KmipError(ResultReason.MISSING_DATA, f"the key material has no {', '.join(missing)}")
        raw = found.encode()
    else:
        raise KmipError(
            ResultReason.KEY_FORMAT_TYPE_NOT_SUPPORTED,
            f"a {noun} key is registered Raw, as PKCS#1, {'X.509' if noun == 'public' else 'PKCS#8'} or "
            "its Transparent RSA / DSA structure",
        )
    return Registered(kind, _sized(raw), None, fmt, algorithm, length)


def _sized(value: bytes) -> bytes:
    if not value or len(value) > MAX_OBJECT_BYTES:
        raise field_error(f"an object's value is 1 to {MAX_OBJECT_BYTES} bytes")
    return value


def block_material(block: Item) -> bytes:
    """Plain bytes from a Key Block (Raw, Opaque or Transparent Symmetric Key), unwrapped."""
    if block.find(Tag.KEY_WRAPPING_DATA) is not None:
        raise KmipError(ResultReason.FEATURE_NOT_SUPPORTED, "register key material unwrapped, inside TLS")
    fmt = block.get(Tag.KEY_FORMAT_TYPE)
    value = block.find(Tag.KEY_VALUE)
    found = value.find(Tag.KEY_MATERIAL) if value is not None else None
    if found is None:
        raise KmipError(ResultReason.MISSING_DATA, "the key block has no key material")
    if fmt == KeyFormatType.TRANSPARENT_SYMMETRIC_KEY and found.type == ItemType.STRUCTURE:
        raw = found.get(Tag.KEY)
    elif fmt in (KeyFormatType.RAW, KeyFormatType.OPAQUE) and found.type == ItemType.BYTE_STRING:
        raw = found.value
    else:
        raise KmipError(
            ResultReason.KEY_FORMAT_TYPE_NOT_SUPPORTED,
            "key material must be Raw, Opaque or Transparent Symmetric Key",
        )
    if not isinstance(raw, bytes):
        raise KmipError(ResultReason.MISSING_DATA, "the key block has no key material")
    return raw


# --- Get -----------------------------------------------------------------------------------
def encode_object(row: Any, fmt: int | None, value: bytes, wrapping: bytes = b"") -> bytes:
    """The object as Get sends it; `value` is its plain material (or, with `wrapping`, wrapped)."""
    kind = object_type(row)
    if kind == ObjectType.CERTIFICATE:
        return ttlv.struct_(
            Tag.CERTIFICATE,
            ttlv.enum(Tag.CERTIFICATE_TYPE, int(_get(row, "data_type") or X509)),
            ttlv.byte_string(Tag.CERTIFICATE_VALUE, value),
        )
    if kind in ASYMMETRIC:
        fmt = int(_get(row, "key_format") or KeyFormatType.PKCS_1)
        material = value if fmt not in _BYTES else ttlv.byte_string(Tag.KEY_MATERIAL, value)
        return ttlv.struct_(
            REGISTERED[kind],
            ttlv.struct_(
                Tag.KEY_BLOCK,
                ttlv.enum(Tag.KEY_FORMAT_TYPE, fmt),
                ttlv.struct_(Tag.KEY_VALUE, material),
                ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, algorithm(row) or 0),
                ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, bits(row)),
            ),
        )
    if kind == ObjectType.OPAQUE_OBJECT:
        return ttlv.struct_(
            Tag.OPAQUE_OBJECT,
            ttlv.enum(Tag.OPAQUE_DATA_TYPE, int(_get(row, "data_type") or 0)),
            ttlv.byte_string(Tag.OPAQUE_DATA_VALUE, value),
        )
    if wrapping:
        key_value = ttlv.byte_string(Tag.KEY_VALUE, value)
    elif fmt == KeyFormatType.TRANSPARENT_SYMMETRIC_KEY:
        key_value = ttlv.struct_(
            Tag.KEY_VALUE, ttlv.struct_(Tag.KEY_MATERIAL, ttlv.byte_string(Tag.KEY, value))
        )
    else:
        key_value = ttlv.struct_(Tag.KEY_VALUE, ttlv.byte_string(Tag.KEY_MATERIAL, value))
    if kind == ObjectType.SECRET_DATA:
        secret_format = fmt if fmt in (KeyFormatType.RAW, KeyFormatType.OPAQUE) else KeyFormatType.OPAQUE
        block = ttlv.struct_(
            Tag.KEY_BLOCK, ttlv.enum(Tag.KEY_FORMAT_TYPE, secret_format), key_value, wrapping
        )
        return ttlv.struct_(
            Tag.SECRET_DATA, ttlv.enum(Tag.SECRET_DATA_TYPE, int(_get(row, "data_type") or 1)), block
        )
    block = ttlv.struct_(
        Tag.KEY_BLOCK,
        ttlv.enum(Tag.KEY_FORMAT_TYPE, fmt or KeyFormatType.RAW),
        key_value,
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, bits(row)),
        wrapping,
    )
    return ttlv.struct_(Tag.SYMMETRIC_KEY, block)
