"""KMIP key operations as agents use them: key groups, visibility, tape semantics, wrapping,
attributes, Locate, Register, and batches."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.keywrap import aes_key_unwrap, aes_key_unwrap_with_padding

from kma.kmip import ttlv
from kma.kmip.client import KmipClient, KmipFailure, attribute, key_template, text_attribute
from kma.kmip.enums import (
    BlockCipherMode,
    CryptographicAlgorithm,
    KeyFormatType,
    ObjectType,
    Operation,
    ResultReason,
    ResultStatus,
    State,
    Tag,
    UsageMask,
)
from tests.support.agents import demo_passphrase, enroll, events, key_row, kmip, last_event
from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until

DAY = 86400


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("kmip-keys"))
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def agents(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Enrolled drives: dal-01 (backup-dallas + archive), dal-02 (backup-dallas), bos-01 (backup-boston)."""
    root = tmp_path_factory.mktemp("agents")
    out = {}
    for agent_id in ("t10k-dal-01", "t10k-dal-02", "t10k-bos-01"):
        enroll(kma, agent_id, root / agent_id, demo_passphrase(kma, agent_id))
        out[agent_id] = root / agent_id
    return out


@pytest.fixture
def dal01(agents: dict[str, Path]) -> Iterator[KmipClient]:
    with kmip(agents["t10k-dal-01"]) as client:
        yield client


def test_keys_go_to_the_default_group_or_a_named_one_the_agent_may_use(
    dal01: KmipClient, kma: RunningKma
) -> None:
    default = dal01.create_and_activate("E20001")
    archive = dal01.create_and_activate("A20001", group="archive")
    assert dal01.get_attributes(default, ["Object Group"])["Object Group"] == "backup-dallas"
    assert dal01.get_attributes(archive, ["Object Group"])["Object Group"] == "archive"
    before = last_event(kma)
    with pytest.raises(KmipFailure) as refused:
        dal01.create(group="backup-boston")
    assert refused.value.reason == ResultReason.PERMISSION_DENIED
    assert "may not use key group 'backup-boston'" in refused.value.message
    assert events(kma, before, "kmip.create")[0]["condition"] == "error"


def test_an_agent_sees_only_keys_of_its_groups(agents: dict[str, Path], kma: RunningKma) -> None:
    with kmip(agents["t10k-dal-01"]) as dal01, kmip(agents["t10k-dal-02"]) as dal02:
        with kmip(agents["t10k-bos-01"]) as bos01:
            shared = dal01.create_and_activate("E20002")
            archive = dal01.create_and_activate("A20002", group="archive")
            assert len(dal02.get(shared)) == 32  # same group: backup-dallas
            for outsider, key in ((dal02, archive), (bos01, shared)):
                with pytest.raises(KmipFailure) as hidden:
                    outsider.get(key)
                assert hidden.value.reason == ResultReason.ITEM_NOT_FOUND
            assert bos01.locate(data_unit="E20002") == []
            assert dal02.locate(data_unit="E20002") == [shared]


