"""The KMIP 2.x operations a Query lists beside the 1.x ones (QS-M-1-21 asks for them): Set
Attribute, Adjust Attribute, Export, Import and Set Endpoint Role, against a real `kma serve`,
each under the rules of the 1.x operation it extends, refused with its 2.x reason, audited."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.keywrap import aes_key_wrap

from kma.kmip import ttlv
from kma.kmip.client import KmipClient, KmipFailure
from kma.kmip.enums import (
    AdjustmentType,
    BlockCipherMode,
    CryptographicAlgorithm,
    EndpointRole,
    ItemType,
    KeyFormatType,
    ObjectType,
    Operation,
    ResultReason,
    RevocationReasonCode,
    State,
    Tag,
    UsageMask,
    WrappingMethod,
)
from kma.kmip.ttlv import Item
from tests.support.agents import enrolled_demo_agent, events, general_keys_demo, kmip, last_event
from tests.support.kma_process import RunningKma, read_only_db

AGENT = "t10k-dal-01"
ATTRIBUTES, ATTRIBUTE_REFERENCE, NEW_ATTRIBUTE = 0x420125, 0x42013B, 0x42013D
INT32_MAX = 2**31 - 1


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = general_keys_demo(tmp_path_factory, "kmip-v2-operations")
    try:
        yield kma
    finally:
        kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, AGENT)


@pytest.fixture
def client(agent_dir: Path) -> Iterator[KmipClient]:
    """An agent's client speaking KMIP 2.1."""
    with kmip(agent_dir) as c:
        c.version = (2, 1)
        yield c


def uid_of(key: str) -> bytes:
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, key)


def vendor(name: str, value: bytes) -> bytes:
    """A client's own attribute x-<name> as 2.x has it (vendor "x")."""
    return ttlv.struct_(
        Tag.ATTRIBUTE,
        ttlv.text(Tag.VENDOR_IDENTIFICATION, "x"),
        ttlv.text(Tag.ATTRIBUTE_NAME, name),
        value,
    )


def vendor_reference(name: str) -> bytes:
    return ttlv.struct_(
        ATTRIBUTE_REFERENCE, ttlv.text(Tag.VENDOR_IDENTIFICATION, "x"), ttlv.text(Tag.ATTRIBUTE_NAME, name)
    )


def refused(client: KmipClient, operation: int, payload: bytes) -> KmipFailure:
    with pytest.raises(KmipFailure) as failure:
        client.call(operation, payload)
    return failure.value


def attributes_of(client: KmipClient, key: str, *tags: int) -> dict[int, Any]:
    """Get Attributes (2.x) of the tags named: tag -> value."""
    references = b"".join(ttlv.enum(ATTRIBUTE_REFERENCE, t) for t in tags)
    holder = client.call(Operation.GET_ATTRIBUTES, uid_of(key) + references).find(ATTRIBUTES)
    assert holder is not None
    return {i.tag: i.value for i in holder}


def custom(client: KmipClient, key: str, name: str) -> list[Any]:
    """The values of the client's attribute x-<name> (read as 1.4 names it)."""
    client.version = (1, 4)
    try:
        answer = client.call(
            Operation.GET_ATTRIBUTES, uid_of(key) + ttlv.text(Tag.ATTRIBUTE_NAME, f"x-{name}")
        )
    finally:
        client.version = (2, 1)
    return [a.get(Tag.ATTRIBUTE_VALUE) for a in answer.all(Tag.ATTRIBUTE)]


def add_custom(client: KmipClient, key: str, name: str, value: bytes) -> None:
    client.call(Operation.ADD_ATTRIBUTE, uid_of(key) + ttlv.struct_(NEW_ATTRIBUTE, vendor(name, value)))


def aes_128(client: KmipClient, *attributes: bytes) -> tuple[str, bytes]:
    material = os.urandom(16)
    block = ttlv.struct_(
        Tag.KEY_BLOCK,
        ttlv.enum(Tag.KEY_FORMAT_TYPE, KeyFormatType.RAW),
        ttlv.struct_(Tag.KEY_VALUE, ttlv.byte_string(Tag.KEY_MATERIAL, material)),
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 128),
    )
    payload = (
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
        + ttlv.struct_(ATTRIBUTES, *attributes)
        + ttlv.struct_(Tag.SYMMETRIC_KEY, block)
    )
    return str(client.call(Operation.REGISTER, payload).get(Tag.UNIQUE_IDENTIFIER)), material


