"""The white paper's reference layout (issue 11): Dallas and Boston with two KMAs each, and a
witness at a third site as the fifth voter; eight simulated drives per site, enrolled at their own
site. Real `kma serve` processes, each with its rqlited, on loopback; one cluster for the module.

Each test leaves the cluster as it found it (every node running), so they also run one by one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.cluster.rqlited import VERSION as RQLITE_VERSION
from kma.store.schema import latest_schema_version
from kms_client import NotFound
from kms_client.release import release
from tests.integration.test_quorum import creds
from tests.integration.test_quorum_cli import kma_cli
from tests.support.agents import service_address
from tests.support.cluster import BINARY, replica, rqlited_pid, table_checksums
from tests.support.two_sites import DRIVES, SITES, TAPES, TwoSites, management_write, two_sites
from tests.support.waiting import wait_until
from tests.support.witness import crash

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoSites]:
    with two_sites(tmp_path_factory.mktemp("two-sites")) as made:
        yield made


def simulate(
    sites: TwoSites, site: str, mounts: int, *, writes: bool, prefix: str = ""
) -> subprocess.Popen[str]:
    """`kma agent simulate`: one process per site drives its eight drives. Reading: the site's own
    tapes (D00001.. at Dallas, B00001.. at Boston), written when the cluster was made, so each mount
    gets an existing key. Writing: tapes never written (`prefix`), so each mount gets a new key."""
    command = [
        "agent",
        "simulate",
        "--agent-dir",
        str(sites.agents[site]),
        "--drives",
        str(DRIVES),
        "--mounts",
        str(mounts),
        "--rate",
        "16",
        "--write-ratio",
        "1" if writes else "0",
        "--rewrite-ratio",
        "0",
        "--tapes",
        "200" if writes else str(TAPES),
        "--prefix",
        prefix or site[0].upper(),
        "--json",
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "kma", *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def summary(run: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = run.communicate(timeout=180)
    assert run.returncode == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def _exists(get: Any, object_id: str) -> bool:
    try:
        get(object_id)
    except NotFound:
        return False
    return True


def test_the_witness_is_a_voter_at_its_own_site_and_no_agent_is_sent_to_it(
    sites: TwoSites, tmp_path: Path
) -> None:
    topology = sites.kmas["kma-dal-1"].client("so").get_topology()
    by_site = {s.id: [k.id for k in s.kmas] for s in topology.sites}
    assert by_site["witness"] == ["witness-1"]
    witness = next(k for s in topology.sites for k in s.kmas if k.id == "witness-1")
    assert witness.witness and witness.voter and witness.responding and not witness.locked
    assert witness.rqlite_version == RQLITE_VERSION  # it records nothing; its node says so itself
    tolerance = topology.failure_tolerance
    assert (tolerance.voters, tolerance.voters_may_lose) == (5, 2)
    assert tolerance.sites_whose_loss_stops_writes == ()  # Dallas, Boston or the witness may go
    for agent in sites.agents.values():
        assert "witness-1" not in {k["id"] for k in json.loads((agent / "kmas.json").read_text())}
    code, out, err = kma_cli(sites.kmas["kma-bos-1"], tmp_path, "auditor", "cluster", "status")
    assert code == 0, err
    assert "Site Witness (witness): 0 KMAs and 1 witness (no key service)" in out
    assert "no single site's loss stops management writes" in out
    assert next(line for line in out.splitlines() if "witness-1" in line).split()[2] in ("witness", "leader")


def test_the_witness_records_its_release_so_the_cluster_version_may_be_raised(sites: TwoSites) -> None:
    kma = sites.kmas["kma-dal-1"]

    def witness_recorded() -> Any:
        with replica(kma) as db:
            sql = "SELECT version, schema_version FROM kmas WHERE id = 'witness-1'"
            return tuple(db.execute(sql).fetchone())

    mine = (release(), latest_schema_version())
    wait_until(lambda: witness_recorded() == mine, 30, what="the witness's release recorded")
    so = kma.client("so")
    pending = so.raise_cluster_version(2)  # no KMA is too old: pending, for the quorum
    assert pending.state == "pending" and pending.type == "raise_cluster_version"
    so.delete_quorum_operation(pending.id)  # the cluster stays as the other tests expect it


def test_a_user_a_policy_and_an_agent_made_on_any_kma_reach_every_kma_within_a_second(
    sites: TwoSites,
) -> None:
    # Signed in once on each KMA: a sign-in is a memory-hard hash, and this test reads on every KMA
    # what every other made.
    readers = {
        kma_id: (kma.client("so"), kma.client("co"), kma.client("op")) for kma_id, kma in sites.kmas.items()
    }
    for maker_id, maker in sites.kmas.items():
        tag = maker_id.replace("kma-", "")
        so, co, op = readers[maker_id]
        so.create_user(
            f"user-{tag}",
            f"User {tag}",
            ["auditor"],
            f"passphrase of {tag}!",
            credentials=creds(maker, "alice", "bob", "carol"),
        )
        co.create_key_policy(f"policy-{tag}", encryption_period=60, cryptoperiod=120)
        op.create_agent(f"drive-{tag}", "boston", "backup-boston")
        for other_id in sites.kmas:
            if other_id == maker_id:
                continue
            so, co, op = readers[other_id]
            for get, made in (
                (so.get_user, f"user-{tag}"),
                (co.get_key_policy, f"policy-{tag}"),
                (op.get_agent, f"drive-{tag}"),
            ):
                wait_until(lambda g=get, m=made: _exists(g, m), 1.0, f"{maker_id}'s {made} on {other_id}")


def test_the_raft_leader_killed_every_drive_goes_on_and_management_writes_resume(sites: TwoSites) -> None:
    leader = sites.leader()
    survivor = next(k for i, k in sites.kmas.items() if i != leader)

    # When the leader's machine dies (kma serve and rqlited SIGKILLed) while the drives mount tapes
    reads = [simulate(sites, site, 48, writes=False) for site in SITES]
    writes = [
        simulate(sites, site, 32, writes=True, prefix=new) for site, new in zip(SITES, "KM", strict=True)
    ]
    crash(sites.nodes()[leader].process)
    try:
        # Then a management write succeeds again through a surviving KMA (the timing is bench/'s)
        wait_until(lambda: management_write(survivor, "after-leader-loss"), 30.0, "a management write")
        # and every drive got its keys: existing ones, and new write keys after retrying a refusal
        for run in reads:
            result = summary(run)
            assert (result["mounts"], result["failures"], result["reads_of_unwritten_tapes"]) == (48, 0, 0)
        for run in writes:
            result = summary(run)
            assert (result["mounts"], result["failures"]) == (32, 0), result["errors"]
            assert result["keys_issued"] > 0
    finally:
        sites.nodes()[leader].stop()
        sites.restart([leader])


def test_a_whole_site_lost_its_drives_fail_over_and_the_witness_keeps_management_writes(
    sites: TwoSites,
) -> None:
    boston = SITES["boston"]
    dallas_services = {service_address(sites.kmas[k]) for k in SITES["dallas"]}
    # When both Boston KMAs die (and their rqlited)
    for kma_id in boston:
        crash(sites.kmas[kma_id].process)
    try:
        # Then Boston's drives fail over to Dallas and go on: existing keys and new ones
        runs = [simulate(sites, site, 32, writes=False) for site in SITES]
        runs += [
            simulate(sites, site, 16, writes=True, prefix=new) for site, new in zip(SITES, "PQ", strict=True)
        ]
        for run in runs:
            result = summary(run)
            assert result["failures"] == 0, result["errors"]
            assert result["reads_of_unwritten_tapes"] == 0
            assert set(result["served_by"]) <= dallas_services
        assert result["keys_issued"] > 0  # Boston's drives got new write keys too (the last run)
        # and management writes go on: Dallas's two voters and the witness are 3 of 5
        dallas = sites.kmas["kma-dal-1"]
        wait_until(lambda: management_write(dallas, "after-boston-lost"), 30.0, "a management write")
        tolerance = dallas.client("so").get_topology().failure_tolerance
        assert tolerance.management_writes and tolerance.voters_responding == 3
    finally:
        for kma_id in boston:
            sites.kmas[kma_id].stop()
        sites.restart(list(boston))


def test_everything_restarted_every_kma_and_the_witness_hold_identical_state(sites: TwoSites) -> None:
    sites.kmas["kma-bos-2"].client("co").create_key_policy(
        "before-restart", encryption_period=60, cryptoperiod=120
    )
    for node in sites.nodes().values():
        node.stop()
    sites.restart(list(sites.nodes()))
    dallas = sites.kmas["kma-dal-1"]
    wait_until(
        lambda: management_write(dallas, "after-restart"), 30.0, "a management write after the restart"
    )
    conns = [replica(node) for node in sites.nodes().values()]  # the witness's replica too
    try:
        same = lambda: len({tuple(table_checksums(c).items()) for c in conns}) == 1  # noqa: E731
        wait_until(same, 15.0, "equal tables on every KMA")
        assert _exists(sites.kmas["kma-bos-1"].client("co").get_key_policy, "after-restart")
    finally:
        for conn in conns:
            conn.close()


def test_the_witness_starts_its_rqlited_again_when_it_ends(sites: TwoSites) -> None:
    process = sites.witness.process
    assert process is not None
    node = rqlited_pid(process.pid)
    assert node is not None
    # When the witness's rqlited dies (its `kma serve` stays)
    os.kill(node, signal.SIGKILL)
    # Then `kma serve` starts it again and the cluster sees the witness voting again
    wait_until(lambda: rqlited_pid(process.pid) not in (None, node), 30.0, "a new rqlited")
    so = sites.kmas["kma-dal-1"].client("so")

    def voting() -> bool:
        witness = next(k for s in so.get_topology().sites for k in s.kmas if k.id == "witness-1")
        return witness.responding and witness.voter

    wait_until(voting, 30.0, "the witness responding again")
