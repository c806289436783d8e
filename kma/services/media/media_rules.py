"""The media rules a drive's write key is judged by, on the agent path (docs/media.md).

Before a key is given for writing a tape, the KMA asks: which media pool the volser belongs to
(never encrypted, read only, bound to a key group, or none), whether the drive's generation can
write what is on the tape (an append, or a write from BOT), and whether a tape whose keys were all
destroyed is being reused without a relabel. A refusal is answered with what the library's
operator must do, audited within a rate per listener (a library retrying a mount must not flood
the trail), and counted by reason for the dashboard.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from kma.appliance import Appliance
from kma.domain import media
from kma.domain.lifecycle import DATA_UNIT_SHREDDED
from kma.domain.media import GenerationRule, Unmatched
from kma.services.media.media_pools import pools_of, settings_now
from kma.services.refusals import RefusalThrottle

DRIVE_TTL = 1.0  # seconds a drive's generation is kept on the agent path


class Refusal(StrEnum):
    """Why a write key was refused: the dashboard's counts are by these."""

    TWO_POOLS = "two_pools"
    NEVER_ENCRYPTED = "never_encrypted"
    READ_ONLY = "read_only"
    NO_POOL = "no_pool"
    KEY_GROUP = "key_group"
    GENERATION = "generation"
    RELABEL = "relabel"


# Refusals of known drives are audited, but a library retries a refused mount at its own pace:
# at most PER_SECOND a second one by one, the rest in a summary (kma/services/refusals.py).
THROTTLE = RefusalThrottle("kmip.media_refusals", "media refusals of write keys")


@dataclass
class Verdict:
    """What the rules say about one write: a refusal, or the key group to use and what to note."""

    pool: str | None = None
    group: str | None = None  # the pool's key group, when it is bound to one
    drive: str | None = None  # the drive's generation, when it has one
    refusal: Refusal | None = None
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    records: bool = False  # the write is to record the drive's generation as the tape's writer

    def note(self) -> str:
        """For the audit message of the write key served."""
        said = f" (media pool '{self.pool}')" if self.pool else ""
        if self.drive:
            said += f"; drive generation {self.drive}"
        return said + "".join(f"; warning: {w}" for w in self.warnings)


class MediaRefusals:
    """This KMA's refusals by reason since it started (a KMA part)."""

    def __init__(self, kma: Appliance) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._drives: dict[str, tuple[str | None, float]] = {}
        self.kma = kma
        self.since = kma.clock.now()
        self.published: dict[str, int] | None = None  # what the cluster's store holds of these

    def count(self, reason: Refusal) -> None:
        with self._lock:
            self._counts[reason] += 1

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {str(r): self._counts[r] for r in Refusal}

    def drive_generation(self, agent_id: str) -> str | None:
        with self._lock:
            known = self._drives.get(agent_id)
        if known is not None and time.monotonic() - known[1] < DRIVE_TTL:
            return known[0]
        generation = self.kma.store.scalar("SELECT drive_generation FROM agents WHERE id = ?", (agent_id,))
        with self._lock:
            self._drives[agent_id] = (generation, time.monotonic())
        return generation  # type: ignore[no-any-return]


def _refused(verdict: Verdict, reason: Refusal, message: str) -> Verdict:
    verdict.refusal, verdict.message = reason, message
    return verdict


def _pool_rules(
    kma: Appliance, verdict: Verdict, volser: str, groups: frozenset[str], asked: str | None
) -> None:
    pools = pools_of(kma, volser)
    if len(pools) > 1:
        names = " and ".join(f"'{p.id}'" for p in pools[:3])
        _refused(
            verdict, Refusal.TWO_POOLS, f"volser '{volser}' is in media pools {names}: a tape belongs to one"
        )
        return
    if not pools:
        unmatched = settings_now(kma)[0]
        said = f"volser '{volser}' is in no media pool"
        if unmatched == Unmatched.REFUSE:
            _refused(verdict, Refusal.NO_POOL, f"{said}; this cluster encrypts only tapes of its media pools")
        elif unmatched == Unmatched.WARN:
            verdict.warnings.append(said)
        return
    pool = pools[0]
    verdict.pool = pool.id
    if pool.never_encrypted:
        _refused(
            verdict,
            Refusal.NEVER_ENCRYPTED,
            f"volser '{volser}' is in media pool '{pool.id}', which is never encrypted: load it in a "
            "drive that does not encrypt, or give the job a tape of an encrypted pool",
        )
    elif pool.read_only:
        _refused(
            verdict,
            Refusal.READ_ONLY,
            f"volser '{volser}' is in media pool '{pool.id}', which is read only (its tapes are read, "
            "never written): give the job a scratch tape of a pool that is written",
        )
    elif pool.key_group_id is not None:
        verdict.group = pool.key_group_id
        if (asked and asked != pool.key_group_id) or pool.key_group_id not in groups:
            _refused(
                verdict,
                Refusal.KEY_GROUP,
                f"volser '{volser}' is in media pool '{pool.id}', whose keys are in key group "
                f"'{pool.key_group_id}', which this drive may not use",
            )


def _generation_rules(
    kma: Appliance, verdict: Verdict, volser: str, written: str | None, from_bot: bool
) -> None:
    drive = verdict.drive
    if drive is None:
        return
    # an unknown writer is judged by the cartridge alone: the KMA does not guess who wrote it
    if from_bot or written is None:
        why = media.bot_refusal(drive, volser)
    else:
        why = media.append_refusal(drive, written)
    verdict.records = from_bot or written is None
    if why is None:
        return
    if settings_now(kma)[1] == GenerationRule.REFUSE:
        then = "" if from_bot else "; write it from BOT (relabel) to reuse it"
        _refused(verdict, Refusal.GENERATION, f"tape '{volser}': {why}{then}")
    else:
        verdict.warnings.append(f"tape '{volser}': {why}")


def judge_write(
    kma: Appliance,
    agent_id: str,
    groups: frozenset[str],
    volser: str,
    asked_group: str | None,
    from_bot: bool,
) -> Verdict:
    """The rules on one write key: `from_bot` for a write from the beginning of tape (a relabel,
    or a new key in the Tape Library Profile's Create), else an append."""
    verdict = Verdict(drive=kma.part(MediaRefusals).drive_generation(agent_id))
    _pool_rules(kma, verdict, volser, groups, asked_group)
    if verdict.refusal is not None:
        return verdict
    unit = kma.store.query_one(
        f"SELECT writer_generation, {DATA_UNIT_SHREDDED} AS shredded FROM data_units WHERE id = :id",
        {"id": volser},
    )
    if unit is not None and unit["shredded"] and not from_bot:
        return _refused(
            verdict,
            Refusal.RELABEL,
            f"every key of tape '{volser}' was destroyed: relabel it (write from BOT, overwrite existing "
            "labels) before it is reused",
        )
    _generation_rules(kma, verdict, volser, unit["writer_generation"] if unit else None, from_bot)
    return verdict


def writer_recorded(volser: str, drive: str, from_bot: bool) -> tuple[str, tuple[str, ...]]:
    """SQL recording the drive generation that wrote the tape: always from BOT; on a first write
    only when none is recorded yet."""
    only_first = "" if from_bot else " AND writer_generation IS NULL"
    return f"UPDATE data_units SET writer_generation = ? WHERE id = ?{only_first}", (drive, volser)
