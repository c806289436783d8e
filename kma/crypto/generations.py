"""Master key generations: which master key opens a blob, while a rotation re-wraps them all.

A rotation (kma/services/quorum/master_rotation.py) makes generation N+1 and re-wraps every blob
of generation N in the background; until it ends both are needed, so every blob says its own
generation. Generation 1 (every KMA before rotations existed) keeps the plain format
``nonce || ciphertext || tag``; a later generation's blob is ``b"KMG" || generation (2 bytes) ||``
that. A generation-1 blob that happens to start with those bytes is still opened: a header whose
generation does not authenticate falls back to generation 1, and AES-GCM tells them apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kma.crypto.envelope import WrappingKey
from kma.crypto.errors import IntegrityError

MAGIC = b"KMG"
HEADER_SIZE = len(MAGIC) + 2
FIRST = 1


def header(generation: int) -> bytes:
    """What a blob of `generation` starts with (nothing for the first: the old format)."""
    return b"" if generation == FIRST else MAGIC + generation.to_bytes(2, "big")


def generation_of(blob: bytes) -> int:
    """The generation a blob names (FIRST for the old format)."""
    if len(blob) > HEADER_SIZE and blob.startswith(MAGIC):
        return int.from_bytes(blob[len(MAGIC) : HEADER_SIZE], "big")
    return FIRST


class MasterKeys(WrappingKey):
    """The master key of the current generation (which wraps) and the older ones still needed
    (which only unwrap). ``raw``, ``derive`` and ``random`` are the current generation's.

    `catch_up` (the vault's): when a blob is of the generation after the current one (a rotation
    started on another KMA wrapped it before this one took the new generation up), the generations
    held once taken up now, or None; the blob is then opened with those."""

    __slots__ = ("catch_up", "current", "generation", "older")

    def __init__(
        self,
        current: WrappingKey,
        generation: int,
        older: Mapping[int, WrappingKey] | None = None,
        catch_up: Callable[[int], MasterKeys | None] | None = None,
    ) -> None:
        self.current: WrappingKey = current.current if isinstance(current, MasterKeys) else current
        self.generation: int = generation
        self.older: dict[int, WrappingKey] = dict(older or {})
        self.catch_up = catch_up

    def key(self, generation: int) -> WrappingKey | None:
        return self.current if generation == self.generation else self.older.get(generation)

    def keys(self) -> list[WrappingKey]:
        """Every generation held, the current first."""
        return [self.current, *(self.older[g] for g in sorted(self.older, reverse=True))]

    def wrap(self, context: str, plaintext: bytes) -> bytes:
        return header(self.generation) + self.current.wrap(context, plaintext)

    def unwrap(self, context: str, blob: bytes) -> bytes:
        generation = generation_of(blob)
        if generation == self.generation + 1 and self.catch_up is not None:
            newer = self.catch_up(generation)
            if newer is not None and newer.key(generation) is not None:
                return newer.unwrap(context, blob)
        if generation != FIRST:
            key = self.key(generation)
            if key is not None:
                try:
                    return key.unwrap(context, blob[HEADER_SIZE:])
                except IntegrityError:
                    pass  # maybe a first-generation blob whose nonce starts with the magic
        first = self.key(FIRST)
        if first is None:
            raise IntegrityError(
                f"the blob is of master key generation {generation}, which this KMA does not hold"
            )
        return first.unwrap(context, blob)

    def random(self, size: int) -> bytes:
        return self.current.random(size)

    def raw(self) -> bytes:
        return self.current.raw()

    def derive(self, purpose: str) -> WrappingKey:
        return self.current.derive(purpose)

    def __repr__(self) -> str:
        return f"MasterKeys(<secret>, generation {self.generation}, older {sorted(self.older)})"
