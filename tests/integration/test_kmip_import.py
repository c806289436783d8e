"""KMIP Register (an agent supplying its own key material) over a real KMA: refused unless the key
group's policy allows import; degenerate key bytes refused; and a key one drive registered never
becomes another drive's write key for a tape unless the policy allows import."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kma.kmip import ttlv
from kma.kmip.client import KmipClient, KmipFailure, attribute, key_template, text_attribute
from kma.kmip.enums import CryptographicAlgorithm, KeyFormatType, ObjectType, Operation, ResultReason, Tag
from tests.support.agents import demo_passphrase, enroll, events, key_row, kmip, last_event
from tests.support.kma_process import RunningKma

DAY = 86400


def register(client: KmipClient, material: bytes, data_unit: str, group: str | None = None) -> str:
    block = ttlv.struct_(
        Tag.KEY_BLOCK,
        ttlv.enum(Tag.KEY_FORMAT_TYPE, KeyFormatType.RAW),
        ttlv.struct_(Tag.KEY_VALUE, ttlv.byte_string(Tag.KEY_MATERIAL, material)),
        ttlv.enum(Tag.CRYPTOGRAPHIC_ALGORITHM, CryptographicAlgorithm.AES),
        ttlv.integer(Tag.CRYPTOGRAPHIC_LENGTH, 8 * len(material)),
    )
    payload = (
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
        + key_template(data_unit, group)
        + ttlv.struct_(Tag.SYMMETRIC_KEY, block)
    )
    return str(client.call(Operation.REGISTER, payload).get(Tag.UNIQUE_IDENTIFIER))


def drives(kma: RunningKma, tmp: Path) -> tuple[KmipClient, KmipClient]:
    for agent_id in ("t10k-dal-01", "t10k-dal-02"):
        enroll(kma, agent_id, tmp / agent_id, demo_passphrase(kma, agent_id))
    return kmip(tmp / "t10k-dal-01"), kmip(tmp / "t10k-dal-02")


def importing_group(kma: RunningKma) -> None:
    """A Compliance Officer's key group whose policy allows import, for both Dallas drives."""
    co = kma.client("co")
    co.create_key_policy("imports", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True)
    co.create_key_group("imported", "imports")
    co.set_key_group_agents("imported", ["t10k-dal-01", "t10k-dal-02"])