def test_set_attribute_adds_then_replaces_and_leaves_the_kmas_own_alone(
    kma: RunningKma, client: KmipClient
) -> None:
    key, _ = aes_128(client)
    before = last_event(kma)
    for text in ("payroll database", "payroll database, site B"):
        client.call(
            Operation.SET_ATTRIBUTE,
            uid_of(key) + ttlv.struct_(NEW_ATTRIBUTE, ttlv.text(Tag.DESCRIPTION, text)),
        )
    assert attributes_of(client, key, Tag.DESCRIPTION) == {Tag.DESCRIPTION: "payroll database, site B"}
    said = [e["message"] for e in events(kma, before, "kmip.set_attribute")]
    assert said == [
        f"added attribute 'Description' to key {key}",
        f"changed attribute 'Description' of key {key}",
    ]

    state = uid_of(key) + ttlv.struct_(NEW_ATTRIBUTE, ttlv.enum(Tag.STATE, State.ACTIVE))
    assert refused(client, Operation.SET_ATTRIBUTE, state).reason == ResultReason.ATTRIBUTE_READ_ONLY
    for label in ("rack 4", "rack 5"):
        add_custom(client, key, "label", ttlv.text(Tag.ATTRIBUTE_VALUE, label))
    two = uid_of(key) + ttlv.struct_(NEW_ATTRIBUTE, vendor("label", ttlv.text(Tag.ATTRIBUTE_VALUE, "rack 6")))
    assert refused(client, Operation.SET_ATTRIBUTE, two).reason == ResultReason.MULTI_VALUED_ATTRIBUTE
    assert custom(client, key, "label") == ["rack 4", "rack 5"]
    client.call(Operation.DELETE_ATTRIBUTE, uid_of(key) + vendor_reference("label"))  # rack 4, index 0
    client.call(Operation.SET_ATTRIBUTE, two)  # the one left (at index 1) is the one replaced
    assert custom(client, key, "label") == ["rack 6"]
    client.version = (1, 4)
    try:  # a 2.x operation: a 1.4 request has no such thing
        one_four = refused(client, Operation.SET_ATTRIBUTE, two)
    finally:
        client.version = (2, 1)
    assert one_four.reason == ResultReason.OPERATION_NOT_SUPPORTED


def adjust(key: str, name: str, how: AdjustmentType, by: int | None = None) -> bytes:
    value = b"" if by is None else Item(Tag.ADJUSTMENT_VALUE, ItemType.INTEGER, by).encode()
    return uid_of(key) + vendor_reference(name) + ttlv.enum(Tag.ADJUSTMENT_TYPE, how) + value


def test_adjust_attribute_changes_a_number_a_client_keeps_within_its_range(
    kma: RunningKma, client: KmipClient
) -> None:
    key, _ = aes_128(client)
    add_custom(client, key, "uses", ttlv.integer(Tag.ATTRIBUTE_VALUE, 5))
    before = last_event(kma)
    client.call(Operation.ADJUST_ATTRIBUTE, adjust(key, "uses", AdjustmentType.INCREMENT, 3))
    assert custom(client, key, "uses") == [8]
    client.call(Operation.ADJUST_ATTRIBUTE, adjust(key, "uses", AdjustmentType.DECREMENT))
    client.call(Operation.ADJUST_ATTRIBUTE, adjust(key, "uses", AdjustmentType.NEGATE))
    assert custom(client, key, "uses") == [-7]
    (first, *_) = events(kma, before, "kmip.adjust_attribute")
    assert first["message"] == f"adjusted attribute 'x-uses' of key {key}: increment to 8"

    too_far = refused(
        client, Operation.ADJUST_ATTRIBUTE, adjust(key, "uses", AdjustmentType.DECREMENT, INT32_MAX)
    )
    assert too_far.reason == ResultReason.NUMERIC_RANGE and custom(client, key, "uses") == [-7]
    add_custom(client, key, "owner", ttlv.text(Tag.ATTRIBUTE_VALUE, "dba team"))
    text = refused(client, Operation.ADJUST_ATTRIBUTE, adjust(key, "owner", AdjustmentType.INCREMENT))
    assert text.reason == ResultReason.INVALID_DATA_TYPE
    absent = refused(client, Operation.ADJUST_ATTRIBUTE, adjust(key, "nothing", AdjustmentType.INCREMENT))
    assert absent.reason == ResultReason.ATTRIBUTE_NOT_FOUND
    length = uid_of(key) + ttlv.enum(ATTRIBUTE_REFERENCE, Tag.CRYPTOGRAPHIC_LENGTH)
    length += ttlv.enum(Tag.ADJUSTMENT_TYPE, AdjustmentType.INCREMENT)
    assert refused(client, Operation.ADJUST_ATTRIBUTE, length).reason == ResultReason.ATTRIBUTE_READ_ONLY
    assert attributes_of(client, key, Tag.CRYPTOGRAPHIC_LENGTH) == {Tag.CRYPTOGRAPHIC_LENGTH: 128}
    assert [e["condition"] for e in events(kma, before, "kmip.adjust_attribute")] == ["success"] * 3 + [
        "error"
    ] * 4


