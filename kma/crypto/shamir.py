"""M-of-N splitting of the cluster's 32-byte root secret (the key split credentials).

pycryptodome's Shamir works in GF(2^128), i.e. on 16-byte blocks, so each half of the secret is
split separately with the same share indexes and the two halves of every share are concatenated.
Shamir shares carry no integrity: combining the wrong shares silently yields a wrong secret, so
callers must check the result (e.g. by unwrapping something with a key derived from it).
"""

from __future__ import annotations

from collections.abc import Sequence

from Crypto.Protocol.SecretSharing import Shamir

__all__ = ["MAX_SHARES", "SECRET_SIZE", "combine_shares", "split_secret"]

SECRET_SIZE = 32
MAX_SHARES = 10  # the domain allows at most 10 key split members
_HALF = SECRET_SIZE // 2


def split_secret(secret: bytes, threshold: int, shares: int) -> list[tuple[int, bytes]]:
    """Split ``secret`` into ``shares`` 32-byte shares (indexes 1..N), any ``threshold`` of which
    reconstruct it.

    With ``threshold == 1`` the polynomial is constant, so every share *is* the secret: that is
    what 1-of-N means (any single member unlocks alone), not a weakness of the implementation.
    """
    if len(secret) != SECRET_SIZE:
        raise ValueError(f"the root secret must be {SECRET_SIZE} bytes, got {len(secret)}")
    if threshold < 1:
        raise ValueError(f"the threshold must be at least 1, got {threshold}")
    if shares > MAX_SHARES:
        raise ValueError(f"at most {MAX_SHARES} key split members are allowed, got {shares}")
    if threshold > shares:
        raise ValueError(f"the threshold ({threshold}) cannot exceed the number of shares ({shares})")
    low = Shamir.split(threshold, shares, secret[:_HALF])
    high = Shamir.split(threshold, shares, secret[_HALF:])
    return [(index, lo + hi) for (index, lo), (_, hi) in zip(low, high, strict=True)]


def combine_shares(shares: Sequence[tuple[int, bytes]]) -> bytes:
    """Reconstruct the root secret from at least ``threshold`` distinct shares.

    Fewer shares than the threshold give a wrong value without any error (see module docstring).
    """
    if not shares:
        raise ValueError("at least one share is needed")
    seen: set[int] = set()
    for index, value in shares:
        if not 1 <= index <= MAX_SHARES:
            raise ValueError(f"share index must be between 1 and {MAX_SHARES}, got {index}")
        if len(value) != SECRET_SIZE:
            raise ValueError(f"share {index} must be {SECRET_SIZE} bytes, got {len(value)}")
        if index in seen:
            raise ValueError(f"share {index} was given more than once")
        seen.add(index)
    low = Shamir.combine([(index, value[:_HALF]) for index, value in shares])
    high = Shamir.combine([(index, value[_HALF:]) for index, value in shares])
    return low + high
