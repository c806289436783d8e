"""Re-Key of general keys, by an unmodified PyKMIP client against a real `kma serve`: a new key
with new bytes and the existing key's attributes, Links both ways, the existing key's state
unchanged, both keys' history audited; refused for another group's agent and for tape keys."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kmip.core import enums
from kmip.core.exceptions import OperationFailure
from kmip.pie.client import ProxyKmipClient
from kmip.pie.exceptions import KmipOperationFailure

from kma.kmip import ttlv
from kma.kmip.enums import LinkType, Operation, Tag
from kma.kmip.v2 import ATTRIBUTE_REFERENCE, ATTRIBUTES
from tests.support.agents import enrolled_demo_agent, events, key_row, kmip, last_event
from tests.support.kma_process import RunningKma

DAY = 86400
DATABASES = "t10k-bos-01"  # an agent of the general key group "databases"
WEB = "t10k-dal-02"  # an agent of another general key group, "web"
TAPE = "lto4-dal-01"  # a tape drive of the demo's "archive" group (a tape key policy)


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("kmip-rekey"))
    try:
        co, op = kma.client("co"), kma.client("op")
        co.create_key_policy(
            "general-1y", encryption_period=365 * DAY, cryptoperiod=2 * 365 * DAY, general_keys=True
        )
        for group, agent in (("databases", DATABASES), ("web", WEB)):
            co.create_key_group(group, "general-1y")
            co.set_key_group_agents(group, [agent])
            op.update_agent(agent, default_key_group_id=group)
        yield kma
    finally:
        kma.stop()


@pytest.fixture(scope="module")
def dirs(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {a: enrolled_demo_agent(kma, tmp_path_factory, a) for a in (DATABASES, WEB, TAPE)}


@pytest.fixture(scope="module")
def configs(dirs: dict[str, Path]) -> dict[str, str]:
    return {a: str(d / "pykmip.conf") for a, d in dirs.items()}


def _attributes(client: ProxyKmipClient, uid: str, names: list[str]) -> dict[str, list[Any]]:
    _, attrs = client.get_attributes(uid, names)
    out: dict[str, list[Any]] = {}
    for a in attrs:
        out.setdefault(a.attribute_name.value, []).append(a.attribute_value)
    return out


def _links(agent_dir: Path, uid: str, version: tuple[int, int] = (1, 4)) -> dict[int, str]:
    """The key's Links, asked for by name (PyKMIP 0.11 cannot decode a Link: read them raw)."""
    with kmip(agent_dir) as client:
        client.version = version
        if version >= (2, 0):
            named = ttlv.enum(ATTRIBUTE_REFERENCE, Tag.LINK)
            answer = client.call(Operation.GET_ATTRIBUTES, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + named)
            values = answer.find(ATTRIBUTES).all(Tag.LINK)
        else:
            asked = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.text(Tag.ATTRIBUTE_NAME, "Link")
            answer = client.call(Operation.GET_ATTRIBUTES, asked)
            values = [a.find(Tag.ATTRIBUTE_VALUE) for a in answer.all(Tag.ATTRIBUTE)]
    return {int(v.get(Tag.LINK_TYPE)): str(v.get(Tag.LINKED_OBJECT_IDENTIFIER)) for v in values}


