"""Every KMA's replication lag: its agent-path writes (key assignments, audit events) committed
on the KMA itself and not yet in the cluster's store (kma/store/outbox.py).

Each KMA's shipper writes its outbox depth and the age of the oldest entry into the cluster's
store with each shipment (`cluster_outbox_marks`), so any KMA tells every KMA's lag. The
answering KMA knows its own first-hand. A KMA that reaches no Raft majority reports nothing new:
its last figures age from the time it reported them.
"""

from __future__ import annotations

from kma.appliance import Appliance
from kma.store.cluster_view import ReplicationLag


def replication_lags(kma: Appliance) -> dict[str, ReplicationLag]:
    """KMA ID -> its lag, for every KMA that has shipped (this one always)."""
    now = kma.clock.now()
    rows = kma.store.query("SELECT kma_id, depth, oldest_age_ms, reported_at FROM cluster_outbox_marks")
    lags = {}
    for row in rows:
        depth = int(row["depth"])
        waited = max(0, now - int(row["reported_at"] or now))  # since it last said so
        age = row["oldest_age_ms"] / 1000 + waited if depth else 0.0
        lags[str(row["kma_id"])] = ReplicationLag(depth, float(age))
    lags[kma.kma_id] = kma.store.replication_lag()
    return lags
