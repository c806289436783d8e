"""The cluster at a glance (`GET /cluster/topology`): what the manager's picture and `kma cluster
status` draw. A locked KMA answers it too: it tells nothing secret, and a locked KMA is exactly
what the picture must show."""

from __future__ import annotations

from fastapi import APIRouter

from kma.api.deps import Kma, KmaEvenLocked, SignedIn, UpgradeCheck
from kma.api.topology_schemas import Topology
from kma.api.topology_schemas import UpgradeCheck as UpgradeCheckAnswer
from kma.cluster import topology, upgrade_check

router = APIRouter(tags=["cluster"])


@router.get("/cluster/topology", response_model=Topology)
def get_topology(kma: KmaEvenLocked, actor: SignedIn) -> dict[str, object]:
    return topology.topology(kma)


@router.get("/cluster/upgrade-check", response_model=UpgradeCheckAnswer)
def get_upgrade_check(kma: Kma, actor: UpgradeCheck) -> dict[str, object]:
    """Read-only: whether every KMA responds with an empty outbox and a database backup is recent,
    and the order to upgrade the KMAs in (`kma upgrade check`, the manager's Cluster page)."""
    return upgrade_check.upgrade_check(kma)
