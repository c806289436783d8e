"""`GET /cluster/topology` and `kma cluster status` on one real KMA: the picture's data."""

from __future__ import annotations

import json
from pathlib import Path

from kma.store.schema import latest_schema_version
from kms_client.release import release
from tests.integration.test_quorum_cli import kma_cli
from tests.support.kma_process import RunningKma

ONLY_KMA = "This is the only KMA: losing it stops key service and management alike."


def test_one_kma_is_the_leader_voter_and_only_failure_point(demo_kma: RunningKma) -> None:
    topo = demo_kma.client("qm1").get_topology()  # any signed-in role may look
    assert [s.name for s in topo.sites] == ["Boston", "Dallas"]
    (kma,) = topo.kmas
    assert (kma.id, kma.site_id, kma.leader, kma.voter, kma.responding, kma.locked, kma.health) == (
        "kma-dal-1",
        "dallas",
        True,
        True,
        True,
        False,
        "ok",
    )
    assert kma.replication_lag is not None and kma.replication_lag.depth == 0
    assert kma.last_contact_seconds == 0.0
    assert topo.links == ()  # one site with KMAs: nothing to replicate between sites
    assert topo.failure_tolerance.summary.startswith(ONLY_KMA)
    assert (topo.failure_tolerance.voters, topo.failure_tolerance.voters_may_lose) == (1, 0)


def test_agents_are_counted_at_their_site(demo_kma: RunningKma) -> None:
    op = demo_kma.client("op")
    agents = list(op.iter_agents())
    topo = op.get_topology()
    for site in topo.sites:
        mine = [a for a in agents if a.site_id == site.id]
        assert site.agents.total == len(mine)
        assert site.agents.enrolled == sum(a.enrolled for a in mine)
        assert site.agents.disabled == sum(not a.enabled for a in mine)


def test_a_locked_kma_still_shows_itself_locked(fresh_kma: RunningKma) -> None:
    so = fresh_kma.client("so")
    so.lock_kma("kma-dal-1")
    (kma,) = so.get_topology().kmas
    assert (kma.locked, kma.health, kma.responding) == (True, "warning", True)


def test_kma_cluster_status_prints_the_cluster_and_its_json(demo_kma: RunningKma, tmp_path: Path) -> None:
    code, out, err = kma_cli(demo_kma, tmp_path, "auditor", "cluster", "status")
    assert code == 0, err
    assert ONLY_KMA in out
    assert "Site Dallas (dallas): 1 KMAs" in out and "kma-dal-1" in out and "leader voter" in out
    assert f"release {release()}, schema {latest_schema_version()}, embedded store (no rqlited)" in out
    code, out, err = kma_cli(demo_kma, tmp_path, "auditor", "cluster", "status", "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["failure_tolerance"]["voters"] == 1
    assert [k["id"] for s in answer["sites"] for k in s["kmas"]] == ["kma-dal-1"]
