"""AES-256-GCM key wrapping: how keys are stored at rest and sent to agents.

A blob is ``nonce (12 bytes) || ciphertext || tag (16 bytes)``. The caller's context string (for
example the key's ID) is authenticated as associated data, so a blob copied to another row or
handed out under another ID fails to unwrap instead of yielding the wrong key.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from kma.crypto.errors import IntegrityError

__all__ = ["NONCE_SIZE", "TAG_SIZE", "WrappingKey", "derive_wrapping_key"]

KEY_SIZE = 32
NONCE_SIZE = 12
TAG_SIZE = 16


class WrappingKey:
    """An AES-256 key-encryption key. Its bytes never appear in ``repr`` (logs, tracebacks)."""

    __slots__ = ("_aead", "_key")

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise ValueError(f"a wrapping key must be {KEY_SIZE} bytes, got {len(key)}")
        self._key = bytes(key)
        self._aead = AESGCM(self._key)

    @classmethod
    def generate(cls) -> WrappingKey:
        """A fresh random key from the OS CSPRNG."""
        return cls(AESGCM.generate_key(bit_length=KEY_SIZE * 8))

    def wrap(self, context: str, plaintext: bytes) -> bytes:
        """Encrypt ``plaintext`` bound to ``context``; a random nonce per call (at our volumes,
        far below the 2^32 messages per key that random 96-bit nonces allow)."""
        nonce = os.urandom(NONCE_SIZE)
        return nonce + self._aead.encrypt(nonce, plaintext, context.encode("utf-8"))

    def unwrap(self, context: str, blob: bytes) -> bytes:
        """Decrypt a blob made by :meth:`wrap` with the same key and context.

        Raises IntegrityError on any failure; the reason is not revealed.
        """
        if len(blob) < NONCE_SIZE + TAG_SIZE:
            raise IntegrityError("wrapped blob is too short")
        try:
            return self._aead.decrypt(blob[:NONCE_SIZE], blob[NONCE_SIZE:], context.encode("utf-8"))
        except InvalidTag:
            raise IntegrityError("wrapped blob failed authentication") from None

    def random(self, size: int) -> bytes:
        """New key material from this master key's generator: the OS CSPRNG here, the token's in
        an HSM (kma/crypto/hsm.py)."""
        return os.urandom(size)

    def raw(self) -> bytes:
        """The key bytes, only so that this key can itself be wrapped under another key."""
        return self._key

    def derive(self, purpose: str) -> WrappingKey:
        """A key for one purpose (the row MACs, the backups), derived from this key's bytes."""
        return derive_wrapping_key(self.raw(), purpose)

    def __repr__(self) -> str:
        return "WrappingKey(<secret>)"


def derive_wrapping_key(root_secret: bytes, purpose: str) -> WrappingKey:
    """Derive a purpose-specific key from the cluster's root secret with HKDF-SHA256.

    ``info = b"kma/" + purpose`` separates uses, so e.g. the master key's key-encryption key and
    any other key derived from the same root secret are independent.
    """
    if len(root_secret) != KEY_SIZE:
        raise ValueError(f"the root secret must be {KEY_SIZE} bytes, got {len(root_secret)}")
    if not purpose:
        raise ValueError("a purpose is required to separate derived keys")
    hkdf = HKDF(
        algorithm=hashes.SHA256(),
        length=KEY_SIZE,
        salt=None,
        info=b"kma/" + purpose.encode("utf-8"),
    )
    return WrappingKey(hkdf.derive(root_secret))
