"""Acceptance: an unmodified PyKMIP ProxyKmipClient, configured only with the files `kma agent
enroll` wrote, runs create, activate, get, get_attributes, locate, revoke and destroy."""

from __future__ import annotations

import configparser
from collections.abc import Iterator
from pathlib import Path

import pytest
from kmip.core import enums
from kmip.core import objects as cobjects
from kmip.core.exceptions import OperationFailure
from kmip.pie import objects as pobjects
from kmip.pie.client import ProxyKmipClient
from kmip.pie.exceptions import KmipOperationFailure

from kma.kmip import ttlv
from kma.kmip.client import KmipFailure, name_attribute
from kma.kmip.enums import Operation, ResultReason, Tag
from tests.support.agents import enrolled_demo_agent, events, key_row, kmip, last_event
from tests.support.kma_process import RunningKma

AGENT = "t10k-dal-01"


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("kmip-pykmip"))
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return enrolled_demo_agent(kma, tmp_path_factory, AGENT)


def test_enrollment_writes_what_a_pykmip_client_needs(agent_dir: Path) -> None:
    assert {p.name for p in agent_dir.iterdir()} >= {
        "agent.key",
        "agent.pem",
        "ca.pem",
        "kmas.json",
        "pykmip.conf",
    }
    assert agent_dir.joinpath("agent.key").stat().st_mode & 0o077 == 0  # the private key is the agent's only
    config = configparser.ConfigParser()
    config.read(agent_dir / "pykmip.conf")
    assert Path(config["client"]["certfile"]).is_file() and Path(config["client"]["ca_certs"]).is_file()


def test_pykmip_client_runs_a_key_through_its_life(kma: RunningKma, agent_dir: Path) -> None:
    # Given a key policy that lets agents revoke (set by the Compliance Officer)
    kma.client("co").update_key_policy("tape-30d", agents_may_revoke=True)
    before = last_event(kma)
    with ProxyKmipClient(config_file=str(agent_dir / "pykmip.conf")) as client:
        # When the drive creates a key for tape E10001, activates and fetches it
        uid = client.create(enums.CryptographicAlgorithm.AES, 256, name="E10001")
        _, attrs = client.get_attributes(uid, ["State"])
        assert attrs[0].attribute_value.value == enums.State.PRE_ACTIVE
        client.activate(uid)
        key = client.get(uid)
        assert key.cryptographic_algorithm == enums.CryptographicAlgorithm.AES
        assert key.cryptographic_length == 256 and len(key.value) == 32

        _, attrs = client.get_attributes(uid, ["State", "Name", "Object Group", "x-Key-State"])
        by_name = {a.attribute_name.value: a.attribute_value for a in attrs}
        assert by_name["State"].value == enums.State.ACTIVE
        assert by_name["Name"].name_value.value == "E10001"
        assert by_name["Object Group"].value == "backup-dallas"  # the agent's default key group
        assert by_name["x-Key-State"].value == "protect_and_process"

        name = client.attribute_factory.create_attribute(enums.AttributeType.NAME, "E10001")
        assert client.locate(attributes=[name]) == [uid]

        # Then it revokes and destroys it
        client.revoke(enums.RevocationReasonCode.CESSATION_OF_OPERATION, uid, "tape retired")
        client.destroy(uid)
        with pytest.raises(KmipOperationFailure) as refused:
            client.get(uid)
        assert refused.value.reason == enums.ResultReason.KEY_VALUE_NOT_PRESENT

    row = key_row(kma, uid)
    assert row["destroyed_at"] is not None and row["material_wrapped"] is None
    assert row["data_unit_id"] == "E10001" and row["agent_id"] == AGENT
    done = [
        e["operation"] for e in events(kma, before) if e["entity_id"] == AGENT and e["condition"] == "success"
    ]
    for operation in (
        "kmip.create",
        "kmip.activate",
        "kmip.get",
        "kmip.get_attributes",
        "kmip.locate",
        "kmip.revoke",
        "kmip.destroy",
    ):
        assert operation in done, operation
    assert kma.client("op").get_data_unit("E10001").state == "shredded"


