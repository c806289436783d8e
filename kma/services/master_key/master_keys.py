"""Which master key generations this KMA holds, and how a rotation stands (docs/backups.md).

Every unlock goes through `unlock`: what the quorum opens is the newest generation (the cluster's
`master_wrapped_by_root`), what a local unlock key opens is the generation this KMA last took up
(`kmas.master_generation`). While a rotation runs the store also holds the old generation under the
new one and the new under the old (`master_key_generations`), so either opens both. A KMA already
unlocked when a rotation starts elsewhere takes the new generation up with `take_up`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kma.appliance import Appliance
from kma.crypto import CryptoError, WrappingKey
from kma.crypto.generations import FIRST, MasterKeys
from kma.crypto.hsm import HsmMasterKey
from kma.errors import KmaError


def key_context(generation: int) -> str:
    """Generation `generation`'s key under the next one's."""
    return f"master-key-generation:{generation}"


def next_context(generation: int) -> str:
    """Generation `generation + 1`'s key under `generation`'s."""
    return f"master-key-generation:{generation + 1}:from:{generation}"


def current_generation(kma: Appliance) -> int:
    return int(kma.store.scalar("SELECT master_generation FROM cluster") or FIRST)


def open_generations(kma: Appliance, master: WrappingKey, generation: int) -> MasterKeys:
    """Every generation `master` (of `generation`) opens through the store: the newest and, during
    a rotation, the old one. Raises KmaError if `master` is of a generation already destroyed."""
    newest = current_generation(kma)
    row = kma.store.query_one(
        "SELECT key_wrapped, next_wrapped FROM master_key_generations WHERE generation = ?", (newest - 1,)
    )
    return generations_of(master, generation, newest, None if row is None else (bytes(row[0]), bytes(row[1])))


def generations_of(
    master: WrappingKey, generation: int, newest: int, old: tuple[bytes, bytes] | None
) -> MasterKeys:
    """`open_generations` over what a store holds: its newest generation and, during a rotation, the
    old generation's (key_wrapped, next_wrapped)."""
    if isinstance(master, MasterKeys):
        master = master.current
    if isinstance(master, HsmMasterKey):
        master = WrappingKey(master.raw())  # the keys under each other are the unlock keys alone
    try:
        if generation == newest:
            older = (
                {}
                if old is None
                else {newest - 1: WrappingKey(master.unwrap(key_context(newest - 1), old[0]))}
            )
            return MasterKeys(master, newest, older)
        if old is not None and generation == newest - 1:
            new = WrappingKey(master.unwrap(next_context(generation), old[1]))
            return MasterKeys(new, newest, {generation: master})
    except CryptoError:
        raise KmaError(
            f"The master key of generation {generation} does not open generation {newest}."
        ) from None
    raise KmaError(
        f"This KMA's master key is of generation {generation}, which a rotation has "
        f"destroyed (now {newest}): "
        "a quorum of the key split must unlock it."
    )


def unlock(kma: Appliance, master: WrappingKey, generation: int | None = None) -> None:
    """Open the vault with `master`, of `generation` (None: the newest, as the quorum opens it)."""
    if generation is None:
        generation = master.generation if isinstance(master, MasterKeys) else current_generation(kma)
    keys = open_generations(kma, master, generation)
    kma.vault.unlock(keys.current, keys.generation, keys.older)
    # A blob or a row MAC of a generation taken up on another KMA first has the vault take it up too
    kma.vault.take_up = lambda: take_up(kma)


def take_up(kma: Appliance) -> bool:
    """Hold the generations the store says are needed now (a rotation started, or ended, on
    another KMA); True when they changed. Only on an unlocked KMA."""
    held = kma.vault.master()
    newest = current_generation(kma)
    needed = {newest} | {
        int(r[0])
        for r in kma.store.query(
            "SELECT generation FROM master_key_generations WHERE generation = ?", (newest - 1,)
        )
    }
    if needed == {held.generation, *held.older}:
        return False
    keys = open_generations(kma, held, held.generation)
    kma.vault.unlock(keys.current, keys.generation, keys.older)
    return True


def kmas_waiting(kma: Appliance, generation: int) -> list[str]:
    """The KMAs of the cluster (witnesses and entries not joined yet aside) that have not taken up
    `generation`: a KMA down or locked may still hold only the old one."""
    return [
        r[0]
        for r in kma.store.query(
            "SELECT id FROM kmas WHERE master_generation < ? AND removed_at IS NULL AND awaiting_join = 0 "
            "AND witness = 0 ORDER BY id",
            (generation,),
        )
    ]


@dataclass(frozen=True)
class MasterKeyRotationRow:
    """A master key rotation, under way or the last one (times in seconds since the epoch)."""

    to_generation: int
    op_id: str
    started_at: int
    started_by: str
    finished_at: int | None
    blobs_total: int  # blobs under the old generation when it started
    blobs_done: int
    percent: int  # 100 once ended
    kmas_waiting: list[str]  # KMAs that have not taken the new generation up yet (down or locked)


@dataclass(frozen=True)
class MasterKeyRow:
    """The master key's generation and its rotation; the API's `MasterKeyState` reads it (the route
    adds why a rotation cannot start now: `rotation_refused`)."""

    generation: int  # 1: never rotated
    rotating: bool
    rotation: MasterKeyRotationRow | None  # the one under way, else the last one; None: never rotated


def get_master_key(kma: Appliance) -> MasterKeyRow:
    """The master key's generation and the rotation under way (or the last one), for the dashboard,
    `kma status`, /metrics and the Cluster page."""
    generation = current_generation(kma)
    row = kma.store.query_one("SELECT * FROM master_key_rotations ORDER BY to_generation DESC LIMIT 1")
    waiting = kmas_waiting(kma, generation)
    if row is None:
        return MasterKeyRow(generation, False, None)
    total, done = int(row["blobs_total"]), int(row["blobs_done"])
    running = row["finished_at"] is None
    rotation = MasterKeyRotationRow(
        to_generation=row["to_generation"],
        op_id=row["op_id"],
        started_at=row["started_at"],
        started_by=row["started_by"],
        finished_at=row["finished_at"],
        blobs_total=total,
        blobs_done=min(done, total),
        percent=100 if not running else (min(99, done * 100 // total) if total else 99),
        kmas_waiting=waiting if running else [],
    )
    return MasterKeyRow(generation, running, rotation)


def describe(state: MasterKeyRow) -> str:
    """One line for `kma status` and the dashboard."""
    rotation = state.rotation
    if not state.rotating or rotation is None:
        return f"master key generation {state.generation}" + (" (rotated)" if rotation else "")
    line = (
        f"master key rotation to generation {rotation.to_generation}: {rotation.percent}% "
        f"({rotation.blobs_done} of {rotation.blobs_total} blobs re-wrapped)"
    )
    if rotation.kmas_waiting:
        line += f"; waiting for KMA {', '.join(rotation.kmas_waiting)} to take the new generation"
    return line
