"""Acceptance: a PyKMIP client speaking KMIP 1.0, 1.1, 1.2 (its default), 1.3 or 1.4 asks for all
attributes of every kind of object the KMA keeps, and reads the answer: it holds only attributes
its version defines (kma/kmip/attribute_versions.py), the same ones Get Attribute List names, and
the server-kept ones the profiles expect, with true values (Fresh until the material is first
sent, Sensitive objects never extractable)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from kmip.core import enums
from kmip.pie import objects
from kmip.pie.client import ProxyKmipClient

from kma.kmip import ttlv
from kma.kmip.client import KmipFailure, attribute
from kma.kmip.enums import CryptographicAlgorithm, ObjectType, Operation, Tag
from tests.support.agents import enrolled_demo_agent, general_keys_demo, kmip
from tests.support.kma_process import RunningKma

AGENT = "t10k-dal-01"
VERSIONS = {
    "1.0": enums.KMIPVersion.KMIP_1_0,
    "1.1": enums.KMIPVersion.KMIP_1_1,
    "1.2": enums.KMIPVersion.KMIP_1_2,
    "1.3": enums.KMIPVersion.KMIP_1_3,
    "1.4": enums.KMIPVersion.KMIP_1_4,
}
PRIVATE = rsa.generate_private_key(public_exponent=65537, key_size=2048)
USAGE = [enums.CryptographicUsageMask.ENCRYPT, enums.CryptographicUsageMask.DECRYPT]


def _certificate() -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "backup.example.com")])
    now = datetime.datetime.now(datetime.UTC)
    built = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(PRIVATE.public_key())
        .serial_number(11)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(PRIVATE, hashes.SHA256())
    )
    return built.public_bytes(serialization.Encoding.DER)


def _objects() -> dict[str, Any]:
    """One object of each kind the KMA keeps, as PyKMIP registers it."""
    pkcs1 = PRIVATE.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
    pkcs8 = PRIVATE.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    rsa_ = enums.CryptographicAlgorithm.RSA
    return {
        "symmetric key": objects.SymmetricKey(enums.CryptographicAlgorithm.AES, 128, bytes(range(16)), USAGE),
        "secret data": objects.SecretData(b"a passphrase of a backup job", enums.SecretDataType.PASSWORD),
        "opaque object": objects.OpaqueObject(b"\x01vendor blob", enums.OpaqueDataType.NONE),
        "public key": objects.PublicKey(rsa_, 2048, pkcs1, enums.KeyFormatType.PKCS_1),
        "private key": objects.PrivateKey(rsa_, 2048, pkcs8, enums.KeyFormatType.PKCS_8),
        "certificate": objects.X509Certificate(_certificate()),
    }


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = general_keys_demo(tmp_path_factory, "kmip-versions")
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, AGENT)


def client(agent_dir: Path, version: str) -> ProxyKmipClient:
    return ProxyKmipClient(config_file=str(agent_dir / "pykmip.conf"), kmip_version=VERSIONS[version])


@pytest.fixture(scope="module")
def held(agent_dir: Path) -> dict[str, str]:
    """The objects' IDs, registered over KMIP 1.4, plus a key the KMA made."""
    with client(agent_dir, "1.4") as c:
        ids = {kind: c.register(obj) for kind, obj in _objects().items()}
        ids["made key"] = c.create(enums.CryptographicAlgorithm.AES, 256)
    return ids


def of_version(name: str, version: enums.KMIPVersion) -> bool:
    """PyKMIP's own table of the attributes each KMIP version defines (a client's x- attributes
    are custom attributes, in every 1.x version)."""
    return name.startswith("x-") or enums.is_attribute(enums.Tags[name.upper().replace(" ", "_")], version)


def number(version: enums.KMIPVersion) -> tuple[int, int]:
    return (1, int(version.name.rsplit("_", 1)[1]))


@pytest.mark.parametrize("version", list(VERSIONS))
def test_all_attributes_are_those_of_the_clients_version(
    agent_dir: Path, held: dict[str, str], version: str
) -> None:
    asked = VERSIONS[version]
    with client(agent_dir, version) as c:
        for kind, uid in held.items():
            if kind == "made key" and number(asked) >= (1, 3):
                continue  # its Random Number Generator (1.3) is one PyKMIP cannot decode: read below
            _, attrs = c.get_attributes(uid)  # fails to decode when one is not of its version
            names = [a.attribute_name.value for a in attrs]
            assert [n for n in names if not of_version(n, asked)] == [], kind
            assert sorted(c.get_attribute_list(uid)) == sorted(set(names)), kind
            assert ("Original Creation Date" in names) == (number(asked) >= (1, 2)), kind
            assert ("Sensitive" in names) == (number(asked) >= (1, 4)), kind
            assert ("Fresh" in names) == (number(asked) >= (1, 1)), kind


@pytest.mark.parametrize("version", list(VERSIONS))
def test_a_made_keys_generator_is_told_from_kmip_1_3_on(
    agent_dir: Path, held: dict[str, str], version: str
) -> None:
    """Read with the project's client at each version: what PyKMIP 0.11 cannot decode whole."""
    asked = VERSIONS[version]
    with kmip(agent_dir) as k:
        k.version = number(asked)
        names = list(k.get_attributes(held["made key"]))
        listed = k.call(Operation.GET_ATTRIBUTE_LIST, ttlv.text(Tag.UNIQUE_IDENTIFIER, held["made key"]))
    assert [n for n in names if not of_version(n, asked)] == []
    assert ("Random Number Generator" in names) == (number(asked) >= (1, 3))
    assert sorted(i.value for i in listed.all(Tag.ATTRIBUTE_NAME)) == sorted(names)


def test_fresh_and_extractable_tell_the_truth(agent_dir: Path) -> None:
    """A new key is Fresh until its material is first sent; a Sensitive one never leaves: it is
    not Extractable and never was."""
    with client(agent_dir, "1.4") as c:
        uid = c.create(enums.CryptographicAlgorithm.AES, 256)
        before = _values(c, uid)
        c.get(uid)
        after = _values(c, uid)
    assert before["Fresh"] is True and after["Fresh"] is False
    assert before["Extractable"] is True and before["Never Extractable"] is False
    assert before["Sensitive"] is False and before["Always Sensitive"] is False

    value = Tag.ATTRIBUTE_VALUE
    with kmip(agent_dir) as k:
        sensitive = k.call(
            Operation.CREATE,
            ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
            + ttlv.struct_(
                Tag.TEMPLATE_ATTRIBUTE,
                attribute("Cryptographic Algorithm", ttlv.enum(value, CryptographicAlgorithm.AES)),
                attribute("Cryptographic Length", ttlv.integer(value, 256)),
                attribute("Extractable", ttlv.boolean(value, False)),
            ),
        ).get(Tag.UNIQUE_IDENTIFIER)
        with pytest.raises(KmipFailure):
            k.get(sensitive)
        kept = k.get_attributes(sensitive, [*KEPT_BY_KMA, "Key Value Present"])
    assert kept["Key Value Present"] is True
    assert kept["Sensitive"] is kept["Always Sensitive"] is kept["Never Extractable"] is True
    assert kept["Extractable"] is False and kept["Fresh"] is True  # refused: nothing was sent


KEPT_BY_KMA = ["Fresh", "Sensitive", "Always Sensitive", "Extractable", "Never Extractable"]


def _values(c: ProxyKmipClient, uid: str) -> dict[str, Any]:
    _, attrs = c.get_attributes(uid, KEPT_BY_KMA)
    return {a.attribute_name.value: getattr(a.attribute_value, "value", None) for a in attrs}
