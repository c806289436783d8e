"""The Raft cluster as a cluster KMA sees it through its own rqlited: the membership
(`Store.cluster`) and each node's status (`Store.cluster_nodes`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kma.store.cluster_view import NodeStatus
from kma.store.rqlite_http import RqliteClient


class RaftMembers:
    """`Store.cluster` of a cluster KMA: the Raft membership, through this KMA's own node."""

    def __init__(self, client: RqliteClient, on_restart: Callable[[], None]) -> None:
        self._client = client
        self._on_restart = on_restart

    def node_restarting(self) -> None:
        """This KMA's rqlited has stopped and is about to start again (it rebuilds its SQLite replica
        at start): agents are told to try another KMA until the replica has caught up again, as after
        the KMA's start. Called once the old rqlited is down, so that the catch-up is made against
        the new one (kma/cluster/trust.py)."""
        self._on_restart()

    def members(self) -> list[str]:
        return [str(n["id"]) for n in self._client.get_json("/nodes", ver="2", nonvoters="")["nodes"]]

    def remove(self, node_id: str) -> None:
        self._client.remove_node(node_id)

    def use_certificate(self, cert: Path, key: Path) -> None:
        self._client.use_certificate(cert, key)


def nodes(client: RqliteClient, kma_id: str) -> list[NodeStatus]:
    """Each node of the cluster as this KMA's rqlited (`kma_id`'s, unless it names itself) sees it."""
    found = client.get_json("/nodes", ver="2", nonvoters="")
    status = client.get_json("/status")
    raft = status.get("store", {}).get("raft", {})
    local_contact = _seconds(raft.get("last_contact"))
    local_id = status.get("store", {}).get("node_id", kma_id)
    out = []
    for node in found.get("nodes", []):
        leader = bool(node.get("leader"))
        contact = 0.0 if node["id"] == local_id and raft.get("state") == "Leader" else None
        if node["id"] == local_id and contact is None:
            contact = local_contact
        reachable, version = bool(node.get("reachable")), node.get("version") or None
        out.append(NodeStatus(str(node["id"]), leader, bool(node.get("voter")), reachable, version, contact))
    return sorted(out, key=lambda n: n.kma_id)


def _seconds(value: Any) -> float | None:
    """rqlite's last_contact: a Go duration ("12.3ms", "1.5s"), "never" or 0 on the leader."""
    if value in (None, "", "never"):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value)
    for suffix, scale in (("ms", 1e-3), ("µs", 1e-6), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * scale
            except ValueError:
                return None
    return None
