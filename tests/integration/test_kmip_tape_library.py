"""The KMIP Tape Library Profile's road to a tape key meets the drives' one: a key created with
LIBRARY-LTO Application Specific Information is bound to that cartridge (a data unit), shows in
its history, takes its periods from the group's policy, and Locate by that information finds it
and the keys of the older Name road alike (over a real KMA, with an enrolled library)."""

from __future__ import annotations

from pathlib import Path

from kma.kmip import ttlv
from kma.kmip.client import attribute, name_attribute, text_attribute
from kma.kmip.enums import ObjectType, Operation, ResultStatus, State, Tag
from tests.support.agents import demo_passphrase, enroll, key_row, kmip
from tests.support.kma_process import RunningKma

CARTRIDGE = "123456789ABCDEF123456789123456789ABCDEF123456789ABCDEF1234000000"
DAY = 86400


def application(namespace: str, data: str) -> bytes:
    return attribute(
        "Application Specific Information",
        ttlv.struct_(
            Tag.ATTRIBUTE_VALUE,
            ttlv.text(Tag.APPLICATION_NAMESPACE, namespace),
            ttlv.text(Tag.APPLICATION_DATA, data),
        ),
    )


def test_a_library_key_is_a_tape_key_of_its_cartridge(fresh_kma: RunningKma, tmp_path: Path) -> None:
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "library", demo_passphrase(fresh_kma, "t10k-dal-02"))
    with kmip(tmp_path / "library") as library:
        # When the library creates a key as the profile has it: its own Name and barcode, the
        # cartridge in LIBRARY-LTO information, and an Integer custom attribute
        template = ttlv.struct_(
            Tag.TEMPLATE_ATTRIBUTE,
            name_attribute("AAAAAAA1A1AA12345678901234567"),
            text_attribute("x-Barcode", "XXA012A1"),
            application("LIBRARY-LTO", CARTRIDGE),
            attribute("x-Generation", ttlv.integer(Tag.ATTRIBUTE_VALUE, 7)),
        )
        created = library.call(
            Operation.CREATE, ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + template
        )
        uid = str(created.get(Tag.UNIQUE_IDENTIFIER))

        # Then it is a key of that cartridge, and keeps the library's labels as sent
        assert key_row(fresh_kma, uid)["data_unit_id"] == CARTRIDGE
        attrs = library.get_attributes(uid, ["Name", "x-Barcode", "x-Generation", "x-Data-Unit"])
        assert attrs == {
            "Name": "AAAAAAA1A1AA12345678901234567",
            "x-Barcode": "XXA012A1",
            "x-Generation": 7,
            "x-Data-Unit": CARTRIDGE,
        }

        # Activated, it follows the group's policy (tape-30d: 30-day writes, 1-year life)
        library.activate(uid)
        row = key_row(fresh_kma, uid)
        assert row["protect_until"] - row["activated_at"] == 30 * DAY
        assert row["deactivate_at"] - row["activated_at"] == 365 * DAY

        # A drive on the older road (Name = the cartridge) mounts it: the same key is its write key
        assert library.write_key(CARTRIDGE) == (uid, False)

        # Locate by the LIBRARY-LTO information, then Get of the placeholder, in one batch
        results = library.batch(
            [
                (Operation.LOCATE, application("LIBRARY-LTO", CARTRIDGE)),
                (Operation.GET, b""),
            ]
        )
        assert [r.status for r in results] == [ResultStatus.SUCCESS, ResultStatus.SUCCESS]
        assert results[1].check().get(Tag.UNIQUE_IDENTIFIER) == uid

        # Another namespace is the client's own information, found as sent
        other = library.call(
            Operation.CREATE,
            ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY)
            + ttlv.struct_(Tag.TEMPLATE_ATTRIBUTE, application("ssl", "www.example.com")),
        ).get(Tag.UNIQUE_IDENTIFIER)
        assert key_row(fresh_kma, str(other))["data_unit_id"] is None
        found = library.call(Operation.LOCATE, application("ssl", "www.example.com"))
        assert [i.value for i in found.all(Tag.UNIQUE_IDENTIFIER)] == [other]
        assert library.get_attributes(str(other), ["State"]) == {"State": State.PRE_ACTIVE}

    # The manager shows the library's attributes with the key
    key = fresh_kma.client("op").get_key(uid)
    assert (key.algorithm, key.name, key.data_unit_id) == (
        "AES-256",
        "AAAAAAA1A1AA12345678901234567",
        CARTRIDGE,
    )
    shown = {(a.name, a.value) for a in key.kmip_attributes}
    assert ("Application Specific Information", f"LIBRARY-LTO: {CARTRIDGE}") in shown
    assert ("x-Barcode", "XXA012A1") in shown and ("x-Generation", "7") in shown

    # And the cartridge's history shows the library's key
    tape = fresh_kma.client("auditor").data_unit_history(CARTRIDGE)
    assert uid in [lane.subject_id for lane in tape.lanes]
