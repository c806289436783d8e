"""Argon2id passphrase hashing (users, enrollment) and key derivation (sealing key split shares).

Parameters are OWASP's Argon2id minimum (19 MiB, 2 passes, 1 lane): strong enough offline, yet a
sign-in stays around tens of milliseconds on a KMA. Passphrases are NFKC-normalised before use, as
NIST SP 800-63B recommends, so the same passphrase typed on different systems still matches.
"""

from __future__ import annotations

import os
import unicodedata

from cryptography.exceptions import InvalidKey
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

__all__ = ["derive_key", "hash_passphrase", "verify_passphrase"]

MEMORY_COST_KIB = 19456
ITERATIONS = 2
LANES = 1
SALT_SIZE = 16
KEY_SIZE = 32


def _material(passphrase: str) -> bytes:
    return unicodedata.normalize("NFKC", passphrase).encode("utf-8")


def _kdf(salt: bytes) -> Argon2id:
    return Argon2id(
        salt=salt,
        length=KEY_SIZE,
        iterations=ITERATIONS,
        lanes=LANES,
        memory_cost=MEMORY_COST_KIB,
    )


def hash_passphrase(passphrase: str) -> str:
    """Return a self-describing PHC string (``$argon2id$v=19$m=...``) to store instead of the
    passphrase; it carries its own salt and parameters so they can be raised later."""
    return _kdf(os.urandom(SALT_SIZE)).derive_phc_encoded(_material(passphrase))


def verify_passphrase(passphrase: str, encoded: str) -> bool:
    """Check ``passphrase`` against a stored PHC string.

    Returns False, never raises, for a wrong passphrase or a malformed or foreign encoding, so a
    corrupted row refuses sign-in instead of crashing the request.
    """
    if not encoded.startswith("$argon2id$"):
        return False
    try:
        Argon2id.verify_phc_encoded(_material(passphrase), encoded)
    except (InvalidKey, ValueError, OverflowError):
        return False
    return True


def derive_key(passphrase: str, salt: bytes) -> bytes:
    """Derive a 32-byte key from ``passphrase`` (same Argon2id parameters as the hashes).

    The salt must be random and at least 16 bytes so that identical passphrases of two members
    never give the same key.
    """
    if len(salt) < SALT_SIZE:
        raise ValueError(f"the salt must be at least {SALT_SIZE} bytes, got {len(salt)}")
    return _kdf(salt).derive(_material(passphrase))
