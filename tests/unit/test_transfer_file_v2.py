"""The transfer file format, version 2 (docs/transfer.md): written and read a chunk at a time, with
the same guarantees as version 1 (only the recipient opens it, only the sender's key signed it, no
chunk changes, goes or moves unnoticed), and version 1 files still read."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from kma.crypto import transfer_stream
from kma.crypto.transfer import Identity, TransferFileRefused, fingerprint
from kma.crypto.transfer_stream import FileWriter, StreamedFile, WholeFile

UNITS = [
    {
        "id": f"E{n:05d}",
        "description": "",
        "keys": [{"id": f"K{n}", "material": f"{n:064x}", "created_at": n}],
    }
    for n in range(300)
]


def written(sender: Identity, recipient: Identity, units: list[dict[str, object]]) -> bytes:
    pieces: list[bytes] = []
    writer = FileWriter(sender, recipient.public, {"file_id": "f2", "expires_at": 9}, pieces.append)
    for unit in units:
        writer.add(json.dumps(unit), 1)
    writer.close()
    return b"".join(pieces)


def source(data: bytes, piece: int = 1000) -> transfer_stream.Source:
    """The file in pieces that cut its lines anywhere, as the store's parts and a download do."""

    def pieces() -> Iterable[bytes]:
        return (data[i : i + piece] for i in range(0, len(data), piece))

    return pieces


@pytest.fixture(scope="module")
def parties(request: pytest.FixtureRequest) -> tuple[Identity, Identity, bytes]:
    sender, recipient = Identity.generate(), Identity.generate()
    saved, transfer_stream.CHUNK_BYTES = transfer_stream.CHUNK_BYTES, 4096  # several chunks
    try:
        return sender, recipient, written(sender, recipient, UNITS)
    finally:
        transfer_stream.CHUNK_BYTES = saved


def test_the_recipient_reads_what_the_sender_wrote_a_chunk_at_a_time(
    parties: tuple[Identity, Identity, bytes],
) -> None:
    sender, recipient, data = parties
    assert data.count(b"\n") > 10  # header, chunks, trailer: lines
    sealed = transfer_stream.read(source(data))
    assert isinstance(sealed, StreamedFile) and sealed.sender == sender.public
    assert sealed.trailer["data_units"] == 300 and sealed.header["recipient_fingerprint"] == fingerprint(
        recipient.public
    )
    sealed.verify(sealed.sender)
    assert list(sealed.units(recipient)) == UNITS


def test_a_version_1_file_still_reads(parties: tuple[Identity, Identity, bytes]) -> None:
    sender, recipient, _ = parties
    many = UNITS * 80  # one line of 5 MiB: longer than any line of version 2
    old = sender.seal(recipient.public, {"file_id": "f1", "expires_at": 9}, {"data_units": many})
    assert len(old) > transfer_stream.MAX_LINE
    sealed = transfer_stream.read(source(old, 65536))
    assert isinstance(sealed, WholeFile)
    sealed.verify(sealed.sender)
    assert list(sealed.units(recipient)) == many


def test_another_cluster_cannot_open_it(parties: tuple[Identity, Identity, bytes]) -> None:
    sealed = transfer_stream.read(source(parties[2]))
    with pytest.raises(TransferFileRefused, match="meant for another cluster"):
        list(sealed.units(Identity.generate()))


def _lines(data: bytes) -> list[bytes]:
    return data.rstrip(b"\n").split(b"\n")


@pytest.mark.parametrize(
    "change", ["header", "chunk byte", "chunks swapped", "chunk dropped", "trailer count"]
)
def test_any_change_fails_the_signature_or_the_reading(
    parties: tuple[Identity, Identity, bytes], change: str
) -> None:
    lines = _lines(parties[2])
    if change == "header":
        first = json.loads(lines[0])
        first["header"]["expires_at"] += 1
        lines[0] = json.dumps(first).encode()
    elif change == "chunk byte":
        lines[2] = lines[2][:10] + (b"A" if lines[2][10:11] != b"A" else b"B") + lines[2][11:]
    elif change == "chunks swapped":
        lines[1], lines[2] = lines[2], lines[1]
    elif change == "chunk dropped":
        del lines[3]
    else:
        end = json.loads(lines[-1])
        end["trailer"]["data_units"] += 1
        lines[-1] = json.dumps(end).encode()
    with pytest.raises(TransferFileRefused, match="altered|damaged"):
        transfer_stream.read(source(b"\n".join(lines) + b"\n")).verify(parties[0].public)


def test_a_later_version_is_refused_naming_it() -> None:
    with pytest.raises(TransferFileRefused, match="version 3; this KMA reads versions 1, 2"):
        transfer_stream.read(source(b'{"format": "kms-transfer-file", "version": 3, "header": {}}\n'))
    with pytest.raises(TransferFileRefused, match="damaged"):
        transfer_stream.read(source(b'{"format": "kms-transfer-file", "version": 2, "header": {}}\nAAAA\n'))
