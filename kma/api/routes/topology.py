"""The cluster at a glance (`GET /cluster/topology`): what the manager's picture and `kma cluster
status` draw. A locked KMA answers it too: it tells nothing secret, and a locked KMA is exactly
what the picture must show."""

from __future__ import annotations

from fastapi import APIRouter

from kma.api.deps import KmaEvenLocked, SignedIn
from kma.api.topology_schemas import Topology
from kma.cluster import topology

router = APIRouter(tags=["cluster"])


@router.get("/cluster/topology", response_model=Topology)
def get_topology(kma: KmaEvenLocked, actor: SignedIn) -> dict[str, object]:
    return topology.topology(kma)