def test_pykmip_client_offering_only_tls_1_2_gets_ecdhe_ecdsa_aes_gcm(
    kma: RunningKma, agent_dir: Path
) -> None:
    config = configparser.ConfigParser()
    config.read(agent_dir / "pykmip.conf")
    config["client"]["ssl_version"] = "PROTOCOL_TLSv1_2"
    tls12 = agent_dir.parent / "pykmip-tls12.conf"
    with open(tls12, "w") as f:
        config.write(f)
    client = ProxyKmipClient(config_file=str(tls12))
    with client:
        uid = client.create(enums.CryptographicAlgorithm.AES, 256, name="E10002")
        cipher = client.proxy.socket.cipher()
        assert client.proxy.socket.version() == "TLSv1.2"
        assert cipher[0] in ("ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256")
        assert client.get(uid).value


def test_revoke_is_refused_when_the_key_policy_does_not_allow_agents(
    kma: RunningKma, agent_dir: Path
) -> None:
    # Given a key in the "archive" group, whose policy does not let agents revoke
    with kmip(agent_dir) as client:
        archive_key = client.create_and_activate("A10002", group="archive")
        before = last_event(kma)
        # When the agent tries, Then it is refused with a plain reason, and the key still serves
        with pytest.raises(KmipFailure) as refused:
            client.revoke(archive_key)
        assert refused.value.reason == ResultReason.PERMISSION_DENIED
        assert "does not allow agents to revoke" in refused.value.message
        assert len(client.get(archive_key)) == 32
    refusal = events(kma, before, "kmip.revoke")
    assert refusal and refusal[0]["condition"] == "error" and refusal[0]["subject_id"] == archive_key


def test_pykmip_client_speaking_kmip_2_0_runs_a_key_through_its_life(
    kma: RunningKma, agent_dir: Path
) -> None:
    """KMIP 2.0: attributes travel as their own tags (Attributes, Attribute Reference); the
    same operations answer, with the same rules, as over 1.4."""
    kma.client("co").update_key_policy("tape-30d", agents_may_revoke=True)
    before = last_event(kma)
    config = str(agent_dir / "pykmip.conf")
    with ProxyKmipClient(config_file=config, kmip_version=enums.KMIPVersion.KMIP_2_0) as client:
        uid = client.create(enums.CryptographicAlgorithm.AES, 256, name="E20001")
        _, attrs = client.get_attributes(uid, ["State", "Cryptographic Length"])
        by_name = {a.attribute_name.value: a.attribute_value.value for a in attrs}
        assert by_name == {"State": enums.State.PRE_ACTIVE, "Cryptographic Length": 256}
        client.activate(uid)
        key = client.get(uid)
        assert key.cryptographic_algorithm == enums.CryptographicAlgorithm.AES and len(key.value) == 32

        _, attrs = client.get_attributes(uid, ["State", "Name", "Object Group"])
        by_name = {a.attribute_name.value: a.attribute_value for a in attrs}
        assert by_name["State"].value == enums.State.ACTIVE
        assert by_name["Name"].name_value.value == "E20001"
        assert by_name["Object Group"].value == "backup-dallas"
        listed = client.get_attribute_list(uid)
        assert {"Name", "State", "Activation Date", "Object Group"} <= set(listed)

        name = client.attribute_factory.create_attribute(enums.AttributeType.NAME, "E20001")
        assert client.locate(attributes=[name]) == [uid]
        # New Attribute / Current Attribute: the key stays bound to its tape, as over 1.4
        bound = client.attribute_value_factory.create_attribute_value_by_enum(enums.Tags.NAME, "E20001")
        assert client.modify_attribute(uid, new_attribute=cobjects.NewAttribute(attribute=bound))[0] == uid
        other = client.attribute_value_factory.create_attribute_value_by_enum(enums.Tags.NAME, "E20009")
        with pytest.raises(OperationFailure) as kept:  # (PyKMIP's 2.0 path raises its core error)
            client.modify_attribute(uid, new_attribute=cobjects.NewAttribute(attribute=other))
        assert kept.value.reason == enums.ResultReason.PERMISSION_DENIED
        assert "stays bound to its data unit" in str(kept.value)

        client.revoke(enums.RevocationReasonCode.CESSATION_OF_OPERATION, uid, "tape retired")
        client.destroy(uid)
        with pytest.raises(KmipOperationFailure) as refused:
            client.get(uid)
        # KMIP 2.x says Object Destroyed (1.x: Key Value Not Present)
        assert refused.value.reason == enums.ResultReason.OBJECT_DESTROYED
    row = key_row(kma, uid)
    assert row["data_unit_id"] == "E20001" and row["destroyed_at"] is not None
    assert {e["operation"] for e in events(kma, before) if e["entity_id"] == AGENT} >= {
        "kmip.create",
        "kmip.get_attributes",
        "kmip.activate",
        "kmip.get",
        "kmip.get_attribute_list",
        "kmip.locate",
        "kmip.revoke",
        "kmip.destroy",
    }