def export(client: KmipClient, key: str) -> Item:
    return client.call(Operation.EXPORT, uid_of(key))


def test_export_sends_the_object_with_its_attributes_under_gets_rules(
    kma: RunningKma, client: KmipClient
) -> None:
    name = ttlv.struct_(Tag.NAME, ttlv.text(Tag.NAME_VALUE, "payroll-db"), ttlv.enum(Tag.NAME_TYPE, 1))
    key, material = aes_128(client, name)
    before = last_event(kma)
    out = export(client, key)
    assert [i.tag for i in out] == [Tag.OBJECT_TYPE, Tag.UNIQUE_IDENTIFIER, ATTRIBUTES, Tag.SYMMETRIC_KEY]
    held = out.find(ATTRIBUTES)
    assert held is not None and held.find(Tag.NAME).get(Tag.NAME_VALUE) == "payroll-db"  # type: ignore[union-attr]
    assert held.get(Tag.STATE) == State.PRE_ACTIVE and held.get(Tag.CRYPTOGRAPHIC_LENGTH) == 128
    block = out.find(Tag.SYMMETRIC_KEY).find(Tag.KEY_BLOCK)  # type: ignore[union-attr]
    assert block.find(Tag.KEY_VALUE).get(Tag.KEY_MATERIAL) == material  # type: ignore[union-attr]
    (event,) = events(kma, before, "kmip.export")
    assert event["message"] == f"sent AES-128 key {key} to agent '{AGENT}' (its first send)"

    sensitive, _ = aes_128(client, ttlv.boolean(Tag.SENSITIVE, True))
    assert refused(client, Operation.EXPORT, uid_of(sensitive)).reason == ResultReason.SENSITIVE
    assert refused(client, Operation.EXPORT, uid_of("no-such-key")).reason == ResultReason.OBJECT_NOT_FOUND


def test_export_is_refused_for_a_key_whose_policy_does_not_allow_export(
    kma: RunningKma, client: KmipClient
) -> None:
    """The key policy's allow_export holds on KMIP's way out too (a transfer file already obeys
    it): refused with the reason and audited; Get still serves the agent's own use."""
    key, material = aes_128(client)
    co = kma.client("co")
    co.update_key_policy("tape-30d", allow_export=False)
    try:
        before = last_event(kma)
        failure = refused(client, Operation.EXPORT, uid_of(key))
        assert failure.reason == ResultReason.PERMISSION_DENIED
        assert "key policy 'tape-30d' of key group 'backup-dallas' does not allow export" in failure.message
        (event,) = events(kma, before, "kmip.export")
        assert event["condition"] == "error" and "does not allow export" in event["message"]
        assert client.get(key) == material
    finally:
        co.update_key_policy("tape-30d", allow_export=True)
    assert export(client, key).find(Tag.SYMMETRIC_KEY) is not None


def import_payload(uid: str, exported: Item, *extra: bytes, drop: tuple[int, ...] = ()) -> bytes:
    """An Import of what Export sent, under `uid` (the exported attributes but those dropped)."""
    held = exported.find(ATTRIBUTES)
    assert held is not None
    kept = b"".join(i.encode() for i in held if i.tag not in drop)
    kind, obj = exported.find(Tag.OBJECT_TYPE), list(exported)[-1]
    assert kind is not None
    return uid_of(uid) + kind.encode() + ttlv.struct_(ATTRIBUTES, kept, *extra) + obj.encode()


