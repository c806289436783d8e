"""The transfer file format (docs/transfer.md, version 1): only the recipient opens it, only the
sender's key signed it, and no byte of it changes unnoticed."""

from __future__ import annotations

import json

import pytest

from kma.crypto.transfer import (
    Identity,
    SealedFile,
    TransferFileRefused,
    fingerprint,
    identity_text,
    parse_identity,
)

PAYLOAD = {"data_units": [{"id": "E00001", "keys": [{"id": "K1", "material": "00" * 32}]}]}


@pytest.fixture(scope="module")
def parties() -> tuple[Identity, Identity, bytes]:
    sender, recipient = Identity.generate(), Identity.generate()
    return sender, recipient, sender.seal(recipient.public, {"file_id": "f1", "expires_at": 9}, PAYLOAD)


def test_the_recipient_opens_what_the_sender_signed(parties: tuple[Identity, Identity, bytes]) -> None:
    sender, recipient, data = parties
    sealed = SealedFile.read(data)
    assert sealed.sender == sender.public
    sealed.verify(sealed.sender)
    assert recipient.open(sealed) == PAYLOAD
    assert sealed.header["recipient_fingerprint"] == fingerprint(recipient.public)


def test_another_cluster_cannot_open_it(parties: tuple[Identity, Identity, bytes]) -> None:
    with pytest.raises(TransferFileRefused, match="meant for another cluster"):
        Identity.generate().open(SealedFile.read(parties[2]))


@pytest.mark.parametrize("part", ["header", "ciphertext", "signature"])
def test_any_changed_part_fails_the_signature(parties: tuple[Identity, Identity, bytes], part: str) -> None:
    document = json.loads(parties[2])
    if part == "header":
        document["header"]["expires_at"] += 1
    else:
        raw = bytearray(document[part].encode())
        raw[10] = ord("A") if raw[10] != ord("A") else ord("B")
        document[part] = raw.decode()
    sealed = SealedFile.read(json.dumps(document).encode())
    with pytest.raises(TransferFileRefused, match="altered"):
        sealed.verify(sealed.sender)


def test_a_file_resigned_by_someone_else_names_them_not_the_sender(
    parties: tuple[Identity, Identity, bytes],
) -> None:
    forger = Identity.generate()
    document = json.loads(parties[2])
    document["header"]["sender"] = identity_text(forger.public)
    sealed = SealedFile.read(json.dumps(document).encode())
    assert sealed.sender == forger.public  # the sender it names must then be a registered partner
    with pytest.raises(TransferFileRefused, match="altered"):
        sealed.verify(parties[0].public)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", "damaged"),
        (b'{"format": "something else"}', "not a transfer file"),
        (b'{"format": "kms-transfer-file", "version": 3}', "version 3"),
        (b'{"format": "kms-transfer-file", "version": 2}', "not of transfer format version 1"),
        (b'{"format": "kms-transfer-file", "version": 1, "header": []}', "damaged"),
    ],
)
def test_what_is_not_a_version_1_file_is_refused_with_why(data: bytes, reason: str) -> None:
    with pytest.raises(TransferFileRefused, match=reason):
        SealedFile.read(data)


def test_identity_lines_are_checked() -> None:
    good = Identity.generate().public
    assert parse_identity(identity_text(good)) == good
    for bad in ("kms-transfer-identity-v1:AAAA", "ssh-ed25519 AAAA", "kms-transfer-identity-v1:!!"):
        with pytest.raises(ValueError, match="transfer identity"):
            parse_identity(bad)