def test_pykmip_client_of_a_general_key_group_keeps_keys_of_every_aes_size_secrets_and_opaque_objects(
    kma: RunningKma, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A generic client (backup software, a database) in a key group whose policy keeps general
    keys: free-text names, AES-128 and AES-256, Secret Data and Opaque Objects."""
    co = kma.client("co")
    co.create_key_policy(
        "general-1y",
        encryption_period=365 * 86400,
        cryptoperiod=2 * 365 * 86400,
        allow_import=True,
        agents_may_revoke=True,
        general_keys=True,
    )
    co.create_key_group("databases", "general-1y")
    co.set_key_group_agents("databases", ["t10k-bos-01"])
    kma.client("op").update_agent("t10k-bos-01", default_key_group_id="databases")
    agent_dir = enrolled_demo_agent(kma, tmp_path_factory, "t10k-bos-01")
    before = last_event(kma)
    with ProxyKmipClient(config_file=str(agent_dir / "pykmip.conf")) as client:
        small = client.create(enums.CryptographicAlgorithm.AES, 128, name="orders db, 2026")
        big = client.create(enums.CryptographicAlgorithm.AES, 256, name="orders db archive")
        assert len(client.get(small).value) == 16 and len(client.get(big).value) == 32
        assert client.get(small).cryptographic_length == 128
        imported = client.register(
            pobjects.SymmetricKey(enums.CryptographicAlgorithm.AES, 128, bytes(range(1, 17)), name="imported")
        )
        secret = client.register(pobjects.SecretData(b"database password 1", enums.SecretDataType.PASSWORD))
        opaque = client.register(pobjects.OpaqueObject(b"\x01\x02opaque blob", enums.OpaqueDataType.NONE))

        assert client.get(imported).value == bytes(range(1, 17))
        got_secret = client.get(secret)
        assert isinstance(got_secret, pobjects.SecretData) and got_secret.value == b"database password 1"
        got_opaque = client.get(opaque)
        assert isinstance(got_opaque, pobjects.OpaqueObject) and got_opaque.value == b"\x01\x02opaque blob"

        name = client.attribute_factory.create_attribute(enums.AttributeType.NAME, "orders db, 2026")
        assert client.locate(attributes=[name]) == [small]
        kind = client.attribute_factory.create_attribute(
            enums.AttributeType.OBJECT_TYPE, enums.ObjectType.SECRET_DATA
        )
        assert client.locate(attributes=[kind]) == [secret]
        # (PyKMIP 0.11 cannot read every 1.4 attribute in an all-attributes answer: it names them)
        names = ["Digest", "Last Change Date", "Initial Date", "State", "Object Type"]
        _, some = client.get_attributes(small, names)
        assert {a.attribute_name.value for a in some} == set(names)
        _, attrs = client.get_attributes(small, ["Cryptographic Length", "Name", "Digest"])
        by_name = {a.attribute_name.value: a.attribute_value for a in attrs}
        assert by_name["Cryptographic Length"].value == 128
        assert by_name["Name"].name_value.value == "orders db, 2026"

        # The manager shows what each object is and the name its client gave it
        op = kma.client("op")
        assert (op.get_key(small).algorithm, op.get_key(small).name) == ("AES-128", "orders db, 2026")
        assert [op.get_key(u).algorithm for u in (secret, opaque)] == ["Secret Data", "Opaque Object"]

        # A second Name is another label, never a data unit, in a general key group
        with kmip(agent_dir) as raw:
            second = ttlv.text(Tag.UNIQUE_IDENTIFIER, big) + name_attribute("E10009")
            raw.call(Operation.ADD_ATTRIBUTE, second)
            assert raw.call(Operation.LOCATE, name_attribute("E10009")).get(Tag.UNIQUE_IDENTIFIER) == big
        assert key_row(kma, big)["data_unit_id"] is None

        for uid in (small, big, imported, secret, opaque):  # Pre-Active: destroyed at once
            client.destroy(uid)
        with pytest.raises(KmipOperationFailure):
            client.get(secret)
    assert all(key_row(kma, uid)["data_unit_id"] is None for uid in (small, secret))
    done = {e["operation"] for e in events(kma, before) if e["entity_id"] == "t10k-bos-01"}
    assert {"kmip.create", "kmip.register", "kmip.get", "kmip.locate", "kmip.destroy"} <= done