def test_rekey_makes_a_new_key_linked_both_ways_and_leaves_the_old_one_as_it_was(
    kma: RunningKma, dirs: dict[str, Path], configs: dict[str, str]
) -> None:
    before = last_event(kma)
    with ProxyKmipClient(config_file=configs[DATABASES]) as client:
        old = client.create(enums.CryptographicAlgorithm.AES, 128, name="orders db")
        client.activate(old)
        old_bytes = client.get(old).value
        dates = ["Activation Date", "Deactivation Date", "Protect Stop Date"]
        old_dates = _attributes(client, old, dates)

        new = client.rekey(uid=old)

        assert new != old
        key = client.get(new)
        assert len(key.value) == 16 and key.value != old_bytes  # same size, new bytes
        assert _links(dirs[DATABASES], new) == {LinkType.REPLACED_OBJECT: old}
        assert _links(dirs[DATABASES], old) == {LinkType.REPLACEMENT_OBJECT: new}
        got = _attributes(client, new, ["State", "Object Group", "Name", *dates])
        assert got["State"][0].value == enums.State.ACTIVE
        assert got["Object Group"][0].value == "databases"
        assert got["Name"][0].name_value.value == "orders db"  # the Name moved to the new key
        # no Offset: the existing key's dates (KMIP Re-Key)
        assert {d: [v.value for v in got[d]] for d in dates} == {
            d: [v.value for v in old_dates[d]] for d in dates
        }
        old_now = _attributes(client, old, ["State", "Name"])
        assert old_now["State"][0].value == enums.State.ACTIVE and "Name" not in old_now
        name = client.attribute_factory.create_attribute(enums.AttributeType.NAME, "orders db")
        assert client.locate(attributes=[name]) == [new]
        assert client.get(old).value == old_bytes  # what it encrypted is still read

        with pytest.raises(KmipOperationFailure) as again:
            client.rekey(uid=old)
        assert again.value.reason == enums.ResultReason.PERMISSION_DENIED
        assert f"already replaced by key {new}" in str(again.value)

        with pytest.raises(KmipOperationFailure) as later:
            client.rekey(uid=new, offset=7 * DAY)
        assert "Offset" in str(later.value) and _links(dirs[DATABASES], new) == {
            LinkType.REPLACED_OBJECT: old
        }

        with pytest.raises(KmipOperationFailure) as asked:  # attributes come from the existing key
            client.rekey(uid=new, activation_date=1_900_000_000)
        assert asked.value.reason == enums.ResultReason.INVALID_FIELD

        kma.advance_clock(30 * DAY)
        third = client.rekey(uid=new, offset=0)  # active from now, for the same periods
        assert _links(dirs[DATABASES], new) == {
            LinkType.REPLACED_OBJECT: old,
            LinkType.REPLACEMENT_OBJECT: third,
        }
    fresh = key_row(kma, third)
    assert fresh["activated_at"] >= key_row(kma, new)["activated_at"] + 30 * DAY
    assert fresh["deactivate_at"] - fresh["activated_at"] == 2 * 365 * DAY
    history = {(e["subject_id"], e["condition"]) for e in events(kma, before, "kmip.rekey")}
    assert {(old, "success"), (new, "success"), (third, "success")} <= history
    # What an auditor sees: each key's history says what replaced it, the details show the Links
    auditor = kma.client("auditor")
    said = [e.message for e in auditor.key_history(old).events if e.operation == "kmip.rekey"]
    assert f"key {old} replaced by key {new} (Re-Key); it keeps its state until it is revoked" in said
    assert f"refused rekey: key {old} was already replaced by key {new}; re-key that one" in said
    shown = {(a.name, a.value) for a in kma.client("op").get_key(new).kmip_attributes}
    assert {("Link: Replaces", old), ("Link: Replaced by", third)} <= shown


def test_rekey_over_kmip_2_0_answers_the_links_as_attributes(
    kma: RunningKma, dirs: dict[str, Path], configs: dict[str, str]
) -> None:
    config = configs[DATABASES]
    with ProxyKmipClient(config_file=config, kmip_version=enums.KMIPVersion.KMIP_2_0) as client:
        old = client.create(enums.CryptographicAlgorithm.AES, 256)
        new = client.rekey(uid=old)
        assert client.get(new).value != client.get(old).value
        assert _links(dirs[DATABASES], new, (2, 0)) == {LinkType.REPLACED_OBJECT: old}
        assert _links(dirs[DATABASES], old, (2, 0)) == {LinkType.REPLACEMENT_OBJECT: new}
        state = _attributes(client, new, ["State"])["State"][0].value
        assert state == enums.State.PRE_ACTIVE  # as the existing key was


