"""The cluster at a glance: a mixin of `KmsClient` (same threading rule: network I/O, never on
the GUI thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .models import JsonObject
from .topology_models import Topology

T = TypeVar("T")


class TopologyMethods:
    if TYPE_CHECKING:

        def _call(self, method: str, path: str, parse: Callable[[JsonObject], T], *,
                  params: dict[str, str] | None = None, body: dict[str, Any] | None = None,
                  auth: bool = True) -> T: ...  # fmt: skip

    def cluster_topology(self) -> Topology:
        """Sites, KMAs (leader, voter, responding, locked, lag), agents per site, failure tolerance.
        Any signed-in user; a locked KMA answers it too."""
        return self._call("GET", "/cluster/topology", Topology.from_json)
