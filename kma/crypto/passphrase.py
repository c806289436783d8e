"""Argon2id passphrase hashing (users, enrollment) and key derivation (sealing key split shares).

Parameters are OWASP's Argon2id minimum (19 MiB, 2 passes, 1 lane): strong enough offline, yet a
sign-in stays around tens of milliseconds on a KMA. Passphrases are NFKC-normalised before use, as
NIST SP 800-63B recommends, so the same passphrase typed on different systems still matches.

argon2-cffi rather than `cryptography`'s Argon2id: its C call releases the GIL, so one sign-in
(~25 ms of hashing) does not stall every other request the KMA is serving. Both write the same
PHC strings.
"""

from __future__ import annotations

import unicodedata

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError
from argon2.low_level import hash_secret_raw

__all__ = ["derive_key", "hash_passphrase", "verify_passphrase"]

MEMORY_COST_KIB = 19456
ITERATIONS = 2
LANES = 1
SALT_SIZE = 16
KEY_SIZE = 32


def _material(passphrase: str) -> bytes:
    return unicodedata.normalize("NFKC", passphrase).encode("utf-8")


_HASHER = PasswordHasher(
    time_cost=ITERATIONS,
    memory_cost=MEMORY_COST_KIB,
    parallelism=LANES,
    hash_len=KEY_SIZE,
    salt_len=SALT_SIZE,
    type=Type.ID,
)


def hash_passphrase(passphrase: str) -> str:
    """Return a self-describing PHC string (``$argon2id$v=19$m=...``) to store instead of the
    passphrase; it carries its own salt and parameters so they can be raised later."""
    return _HASHER.hash(_material(passphrase))


def verify_passphrase(passphrase: str, encoded: str) -> bool:
    """Check ``passphrase`` against a stored PHC string.

    Returns False, never raises, for a wrong passphrase or a malformed or foreign encoding, so a
    corrupted row refuses sign-in instead of crashing the request.
    """
    if not encoded.startswith("$argon2id$"):
        return False
    try:
        _HASHER.verify(encoded, _material(passphrase))
    except (VerificationError, InvalidHashError, ValueError):
        return False
    return True


def derive_key(passphrase: str, salt: bytes) -> bytes:
    """Derive a 32-byte key from ``passphrase`` (same Argon2id parameters as the hashes).

    The salt must be random and at least 16 bytes so that identical passphrases of two members
    never give the same key.
    """
    if len(salt) < SALT_SIZE:
        raise ValueError(f"the salt must be at least {SALT_SIZE} bytes, got {len(salt)}")
    return hash_secret_raw(
        _material(passphrase),
        salt,
        time_cost=ITERATIONS,
        memory_cost=MEMORY_COST_KIB,
        parallelism=LANES,
        hash_len=KEY_SIZE,
        type=Type.ID,
    )
