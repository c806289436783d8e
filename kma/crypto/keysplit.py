"""A key split member's share, sealed under that member's passphrase for storage on the KMA.

Format: ``"kss1:" + base64url(salt[16] | index[1] | nonce[12] | AES-GCM(share)[48])``, ASCII only,
so it fits a text column or a JSON field. The associated data binds the format version, salt,
index and member name: a sealed share cannot be relabelled with another index or presented as
another member's, and either attempt looks exactly like a wrong passphrase.
"""

from __future__ import annotations

import base64
import binascii
import os
import unicodedata

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kma.crypto.errors import BadPassphrase, CryptoError
from kma.crypto.passphrase import SALT_SIZE, derive_key
from kma.crypto.shamir import MAX_SHARES, SECRET_SIZE

__all__ = ["open_share", "seal_share"]

_PREFIX = "kss1:"
_AD_LABEL = b"kma/keysplit/v1\x00"
_NONCE_SIZE = 12
_TAG_SIZE = 16
_BODY_SIZE = SALT_SIZE + 1 + _NONCE_SIZE + SECRET_SIZE + _TAG_SIZE


def _associated_data(salt: bytes, index: int, member_name: str) -> bytes:
    # Fixed-size fields first, the variable-length name last: the encoding is unambiguous.
    name = unicodedata.normalize("NFC", member_name).encode("utf-8")
    return _AD_LABEL + salt + bytes([index]) + name


def seal_share(share: tuple[int, bytes], member_name: str, passphrase: str) -> str:
    """Encrypt ``share`` under a key derived from ``passphrase`` with a fresh random salt."""
    index, value = share
    if not 1 <= index <= MAX_SHARES:
        raise ValueError(f"share index must be between 1 and {MAX_SHARES}, got {index}")
    if len(value) != SECRET_SIZE:
        raise ValueError(f"a share must be {SECRET_SIZE} bytes, got {len(value)}")
    if not member_name:
        raise ValueError("a member name is required")
    salt = os.urandom(SALT_SIZE)
    nonce = os.urandom(_NONCE_SIZE)
    sealed = AESGCM(derive_key(passphrase, salt)).encrypt(
        nonce, value, _associated_data(salt, index, member_name)
    )
    body = salt + bytes([index]) + nonce + sealed
    return _PREFIX + base64.urlsafe_b64encode(body).decode("ascii").rstrip("=")


def _decode(sealed: str) -> bytes:
    if not sealed.startswith(_PREFIX):
        raise CryptoError("not a sealed key split share (unknown format or version)")
    text = sealed[len(_PREFIX) :]
    try:
        body = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise CryptoError("sealed key split share is not valid base64") from None
    if len(body) != _BODY_SIZE:
        raise CryptoError("sealed key split share has the wrong length")
    return body


def open_share(sealed: str, member_name: str, passphrase: str) -> tuple[int, bytes]:
    """Recover ``(index, share)`` sealed by :func:`seal_share` for ``member_name``.

    Raises BadPassphrase for a wrong passphrase, another member's blob or a tampered one (AES-GCM
    cannot tell these apart), CryptoError for input that is not a sealed share at all.
    """
    body = _decode(sealed)
    salt = body[:SALT_SIZE]
    index = body[SALT_SIZE]
    nonce = body[SALT_SIZE + 1 : SALT_SIZE + 1 + _NONCE_SIZE]
    ciphertext = body[SALT_SIZE + 1 + _NONCE_SIZE :]
    if not 1 <= index <= MAX_SHARES:
        raise CryptoError(f"sealed key split share has an invalid index {index}")
    try:
        value = AESGCM(derive_key(passphrase, salt)).decrypt(
            nonce, ciphertext, _associated_data(salt, index, member_name)
        )
    except InvalidTag:
        raise BadPassphrase("wrong passphrase for this key split member") from None
    return index, value
