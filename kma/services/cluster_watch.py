"""What each KMA does about changes to the cluster made through other KMAs, once a second:

- A Security Officer locked this KMA through another one (`kmas.locked` is replicated): its vault
  forgets the master key, as if locked here.
- Removed KMAs stay out of Raft. rqlite checks node certificates against the cluster CA only
  (it has no revocation list), so the certificate of a removed KMA would still let its node ask
  to join again. Every cluster KMA therefore looks at the Raft membership and takes out (rqlite's
  DELETE /remove) any node whose KMA was removed, auditing each time. Only the explicit removal
  counts: a node whose KMA this KMA's replica does not know yet may be newer than the replica.
  This bounds what a removed machine can do, it does not prevent it: one that rejoins as a voter
  and vanishes before it is taken out can leave a two-voter configuration without a leader.
  Closing that needs rqlite to refuse the join itself (per-node join credentials in its `-auth`
  file, which v8 reads only at start, or a new cluster CA after a removal).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from kma.audit.record import Condition
from kma.errors import KmaError

if TYPE_CHECKING:
    from kma.appliance import Appliance

log = logging.getLogger(__name__)
CHECK_S = 1.0


def removed_members(kma: Appliance) -> list[str]:
    """IDs of Raft members (voters or not) whose KMA was removed; [] off a cluster."""
    from kma.store.rqlite import RqliteStore

    if not isinstance(kma.store, RqliteStore):
        return []
    nodes = kma.store.client.get_json("/nodes", ver="2", nonvoters="")["nodes"]
    ids = [str(n["id"]) for n in nodes]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = kma.store.query(f"SELECT id FROM kmas WHERE removed_at IS NOT NULL AND id IN ({marks})", ids)
    return [r["id"] for r in rows]


def reap(kma: Appliance) -> list[str]:
    """Take every removed KMA's node out of Raft; returns the IDs taken out."""
    from kma.services.kma_entries import leave_raft

    taken = []
    for kma_id in removed_members(kma):
        try:
            leave_raft(kma, kma_id)
        except OSError as exc:  # e.g. no leader right now: the next round tries again
            log.info("could not take removed KMA %s out of Raft yet: %s", kma_id, exc)
            continue
        taken.append(kma_id)
        kma.audit(kma.itself, "kma.remove",
                  f"took the node of removed KMA '{kma_id}' out of Raft again: it had rejoined",
                  condition=Condition.WARNING, subject=("kma", kma_id), event_class="security")  # fmt: skip
    return taken


def follow_lock(kma: Appliance) -> bool:
    """Lock this KMA if the cluster says it is locked; True when it did."""
    if kma.vault.locked or not kma.store.scalar("SELECT locked FROM kmas WHERE id = ?", (kma.kma_id,)):
        return False
    kma.vault.lock()
    kma.audit(kma.itself, "kma.lock", "locked itself: it was locked through another KMA of the cluster",
              condition=Condition.SUCCESS, subject=("kma", kma.kma_id), event_class="security")  # fmt: skip
    return True


class ClusterWatch:
    def __init__(self, kma: Appliance) -> None:
        self.kma = kma
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kma-cluster-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(CHECK_S):
            try:
                follow_lock(self.kma)
                reap(self.kma)
            except KmaError as exc:  # the local node is unavailable for a moment
                log.debug("cluster watch: %s", exc.message)
            except Exception:
                log.exception("cluster watch round failed")
