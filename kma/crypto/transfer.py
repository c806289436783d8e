"""Transfer files: keys of data units sent to a partner cluster, wrapped so that only the partner
opens them and signed so that the partner knows who sent them (docs/transfer.md, format version 1).

A cluster's transfer identity is two key pairs: Ed25519 (it signs the files it sends) and X25519
(files for it are wrapped to it). Its public half, 64 bytes, is what two clusters exchange; its
fingerprint (SHA-256 of those bytes, in groups of four hex digits) is what two people read to each
other on the phone before a Security Officer registers the partner.

A file is one JSON document: a header in clear (who sends, for whom, when it expires, the sender's
one-time X25519 key), the payload encrypted with AES-256-GCM under a key derived (HKDF-SHA256) from
the X25519 agreement of that one-time key with the partner's key, the header as associated data,
and the sender's Ed25519 signature over the header and the ciphertext. No part of it can be changed,
moved to another recipient or attributed to another sender without a check failing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, x25519
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

FORMAT = "kms-transfer-file"
VERSION = 1
IDENTITY_PREFIX = "kms-transfer-identity-v1:"
PRIVATE_CONTEXT = "transfer-identity"  # the private half, wrapped under the master key
_RAW = (serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class TransferFileRefused(Exception):
    """A file that is not a well-formed, intact, signed transfer file: the reason is the message."""


def fingerprint(public_identity: bytes) -> str:
    """``3F2A 9B10 ...``: SHA-256 of the 64 public bytes, sixteen groups to read aloud."""
    digest = hashlib.sha256(public_identity).hexdigest().upper()
    return " ".join(digest[i : i + 4] for i in range(0, len(digest), 4))


def identity_text(public_identity: bytes) -> str:
    """The one line a cluster gives its partners (by e-mail, on paper: it is public)."""
    return IDENTITY_PREFIX + base64.urlsafe_b64encode(public_identity).decode()


def parse_identity(text: str) -> bytes:
    """The 64 public bytes of an identity line; ValueError with what is wrong."""
    text = text.strip()
    if not text.startswith(IDENTITY_PREFIX):
        raise ValueError(f"A transfer identity starts with '{IDENTITY_PREFIX}'.")
    try:
        raw = base64.urlsafe_b64decode(text[len(IDENTITY_PREFIX) :].encode())
    except ValueError:
        raise ValueError("The transfer identity is not valid base64.") from None
    if len(raw) != 64:
        raise ValueError("A transfer identity holds 64 bytes (two public keys).")
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(raw[:32])
        x25519.X25519PublicKey.from_public_bytes(raw[32:])
    except ValueError:
        raise ValueError("The transfer identity does not hold two valid public keys.") from None
    return raw


@dataclass(frozen=True)
class Identity:
    """This cluster's identity, unwrapped (only while the KMA is unlocked)."""

    private_raw: bytes = field(repr=False)  # Ed25519 private (32) || X25519 private (32)

    @classmethod
    def generate(cls) -> Identity:
        sign = ed25519.Ed25519PrivateKey.generate().private_bytes_raw()
        box = x25519.X25519PrivateKey.generate().private_bytes_raw()
        return cls(sign + box)

    @property
    def _sign(self) -> ed25519.Ed25519PrivateKey:
        return ed25519.Ed25519PrivateKey.from_private_bytes(self.private_raw[:32])

    @property
    def _box(self) -> x25519.X25519PrivateKey:
        return x25519.X25519PrivateKey.from_private_bytes(self.private_raw[32:])

    @property
    def public(self) -> bytes:
        return self._sign.public_key().public_bytes(*_RAW) + self._box.public_key().public_bytes(*_RAW)

    def seal(self, recipient: bytes, header: dict[str, Any], payload: dict[str, Any] | bytes) -> bytes:
        """The file for `recipient` (its 64 public bytes): `header` (file_id, times...) is
        completed with the sender, recipient and one-time key, then signed. `payload`: the
        payload, or its JSON encoded already (a large export encodes it a data unit at a time)."""
        one_time = x25519.X25519PrivateKey.generate()
        full = {
            **header,
            "sender": identity_text(self.public),
            "recipient_fingerprint": fingerprint(recipient),
            "ephemeral_key": _b64(one_time.public_key().public_bytes(*_RAW)),
        }
        aad = _canonical(full)
        key = _file_key(one_time.exchange(x25519.X25519PublicKey.from_public_bytes(recipient[32:])), aad)
        nonce = os.urandom(12)
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        ciphertext = nonce + AESGCM(key).encrypt(nonce, body, aad)
        signature = self._sign.sign(_signed(aad, ciphertext))
        document = {
            "format": FORMAT,
            "version": VERSION,
            "header": full,
            "ciphertext": _b64(ciphertext),
            "signature": _b64(signature),
        }
        return json.dumps(document).encode()

    def open(self, sealed: SealedFile) -> dict[str, Any]:
        """The payload of a file whose signature `sealed.verify` checked, for this identity."""
        check_recipient(self, sealed.header)
        try:
            one_time = x25519.X25519PublicKey.from_public_bytes(_unb64(sealed.header["ephemeral_key"]))
            key = _file_key(self._box.exchange(one_time), sealed.aad)
            nonce, body = sealed.ciphertext[:12], sealed.ciphertext[12:]
            payload: dict[str, Any] = json.loads(AESGCM(key).decrypt(nonce, body, sealed.aad))
        except (InvalidTag, ValueError, KeyError, TypeError):
            raise TransferFileRefused(
                "The file's content cannot be opened with this cluster's key."
            ) from None
        return payload


