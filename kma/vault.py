"""The master key while the KMA is unlocked, and nothing at all while it is locked.

The master key wraps every stored key and the CA's private key. It is itself stored only
wrapped: under a key derived from the cluster's root secret (which exists only as M-of-N
Shamir shares sealed by the key split members' passphrases), and, with autonomous unlock on,
under this KMA's local unlock key file.
"""

from __future__ import annotations

import threading

from kma.crypto import WrappingKey, derive_wrapping_key
from kma.errors import KmaLocked

MASTER_CONTEXT = "cluster-master-key"


def wrap_master_for_root(root_secret: bytes, master: WrappingKey) -> bytes:
    return derive_wrapping_key(root_secret, "master-key").wrap(MASTER_CONTEXT, master.raw())


def unwrap_master_with_root(root_secret: bytes, blob: bytes) -> WrappingKey:
    return WrappingKey(derive_wrapping_key(root_secret, "master-key").unwrap(MASTER_CONTEXT, blob))


class Vault:
    def __init__(self) -> None:
        self._master: WrappingKey | None = None
        self._lock = threading.Lock()

    @property
    def locked(self) -> bool:
        return self._master is None

    def master(self) -> WrappingKey:
        master = self._master
        if master is None:
            raise KmaLocked()
        return master

    def unlock(self, master: WrappingKey) -> None:
        with self._lock:
            self._master = master

    def lock(self) -> None:
        with self._lock:
            self._master = None