def test_a_tape_gets_a_new_write_key_when_the_encryption_period_ends(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", demo_passphrase(fresh_kma, "t10k-dal-02"))
    with kmip(tmp_path / "drive") as drive:
        first, issued = drive.write_key("E30001")
        assert issued
        assert drive.write_key("E30001") == (first, False)  # appending: same key
        old_material = drive.get(first)
        # The tape-30d policy: 30-day encryption period, one-year cryptoperiod
        fresh_kma.advance_clock(31 * DAY)  # the KMA reads its test clock at most once a second
        second, issued = wait_until(
            lambda: (k := drive.write_key("E30001"))[1] and k, 10, what="a new key once the period ended"
        )
        assert second != first
        assert drive.get_attributes(first, ["x-Key-State", "State"]) == {
            "x-Key-State": "process_only",
            "State": State.ACTIVE,
        }
        assert drive.get(first) == old_material  # still readable
        assert drive.locate(data_unit="E30001") == [second, first]  # newest first
    unit = fresh_kma.client("op").get_data_unit("E30001")
    assert unit.state == "readable_normal" and unit.key_count == 2


def test_writing_from_beginning_of_tape_lets_the_old_keys_go(dal01: KmipClient, kma: RunningKma) -> None:
    first, _ = dal01.write_key("E20003")
    before = last_event(kma)
    fresh, released = dal01.write_from_beginning("E20003")
    assert [e["operation"] for e in events(kma, before) if e["entity_id"] == "t10k-dal-01"] == [
        "kmip.write_from_beginning"
    ]  # one atomic write: release and new key
    assert released == 1 and fresh != first
    assert dal01.locate(data_unit="E20003") == [fresh]
    assert key_row(kma, first)["data_unit_id"] is None
    assert dal01.get_attributes(first, ["Name"]) == {}  # no longer bound to the tape
    assert len(dal01.get(first)) == 32  # the key itself lives on per its policy
    assert kma.client("op").get_data_unit("E20003").key_count == 1


def test_a_data_unit_whose_keys_are_all_destroyed_is_shredded(fresh_kma: RunningKma, tmp_path: Path) -> None:
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", demo_passphrase(fresh_kma, "t10k-dal-02"))
    with kmip(tmp_path / "drive") as drive:
        key, _ = drive.write_key("E30002")
    op = fresh_kma.client("op")
    assert op.get_data_unit("E30002").state == "readable_normal"
    op.compromise_key(key, "cartridge lost")
    op.destroy_key(key, "lost cartridge: shred")
    assert op.get_data_unit("E30002").state == "shredded"


def test_keys_travel_wrapped_when_the_agent_asks(dal01: KmipClient) -> None:
    kek = dal01.create(usage_mask=UsageMask.WRAP_KEY | UsageMask.UNWRAP_KEY)
    dal01.activate(kek)
    key = dal01.create_and_activate("E20004")
    plain, kek_material = dal01.get(key), dal01.get(kek)
    assert aes_key_unwrap(kek_material, dal01.get(key, wrap_with=kek)) == plain
    padded = dal01.get(key, wrap_with=kek, mode=BlockCipherMode.AES_KEY_WRAP_PADDING)
    assert aes_key_unwrap_with_padding(kek_material, padded) == plain
    with pytest.raises(KmipFailure) as refused:
        dal01.get(kek, wrap_with=key)  # a data key has no Wrap Key usage
    assert refused.value.reason == ResultReason.PERMISSION_DENIED


def test_attributes_an_agent_may_read_and_set(dal01: KmipClient) -> None:
    key = dal01.create()
    raw = ttlv.text(Tag.UNIQUE_IDENTIFIER, key)
    dal01.call(Operation.ADD_ATTRIBUTE, raw + text_attribute("x-Barcode", "E20005"))  # binds the tape
    dal01.call(Operation.ADD_ATTRIBUTE, raw + text_attribute("x-Pool", "nightly"))
    dal01.call(Operation.MODIFY_ATTRIBUTE, raw + text_attribute("x-Pool", "weekly"))
    names = [i.value for i in dal01.call(Operation.GET_ATTRIBUTE_LIST, raw).all(Tag.ATTRIBUTE_NAME)]
    assert {"Name", "State", "Object Group", "x-Data-Unit", "x-Pool"} <= set(names)
    attrs = dal01.get_attributes(key, ["Name", "x-Data-Unit", "x-Pool", "State"])
    assert attrs == {"Name": "E20005", "x-Data-Unit": "E20005", "x-Pool": "weekly", "State": State.PRE_ACTIVE}
    assert dal01.locate(data_unit="E20005") == [key]
    custom = ttlv.struct_(
        Tag.ATTRIBUTE, ttlv.text(Tag.ATTRIBUTE_NAME, "x-Pool"), ttlv.text(Tag.ATTRIBUTE_VALUE, "weekly")
    )
    assert dal01.call(Operation.LOCATE, custom).get(Tag.UNIQUE_IDENTIFIER) == key
    dal01.call(Operation.DELETE_ATTRIBUTE, raw + ttlv.text(Tag.ATTRIBUTE_NAME, "x-Pool"))
    assert "x-Pool" not in dal01.get_attributes(key)
    for forbidden in (
        text_attribute("Object Group", "archive"),
        text_attribute("x-Data-Unit", "E99999"),
        attribute("State", ttlv.enum(Tag.ATTRIBUTE_VALUE, State.ACTIVE)),
    ):
        with pytest.raises(KmipFailure) as refused:
            dal01.call(Operation.MODIFY_ATTRIBUTE, raw + forbidden)
        assert refused.value.reason == ResultReason.PERMISSION_DENIED


def test_register_refuses_key_material_that_is_not_aes_256(dal01: KmipClient) -> None:
    """(Register of good material, and import rules: tests/integration/test_kmip_import.py.)"""
    block = ttlv.struct_(
        Tag.KEY_BLOCK,
        ttlv.enum(Tag.KEY_FORMAT_TYPE, KeyFormatType.RAW),
        ttlv.struct_(Tag.KEY_VALUE, ttlv.byte_string(Tag.KEY_MATERIAL, os.urandom(16))),
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 128),
    )
    payload = (
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
        + key_template("E20006")
        + ttlv.struct_(Tag.SYMMETRIC_KEY, block)
    )
    with pytest.raises(KmipFailure) as refused:
        dal01.call(Operation.REGISTER, payload)  # AES-128: not what this KMA holds
    assert refused.value.reason == ResultReason.INVALID_FIELD


