"""Issue 30: what a KMA offers a manager of another release (GET /about, no sign-in), the versions
each KMA records (release, schema, rqlited) as the topology shows them, and `kma upgrade check`
(GET /cluster/upgrade-check): every KMA responding with no pending outbox, a recent database
backup, the order to upgrade in; on one real KMA, on a real 0.1.0 KMA, and on a cluster of three."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import kms_client
from kma.capabilities import API_VERSION, CAPABILITIES
from kma.cluster.rqlited import VERSION as RQLITE_VERSION
from kma.store.schema import latest_schema_version
from kms_client.release import release
from tests.integration.helpers import raw_http
from tests.integration.test_quorum_cli import kma_cli
from tests.support.cluster import three_kmas
from tests.support.kma_process import RunningKma
from tests.support.releases import release_tree
from tests.support.waiting import wait_until

DAY = 24 * 3600


def test_about_tells_the_release_api_version_and_capabilities_without_sign_in(demo_kma: RunningKma) -> None:
    with raw_http(demo_kma) as http:
        answer = http.get("/about")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "release": release(),
        "api_version": API_VERSION,
        "capabilities": list(CAPABILITIES),
    }
    about = demo_kma.client().get_about()  # the client's view: no sign-in needed
    assert (about.release, about.api_version) == (release(), 1)
    assert "cluster.upgrade-check" in about.capabilities


def test_a_kma_of_release_0_1_0_is_named_too_old_not_met_with_a_404(tmp_path: Path) -> None:
    old = RunningKma.demo_in(tmp_path, source=release_tree("0.1.0", tmp_path / "release-0.1.0"))
    try:
        with pytest.raises(kms_client.IncompatibleKma) as refused:
            old.client().get_about()
    finally:
        old.stop()
    assert refused.value.release == "0.1.0"
    said = str(refused.value)
    assert f"runs release 0.1.0, too old for this manager (release {release()})" in said
    assert "404" not in said and "Not Found" not in said


def test_a_kma_speaking_a_newer_api_major_is_named_too_new(demo_kma: RunningKma) -> None:
    newer = {"release": "3.0.0", "api_version": API_VERSION + 1, "capabilities": ["about"]}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=newer))  # a fake KMA of 3.0.0
    client = kms_client.KmsClient(
        "127.0.0.1:1", ca_pem=demo_kma.ca_pem, ca_fingerprint=demo_kma.fingerprint, transport=transport
    )
    with pytest.raises(kms_client.IncompatibleKma) as refused:
        client.get_about()
    assert refused.value.release == "3.0.0"
    assert "management API (version 2) is newer than this manager's" in str(refused.value)
    assert "Install the manager of release 3.0.0 or later" in str(refused.value)


def test_the_topology_shows_each_kmas_release_and_schema(demo_kma: RunningKma) -> None:
    (kma,) = demo_kma.client("auditor").get_topology().kmas
    assert (kma.version, kma.schema_version, kma.rqlite_version) == (release(), latest_schema_version(), None)
    assert (
        kma.versions_text
        == f"release {release()}, schema {latest_schema_version()}, embedded store (no rqlited)"
    )


def test_upgrade_check_wants_a_backup_of_the_last_day_and_names_what_to_do(
    fresh_kma: RunningKma, tmp_path: Path
) -> None:
    so = fresh_kma.client("so")
    fresh_kma.client("backup").create_backup()
    ready = so.get_upgrade_check()
    assert ready.ready, ready.checks
    assert [s.id for s in ready.order] == ["kma-dal-1"] and ready.order[0].this_kma
    code, out, err = kma_cli(fresh_kma, tmp_path, "so", "upgrade", "check")
    assert code == 0, err
    assert "Ready: every check passed." in out and "1. kma-dal-1" in out

    # A larger pool: the KMA makes keys no backup holds, which exist only on this machine
    size = so.get_kma("kma-dal-1").key_pool_size
    so.update_kma("kma-dal-1", key_pool_size=size + 50)
    waiting = wait_until(
        lambda: [c for c in so.get_upgrade_check().checks if not c.ok], 15, "keys waiting for a backup"
    )
    assert waiting[0].name == "backup" and "wait for one: they exist nowhere else" in waiting[0].message
    fresh_kma.client("backup").create_backup()
    assert so.get_upgrade_check().ready

    # A day and an hour later the backup is too old: the check fails, saying what to do.
    fresh_kma.advance_clock(DAY + 3600)
    so = fresh_kma.client("so")  # signed in again: a day ended the session
    stale = so.get_upgrade_check()
    assert not stale.ready
    (failed,) = [c for c in stale.checks if not c.ok]
    assert failed.name == "backup" and "1 day 1 h old" in failed.message
    assert "Have a Backup Operator take a database backup" in failed.todo
    code, out, err = kma_cli(fresh_kma, tmp_path, "so", "upgrade", "check")
    assert code == 1, (out, err)
    assert "FAIL The newest database backup is 1 day 1 h old" in out
    assert "     Have a Backup Operator take a database backup" in out  # what to do, under it
    assert "Not ready: 1 check failed." in out
    code, out, _ = kma_cli(fresh_kma, tmp_path, "so", "upgrade", "check", "--json")
    assert code == 1 and json.loads(out)["ready"] is False

    fresh_kma.client("backup").create_backup()
    assert so.get_upgrade_check().ready


def test_only_a_security_officer_runs_the_upgrade_check(demo_kma: RunningKma, tmp_path: Path) -> None:
    with pytest.raises(kms_client.Forbidden):
        demo_kma.client("auditor").get_upgrade_check()
    code, _, err = kma_cli(demo_kma, tmp_path, "auditor", "upgrade", "check")
    assert code == 2 and "security_officer" in err


@pytest.mark.slow
def test_on_a_cluster_the_check_orders_the_kmas_and_names_one_that_stopped(tmp_path: Path) -> None:
    with three_kmas(tmp_path) as kmas:
        first = kmas[0]
        so = first.client("so")
        first.client("backup").create_backup()

        def every_kma_recorded() -> bool:
            return all(k.rqlite_version for k in so.get_topology().kmas)

        wait_until(every_kma_recorded, timeout=60, what="every KMA's rqlited release recorded")
        topology = so.get_topology()
        assert {(k.version, k.schema_version, k.rqlite_version) for k in topology.kmas} == {
            (release(), latest_schema_version(), RQLITE_VERSION)
        }
        wait_until(lambda: so.get_upgrade_check().ready, timeout=60, what="the cluster ready for an upgrade")
        answer = so.get_upgrade_check()
        # Each KMA said itself (its GET /status, asked by kma-dal-1) that it is caught up
        assert sorted(c.kma_id for c in answer.checks if c.name == "caught-up" and c.ok) == [
            "kma-dal-1",
            "kma-dal-2",
            "kma-dal-3",
        ]
        order = answer.order
        leader = next(k.id for k in topology.kmas if k.leader)
        # The KMA answering (kma-dal-1) last; the Raft leader just before it (when it is another).
        assert order[-1].id == "kma-dal-1" and order[-1].this_kma
        if leader != "kma-dal-1":
            assert order[-2].id == leader
        assert sorted(s.id for s in order) == ["kma-dal-1", "kma-dal-2", "kma-dal-3"]

        kmas[2].stop()
        wait_until(lambda: not so.get_upgrade_check().ready, timeout=60, what="the stopped KMA noticed")
        failed = [c for c in so.get_upgrade_check().checks if not c.ok]
        assert [(c.name, c.kma_id) for c in failed] == [("responding", "kma-dal-3")]
        assert "does not respond" in failed[0].message and "Start it" in failed[0].todo
