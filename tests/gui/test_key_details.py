"""A key's details show what the object is, the Name its KMIP client gave it and every attribute
KMIP clients set on it (a tape library's Application Specific Information, its barcode, ...)."""

from __future__ import annotations

from kms_client import Key, read
from ui.lists.details import field_rows
from ui.pages.keys import LABELS, detail_texts

CARTRIDGE = "123456789ABCDEF123456789123456789ABCDEF123456789ABCDEF1234000000"


def test_a_library_key_shows_its_object_name_and_kmip_attributes() -> None:
    key = read(
        Key,
        {
            "id": "K1",
            "key_group_id": "backup-dallas",
            "data_unit_id": CARTRIDGE,
            "kma_id": "kma-1",
            "algorithm": "AES-256",
            "name": "AAAAAAA1A1AA12345678901234567",
            "state": "ready",
            "compromised": False,
            "created_at": "2026-11-26T10:00:00Z",
            "activated_at": None,
            "protect_until": None,
            "deactivate_at": None,
            "destroyed_at": None,
            "destroy_comment": None,
            "kmip_attributes": [
                {"name": "Application Specific Information", "value": f"LIBRARY-LTO: {CARTRIDGE}"},
                {"name": "x-Barcode", "value": "XXA012A1"},
            ],
        },
    )
    rows = dict(field_rows(key, LABELS, detail_texts(key)))
    assert rows["Object"] == "AES-256"
    assert rows["Name"] == "AAAAAAA1A1AA12345678901234567"
    assert rows["KMIP attributes"] == (
        f"Application Specific Information: LIBRARY-LTO: {CARTRIDGE}\nx-Barcode: XXA012A1"
    )