def test_import_takes_an_exported_object_under_its_own_identifier_as_register_does(
    kma: RunningKma, client: KmipClient
) -> None:
    key, material = aes_128(client)
    client.call(Operation.ACTIVATE, uid_of(key))
    exported = export(client, key)
    before = last_event(kma)
    # another cluster's identifier is taken as given; this one's own is checked against the request
    client.call(Operation.IMPORT, import_payload("payroll-db-key.2", exported, drop=(Tag.UNIQUE_IDENTIFIER,)))
    got = client.call(Operation.GET, uid_of("payroll-db-key.2")).find(Tag.SYMMETRIC_KEY)
    assert got.find(Tag.KEY_BLOCK).find(Tag.KEY_VALUE).get(Tag.KEY_MATERIAL) == material  # type: ignore[union-attr]
    assert attributes_of(client, "payroll-db-key.2", Tag.STATE) == {Tag.STATE: State.ACTIVE}
    (event,) = events(kma, before, "kmip.import")
    assert event["condition"] == "success" and "payroll-db-key.2" in event["message"]

    again = refused(
        client, Operation.IMPORT, import_payload("payroll-db-key.2", exported, drop=(Tag.UNIQUE_IDENTIFIER,))
    )
    assert again.reason == ResultReason.OBJECT_ALREADY_EXISTS
    other = refused(client, Operation.IMPORT, import_payload("payroll-db-key.3", exported))
    assert other.reason == ResultReason.INVALID_FIELD and "Unique Identifier" in other.message
    assert (
        refused(client, Operation.IMPORT, import_payload("../etc", exported)).reason
        == ResultReason.INVALID_FIELD
    )
    # the State must follow from the dates given: a key exported Active, imported without its dates
    undated = import_payload("payroll-db-key.4", exported, drop=(Tag.UNIQUE_IDENTIFIER, Tag.ACTIVATION_DATE))
    assert refused(client, Operation.IMPORT, undated).reason == ResultReason.INVALID_FIELD

    client.version = (1, 4)
    try:
        client.revoke(key, RevocationReasonCode.KEY_COMPROMISE)
    finally:
        client.version = (2, 1)
    compromised = refused(
        client,
        Operation.IMPORT,
        import_payload("payroll-db-key.5", export(client, key), drop=(Tag.UNIQUE_IDENTIFIER,)),
    )
    assert (
        compromised.reason == ResultReason.PERMISSION_DENIED and "compromised object" in compromised.message
    )
    assert [e["condition"] for e in events(kma, before, "kmip.import")] == ["success"] + ["error"] * 5


def test_set_endpoint_role_keeps_the_kma_a_server(kma: RunningKma, client: KmipClient) -> None:
    before = last_event(kma)
    answer = client.call(Operation.SET_ENDPOINT_ROLE, ttlv.enum(Tag.ENDPOINT_ROLE, EndpointRole.SERVER))
    assert answer.get(Tag.ENDPOINT_ROLE) == EndpointRole.SERVER
    to_client = refused(
        client, Operation.SET_ENDPOINT_ROLE, ttlv.enum(Tag.ENDPOINT_ROLE, EndpointRole.CLIENT)
    )
    assert (
        to_client.reason == ResultReason.FEATURE_NOT_SUPPORTED and "server endpoint only" in to_client.message
    )
    assert [e["condition"] for e in events(kma, before, "kmip.set_endpoint_role")] == ["success", "error"]


def test_identifiers_are_unique_regardless_of_case_and_another_groups_are_not_told(
    kma: RunningKma, client: KmipClient
) -> None:
    """Import under another spelling of a key's ID is refused; under the ID of a key of a group the
    agent may not use, it is answered as Get answers an ID it does not know (no existence oracle)."""
    key, _ = aes_128(client)
    exported = export(client, key)
    client.call(Operation.IMPORT, import_payload("Tape-Key.7", exported, drop=(Tag.UNIQUE_IDENTIFIER,)))
    twin = refused(
        client, Operation.IMPORT, import_payload("TAPE-KEY.7", exported, drop=(Tag.UNIQUE_IDENTIFIER,))
    )
    assert twin.reason == ResultReason.OBJECT_ALREADY_EXISTS and "Tape-Key.7" in twin.message

    with read_only_db(kma) as db:  # a key of Boston's backups, a group this Dallas drive may not use
        boston = db.execute("SELECT id FROM keys WHERE key_group_id = 'backup-boston' LIMIT 1").fetchone()[0]
    for spelling in (boston, boston.lower()):
        hidden = refused(
            client, Operation.IMPORT, import_payload(spelling, exported, drop=(Tag.UNIQUE_IDENTIFIER,))
        )
        unknown = refused(client, Operation.GET, uid_of(spelling))
        assert (hidden.reason, hidden.message) == (unknown.reason, unknown.message)
        assert hidden.reason == ResultReason.OBJECT_NOT_FOUND  # KMIP 2.x: Item Not Found in 1.x
    with read_only_db(kma) as db:
        assert (
            db.execute("SELECT count(*) FROM keys WHERE id = ? COLLATE NOCASE", (boston,)).fetchone()[0] == 1
        )


