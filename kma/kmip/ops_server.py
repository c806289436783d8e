"""Discover Versions and Query: what this server speaks and can do; Log and Interop: what a
client asks to have written in the audit trail (a note of its own, the start and end of a test
case it runs)."""

from __future__ import annotations

from kma.kmip import ttlv
from kma.kmip.context import Call
from kma.kmip.enums import (
    EndpointRole,
    InteropFunction,
    ItemType,
    ObjectType,
    Operation,
    QueryFunction,
    ResultReason,
    Tag,
)
from kma.kmip.messages import SUPPORTED_VERSIONS, KmipError
from kma.kmip.ttlv import Item

VENDOR = "KMS Manager reference KMA"
# Exactly the standard operations served (vendor operation codes would not parse in most
# clients' Query).
QUERY_OPERATIONS = [op for op in Operation if op < 0x80000000]
# Operations a later KMIP version added: a request of an earlier version has no such operation.
SINCE: dict[int, tuple[int, int]] = {
    **dict.fromkeys(
        (
            Operation.LOG,
            Operation.IMPORT,
            Operation.EXPORT,
            Operation.ADJUST_ATTRIBUTE,
            Operation.SET_ATTRIBUTE,
            Operation.SET_ENDPOINT_ROLE,
        ),
        (2, 0),
    ),
    Operation.INTEROP: (2, 1),
}


def since(operation: int) -> tuple[int, int]:
    return SINCE.get(operation, (1, 0))


EXTENSIONS = [
    ("Data Unit", Tag.DATA_UNIT, ItemType.TEXT_STRING),
    ("Key Issued", Tag.KEY_ISSUED, ItemType.BOOLEAN),
    ("Keys Released", Tag.KEYS_RELEASED, ItemType.INTEGER),
    ("Algorithms", Tag.ALGORITHMS, ItemType.TEXT_STRING),
]
OBJECT_TYPES = (
    ObjectType.SYMMETRIC_KEY,
    ObjectType.SECRET_DATA,
    ObjectType.OPAQUE_OBJECT,
    ObjectType.PUBLIC_KEY,
    ObjectType.PRIVATE_KEY,
    ObjectType.CERTIFICATE,
)
# Said in Server Information: what a client may ask for, and what it may not (NIST withdrew 3DES).
ALGORITHMS = (
    "AES-256 (tape key groups); AES-128, AES-192, AES-256, secret data, opaque objects, and registered "
    "RSA, DSA and ECDSA public and private keys and X.509 certificates (general key groups). Not "
    "offered: 3DES (withdrawn by NIST), generating asymmetric keys."
)


def _version(major: int, minor: int) -> bytes:
    return ttlv.struct_(
        Tag.PROTOCOL_VERSION,
        ttlv.integer(Tag.PROTOCOL_VERSION_MAJOR, major),
        ttlv.integer(Tag.PROTOCOL_VERSION_MINOR, minor),
    )


async def discover_versions(call: Call, payload: Item) -> bytes:
    asked = {
        (v.get(Tag.PROTOCOL_VERSION_MAJOR), v.get(Tag.PROTOCOL_VERSION_MINOR))
        for v in payload.all(Tag.PROTOCOL_VERSION)
    }
    versions = [v for v in SUPPORTED_VERSIONS if not asked or v in asked]
    await call.audit(
        "kmip.discover_versions",
        f"offered KMIP {', '.join(f'{a}.{b}' for a, b in versions) or 'no common version'}",
    )
    return b"".join(_version(*v) for v in versions)


async def query(call: Call, payload: Item) -> bytes:
    functions = {f for f in (i.value for i in payload.all(Tag.QUERY_FUNCTION)) if isinstance(f, int)}
    parts: list[bytes] = []
    if QueryFunction.OPERATIONS in functions:
        served = [op for op in QUERY_OPERATIONS if call.version >= since(op)]
        parts += [ttlv.enum(Tag.OPERATION, op) for op in served]
    if QueryFunction.OBJECTS in functions:
        parts += [ttlv.enum(Tag.OBJECT_TYPE, kind) for kind in OBJECT_TYPES]
    if QueryFunction.SERVER_INFORMATION in functions:
        parts.append(ttlv.text(Tag.VENDOR_IDENTIFICATION, VENDOR))
        parts.append(ttlv.struct_(Tag.SERVER_INFORMATION, ttlv.text(Tag.ALGORITHMS, ALGORITHMS)))
    if functions & {QueryFunction.EXTENSION_LIST, QueryFunction.EXTENSION_MAP} and call.version >= (1, 1):
        with_map = QueryFunction.EXTENSION_MAP in functions
        for name, tag, typ in EXTENSIONS:
            fields = [ttlv.text(Tag.EXTENSION_NAME, name)]
            if with_map:
                fields += [ttlv.integer(Tag.EXTENSION_TAG, tag), ttlv.integer(Tag.EXTENSION_TYPE, typ)]
            parts.append(ttlv.struct_(Tag.EXTENSION_INFORMATION, *fields))
    await call.audit("kmip.query", f"answered a query ({len(functions)} functions)")
    return b"".join(parts)


MAX_NOTE = 500  # characters of a client's Log Message or Interop Identifier kept in the trail


def _note(payload: Item, tag: int, what: str) -> str:
    value = payload.get(tag)
    if not isinstance(value, str) or not value:
        raise KmipError(
            ResultReason.MISSING_DATA, f"{what} needs a {Tag(tag).name.title().replace('_', ' ')}"
        )
    return value[:MAX_NOTE]


async def log(call: Call, payload: Item) -> bytes:
    """Log: the client's message becomes an audit event (its words, marked as the agent's)."""
    message = _note(payload, Tag.LOG_MESSAGE, "Log")
    await call.audit("kmip.log", f"agent '{call.agent_id}' logged: {message}")
    return b""


async def interop(call: Call, payload: Item) -> bytes:
    """Interop Begin / End mark in the audit trail where a client's test case starts and ends.
    Reset (the server forgets the test case's objects) is refused: objects here go only through
    their lifecycle, each step audited."""
    function = payload.get(Tag.INTEROP_FUNCTION)
    identifier = _note(payload, Tag.INTEROP_IDENTIFIER, "Interop")
    if function == InteropFunction.RESET:
        raise KmipError(
            ResultReason.FEATURE_NOT_SUPPORTED,
            "Interop Reset is not offered: objects are destroyed through their lifecycle, not reset",
        )
    if function not in (InteropFunction.BEGIN, InteropFunction.END):
        raise KmipError(ResultReason.INVALID_FIELD, "Interop Function must be Begin, End or Reset")
    said = "began" if function == InteropFunction.BEGIN else "ended"
    await call.audit("kmip.interop", f"agent '{call.agent_id}' {said} test case '{identifier}'")
    return b""


async def set_endpoint_role(call: Call, payload: Item) -> bytes:
    """Set Endpoint Role: this KMA is a server, always; asked to be one, it says so. It never
    takes the client's role on a connection (it sends no requests to agents)."""
    role = payload.get(Tag.ENDPOINT_ROLE)
    if role not in (EndpointRole.CLIENT, EndpointRole.SERVER):
        raise KmipError(ResultReason.INVALID_FIELD, "Endpoint Role must be Client or Server")
    if role == EndpointRole.CLIENT:
        raise KmipError(
            ResultReason.FEATURE_NOT_SUPPORTED,
            "this KMA is a server endpoint only: it sends no requests to its agents",
        )
    await call.audit("kmip.set_endpoint_role", "kept the server endpoint role, as asked")
    return ttlv.enum(Tag.ENDPOINT_ROLE, EndpointRole.SERVER)
