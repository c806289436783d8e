"""The media rules' refusals across a cluster (docs/media.md): each KMA counts its own refused write
keys by reason in memory (`media_rules.MediaRefusals`, on the agent path) and publishes them to the
store when they change, a round of its cluster watch at a time, so that any KMA shows the whole
cluster's: a drive refused by another KMA than the one a manager is signed in to is counted too.
One KMA (embedded) has nothing to publish: its own counts are the cluster's.
"""

from __future__ import annotations

from dataclasses import dataclass

from kma.appliance import Appliance
from kma.services.media.media_rules import MediaRefusals, Refusal
from kma.store import Batch, Stmt

UPSERT = (
    "INSERT INTO media_refusal_counts (kma_id, reason, count, since, updated_at) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (kma_id, reason) DO UPDATE SET count = excluded.count, since = excluded.since, "
    "updated_at = excluded.updated_at"
)
# The other serving KMAs' counts (removed KMAs and witnesses refuse nothing any more).
OTHERS = (
    "SELECT c.reason AS reason, sum(c.count) AS n FROM media_refusal_counts c JOIN kmas k ON k.id = c.kma_id "
    "WHERE k.removed_at IS NULL AND k.witness = 0 AND c.kma_id <> ? GROUP BY c.reason"
)
SERVING = "SELECT count(*) FROM kmas WHERE removed_at IS NULL AND witness = 0 AND awaiting_join = 0"


def publish(kma: Appliance) -> None:
    """This KMA's counts into the store, if they changed since it last did (all of them at its
    first round: a restarted KMA counts from zero again)."""
    if kma.store.cluster is None:
        return
    part = kma.part(MediaRefusals)
    counts = part.counts()
    if counts == part.published:
        return
    now = kma.clock.now()
    kma.store.write(
        Batch([Stmt(UPSERT, (kma.kma_id, reason, n, part.since, now)) for reason, n in counts.items()])
    )
    part.published = counts


@dataclass(frozen=True)
class MediaRefusalsRow:
    """This KMA's refused write keys by reason (`media_rules.Refusal`) since it started, and the
    cluster's; the API's `MediaRefusals` reads it."""

    two_pools: int
    never_encrypted: int
    read_only: int
    no_pool: int
    key_group: int
    generation: int
    relabel: int
    cluster: dict[str, int]  # reason -> the same summed over the cluster's serving KMAs
    cluster_kmas: int  # those serving KMAs, this one included


def get_media_refusals(kma: Appliance) -> MediaRefusalsRow:
    """This KMA's refused write keys by reason since it started, and the cluster's: summed over its
    serving KMAs (this one's as it counts them now, the others' as they last published them)."""
    own = kma.part(MediaRefusals).counts()
    cluster = dict(own)
    for row in kma.store.query(OTHERS, (kma.kma_id,)):
        if row["reason"] in cluster:
            cluster[row["reason"]] += int(row["n"])
    return MediaRefusalsRow(
        two_pools=own[Refusal.TWO_POOLS],
        never_encrypted=own[Refusal.NEVER_ENCRYPTED],
        read_only=own[Refusal.READ_ONLY],
        no_pool=own[Refusal.NO_POOL],
        key_group=own[Refusal.KEY_GROUP],
        generation=own[Refusal.GENERATION],
        relabel=own[Refusal.RELABEL],
        cluster=cluster,
        cluster_kmas=max(int(kma.store.scalar(SERVING) or 0), 1),
    )
