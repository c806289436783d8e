"""Transfer files of format version 2: written and read a piece at a time (docs/transfer.md).

Version 1 is one JSON document whose ciphertext is one AES-GCM message of the whole payload: a
100,000-unit file (44 MiB) is held whole, several times over, by who writes and who reads it.
Version 2 is lines: the header first (as version 1's, without the counts, which are not known
before the last data unit is read), then the payload in chunks each sealed on its own, then a
trailer with the counts and the signature over all of it. A writer seals and hands out each chunk
as it fills; a reader checks the signature in a first pass over the lines (keeping only a hash) and
opens the chunks one by one in a second: neither holds more than a chunk.

    {"format": "kms-transfer-file", "version": 2, "header": {...}}
    <base64 of AES-256-GCM(content key, nonce = chunk number, data units as JSON lines,
                           aad = "kms-transfer-file v2 chunk " || number (8 bytes) || SHA-256(header))>
    ...
    {"trailer": {"data_units": n, "keys": k, "chunks": c}, "signature": base64}

The content key is HKDF-SHA256 of the X25519 agreement as in version 1 (info "kms-transfer-file v2
" + SHA-256(header)); each file has its own one-time key, so chunk numbers are unique nonces under
it. The signature (Ed25519) covers "kms-transfer-file v2\\n" + header + "\\n" + trailer + "\\n" +
SHA-256 of the chunk lines as written: a chunk changed, dropped, moved or added fails it, and the
chunk number in each chunk's associated data catches a chunk moved between two that were not.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric import ed25519, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kma.crypto import transfer
from kma.crypto.transfer import FORMAT, Identity, TransferFileRefused, fingerprint, sender_of

VERSION = 2
CHUNK_BYTES = 256 * 1024  # of payload per sealed chunk (a few hundred data units)
MAX_LINE = 4 * 2**20  # a line longer than any chunk this format writes: the file is damaged
_SIGNED = b"kms-transfer-file v2\n"
_INFO = b"kms-transfer-file v2 "
Source = Callable[[], Iterable[bytes]]  # the file's bytes in pieces, from the start, each call


def _aad(header_digest: bytes, n: int) -> bytes:
    return b"kms-transfer-file v2 chunk " + n.to_bytes(8, "big") + header_digest


def _nonce(n: int) -> bytes:
    return n.to_bytes(12, "big")


class FileWriter:
    """Writes a version 2 file to `sink` as it goes: `add` each data unit, then `close`."""

    def __init__(
        self, identity: Identity, recipient: bytes, header: dict[str, Any], sink: Callable[[bytes], None]
    ) -> None:
        one_time = x25519.X25519PrivateKey.generate()
        self.header = {
            **header,
            "sender": transfer.identity_text(identity.public),
            "recipient_fingerprint": fingerprint(recipient),
            "ephemeral_key": transfer._b64(one_time.public_key().public_bytes(*transfer._RAW)),
        }
        self._aad = transfer._canonical(self.header)
        self._digest = hashlib.sha256(self._aad).digest()
        shared = one_time.exchange(x25519.X25519PublicKey.from_public_bytes(recipient[32:]))
        self._aead = AESGCM(transfer._file_key(shared, self._aad, _INFO))
        self._identity, self._sink = identity, sink
        self._chunks, self._lines = 0, hashlib.sha256()
        self._buffer: list[bytes] = []
        self._buffered = 0
        self.data_units = self.keys = 0
        sink(json.dumps({"format": FORMAT, "version": VERSION, "header": self.header}).encode() + b"\n")

    def add(self, unit_json: str, keys: int) -> None:
        """A data unit, encoded already (`json.dumps` of its dict, on one line)."""
        line = unit_json.encode() + b"\n"
        self._buffer.append(line)
        self._buffered += len(line)
        self.data_units, self.keys = self.data_units + 1, self.keys + keys
        if self._buffered >= CHUNK_BYTES:
            self._seal()

    def _seal(self) -> None:
        sealed = self._aead.encrypt(
            _nonce(self._chunks), b"".join(self._buffer), _aad(self._digest, self._chunks)
        )
        line = base64.b64encode(sealed) + b"\n"
        self._lines.update(line)
        self._sink(line)
        self._chunks, self._buffer, self._buffered = self._chunks + 1, [], 0

    def close(self) -> None:
        if self._buffer:
            self._seal()
        trailer = {"data_units": self.data_units, "keys": self.keys, "chunks": self._chunks}
        signed = _signed(self._aad, trailer, self._lines.digest())
        signature = transfer._b64(self._identity._sign.sign(signed))
        self._sink(json.dumps({"trailer": trailer, "signature": signature}).encode() + b"\n")


def _signed(aad: bytes, trailer: dict[str, Any], lines: bytes) -> bytes:
    return _SIGNED + aad + b"\n" + transfer._canonical(trailer) + b"\n" + lines


def lines(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a file that comes in pieces (without their ends)."""
    rest = b""
    for piece in pieces:
        rest += piece
        *whole, rest = rest.split(b"\n")
        yield from whole
        if len(rest) > MAX_LINE:
            raise TransferFileRefused("The file is damaged: it is not a readable transfer file.")
    if rest:
        yield rest


