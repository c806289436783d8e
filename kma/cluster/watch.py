"""What each KMA does about changes to the cluster made through other KMAs, once a second:

- A Security Officer locked this KMA through another one (`kmas.locked` is replicated): its vault
  forgets the master key, as if locked here.
- Its rqlited trusts the node certificates of the cluster's current KMAs only
  (kma/cluster/trust.py): when the members change (a join, a removal), it rewrites that list and
  restarts its rqlited, so a removed machine's certificate is refused from then on, its open
  connections closed.
- Every KMA entry's signature is checked (kma/crypto/entry_signature.py): a forged one is reported.
- Only admitted KMAs (and witnesses) stay in Raft. rqlite does not tie a node's ID to its
  certificate, so every cluster KMA also looks at the Raft membership and takes out (rqlite's
  DELETE /remove) any node that is not an admitted entry, auditing each time: at once when its
  entry was removed, and when its ID is no entry at all once it is still there a round later (an
  entry's join is committed before its machine gets its certificates, so even a replica a moment
  behind knows a real newcomer by then). With node pins this catches what the trust lists let
  through for a moment (a node started from a replica older than a removal).
- The first node's `kma.db.before-cluster` is removed once the key split has changed
  (kma/cluster/convert.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kma.audit.record import Condition
from kma.cluster.convert import retire_embedded_copy
from kma.cluster.membership import leave_raft
from kma.cluster.node_renewal import NodeRenewal
from kma.cluster.trust import follow_membership
from kma.cluster.witness_renewal import answer_witnesses
from kma.errors import KmaError
from kma.services.certificates import certificate_renewal
from kma.services.integrity import entry_signatures, key_macs
from kma.services.media import media_refusals
from kma.worker import Worker

if TYPE_CHECKING:
    from kma.appliance import Appliance
    from kma.cluster.rqlited import RqliteNode

log = logging.getLogger(__name__)
CHECK_S = 1.0


def strangers(kma: Appliance) -> tuple[list[str], list[str]]:
    """Raft members (voters or not) that are not admitted: (IDs of removed KMAs, IDs that are no
    entry of the cluster at all); ([], []) off a cluster."""
    if kma.store.cluster is None:
        return [], []
    ids = kma.store.cluster.members()
    if not ids:
        return [], []
    marks = ",".join("?" * len(ids))
    rows = kma.store.query(
        f"SELECT id, removed_at IS NULL AND awaiting_join = 0 AS admitted FROM kmas WHERE id IN ({marks})",
        ids,
    )
    known = {r["id"]: bool(r["admitted"]) for r in rows}
    return [i for i in ids if known.get(i) is False], [i for i in ids if i not in known]


def reap(kma: Appliance, unknown_before: frozenset[str] = frozenset()) -> tuple[list[str], frozenset[str]]:
    """Take out of Raft every node of a removed KMA, and every node whose ID is no entry and was
    seen in the round before (`unknown_before`) too; returns the IDs taken out, and the unknown IDs
    to take out next round if they are still there."""
    removed, unknown = strangers(kma)
    taken = []
    due = [(i, f"took the node of removed KMA '{i}' out of Raft again: it had rejoined") for i in removed]
    due += [
        (
            i,
            f"took node '{i}' out of Raft: it joined with a certificate of the cluster CA but is no "
            "admitted KMA",
        )
        for i in unknown
        if i in unknown_before
    ]
    for node_id, message in due:
        try:
            leave_raft(kma, node_id)
        except OSError as exc:  # e.g. no leader right now: the next round tries again
            log.info("could not take node %s out of Raft yet: %s", node_id, exc)
            continue
        taken.append(node_id)
        kma.audit(
            kma.itself,
            "kma.remove",
            message,
            condition=Condition.WARNING,
            subject=("kma", node_id[:64]),
            event_class="security",
        )
    return taken, frozenset(unknown) - set(taken)


def follow_lock(kma: Appliance) -> bool:
    """Lock this KMA if the cluster says it is locked; True when it did."""
    if kma.vault.locked or not kma.store.scalar("SELECT locked FROM kmas WHERE id = ?", (kma.kma_id,)):
        return False
    kma.vault.lock()
    kma.audit(
        kma.itself,
        "kma.lock",
        "locked itself: it was locked through another KMA of the cluster",
        condition=Condition.SUCCESS,
        subject=("kma", kma.kma_id),
        event_class="security",
    )
    return True


class ClusterWatch(Worker):
    name = "kma-cluster-watch"
    pause_s = CHECK_S
    stop_wait_s = 10.0

    def __init__(self, kma: Appliance, node: RqliteNode | None = None) -> None:
        super().__init__()
        self.kma = kma
        self.node = node  # this KMA's rqlited, to trust only the current members' node certificates
        self._unknown: frozenset[str] = frozenset()  # Raft members no entry knows, seen last round
        self._restarted = False  # its node restarted to follow the members; not audited yet
        self.node_renewal = NodeRenewal(kma, node) if node is not None else None

    def work(self) -> float:
        for step in (self._follow_cluster, self._follow_members, self._renew_node, self._answer_witnesses):
            try:
                step()
            except KmaError as exc:  # the local node is unavailable for a moment
                self.log.debug("cluster watch: %s", exc.message)
            except Exception:  # one step failing does not skip the other
                self.log.exception("cluster watch round failed")
        return CHECK_S

    def _follow_cluster(self) -> None:
        follow_lock(self.kma)
        entry_signatures.sweep(self.kma)  # a forged KMA entry is reported even if nobody uses it
        retire_embedded_copy(self.kma)
        certificate_renewal.follow_request(self.kma)  # a Security Officer's "renew now" made elsewhere
        if not self.kma.vault.locked:  # keys from KMAs still on an older release (a rolling upgrade)
            key_macs.seal_existing(self.kma)
        _, self._unknown = reap(self.kma, self._unknown)
        media_refusals.publish(self.kma)  # so that every KMA shows the cluster's refused write keys

    def _renew_node(self) -> None:
        """Its node certificate, before it expires or when asked (kma/cluster/node_renewal.py)."""
        if self.node_renewal is not None:
            self.node_renewal.step()

    def _answer_witnesses(self) -> None:
        """Their requests for a new node certificate (kma/cluster/witness_renewal.py)."""
        if self.node is not None:
            answer_witnesses(self.kma)

    def _follow_members(self) -> None:
        """After `reap`: a removed KMA is out of Raft before this node stops trusting it."""
        cluster = self.kma.store.cluster
        restarting = cluster.node_restarting if cluster is not None else None
        if self.node is not None and follow_membership(self.node, restarting):
            self._restarted = True
        if self._restarted:  # until the cluster takes the event (it may be electing a leader)
            self.kma.audit(
                self.kma.itself,
                "kma.node_trust",
                "restarted its rqlite node to trust the node certificates of the cluster's current KMAs only",
                subject=("kma", self.kma.kma_id),
                event_class="security",
            )
            self._restarted = False
