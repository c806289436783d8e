"""Dallas and Boston with two KMAs each and a witness at a third site (the white paper's layout,
issue 11), on loopback with real `kma serve` processes each running its rqlited; one demo agent
per site enrolled at its own site, its tapes written. For tests/integration/test_cluster_two_sites.py
and bench/sites.py."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kma.cluster.rqlited import RqliteNode
from kms_client import ClusterUnavailable, KmsError
from tests.support.agents import demo_passphrase, enroll, kmip
from tests.support.cluster import add_node, entry_changed, execute, files_of, first_node
from tests.support.kma_process import RunningKma
from tests.support.ports import free_port
from tests.support.witness import RunningWitness, add_witness

SITES = {"dallas": ("kma-dal-1", "kma-dal-2"), "boston": ("kma-bos-1", "kma-bos-2")}
AGENTS = {"dallas": "t10k-dal-01", "boston": "t10k-bos-01"}  # demo agents, one per site
DRIVES = 8
TAPES = 12  # per site, written when the cluster is made


@dataclass
class TwoSites:
    kmas: dict[str, RunningKma]
    witness: RunningWitness
    agents: dict[str, Path]  # site -> the enrolled agent's folder

    def nodes(self) -> dict[str, RunningKma | RunningWitness]:
        return {**self.kmas, "witness-1": self.witness}

    def running(self) -> dict[str, RunningKma]:
        return {i: k for i, k in self.kmas.items() if k.process is not None}

    def leader(self) -> str:
        """The Raft leader's node ID, as any running KMA's rqlited sees it."""
        for kma in self.running().values():
            client = RqliteNode(files_of(kma)).client()
            try:
                nodes = client.get_json("/nodes", ver="2", nonvoters="")["nodes"]
            except KmsError:
                continue
            finally:
                client.close()
            leaders = [n["id"] for n in nodes if n.get("leader")]
            if leaders:
                return str(leaders[0])
        raise AssertionError("no leader seen")

    def restart(self, node_ids: list[str]) -> None:
        """Start these nodes again (together: each waits for a leader, which may need the others)."""
        with ThreadPoolExecutor(len(node_ids)) as pool:
            for started in [pool.submit(_start, self.nodes()[n]) for n in node_ids]:
                started.result()  # raises what a start raised


def _start(node: RunningKma | RunningWitness) -> None:
    if isinstance(node, RunningWitness):
        node.start()
    else:
        node.start(int(node.address.rsplit(":", 1)[1]))


@contextmanager
def two_sites(tmp: Path) -> Iterator[TwoSites]:
    """The cluster, running; every node stopped at the end."""
    first, ca = first_node(tmp / "kma-dal-1")
    kmas = {"kma-dal-1": first}
    witness: RunningWitness | None = None
    try:
        # The first KMA keeps its ports from now on: the others and the agents know them by its entry.
        management, service = free_port(), free_port()
        execute(
            first,
            [
                [
                    "UPDATE kmas SET management_address = ? WHERE id = ?",
                    f"127.0.0.1:{management}",
                    "kma-dal-1",
                ],
                entry_changed(first, ca, "kma-dal-1", service_address=f"127.0.0.1:{service}"),
            ],
        )
        first.stop()
        first.service_port = service
        first.start(management)
        for site, ids in SITES.items():
            for kma_id in ids:
                if kma_id in kmas:
                    continue
                ports = (free_port(), free_port())
                kmas[kma_id] = add_node(first, ca, tmp, kma_id, site=site, ports=ports)
                kmas[kma_id].start(ports[0])
        witness = add_witness(first, tmp)
        agents = {}
        for site, agent_id in AGENTS.items():
            home = kmas[SITES[site][0]]  # enrolled at its own site
            agents[site] = tmp / "agents" / agent_id
            enroll(home, agent_id, agents[site], demo_passphrase(first, agent_id))
            with kmip(agents[site]) as drive:  # the site's tapes, written: keys to get later
                for n in range(1, TAPES + 1):
                    drive.write_key(f"{site[0].upper()}{n:05d}")
        yield TwoSites(kmas, witness, agents)
    finally:
        for kma in kmas.values():
            kma.stop()
        if witness is not None:
            witness.stop()


def management_write(kma: RunningKma, policy_id: str) -> bool:
    """One management write (a key policy); False while the cluster has no leader."""
    try:
        kma.client("co").create_key_policy(policy_id, encryption_period=60, cryptoperiod=120)
    except ClusterUnavailable:
        return False
    return True
