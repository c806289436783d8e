"""Public keys, private keys and X.509 certificates a generic KMIP client registers (the Baseline
Profile's BL-M-6 to -13 run them in test_kmip_vectors.py), against a real `kma serve`: kept as
sent and wrapped like every object, in a general key group only, and every bad request refused
with its reason and an audit event."""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from kma.kmip import ttlv
from kma.kmip.client import KmipClient, KmipFailure, attribute
from kma.kmip.enums import (
    CryptographicAlgorithm,
    KeyFormatType,
    ObjectType,
    Operation,
    ResultReason,
    State,
    Tag,
)
from tests.support.agents import enrolled_demo_agent, events, general_keys_demo, key_row, kmip, last_event
from tests.support.kma_process import RunningKma

AGENT = "t10k-dal-01"
DAY = 86400
PRIVATE = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PKCS8 = PRIVATE.private_bytes(
    serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
PKCS1_PUBLIC = PRIVATE.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)


def certificate() -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "backup.example.com")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(PRIVATE.public_key())
        .serial_number(7)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(PRIVATE, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


def key_object(kind: int, fmt: int, material: bytes, algorithm: int = CryptographicAlgorithm.RSA) -> bytes:
    tag = Tag.PUBLIC_KEY if kind == ObjectType.PUBLIC_KEY else Tag.PRIVATE_KEY
    block = ttlv.struct_(
        Tag.KEY_BLOCK,
        ttlv.enum(Tag.KEY_FORMAT_TYPE, fmt),
        ttlv.struct_(Tag.KEY_VALUE, ttlv.byte_string(Tag.KEY_MATERIAL, material)),
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, algorithm),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 2048),
    )
    return ttlv.enum(Tag.OBJECT_TYPE, kind) + ttlv.struct_(tag, block)


def register_payload_in(obj: bytes, group: str | None, *attributes: bytes) -> bytes:
    """A Register of `obj` (its Object Type, then the object) in `group` (None: the default)."""
    named = [attribute("Object Group", ttlv.text(Tag.ATTRIBUTE_VALUE, group))] if group else []
    kind, rest = obj[:16], obj[16:]  # the Object Type item is 16 bytes long
    return kind + ttlv.struct_(Tag.TEMPLATE_ATTRIBUTE, *named, *attributes) + rest


def register(client: KmipClient, obj: bytes, *attributes: bytes) -> str:
    payload = register_payload_in(obj, None, *attributes)
    return str(client.call(Operation.REGISTER, payload).get(Tag.UNIQUE_IDENTIFIER))


def get(client: KmipClient, uid: str, *extra: bytes) -> Any:
    return client.call(Operation.GET, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + b"".join(extra))


def locate(client: KmipClient, algorithm: int, kind: int | None = None) -> list[str]:
    value = Tag.ATTRIBUTE_VALUE
    wanted = attribute("Cryptographic Algorithm", ttlv.enum(value, algorithm))
    if kind is not None:
        wanted += attribute("Object Type", ttlv.enum(value, kind))
    return [str(i.value) for i in client.call(Operation.LOCATE, wanted).all(Tag.UNIQUE_IDENTIFIER)]


def refused(client: KmipClient, operation: int, payload: bytes) -> KmipFailure:
    with pytest.raises(KmipFailure) as failure:
        client.call(operation, payload)
    return failure.value


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    """The demo KMA; the agent's default group keeps general keys, and a second group it may use
    ("tape-imports") keeps tape keys; both allow import."""
    kma = general_keys_demo(tmp_path_factory, "kmip-asymmetric")
    try:
        co = kma.client("co")
        co.create_key_policy(
            "tape-imports", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True
        )
        co.create_key_group("tape-imports", "tape-imports")
        yield kma
    finally:
        kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = enrolled_demo_agent(kma, tmp_path_factory, AGENT)
    kma.client("co").set_key_group_agents("tape-imports", [AGENT])
    return path


@pytest.fixture
def client(agent_dir: Path) -> Iterator[KmipClient]:
    with kmip(agent_dir) as c:
        yield c