def test_a_batch_stops_at_its_first_failure_and_answers_each_item(dal01: KmipClient) -> None:
    create = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + key_template("E20007")
    results = dal01.batch([(Operation.CREATE, create), (Operation.ACTIVATE, b""), (Operation.GET, b"")])
    assert [r.status for r in results] == [ResultStatus.SUCCESS] * 3
    uid = results[0].check().get(Tag.UNIQUE_IDENTIFIER)
    assert (
        results[1].check().get(Tag.UNIQUE_IDENTIFIER) == uid == results[2].check().get(Tag.UNIQUE_IDENTIFIER)
    )
    failing = dal01.batch(
        [(Operation.GET, ttlv.text(Tag.UNIQUE_IDENTIFIER, "no-such-key")), (Operation.CREATE, create)]
    )
    assert len(failing) == 1 and failing[0].reason == ResultReason.ITEM_NOT_FOUND


def test_creates_are_durable_and_audited_before_the_answer(dal01: KmipClient, kma: RunningKma) -> None:
    before = last_event(kma)
    uid = dal01.create_and_activate("E20008")
    row = key_row(kma, uid)  # read from the database file right after the answer
    assert row["data_unit_id"] == "E20008" and row["activated_at"] is not None
    created = events(kma, before, "kmip.create")
    assert created and created[0]["subject_id"] == uid and created[0]["retention"] == "long"
    dal01.get(uid)
    dal01.get(uid)
    sent = events(kma, before, "kmip.get")
    # the first send ends the key's Fresh days (KMIP Fresh): kept long; later ones short
    assert [(e["subject_id"], e["retention"]) for e in sent] == [(uid, "long"), (uid, "short")]
    assert sent[0]["message"].endswith("(its first send)") and "first" not in sent[1]["message"]


def test_query_and_discover_versions(dal01: KmipClient) -> None:
    assert dal01.discover_versions() == [(2, 1), (2, 0), (1, 4), (1, 3), (1, 2), (1, 1), (1, 0)]
    functions = b"".join(ttlv.enum(Tag.QUERY_FUNCTION, f) for f in (1, 2, 3))
    payload = dal01.call(Operation.QUERY, functions)
    operations = {i.value for i in payload.all(Tag.OPERATION)}
    kinds = [i.value for i in payload.all(Tag.OBJECT_TYPE)]
    assert kinds == [
        ObjectType.SYMMETRIC_KEY,
        ObjectType.SECRET_DATA,
        ObjectType.OPAQUE_OBJECT,
        ObjectType.PUBLIC_KEY,
        ObjectType.PRIVATE_KEY,
        ObjectType.CERTIFICATE,
    ]
    assert {Operation.CREATE, Operation.GET, Operation.LOCATE, Operation.REVOKE} <= operations
    assert payload.get(Tag.VENDOR_IDENTIFICATION)
    assert Operation.CHECK in operations and all(op < 0x80000000 for op in operations)
    information = payload.find(Tag.SERVER_INFORMATION)
    assert information is not None and "3DES (withdrawn by NIST)" in information.get(Tag.ALGORITHMS)


def test_kmip_2_0_requests_it_cannot_read_are_refused_plainly(
    agents: dict[str, Path], kma: RunningKma
) -> None:
    """KMIP 2.0 names attributes by tag: one this KMA does not know (a vendor's) or a malformed
    Attributes structure gets a clear failure, is audited, and creates nothing."""
    from kma.kmip import v2

    with kmip(agents["t10k-dal-02"]) as client:
        client.version = (2, 0)
        before = last_event(kma)
        vendor = ttlv.struct_(
            v2.ATTRIBUTES,
            ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, 3),
            ttlv.text(0x540001, "E30001"),  # an extension tag: a vendor's own attribute
        )
        key = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
        [unknown] = client.batch([(Operation.CREATE, key + vendor)])
        assert unknown.reason == ResultReason.FEATURE_NOT_SUPPORTED
        assert "tag 0x540001 is not supported" in unknown.message and "KMIP 1.x" in unknown.message
        flat = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + ttlv.text(v2.ATTRIBUTES, "E30001")
        [malformed] = client.batch([(Operation.CREATE, flat)])
        assert malformed.reason == ResultReason.INVALID_FIELD and "Attributes" in malformed.message
        uid = client.create_and_activate("E30002")  # the connection serves on, in 2.0
        assert len(client.get(uid)) == 32
    created = events(kma, before, "kmip.create")  # the refused two made nothing; the third a key
    assert [e["condition"] for e in created] == ["error", "error", "success"]
    assert "E30002" in created[2]["message"]


