"""This KMA's pool of pre-generated keys, so that issuing a key never waits.

Keys are generated (random 256-bit material, wrapped under the master key) in batches by a
background thread once the pool is a tenth (at most one batch) below its configured size;
issuing takes one from memory and activates it in a single guarded UPDATE. If the pool ever runs
dry, the key is generated inline in the issuing batch instead, so an agent never waits on it.

In a one-KMA cluster a key is Ready, and may be issued, only once a database backup holds it
(domain.md; `HELD_OR_REPLICATED`): generated keys wait in the store, out of memory, until a backup
marks them, and an empty pool refuses (`NoReadyKey`) rather than issue a key that exists nowhere
else. A backup wakes the pool, which then takes the newly held keys into memory.

No pool key is issued twice. Only this KMA issues its pool keys (`kma_id`), and it takes one
into memory only from state at least as new as its own last issue: the pool is filled once the
store has caught up after a start (`Store.caught_up`: the local replica holds everything the
cluster had committed, this KMA's shipped assignments included), and what it assigned but the
replica does not hold yet is in its outbox (`unshipped_all`, durable across a crash) or lent
from memory. Keys withheld by a restore (`withheld_at`: the backup's unassigned keys, which may
have been issued after it) are never taken (kma/setup/restore.py). See docs/cluster.md.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque

from kma.appliance import Appliance
from kma.audit.record import Retention
from kma.domain.lifecycle import HELD_OR_REPLICATED
from kma.errors import KmaLocked, NoReadyKey
from kma.services.integrity import key_macs
from kma.store import Stmt
from kma.worker import Worker

REFILL_CHUNK = 250
REFILL_CHECK_S = 5.0  # how often the pool looks whether it is short (issuing and unlocking wake it)
RECOUNT_S = 60.0  # at least this often a one-KMA pool counts its waiting keys in the store again
CATCH_UP_POLL_S = 0.05
LENT_MEMORY = 4096  # keys handed out lately: a reload must not offer one again while it is activated
# This KMA's unassigned pool keys (an agent's not-yet-activated key, KMIP Pre-Active, has a key group).
POOL_KEYS = (
    "kma_id = ? AND activated_at IS NULL AND destroyed_at IS NULL AND key_group_id IS NULL "
    "AND withheld_at IS NULL"
)
_HELD = HELD_OR_REPLICATED.format(t="")


def low_water(size: int) -> int:
    """Keys missing from a pool of `size` before it is refilled (a tenth, at most a chunk)."""
    return max(1, min(REFILL_CHUNK, size // 10))


def new_key_id() -> str:
    return secrets.token_hex(16).upper()


class KeyPool(Worker):
    name = "kma-key-pool"
    stop_wait_s = 10.0

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma
        self._ready: deque[str] = deque()
        self._lock = threading.Lock()
        # After a start the replica may lack what this KMA issued before it stopped: the pool is
        # filled only once it holds it (the KMA serves no agent until then).
        self._catching_up = False
        self._size_hint = 0  # the configured size as the refill last read it
        self._alone = True  # as the refill last saw it: a one-KMA cluster issues only backed-up keys
        # Generated keys waiting for a backup (one-KMA cluster), as the refill last counted them plus
        # what it made since: they count as in the pool, so that issuing does not wake the refill for
        # keys it already made (it would spin, scanning the pool, while the agents take keys).
        self._waiting = 0
        self._held_by: tuple[int, int | None] | None = None  # what take_held last found keys held by
        self._recount_at = 0.0  # time.monotonic() of the next count of the waiting keys
        self._lent: deque[str] = deque(maxlen=LENT_MEMORY)

    def start(self) -> None:
        if self.kma.store.caught_up():
            self.take_held()
        else:
            self._catching_up = True
        super().start()

    def take_held(self) -> int:
        """Take into memory the pool keys that may be issued (Ready) and are not there yet; returns
        how many. At start, and after a backup (in a one-KMA cluster, the keys it now holds)."""
        held_by = self._held_by_now()
        # Issued here but not yet in the replica (in the outbox, also across a restart): not Ready.
        # Read before the replica: an assignment leaves the outbox's memory only once the replica
        # holds it, so it is in one of the two reads (the other order could miss it in both).
        issued = {str(shows["id"]) for shows in self.kma.store.unshipped_all()}
        rows = self.kma.store.query(f"SELECT id FROM keys WHERE {POOL_KEYS} AND {_HELD}", (self.kma.kma_id,))
        with self._lock:
            known = set(self._ready) | set(self._lent) | issued
            fresh = [r[0] for r in rows if r[0] not in known]
            self._ready.extend(fresh)
            self._waiting = max(0, self._waiting - len(fresh))
            self._held_by = held_by
        return len(fresh)

    def _held_by_now(self) -> tuple[int, int | None]:
        """What makes a pool key Ready (HELD_OR_REPLICATED): the number of KMAs and the newest live
        backup. Until one of them changes, no pool key becomes Ready, and take_held would find none."""
        row = self.kma.store.query_one(
            "SELECT (SELECT count(*) FROM kmas), "
            "(SELECT max(created_at) FROM backups WHERE deleted_at IS NULL)"
        )
        assert row is not None
        return int(row[0]), row[1]

    def alone(self) -> bool:
        """A one-KMA cluster: its keys are Ready only once a backup holds them."""
        return int(self.kma.store.scalar("SELECT count(*) FROM kmas") or 0) == 1

    def waiting(self) -> int:
        """Pool keys that wait for a backup before they may be issued (Generated)."""
        sql = f"SELECT count(*) FROM keys WHERE {POOL_KEYS} AND NOT {_HELD}"
        return int(self.kma.store.scalar(sql, (self.kma.kma_id,)) or 0)

    def size(self) -> int:
        return int(
            self.kma.store.scalar("SELECT key_pool_size FROM kmas WHERE id = ?", (self.kma.kma_id,)) or 0
        )

    def ready(self) -> int:
        return len(self._ready)

    def take_notice(self) -> None:
        """The configured size may have changed: check now rather than at the next tick."""
        self.wake()

    def take(self) -> str | None:
        """A pool key's ID for the caller to activate, or None when the pool is empty (the caller
        then generates one inline). In a one-KMA cluster an empty pool refuses instead."""
        with self._lock:
            key_id = self._ready.popleft() if self._ready else None
            if key_id is not None:
                self._lent.append(key_id)
            missing = self._size_hint - len(self._ready) - self._waiting
        if missing >= low_water(self._size_hint):
            self.wake()
        if key_id is None and self._alone and self.alone():
            waiting = self.waiting()
            raise NoReadyKey(
                "This KMA has no Ready key to issue: in a one-KMA cluster a key becomes Ready only once a "
                f"database backup holds it, and {waiting} generated keys wait for one. A Backup Operator "
                "takes a backup (or add a second KMA)."
            )
        return key_id

    def give_back(self, key_id: str) -> None:
        """The caller's activation was refused; the key is still unassigned."""
        with self._lock:
            self._ready.appendleft(key_id)

    def generate_stmt(self, key_id: str, now: int) -> Stmt:
        """The INSERT of one freshly generated, wrapped key (raises KmaLocked when locked)."""
        wrapped = self.kma.vault.master().wrap(f"key:{key_id}", self.kma.vault.new_key_material())
        return Stmt(
            "INSERT INTO keys (id, kma_id, material_wrapped, created_at, mac) VALUES (?, ?, ?, ?, ?)",
            (key_id, self.kma.kma_id, wrapped, now, key_macs.pool_key_mac(self.kma, key_id)),
        )

    def refill(self) -> int:
        """Top the pool up to its size once it is short by `low_water` keys; returns how many
        keys were generated. Waiting for a batch's worth makes a few large generations (one
        commit and one audit event each) instead of one per key issued."""
        made = 0
        if not self.kma.store.caught_up():
            return 0  # _run fills the pool once it has
        self._size_hint = self.size()
        self._alone = self.alone()
        if not self._alone:
            with self._lock:
                self._waiting = 0
        elif self._held_by_now() != self._held_by or time.monotonic() >= self._recount_at:
            # A backup or a KMA came or went since: keys may be Ready now. Otherwise the count in
            # memory holds (what this refill made, less what take_held found Ready), and counting
            # the pool's rows at every wake of a busy pool cost an eighth of a Create's CPU.
            self.take_held()
            waiting = self.waiting()
            with self._lock:
                self._waiting = waiting
            self._recount_at = time.monotonic() + RECOUNT_S
        if self._size_hint - self._in_pool() < low_water(self._size_hint):
            return 0
        while not self.stopping:
            missing = min(self.size() - self._in_pool(), REFILL_CHUNK)
            if missing <= 0:
                break
            now = self.kma.clock.now()
            ids = [new_key_id() for _ in range(missing)]
            statements = [self.generate_stmt(key_id, now) for key_id in ids]
            self.kma.commit(
                self.kma.itself,
                "key.generate",
                statements,
                f"generated {missing} keys for the key pool"
                + (" (they become Ready once a database backup holds them)" if self._alone else ""),
                ("kma", self.kma.kma_id),
                retention=Retention.SHORT,
            )
            with self._lock:
                if self._alone:
                    self._waiting += missing  # Generated until a backup holds them
                else:
                    self._ready.extend(ids)
            made += missing
        return made

    def _in_pool(self) -> int:
        return self.ready() + self._waiting

    def work(self) -> float:
        if self._catching_up:
            if not self.kma.store.caught_up():
                return CATCH_UP_POLL_S
            self._catching_up = False
            self.take_held()
        try:
            self.refill()
        except KmaLocked:
            pass  # a locked KMA generates nothing; unlocking wakes us
        return REFILL_CHECK_S


def key_pool(kma: Appliance) -> KeyPool:
    """This KMA's one key pool."""
    return kma.part(KeyPool)