def test_a_private_key_and_a_certificate_are_kept_as_registered_and_wrapped(
    kma: RunningKma, client: KmipClient
) -> None:
    before = last_event(kma)
    uid = register(client, key_object(ObjectType.PRIVATE_KEY, KeyFormatType.PKCS_8, PKCS8))
    sent = get(client, uid)
    assert sent.get(Tag.OBJECT_TYPE) == ObjectType.PRIVATE_KEY
    block = sent.find(Tag.PRIVATE_KEY).find(Tag.KEY_BLOCK)
    assert block.get(Tag.KEY_FORMAT_TYPE) == KeyFormatType.PKCS_8
    assert block.find(Tag.KEY_VALUE).get(Tag.KEY_MATERIAL) == PKCS8
    assert client.get_attributes(uid, ["Cryptographic Algorithm", "Cryptographic Length", "Object Type"]) == {
        "Cryptographic Algorithm": CryptographicAlgorithm.RSA,
        "Cryptographic Length": 2048,
        "Object Type": ObjectType.PRIVATE_KEY,
    }
    asked = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.text(Tag.ATTRIBUTE_NAME, "Digest")
    digest = client.call(Operation.GET_ATTRIBUTES, asked).find(Tag.ATTRIBUTE).find(Tag.ATTRIBUTE_VALUE)
    assert digest.get(Tag.DIGEST_VALUE) == hashlib.sha256(PKCS8).digest()
    assert digest.get(Tag.KEY_FORMAT_TYPE) == KeyFormatType.PKCS_8
    row = key_row(kma, uid)
    assert row["material_wrapped"] and PKCS8 not in row["material_wrapped"]  # under the master key
    (event,) = events(kma, before, "kmip.register")
    assert f"registered RSA-2048 private key {uid}" in event["message"]
    (sent_event,) = events(kma, before, "kmip.get")
    assert f"sent RSA-2048 private key {uid}" in sent_event["message"]

    der = certificate()
    cert = register(
        client,
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.CERTIFICATE)
        + ttlv.struct_(
            Tag.CERTIFICATE, ttlv.enum(Tag.CERTIFICATE_TYPE, 1), ttlv.byte_string(Tag.CERTIFICATE_VALUE, der)
        ),
    )
    assert get(client, cert).find(Tag.CERTIFICATE).get(Tag.CERTIFICATE_VALUE) == der
    assert client.get_attributes(cert, ["Certificate Length", "Certificate Type"]) == {
        "Certificate Length": len(der),
        "Certificate Type": 1,
    }
    assert uid in locate(client, CryptographicAlgorithm.RSA, ObjectType.PRIVATE_KEY)
    assert cert not in locate(client, CryptographicAlgorithm.RSA)
    assert locate(client, CryptographicAlgorithm.DSA) == []
    shown = {k.id: k.algorithm for k in kma.client("co").iter_keys()}  # the manager's Object column
    assert shown[uid] == "RSA-2048 Private Key" and shown[cert] == "X.509 Certificate"


def test_bad_asymmetric_objects_are_refused_with_their_reason(kma: RunningKma, client: KmipClient) -> None:
    before = last_event(kma)
    not_der = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.CERTIFICATE) + ttlv.struct_(
        Tag.CERTIFICATE,
        ttlv.enum(Tag.CERTIFICATE_TYPE, 1),
        ttlv.byte_string(Tag.CERTIFICATE_VALUE, b"\x30\x03abc"),
    )
    failure = refused(client, Operation.REGISTER, not_der)
    assert failure.reason == ResultReason.INVALID_FIELD and "not a DER X.509 certificate" in failure.message
    pgp = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.CERTIFICATE) + ttlv.struct_(
        Tag.CERTIFICATE,
        ttlv.enum(Tag.CERTIFICATE_TYPE, 2),
        ttlv.byte_string(Tag.CERTIFICATE_VALUE, certificate()),
    )
    assert refused(client, Operation.REGISTER, pgp).reason == ResultReason.INVALID_FIELD
    # a public key is not PKCS#8; an AES public key is no such thing
    wrong_format = key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_8, PKCS1_PUBLIC)
    assert (
        refused(client, Operation.REGISTER, wrong_format).reason == ResultReason.KEY_FORMAT_TYPE_NOT_SUPPORTED
    )
    aes = key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_1, PKCS1_PUBLIC, CryptographicAlgorithm.AES)
    assert refused(client, Operation.REGISTER, aes).reason == ResultReason.INVALID_FIELD
    no_exponent = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.PUBLIC_KEY) + ttlv.struct_(
        Tag.PUBLIC_KEY,
        ttlv.struct_(
            Tag.KEY_BLOCK,
            ttlv.enum(Tag.KEY_FORMAT_TYPE, KeyFormatType.TRANSPARENT_RSA_PUBLIC_KEY),
            ttlv.struct_(
                Tag.KEY_VALUE,
                ttlv.struct_(
                    Tag.KEY_MATERIAL, ttlv.big_integer(Tag.MODULUS, PRIVATE.public_key().public_numbers().n)
                ),
            ),
            ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.RSA),
            ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 2048),
        ),
    )
    missing = refused(client, Operation.REGISTER, no_exponent)
    assert missing.reason == ResultReason.MISSING_DATA and "Public Exponent" in missing.message
    # a tape key group keeps AES-256 tape keys only
    in_tape_group = register_payload_in(
        key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_1, PKCS1_PUBLIC), "tape-imports"
    )
    tape = refused(client, Operation.REGISTER, in_tape_group)
    assert tape.reason == ResultReason.INVALID_FIELD and "keeps tape keys" in tape.message
    # the KMA does not generate asymmetric keys, nor promise an RSA key is quantum safe
    rsa_create = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + ttlv.struct_(
        Tag.TEMPLATE_ATTRIBUTE,
        attribute("Cryptographic Algorithm", ttlv.enum(Tag.ATTRIBUTE_VALUE, CryptographicAlgorithm.RSA)),
    )
    assert refused(client, Operation.CREATE, rsa_create).reason == ResultReason.INVALID_FIELD
    quantum = register_payload_in(
        key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_1, PKCS1_PUBLIC),
        None,
        attribute("Quantum Safe", ttlv.boolean(Tag.ATTRIBUTE_VALUE, True)),
    )
    not_safe = refused(client, Operation.REGISTER, quantum)
    assert not_safe.reason == ResultReason.GENERAL_FAILURE and "NOT_SAFE" in not_safe.message
    assert [e["condition"] for e in events(kma, before, "kmip.register")] == ["error"] * 7
    assert not [
        e for e in events(kma, before) if e["operation"] == "kmip.register" and e["condition"] == "success"
    ]


