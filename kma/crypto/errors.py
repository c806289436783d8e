"""Exceptions raised by :mod:`kma.crypto`.

One base class lets the service layer turn any cryptographic failure into a generic client error
while the detail goes to the log and the audit trail.
"""

from __future__ import annotations

__all__ = ["BadPassphrase", "CryptoError", "IntegrityError"]


class CryptoError(Exception):
    """A cryptographic operation failed or was given malformed input."""


class BadPassphrase(CryptoError):
    """The passphrase is wrong, or the sealed item belongs to someone else.

    The two cases are deliberately indistinguishable: telling them apart would help an attacker.
    """


class IntegrityError(CryptoError):
    """A wrapped blob failed authentication: tampered, truncated, wrong key or wrong context."""