def test_the_drive_simulator_mounts_tapes(agents: dict[str, Path], kma: RunningKma) -> None:
    result = run_kma(
        "agent",
        "simulate",
        "--agent-dir",
        str(agents["t10k-dal-02"]),
        "--drives",
        "3",
        "--rate",
        "30",
        "--duration",
        "2",
        "--tapes",
        "8",
        "--prefix",
        "S",
        "--write-ratio",
        "0.5",
        "--json",
    )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["failures"] == 0 and summary["mounts"] >= 40
    assert summary["keys_issued"] >= 1 and summary["writes"] + summary["reads"] == summary["mounts"]
    written = kma.client("op").list_data_units(search="S0000", limit=100).items
    assert written and all(unit.state == "readable_normal" for unit in written)


def test_drives_fail_over_to_the_next_kma_of_their_list(agents: dict[str, Path], tmp_path: Path) -> None:
    """The agent's KMA list (from enrollment) names an unreachable KMA of its own site first: the
    agent reaches the next KMA, every mount succeeds, the summary says who served them, and the
    agent then follows the cluster's own list, which does not name the unreachable one."""
    import shutil
    import socket

    agent_dir = tmp_path / "drive"
    shutil.copytree(agents["t10k-dal-02"], agent_dir)
    [live] = json.loads((agent_dir / "kmas.json").read_text())
    with socket.socket() as s:  # a port nothing listens on: connections are refused
        s.bind(("127.0.0.1", 0))
        gone = f"127.0.0.1:{s.getsockname()[1]}"
    down = {**live, "id": "kma-dal-9", "service_address": gone}
    (agent_dir / "kmas.json").write_text(json.dumps([down, live]))
    result = run_kma(
        "agent",
        "simulate",
        "--agent-dir",
        str(agent_dir),
        "--drives",
        "2",
        "--mounts",
        "12",
        "--rate",
        "50",
        "--tapes",
        "4",
        "--prefix",
        "F",
        "--json",
    )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["failures"] == 0 and summary["mounts"] == 12
    assert summary["served_by"] == {live["service_address"]: 12}
    # The agent asks the cluster for its current list first (trying the unreachable KMA, then the
    # next); the cluster's list does not name the unreachable KMA, so the mounts need no failover.
    assert summary["failovers"] <= 2  # at most once per drive, were the list still stale
    assert [k["id"] for k in json.loads((agent_dir / "kmas.json").read_text())] == [live["id"]]
    (agent_dir / "kmas.json").write_text(json.dumps([down, live]))
    human = run_kma(
        "agent",
        "simulate",
        "--agent-dir",
        str(agent_dir),
        "--drives",
        "1",
        "--mounts",
        "2",
        "--rate",
        "50",
        "--tapes",
        "4",
        "--prefix",
        "F",
    )
    assert f"mounts served by {live['service_address']} (2)" in human.stdout


def _refused(attempt: Callable[[], object]) -> bool:
    try:
        attempt()
    except KmipFailure:
        return True
    return False


def test_a_locked_kma_serves_agents_nothing_until_a_quorum_unlocks_it(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", demo_passphrase(fresh_kma, "t10k-dal-02"))
    so = fresh_kma.client("so")
    with kmip(tmp_path / "drive") as drive:
        key = drive.create_and_activate("E30003")
        so.lock_kma("kma-dal-1")
        wait_until(lambda: _refused(lambda: drive.get(key)), 10, what="the connection hears of the lock")
        for attempt in (lambda: drive.get(key), lambda: drive.locate(data_unit="E30003"), drive.create):
            with pytest.raises(KmipFailure) as refused:
                attempt()
            assert refused.value.reason == ResultReason.GENERAL_FAILURE and "locked" in refused.value.message
        assert drive.discover_versions()  # what it speaks is no secret
        members = fresh_kma.demo["key_split"]["members"][:3]
        so.unlock_kma("kma-dal-1", credentials=[(m["name"], m["passphrase"]) for m in members])
        assert len(drive.get(key)) == 32
