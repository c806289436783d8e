"""The data units' "no key" filter reads a flag the store keeps as keys are bound to a unit and let
go of it (migration 0015); it must name exactly the units whose state is No key, through every
way a unit gets, loses or outlives its keys."""

from __future__ import annotations

from pathlib import Path

from kms_client import KmsClient
from tests.support.agents import enroll, kmip, new_passphrase
from tests.support.kma_process import RunningKma

GROUP = "backup-dallas"


def no_key(op: KmsClient) -> set[str]:
    return {u.id for u in op.iter_data_units(state="no_key") if u.id.startswith("NK")}


def assert_filter_agrees(op: KmsClient) -> None:
    """Each unit is listed under "no key" exactly when its own state says No key."""
    units = [u for u in op.iter_data_units() if u.id.startswith("NK")]
    assert no_key(op) == {u.id for u in units if u.state == "no_key"}
    for order in ("asc", "desc"):
        listed = {u.id for u in op.iter_data_units(state="no_key", order=order)}
        assert {i for i in listed if i.startswith("NK")} == no_key(op)


def test_no_key_filter_follows_bind_destroy_and_rekey(fresh_kma: RunningKma, tmp_path: Path) -> None:
    op = fresh_kma.client("op")
    # Given two tapes registered by hand: neither has a key
    op.create_data_unit("NK0001")
    op.create_data_unit("NK0002")
    assert no_key(op) == {"NK0001", "NK0002"}
    assert op.get_data_unit("NK0001").state == "no_key"

    # When a key is issued for one of them, it leaves the list; the other stays
    key = op.issue_key(GROUP, "NK0001")
    assert no_key(op) == {"NK0002"}
    assert_filter_agrees(op)

    # When that key is compromised and destroyed, the tape is shredded, not keyless
    op.compromise_key(key.id, "left in a drive overnight")
    op.destroy_key(key.id, "compromised")
    assert op.get_data_unit("NK0001").state == "shredded"
    assert no_key(op) == {"NK0002"}

    # When the shredded tape is rekeyed, it is readable again and still not keyless
    op.issue_key(GROUP, "NK0001")
    assert op.get_data_unit("NK0001").state == "readable_normal"
    assert no_key(op) == {"NK0002"}

    # When a drive asks for write keys (a registered tape, and a new one), and writes a tape from
    # its beginning (its keys let go of it, a new key takes their place), none is keyless
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", new_passphrase(fresh_kma, "t10k-dal-02"))
    drive = kmip(tmp_path / "drive")
    try:
        drive.write_key("NK0002")
        drive.write_key("NK0003")
        _key, released = drive.write_from_beginning("NK0003")
        assert released == 1
    finally:
        drive.close()
    assert no_key(op) == set()
    assert_filter_agrees(op)
