"""How a pending quorum operation holds the shares of the members who approved it.

At the M-th approval the root secret must be rebuilt from M shares, but the approvals come one
at a time, hours apart, from different people. A share must therefore be held between its
approval and the operation's end, and it is never held in the clear:

1. On approval the member's sealed share is opened with their passphrase (Argon2id + AES-GCM);
   a wrong passphrase is refused and audited, and nothing is stored.
2. The share is re-sealed (AES-256-GCM, associated data = operation ID and member name) under a
   random *escrow key* made for that one operation, and stored in
   `quorum_approvals.share_escrowed`. A share cannot be moved to another operation or member.
3. The escrow key is held:
   - `master`: wrapped under the cluster master key (`pending_quorum_ops.escrow_wrapped`), when
     the KMA was unlocked at submission. The operation survives a restart, and only a KMA holding
     this cluster's master key can combine its shares.
   - `memory`: in this process's memory only, for an unlock submitted while the KMA is locked
     (there is no master key then, and any key on this KMA's disk would sit beside the
     ciphertext). A restart loses it; the operation then fails and is submitted again.
4. When the operation ends (executed, expired, deleted, failed) a trigger in the store NULLs
   every escrowed share and the wrapped escrow key in the same transaction as the state change.

What this buys: a copy of the database alone (without the master key) yields no share, nor does
a database plus files of a KMA without autonomous unlock. Residual risk, accepted: with
autonomous unlock on, the data directory holds the master key, so it opens the escrowed shares of
operations pending at the time of the copy (at most M-1 per operation, and one unlock per KMA at
a time); SQLite may keep wiped bytes in free pages or the WAL until overwritten; and Python
cannot scrub the bytes objects that briefly hold a clear share in memory.
"""

from __future__ import annotations

import threading

from kma.appliance import Appliance
from kma.crypto import CryptoError, WrappingKey
from kma.errors import Conflict, KmaLocked
from kma.services.quorum.key_split import Share

MASTER, MEMORY = "master", "memory"


class Memory:
    """The escrow keys this KMA holds in memory only (`MEMORY`), by operation ID: gone when its
    process ends."""

    def __init__(self, kma: Appliance) -> None:
        self.lock = threading.Lock()
        self.keys: dict[str, WrappingKey] = {}


def _memory(kma: Appliance) -> Memory:
    return kma.part(Memory)


class EscrowLost(Conflict):
    """The operation's escrow key was only in the memory of a KMA process that has since ended."""


def _context(op_id: str) -> str:
    return f"quorum-escrow:{op_id}"


def new_escrow(kma: Appliance, op_id: str) -> tuple[WrappingKey, str, bytes | None]:
    """A fresh escrow key for `op_id`: (key, holder, key wrapped under the master key or None)."""
    key = WrappingKey.generate()
    if kma.vault.locked:
        memory = _memory(kma)
        with memory.lock:
            memory.keys[op_id] = key
        return key, MEMORY, None
    return key, MASTER, kma.vault.master().wrap(_context(op_id), key.raw())


def escrow_key(kma: Appliance, op_id: str, holder: str | None, wrapped: bytes | None) -> WrappingKey:
    if holder == MASTER and wrapped is not None:
        if kma.vault.locked:
            raise KmaLocked(
                "This KMA is locked, and the approvals of this quorum operation are held under "
                "the master key: unlock the KMA first."
            )
        try:
            return WrappingKey(kma.vault.master().unwrap(_context(op_id), wrapped))
        except (CryptoError, ValueError):
            raise EscrowLost("The approvals of this quorum operation cannot be opened.") from None
    key = in_memory(kma, op_id) if holder == MEMORY else None
    if key is None:
        raise EscrowLost(
            "The approvals of this quorum operation were held in the memory of a KMA process "
            "that has since restarted; submit the operation again."
        )
    return key


def in_memory(kma: Appliance, op_id: str) -> WrappingKey | None:
    memory = _memory(kma)
    with memory.lock:
        return memory.keys.get(op_id)


def forget(kma: Appliance, op_id: str) -> None:
    memory = _memory(kma)
    with memory.lock:
        memory.keys.pop(op_id, None)


def _share_context(op_id: str, member: str) -> str:
    return f"quorum-share:{op_id}:{member}"


def seal(key: WrappingKey, op_id: str, member: str, share: Share) -> bytes:
    return seal_share(key, _share_context(op_id, member), share)


def unseal(key: WrappingKey, op_id: str, member: str, blob: bytes) -> Share:
    return unseal_share(key, _share_context(op_id, member), blob)


def seal_share(key: WrappingKey, context: str, share: Share) -> bytes:
    """A share wrapped under `key`, bound to `context` so it opens only where it was sealed."""
    index, value = share
    return key.wrap(context, bytes([index]) + value)


def unseal_share(key: WrappingKey, context: str, blob: bytes) -> Share:
    raw = key.unwrap(context, blob)
    return raw[0], raw[1:]