def _damaged() -> TransferFileRefused:
    return TransferFileRefused("The file is damaged: it is not a readable transfer file.")


class StreamedFile:
    """A version 2 file read once through (header, trailer, the chunks' hash) but not yet trusted;
    `units` reads it again, a chunk at a time, once `verify` passed."""

    def __init__(self, source: Source, first: dict[str, Any]) -> None:
        header = first.get("header")
        if not isinstance(header, dict):
            raise _damaged()
        self.header, self.aad, self._source = header, transfer._canonical(header), source
        hashed, trailer_line, chunks = hashlib.sha256(), None, 0
        for n, line in enumerate(lines(source())):
            if n == 0:
                continue
            if trailer_line is not None:
                raise _damaged()  # a line after the trailer
            if line.startswith(b"{"):
                trailer_line = line
                continue
            hashed.update(line + b"\n")
            chunks += 1
        try:
            end = json.loads(trailer_line or b"")
            self.trailer, self.signature = end["trailer"], transfer._unb64(end["signature"])
            if not isinstance(self.trailer, dict) or self.trailer.get("chunks") != chunks:
                raise TypeError
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise _damaged() from None
        self._lines = hashed.digest()

    @property
    def sender(self) -> bytes:
        return sender_of(self.header)

    def verify(self, sender: bytes) -> None:
        try:
            ed25519.Ed25519PublicKey.from_public_bytes(sender[:32]).verify(
                self.signature, _signed(self.aad, self.trailer, self._lines)
            )
        except InvalidSignature:
            raise TransferFileRefused(
                "The file's signature does not match its content: it was altered after it was signed."
            ) from None

    def units(self, identity: Identity) -> Iterator[Any]:
        """The data units, a chunk at a time (each a parsed JSON value: the caller checks it)."""
        transfer.check_recipient(identity, self.header)
        try:
            one_time = x25519.X25519PublicKey.from_public_bytes(transfer._unb64(self.header["ephemeral_key"]))
            aead = AESGCM(transfer._file_key(identity._box.exchange(one_time), self.aad, _INFO))
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise _cannot_open() from None
        digest = hashlib.sha256(self.aad).digest()
        for n, line in enumerate(lines(self._source())):
            if n == 0 or line.startswith(b"{"):
                continue
            try:
                plain = aead.decrypt(
                    _nonce(n - 1), base64.b64decode(line, validate=True), _aad(digest, n - 1)
                )
                for unit in plain.splitlines():
                    yield json.loads(unit)
            except (InvalidTag, ValueError, binascii.Error):
                raise _cannot_open() from None


def _cannot_open() -> TransferFileRefused:
    return TransferFileRefused("The file's content cannot be opened with this cluster's key.")


class WholeFile:
    """A version 1 file (one JSON document, one AES-GCM message): read and opened whole."""

    def __init__(self, sealed: transfer.SealedFile) -> None:
        self.sealed, self.header = sealed, sealed.header

    @property
    def sender(self) -> bytes:
        return self.sealed.sender

    def verify(self, sender: bytes) -> None:
        self.sealed.verify(sender)

    def units(self, identity: Identity) -> Iterator[Any]:
        units = identity.open(self.sealed).get("data_units")
        yield from units if isinstance(units, list) else [None]


HEADER_MAX = 64 * 1024  # a version 2 file's first line (its header) is far shorter


def _first_line(source: Source) -> bytes | None:
    """A version 2 file's first line; None when the file does not start with a short line (a
    version 1 file is one long line)."""
    head = b""
    for piece in source():
        head += piece
        if b"\n" in head[:HEADER_MAX]:
            return head.split(b"\n", 1)[0]
        if len(head) > HEADER_MAX:
            return None
    return None


def read(source: Source) -> WholeFile | StreamedFile:
    """A transfer file of a version this KMA reads, its signature not checked yet: version 2 read
    through once; version 1 read whole."""
    try:
        first = _first_line(source)
        document = json.loads(first) if first is not None and first.startswith(b"{") else None
        if isinstance(document, dict) and document.get("version") == VERSION:
            transfer.check_format(document, VERSION)
            return StreamedFile(source, document)
        document = json.loads(b"".join(source()))  # version 1 (or a version this KMA does not read)
        if not isinstance(document, dict):
            raise TypeError
        if document.get("version") != transfer.VERSION:
            transfer.check_format(document, VERSION)  # names the version it is
        return WholeFile(transfer.SealedFile.read(document))
    except (ValueError, TypeError):
        raise _damaged() from None