def test_a_registered_key_is_sent_only_as_it_was_kept(kma: RunningKma, client: KmipClient) -> None:
    """No conversion to another Key Format Type, no wrapping, and a Sensitive key never leaves."""
    uid = register(client, key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_1, PKCS1_PUBLIC))
    as_x509 = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.enum(Tag.KEY_FORMAT_TYPE, KeyFormatType.X_509)
    other = refused(client, Operation.GET, as_x509)
    assert other.reason == ResultReason.KEY_FORMAT_TYPE_NOT_SUPPORTED

    before = last_event(kma)
    sensitive = register(
        client,
        key_object(ObjectType.PRIVATE_KEY, KeyFormatType.PKCS_8, PKCS8),
        attribute("Sensitive", ttlv.boolean(Tag.ATTRIBUTE_VALUE, True)),
    )
    kept = refused(client, Operation.GET, ttlv.text(Tag.UNIQUE_IDENTIFIER, sensitive))
    assert kept.reason == ResultReason.PERMISSION_DENIED and "is Sensitive" in kept.message
    client.version = (2, 1)
    try:
        again = refused(client, Operation.GET, ttlv.text(Tag.UNIQUE_IDENTIFIER, sensitive))
    finally:
        client.version = (1, 4)
    assert again.reason == ResultReason.SENSITIVE
    assert client.get_attributes(sensitive, ["Sensitive"]) == {"Sensitive": True}
    shown = kma.client("co").get_key(sensitive).kmip_attributes  # the manager's key details
    assert [(a.name, a.value) for a in shown] == [("Sensitive", "True")]
    undo = ttlv.text(Tag.UNIQUE_IDENTIFIER, sensitive) + ttlv.text(Tag.ATTRIBUTE_NAME, "Sensitive")
    assert refused(client, Operation.DELETE_ATTRIBUTE, undo).reason == ResultReason.PERMISSION_DENIED
    assert [e["condition"] for e in events(kma, before, "kmip.get")] == ["error", "error"]


def test_a_deactivation_date_ends_the_cryptoperiod_never_later_than_the_policy(client: KmipClient) -> None:
    now = int(datetime.datetime.now(datetime.UTC).timestamp())
    dates = [
        attribute("Activation Date", ttlv.date_time(Tag.ATTRIBUTE_VALUE, now)),
        attribute("Deactivation Date", ttlv.date_time(Tag.ATTRIBUTE_VALUE, now - DAY)),
    ]
    past = register(client, key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_1, PKCS1_PUBLIC), *dates)
    assert client.get_attributes(past, ["State"]) == {"State": State.DEACTIVATED}
    late = [dates[0], attribute("Deactivation Date", ttlv.date_time(Tag.ATTRIBUTE_VALUE, now + 3650 * DAY))]
    capped = register(client, key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_1, PKCS1_PUBLIC), *late)
    got = client.get_attributes(capped, ["State", "Deactivation Date"])
    assert got["State"] == State.ACTIVE and got["Deactivation Date"] <= now + 366 * DAY  # tape-30d: a year
    pre_active = refused(
        client,
        Operation.REGISTER,
        register_payload_in(
            key_object(ObjectType.PUBLIC_KEY, KeyFormatType.PKCS_1, PKCS1_PUBLIC), None, dates[1]
        ),
    )
    assert pre_active.reason == ResultReason.INVALID_FIELD and "with an Activation Date" in pre_active.message


def test_registered_and_made_objects_wait_as_pre_active_and_are_not_counted_as_the_pool(
    kma: RunningKma, client: KmipClient
) -> None:
    # Given an agent that registered a private key and made a key it has not activated yet
    registered = register(client, key_object(ObjectType.PRIVATE_KEY, KeyFormatType.PKCS_8, PKCS8))
    made = client.create()
    admin = kma.client("admin")
    # Then both are Pre-active, in the list, in their details and as KMIP's Locate reads them
    assert {admin.get_key(registered).state, admin.get_key(made).state} == {"pre_active"}
    listed = {k.id for k in admin.list_keys(state="pre_active", limit=1000).items}
    assert {registered, made} <= listed
    assert {registered, made} <= set(client.locate(state=State.PRE_ACTIVE))
    # and the dashboard's Ready keys are the pool's Ready keys, as the KMAs table counts them
    dashboard = admin.get_dashboard()
    assert dashboard.keys_by_state["ready"] == sum(k.pool_ready for k in dashboard.kmas)
    assert dashboard.keys_by_state["pre_active"] >= 2