def test_an_agent_of_another_group_cannot_rekey(
    kma: RunningKma, dirs: dict[str, Path], configs: dict[str, str]
) -> None:
    with ProxyKmipClient(config_file=configs[DATABASES]) as owner:
        uid = owner.create(enums.CryptographicAlgorithm.AES, 256)
    before = last_event(kma)
    with ProxyKmipClient(config_file=configs[WEB]) as stranger:
        with pytest.raises(KmipOperationFailure) as refused:
            stranger.rekey(uid=uid)
    assert refused.value.reason == enums.ResultReason.ITEM_NOT_FOUND
    assert key_row(kma, uid)["key_group_id"] == "databases"
    with ProxyKmipClient(config_file=configs[DATABASES]) as owner:
        assert _links(dirs[DATABASES], uid) == {}
    assert [e["condition"] for e in events(kma, before, "kmip.rekey")] == ["error"]


def test_a_tape_key_is_not_rekeyed(kma: RunningKma, dirs: dict[str, Path], configs: dict[str, str]) -> None:
    before = last_event(kma)
    with ProxyKmipClient(config_file=configs[TAPE]) as drive:
        uid = drive.create(enums.CryptographicAlgorithm.AES, 256, name="A00042")
        with pytest.raises((KmipOperationFailure, OperationFailure)) as refused:
            drive.rekey(uid=uid)
    assert refused.value.reason == enums.ResultReason.PERMISSION_DENIED
    assert "is a tape key" in str(refused.value) and "written from the beginning" in str(refused.value)
    (event,) = events(kma, before, "kmip.rekey")
    assert event["condition"] == "error" and event["subject_id"] == uid


def test_query_lists_rekey(configs: dict[str, str]) -> None:
    with ProxyKmipClient(config_file=configs[WEB]) as client:
        answer = client.proxy.query(query_functions=[enums.QueryFunction.QUERY_OPERATIONS])
        assert enums.Operation.REKEY.value in [op.value for op in answer.operations]


def test_a_policy_rotation_period_makes_the_successor_itself(
    kma: RunningKma, configs: dict[str, str]
) -> None:
    """A policy created with a rotation period: once it has passed since a key's activation, the
    KMA makes the successor itself (linked both ways, audited as the KMA), as a Re-Key would."""
    co, op = kma.client("co"), kma.client("op")
    with pytest.raises(Exception, match="general keys"):  # tape keys change per tape
        co.create_key_policy("tape-rotating", encryption_period=DAY, cryptoperiod=DAY, rotation_period=DAY)
    policy = co.create_key_policy(
        "rotating-90d",
        encryption_period=365 * DAY,
        cryptoperiod=365 * DAY,
        general_keys=True,
        rotation_period=90 * DAY,
    )
    assert policy.rotation_period == 90 * DAY
    co.create_key_group("rotating", "rotating-90d")
    co.set_key_group_agents("rotating", [WEB])
    op.update_agent(WEB, default_key_group_id="rotating")
    with ProxyKmipClient(config_file=configs[WEB]) as client:
        uid = client.create(enums.CryptographicAlgorithm.AES, 256, name="ledger")
        client.activate(uid)
        old_bytes = client.get(uid).value
        before = last_event(kma)
        kma.advance_clock(91 * DAY)
        op = kma.client("op")  # (signed in again: the sessions expired with the 91 days)
        deadline = time.monotonic() + 60
        links: dict[str, str] = {}
        while "Link: Replaced by" not in links and time.monotonic() < deadline:
            time.sleep(0.5)
            links = {a.name: a.value for a in op.get_key(uid).kmip_attributes}
        new = links["Link: Replaced by"]
        assert client.get(new).value != old_bytes and client.get(uid).value == old_bytes
        got = _attributes(client, new, ["State", "Name"])
        assert got["State"][0].value == enums.State.ACTIVE and got["Name"][0].name_value.value == "ledger"
    fresh = key_row(kma, new)
    assert fresh["deactivate_at"] - fresh["activated_at"] == 365 * DAY
    rotated = events(kma, before, "key.rotate")
    assert {(e["subject_id"], e["condition"]) for e in rotated} >= {(uid, "success"), (new, "success")}
    assert {e["entity_id"] for e in rotated} == {kma.client("admin").get_status().kma_id}