@pytest.mark.parametrize(
    ("version", "operation", "payload", "field"),
    [
        # a 2.0 Locate with its attributes outside the Attributes structure (a C library sends this)
        ((2, 0), Operation.LOCATE, ttlv.enum(Tag.OBJECT_TYPE, 2), "Object Type"),
        ((2, 1), Operation.LOCATE, ttlv.struct_(Tag.NAME, ttlv.text(Tag.NAME_VALUE, "E00001")), "Name"),
        ((2, 0), Operation.GET_ATTRIBUTES, ttlv.text(Tag.ATTRIBUTE_NAME, "State"), "Attribute Name"),
        ((1, 4), Operation.GET, ttlv.text(Tag.ATTRIBUTE_NAME, "State"), "Attribute Name"),
        ((1, 0), Operation.ACTIVATE, ttlv.integer(Tag.MAXIMUM_ITEMS, 1), "Maximum Items"),
        ((1, 2), Operation.CREATE, ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, 3), "Cryptographic Algorithm"),
    ],
)
def test_a_field_a_request_may_not_hold_is_refused_naming_it(
    client: KmipClient, version: tuple[int, int], operation: int, payload: bytes, field: str
) -> None:
    client.version = version
    answer = refused(client, operation, payload)
    assert answer.reason == ResultReason.INVALID_FIELD
    assert f"take a {field} field" in answer.message


def wrapped_register(kek: str, wrapped: bytes) -> bytes:
    """A Register of an AES-256 key whose material is wrapped (RFC 3394) under key `kek`."""
    block = ttlv.struct_(
        Tag.KEY_BLOCK,
        ttlv.enum(Tag.KEY_FORMAT_TYPE, KeyFormatType.RAW),
        ttlv.byte_string(Tag.KEY_VALUE, wrapped),  # KMIP: a wrapped Key Value is a Byte String
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 256),
        ttlv.struct_(
            Tag.KEY_WRAPPING_DATA,
            ttlv.enum(Tag.WRAPPING_METHOD, WrappingMethod.ENCRYPT),
            ttlv.struct_(
                Tag.ENCRYPTION_KEY_INFORMATION,
                ttlv.text(Tag.UNIQUE_IDENTIFIER, kek),
                ttlv.struct_(
                    Tag.CRYPTOGRAPHIC_PARAMETERS,
                    ttlv.enum(Tag.BLOCK_CIPHER_MODE, BlockCipherMode.NIST_KEY_WRAP),
                ),
            ),
        ),
    )
    return (
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
        + ttlv.struct_(ATTRIBUTES)
        + ttlv.struct_(Tag.SYMMETRIC_KEY, block)
    )


def test_a_key_registered_wrapped_under_an_agents_key_is_unwrapped_and_kept(
    kma: RunningKma, client: KmipClient
) -> None:
    now = ttlv.date_time(Tag.ACTIVATION_DATE, int(time.time()))
    usage = ttlv.integer(Tag.CRYPTOGRAPHIC_USAGE_MASK, UsageMask.WRAP_KEY | UsageMask.UNWRAP_KEY)
    kek, kek_material = aes_128(client, usage, now)
    plain = os.urandom(32)
    before = last_event(kma)
    got = client.call(Operation.REGISTER, wrapped_register(kek, aes_key_wrap(kek_material, plain)))
    uid = str(got.get(Tag.UNIQUE_IDENTIFIER))
    sent = client.call(Operation.GET, uid_of(uid)).find(Tag.SYMMETRIC_KEY)
    assert sent.find(Tag.KEY_BLOCK).find(Tag.KEY_VALUE).get(Tag.KEY_MATERIAL) == plain  # type: ignore[union-attr]
    (event,) = events(kma, before, "kmip.register")
    assert event["message"].endswith(f"(unwrapped under key {kek})")

    tampered = refused(client, Operation.REGISTER, wrapped_register(kek, os.urandom(40)))
    assert (
        tampered.reason == ResultReason.INVALID_FIELD
        and f"does not unwrap under key {kek}" in tampered.message
    )
    data_key, material = aes_128(client, now)  # no Unwrap Key usage
    unfit = refused(client, Operation.REGISTER, wrapped_register(data_key, aes_key_wrap(material, plain)))
    assert unfit.reason == ResultReason.PERMISSION_DENIED and "no Unwrap Key usage" in unfit.message
    unknown = refused(client, Operation.REGISTER, wrapped_register("42", aes_key_wrap(material, plain)))
    assert unknown.reason == ResultReason.OBJECT_NOT_FOUND