@dataclass(frozen=True)
class SealedFile:
    """A transfer file read but not yet trusted."""

    header: dict[str, Any]
    aad: bytes
    ciphertext: bytes
    signature: bytes

    @classmethod
    def read(cls, data: bytes | dict[str, Any]) -> SealedFile:
        """A version 1 file (its bytes, or its document parsed already)."""
        try:
            document = json.loads(data) if isinstance(data, bytes) else data
            check_format(document, VERSION)
            header = document["header"]
            if not isinstance(header, dict):
                raise TypeError
            return cls(
                header, _canonical(header), _unb64(document["ciphertext"]), _unb64(document["signature"])
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            raise TransferFileRefused("The file is damaged: it is not a readable transfer file.") from None

    @property
    def sender(self) -> bytes:
        return sender_of(self.header)

    def verify(self, sender: bytes) -> None:
        """Raises unless `sender`'s signing key signed this very header and ciphertext."""
        try:
            ed25519.Ed25519PublicKey.from_public_bytes(sender[:32]).verify(
                self.signature, _signed(self.aad, self.ciphertext)
            )
        except InvalidSignature:
            raise TransferFileRefused(
                "The file's signature does not match its content: it was altered after it was signed."
            ) from None


def sender_of(header: dict[str, Any]) -> bytes:
    """The public identity a file's header names as its sender (every format version names it)."""
    try:
        return parse_identity(str(header["sender"]))
    except (KeyError, ValueError):
        raise TransferFileRefused("The file does not name its sender.") from None


def check_recipient(identity: Identity, header: dict[str, Any]) -> None:
    """Refuses a file whose header names another cluster as its recipient."""
    if header.get("recipient_fingerprint") != fingerprint(identity.public):
        meant_for, here = header.get("recipient_fingerprint"), fingerprint(identity.public)
        raise TransferFileRefused(
            f"The file is meant for another cluster (recipient {meant_for}; this cluster is {here})."
        )


READS = (1, 2)  # the format versions this KMA reads


def check_format(document: Any, version: int) -> None:
    """Refuses what is not a transfer file, or one of a version this KMA does not read (naming it)."""
    if document.get("format") != FORMAT:
        raise TransferFileRefused("This is not a transfer file.")
    if document.get("version") not in READS:
        raise TransferFileRefused(
            f"The file is of transfer format version {document.get('version')}; this KMA reads versions "
            f"{', '.join(map(str, READS))}."
        )
    if document.get("version") != version:
        raise TransferFileRefused(f"The file is not of transfer format version {version}.")


def _file_key(shared: bytes, aad: bytes, info_prefix: bytes = b"kms-transfer-file v1 ") -> bytes:
    info = info_prefix + hashlib.sha256(aad).digest()
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)


def _signed(aad: bytes, ciphertext: bytes) -> bytes:
    return b"kms-transfer-file v1\n" + aad + b"\n" + hashlib.sha256(ciphertext).digest()


def _canonical(header: dict[str, Any]) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)
