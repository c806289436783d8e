"""KMA entries carry the cluster CA's signature (issue 26, item 1, defence in depth): a `kmas` row
written through rqlite with a leaked node credential, on a real two-KMA cluster, is not pinned by
any node's rqlited, is not given to agents, and is reported as tampered with."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from kma.crypto import hash_passphrase
from kma.datadir import DataDir
from kma.kmip.tls import agent_context
from kms_client import ClusterUnavailable, KmsClient
from tests.integration.test_agents_follow_cluster import get_kmas
from tests.integration.test_row_macs import _audit_verify, _write_behind_the_kma
from tests.support.agents import demo_passphrase, enroll, service_address
from tests.support.cluster import BINARY, add_node, execute, files_of, first_node, replica
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

needs_rqlited = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")

FORGED = (
    "INSERT INTO kmas (id, name, site_id, management_address, service_address, raft_address, version, "
    "key_pool_size, node_cert_pem, created_at, updated_at) "
    "VALUES ('mallory', 'Mallory', ?, '127.0.0.1:1', '127.0.0.1:9', '127.0.0.1:2', '0.1.0', 0, ?, ?, ?)"
)


@needs_rqlited
def test_a_kma_entry_written_through_rqlite_is_not_pinned_nor_given_to_agents(tmp_path: Path) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        agent_id = first.demo["agents"][0]["id"]
        agent = tmp_path / "agent" / agent_id
        enroll(first, agent_id, agent, demo_passphrase(first, agent_id))
        drive_cert = (agent / "agent.pem").read_text(encoding="ascii")
        with replica(first) as db:
            site = db.execute("SELECT site_id FROM kmas WHERE id = 'kma-dal-1'").fetchone()[0]

        # When someone with a node's credential writes a KMA entry naming the drive's certificate
        now = int(time.time())
        execute(first, [[FORGED, site, drive_cert, now, now]])
        with replica(second) as db:
            wait_until(
                lambda: db.execute("SELECT 1 FROM kmas WHERE id = 'mallory'").fetchone() is not None,
                30.0,
                "the forged entry replicated",
            )

        # Then it is reported as tampered with
        auditor: list[KmsClient] = []  # signed in once: a sign-in is a memory-hard hash

        def reported() -> bool:
            try:  # (today's code pinned the drive and restarted its rqlited: refused a moment)
                auditor[:] = auditor or [first.client("auditor")]
                events = list(auditor[0].iter_audit_events())
            except ClusterUnavailable:
                return False
            return any(e.operation == "security.tamper" and e.subject_id == "mallory" for e in events)

        wait_until(reported, 60.0, "the tamper event")
        code, said = _audit_verify(first)
        assert code == 1 and "kmas 'mallory' has no signature" in said
        # and no node's rqlited trusts the drive's certificate
        for kma in (first, second):
            assert drive_cert.strip() not in files_of(kma).trusted_nodes.read_text(encoding="ascii")
        # and agents are not sent to it
        as_agent = agent_context(agent / "ca.pem", agent / "agent.pem", agent / "agent.key")
        status, listed = get_kmas(first, as_agent)
        assert status == 200
        assert "mallory" not in {k["id"] for k in listed["kmas"]}  # type: ignore[attr-defined]
        assert {"kma-dal-1", "kma-dal-2"} <= {k["id"] for k in listed["kmas"]}  # type: ignore[attr-defined]
    finally:
        second.stop()
        first.stop()


def test_a_kmas_own_entry_altered_in_its_store_is_reported_and_written_anew(fresh_kma: RunningKma) -> None:
    """Someone with the store file gives the KMA's own entry a KMA passphrase (to join as it) and sends
    its agents elsewhere: at its next start, unlocked, it reports that and writes its entry anew."""
    kma_id = DataDir(fresh_kma.data_dir).identity().kma_id
    forged = "UPDATE kmas SET join_passphrase_hash = ?, service_address = '203.0.113.9:5696' WHERE id = ?"
    _write_behind_the_kma(fresh_kma, (forged, (hash_passphrase("mallory's KMA passphrase"), kma_id)))

    auditor = fresh_kma.client("auditor")

    def reported() -> bool:
        events = auditor.iter_audit_events()
        return any(e.operation == "security.tamper" and e.subject_id == kma_id for e in events)

    wait_until(reported, 30.0, "the tamper event")
    db = sqlite3.connect(f"file:{fresh_kma.data_dir / 'kma.db'}?mode=ro", uri=True)
    try:
        hash_, address = db.execute(
            "SELECT join_passphrase_hash, service_address FROM kmas WHERE id = ?", (kma_id,)
        ).fetchone()
    finally:
        db.close()
    assert hash_ is None and address == service_address(fresh_kma)
    code, said = _audit_verify(fresh_kma)
    assert "KMA entries: every signature by the cluster CA verifies." in said
    assert code == 1  # the tamper event stays in the audit trail


@needs_rqlited
def test_a_management_address_rewritten_through_rqlite_sends_no_manager_there(tmp_path: Path) -> None:
    """Issue 39, item 1: a KMA entry's management address (where the manager fails over to with its
    bearer token) pointed elsewhere through rqlite is reported, left out of the topology and so of the
    manager's failover list, flagged in the KMA list; the KMA, once back, records its own anew."""
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2", voter=False)  # the first alone keeps a majority
    try:
        second.start()
        so = first.client("so")
        wait_until(lambda: "kma-dal-2" in {k.id for k in so.learn_cluster()}, 30.0, "the second KMA listed")
        second.stop()

        # When someone with a node's credential points the stopped KMA's entry at their own listener
        execute(first, [["UPDATE kmas SET management_address = '127.0.0.1:9' WHERE id = 'kma-dal-2'"]])

        # Then it is reported as tampered with, and no manager learns that address
        def reported() -> bool:
            events = so.iter_audit_events()
            return any(e.operation == "security.tamper" and e.subject_id == "kma-dal-2" for e in events)

        wait_until(reported, 30.0, "the tamper event")
        assert {k.id for k in so.learn_cluster()} == {"kma-dal-1"}
        assert "127.0.0.1:9" not in repr(so.get_upgrade_check())  # nor does the upgrade check go there
        listed = {k.id: k for k in so.list_kmas().items}
        assert (
            listed["kma-dal-2"].entry_problem
            and "signature does not verify" in listed["kma-dal-2"].entry_problem
        )
        assert listed["kma-dal-1"].entry_problem is None
        code, said = _audit_verify(first)
        assert code == 1 and "kmas 'kma-dal-2' has a management address" in said

        # When the KMA starts again, unlocked, it records its own management address, signed
        second.start()
        wait_until(
            lambda: {k.id: k.address for k in so.learn_cluster()}.get("kma-dal-2") == second.address,
            30.0,
            "the KMA's own address back in the topology",
        )
    finally:
        second.stop()
        first.stop()