def test_register_is_refused_where_the_policy_does_not_allow_import(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    dal01, _ = drives(fresh_kma, tmp_path)
    with dal01:
        before = last_event(fresh_kma)
        with pytest.raises(KmipFailure) as refused:
            register(dal01, os.urandom(32), "E40001")  # default group backup-dallas: tape-90d
        assert refused.value.reason == ResultReason.PERMISSION_DENIED
        assert "does not allow import" in refused.value.message
        (event,) = events(fresh_kma, before, "kmip.register")
        assert event["condition"] == "error" and "does not allow import" in event["message"]
        assert dal01.locate(data_unit="E40001") == []


@pytest.mark.parametrize(
    "material",
    [bytes(32), b"\xff" * 32, b"AB" * 16, b"0123" * 8, os.urandom(16) * 2, os.urandom(5) * 7],
    ids=["zeros", "ones", "2-byte pattern", "4-byte pattern", "16 bytes twice", "5 bytes repeated"],
)
def test_degenerate_key_bytes_are_refused(fresh_kma: RunningKma, tmp_path: Path, material: bytes) -> None:
    importing_group(fresh_kma)
    dal01, _ = drives(fresh_kma, tmp_path)
    with dal01:
        with pytest.raises(KmipFailure) as refused:
            register(dal01, material[:32], "E40002", "imported")
        assert refused.value.reason == ResultReason.INVALID_FIELD
        assert "short pattern repeated" in refused.value.message
        good = os.urandom(32)
        uid = register(dal01, good, "E40002", "imported")
        assert dal01.get(uid) == good
        assert key_row(fresh_kma, uid)["material_wrapped"] != good  # stored wrapped under the master key


def test_a_general_key_group_takes_a_clients_key_material_as_sent(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    """A generic client's key (a test key, one a peer system derived) is its own business; only
    a tape key group, whose keys a drive may be handed as another drive's write key, refuses
    degenerate bytes."""
    importing_group(fresh_kma)
    fresh_kma.client("co").update_key_policy("imports", general_keys=True)
    dal01, _ = drives(fresh_kma, tmp_path)
    with dal01:
        patterned = bytes.fromhex("0123456789abcdef") * 4
        uid = register(dal01, patterned, "E40004", "imported")
        assert dal01.get(uid) == patterned
        with pytest.raises(KmipFailure) as refused:  # a tape key group keeps the rule
            register(dal01, patterned, "E40005")
        assert refused.value.reason == ResultReason.INVALID_FIELD
        assert "short pattern repeated" in refused.value.message


def create_protected_until(client: KmipClient, when: int, group: str) -> str:
    stop = attribute("Protect Stop Date", ttlv.date_time(Tag.ATTRIBUTE_VALUE, when))
    payload = (
        ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
        + key_template(group=group)
        + ttlv.struct_(Tag.TEMPLATE_ATTRIBUTE, stop)
    )
    return str(client.call(Operation.CREATE, payload).get(Tag.UNIQUE_IDENTIFIER))


def test_a_general_keys_client_sets_its_protect_stop_date_within_the_policy(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    """A general key group's client may end a key's encryption period early (Protect Stop Date),
    never later than its policy's; Locate finds keys by a range of those dates. A tape key group's
    policy alone sets its keys' dates."""
    importing_group(fresh_kma)  # encryption period: 30 days
    dal01, _ = drives(fresh_kma, tmp_path)
    now = int(time.time())
    with dal01:
        with pytest.raises(KmipFailure) as refused:
            create_protected_until(dal01, now + DAY, "imported")
        assert refused.value.reason == ResultReason.INVALID_FIELD
        assert "sets its tape keys' dates" in refused.value.message
    fresh_kma.client("co").update_key_policy("imports", general_keys=True)
    with kmip(tmp_path / "t10k-dal-01") as dal01:  # a new session: the agent's groups as they are now
        early = create_protected_until(dal01, now + DAY, "imported")
        late = create_protected_until(dal01, now + 400 * DAY, "imported")
        assert dal01.get_attributes(early, ["State", "Protect Stop Date"]) == {
            "State": 1,
            "Protect Stop Date": now + DAY,
        }
        dal01.activate(early)
        dal01.activate(late)
        assert dal01.get_attributes(early, ["Protect Stop Date"]) == {"Protect Stop Date": now + DAY}
        (capped,) = dal01.get_attributes(late, ["Protect Stop Date"]).values()
        assert now + 30 * DAY <= capped < now + 31 * DAY

        def located(*dates: int) -> list[str]:
            wanted = text_attribute("Object Group", "imported") + b"".join(
                attribute("Protect Stop Date", ttlv.date_time(Tag.ATTRIBUTE_VALUE, d)) for d in dates
            )
            return [i.value for i in dal01.call(Operation.LOCATE, wanted).all(Tag.UNIQUE_IDENTIFIER)]

        assert located(now, now + 2 * DAY) == [early]
        assert located(now + 2 * DAY, now) == [early]  # a range is a range, either way round
        assert located(now + DAY) == [early]
        assert sorted(located(now, now + 40 * DAY)) == sorted([early, late])
        assert located(now + 2 * DAY, now + 3 * DAY) == []


def test_a_registered_key_becomes_another_drives_write_key_only_while_the_policy_allows_import(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    importing_group(fresh_kma)
    dal01, dal02 = drives(fresh_kma, tmp_path)
    with dal01, dal02:
        planted = register(dal01, os.urandom(32), "E40003", "imported")
        dal01.activate(planted)
        assert dal01.write_key("E40003", "imported") == (planted, False)  # its own key: its choice
        assert dal02.write_key("E40003", "imported") == (planted, False)  # the policy allows import

        fresh_kma.client("co").update_key_policy("imports", allow_import=False)
        assert dal01.write_key("E40003", "imported") == (planted, False)
        issued, new = dal02.write_key("E40003", "imported")
        assert new and issued != planted  # another drive writes under a key the cluster made
        assert key_row(fresh_kma, issued)["registered_by"] is None
        assert key_row(fresh_kma, planted)["registered_by"] == "t10k-dal-01"
