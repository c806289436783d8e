"""KMAs as nodes of an rqlite cluster (issue 11): real `kma serve` processes, each running its own
rqlited on loopback, node-to-node and HTTP mutual TLS from the cluster CA."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kma.cluster.convert import EMBEDDED_KEPT, boot_from_embedded
from kma.cluster.rqlited import NodeFailed, RqliteNode
from kma.crypto.ca import create_cluster_ca
from kma.datadir import DataDir
from kma.store import Batch, Stmt
from kma.store.rqlite import RqliteStore
from kms_client import ClusterUnavailable, NotFound
from tests.integration.test_quorum import creds
from tests.support.agents import enrolled_demo_agent, kmip
from tests.support.cluster import (
    BINARY,
    add_node,
    assert_every_kma_agrees,
    files_of,
    first_node,
    free_port,
    outbox_depth,
    private_files,
    replica,
    rqlited_pid,
    table_checksums,
    three_kmas,
)
from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


def test_an_embedded_kma_becomes_the_first_node_with_every_table_unchanged(tmp_path: Path) -> None:
    kma = RunningKma.demo_in(tmp_path)
    kma.client("co").create_key_policy("before-cluster", encryption_period=60, cryptoperiod=120)
    kma.stop()
    data_dir = DataDir(kma.data_dir)
    with sqlite3.connect(f"file:{data_dir.db}?mode=ro", uri=True) as db:
        before = table_checksums(db)
    converted = run_kma(
        "convert-to-cluster",
        "--data-dir",
        str(kma.data_dir),
        "--raft-address",
        f"127.0.0.1:{free_port()}",
        "--http-address",
        f"127.0.0.1:{free_port()}",
    )
    assert "first node of a cluster" in converted.stdout
    with private_files():  # what `kma serve` does at its next start, here without the KMA's own writes
        node = RqliteNode(files_of(kma))
        node.start(join=False)
        try:
            boot_from_embedded(data_dir, node)
        finally:
            node.stop()
    assert not data_dir.db.exists() and (kma.data_dir / EMBEDDED_KEPT).exists()
    with replica(kma) as db:
        after = table_checksums(db)
    assert after == before and "keys" in after and "audit_events" in after

    kma.start()  # now on rqlite: everything made before is there and the KMA writes on
    co = kma.client("co")
    assert co.get_key_policy("before-cluster").cryptoperiod == 120
    co.create_key_policy("after-cluster", encryption_period=60, cryptoperiod=120)
    kma.restart()
    assert kma.client("co").get_key_policy("after-cluster").encryption_period == 60
    assert run_kma("audit", "verify", "--data-dir", str(kma.data_dir)).returncode == 0
    kma.stop()


@pytest.fixture
def two_kmas(tmp_path: Path):  # type: ignore[no-untyped-def]
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    second.start()
    yield first, second, ca
    second.stop()
    first.stop()


def test_a_change_made_on_either_kma_is_seen_on_the_other_within_a_second(two_kmas) -> None:  # type: ignore[no-untyped-def]
    first, second, _ = two_kmas
    co_first, co_second = first.client("co"), second.client("co")
    co_first.create_key_policy("made-on-first", encryption_period=60, cryptoperiod=120)
    wait_until(
        lambda: _exists(co_second.get_key_policy, "made-on-first"), 1.0, "the policy on the second KMA"
    )
    second.client("so").create_user(
        "jo", "Jo Auditor", ["auditor"], "jo's passphrase", credentials=creds(second, "alice", "bob", "carol")
    )
    wait_until(lambda: _exists(first.client("so").get_user, "jo"), 1.0, "the user on the first KMA")
    co_first.create_key_group("group-on-first", "made-on-first")
    site = DataDir(first.data_dir).identity().site_id
    first.client("op").create_agent("drive-on-first", site, "group-on-first")
    wait_until(
        lambda: _exists(second.client("op").get_agent, "drive-on-first"), 1.0, "the agent on the second KMA"
    )
    first.client("jo", "jo's passphrase")  # the user made on the second KMA signs in on the first

    # `kma status` beside a running cluster KMA reads the same store (its events go straight
    # through: the running KMA's outbox has one shipper).
    status = run_kma("status", "--data-dir", str(second.data_dir), "--json")
    assert json.loads(status.stdout)["kma_id"] == "kma-dal-2"

    # Both KMAs wrote their own audit chains into the one store: every chain verifies on both.
    for kma in (first, second):
        assert run_kma("audit", "verify", "--data-dir", str(kma.data_dir)).returncode == 0
    with replica(first) as db:
        chains = {r[0] for r in db.execute("SELECT kma_id FROM audit_heads")}
    assert chains == {"kma-dal-1", "kma-dal-2"}

    # A backup from the cluster is a consistent SQLite file holding what both KMAs wrote.
    backup = first.data_dir.parent / "cluster-backup.db"
    store = RqliteStore(RqliteNode(files_of(second)).client(), files_of(second).replica, "kma-dal-2")
    try:
        store.backup(backup)
        assert {n.kma_id for n in store.cluster_nodes()} == {"kma-dal-1", "kma-dal-2"}
        assert sum(n.leader for n in store.cluster_nodes()) == 1
    finally:
        store.close()
    with sqlite3.connect(backup) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM agents WHERE id = 'drive-on-first'").fetchone()[0] == 1

    # Restarted, both KMAs hold identical state.
    first.restart()
    second.restart()
    first.client("co").create_key_policy("after-restart", encryption_period=60, cryptoperiod=120)
    wait_until(lambda: _exists(second.client("co").get_key_policy, "after-restart"), 1.0, "the last change")
    with replica(first) as a, replica(second) as b:
        wait_until(lambda: table_checksums(a) == table_checksums(b), 5.0, "identical tables")


def test_a_refused_change_leaves_nothing_in_the_cluster_store(two_kmas) -> None:  # type: ignore[no-untyped-def]
    first, second, _ = two_kmas
    co = second.client("co")
    co.create_key_policy("once", encryption_period=60, cryptoperiod=120)
    with pytest.raises(Exception, match="already exists"):
        co.create_key_policy("once", encryption_period=30, cryptoperiod=60)
    assert first.client("co").get_key_policy("once").encryption_period == 60
    refused = [
        e for e in second.client("auditor").iter_audit_events(subject_id="once") if e.condition != "success"
    ]
    assert refused  # the refusal itself is audited


def test_the_store_writer_outlives_a_replica_read_failing_while_rqlited_rebuilds_it(two_kmas) -> None:  # type: ignore[no-untyped-def]
    """rqlited restarting (to trust a new member) rebuilds the replica: for a moment it has no
    tables. The KMA's one writer thread read it, died, and every later write then waited forever
    (sign-ins hung on a two-site cluster). A failed turn must not end the writer."""
    _, second, _ = two_kmas
    store = RqliteStore(RqliteNode(files_of(second)).client(), files_of(second).replica, "test-writer")
    try:
        store.write(
            Batch(
                [
                    Stmt(
                        "INSERT INTO sites (id, name, created_at, updated_at) VALUES (?, '1', 0, 0)",
                        ("writer-test",),
                    )
                ]
            )
        )
        read_seen, rebuilt = store._tell_seen, threading.Event()

        def replica_being_rebuilt() -> None:
            if not rebuilt.is_set():
                rebuilt.set()
                raise sqlite3.OperationalError("no such table: cluster_write_marks")
            read_seen()

        store._tell_seen = replica_being_rebuilt  # type: ignore[method-assign]
        done = store.submit(Batch([Stmt("UPDATE sites SET name = '2' WHERE id = 'writer-test'")]))
        done.result(timeout=30)
        assert rebuilt.is_set()
        after = store.submit(Batch([Stmt("UPDATE sites SET name = '3' WHERE id = 'writer-test'")]))
        after.result(timeout=30)  # before the fix: TimeoutError, the writer thread was gone
        assert store.query_leader("SELECT name FROM sites WHERE id = 'writer-test'") == [["3"]]
    finally:
        store.close()


def test_a_node_with_a_certificate_from_another_ca_cannot_join(tmp_path: Path) -> None:
    first, ca = first_node(tmp_path / "a")
    try:
        stranger = add_node(first, ca, tmp_path, "kma-stranger", join_ca=create_cluster_ca("other"))
        node = RqliteNode(files_of(stranger))
        with pytest.raises(NodeFailed):
            node.start(timeout=8)
        node.stop()
        client = RqliteNode(files_of(first)).client()
        try:
            members = {n["id"] for n in client.get_json("/nodes", ver="2", nonvoters="")["nodes"]}
        finally:
            client.close()
        assert members == {"kma-dal-1"}
    finally:
        first.stop()


def test_a_node_that_cannot_start_says_why_where_the_kma_reports_it(tmp_path: Path) -> None:
    """CI once saw only "rqlited exited with status 1" from a joining KMA, its log gone with the
    machine: the reason rqlited gave is in the message itself now."""
    first, _ = first_node(tmp_path / "a")
    first.stop()
    files = files_of(first)
    host, port = files.load().http_address.rsplit(":", 1)
    with socket.socket() as taken:
        taken.bind((host, int(port)))
        taken.listen()
        node = RqliteNode(files)
        with pytest.raises(NodeFailed, match="address already in use"):
            node.start(timeout=30)
        node.stop()


def _exists(get, object_id: str) -> bool:  # type: ignore[no-untyped-def]
    try:
        get(object_id)
    except NotFound:
        return False
    return True


def _rqlited_pid(kma: RunningKma) -> int:
    """The rqlited that this KMA's `kma serve` runs (its child process)."""
    assert kma.process is not None
    pid = rqlited_pid(kma.process.pid)
    assert pid is not None
    return pid


def _ended(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/cmdline").read_bytes()  # a zombie's is empty
    except OSError:
        return True


def _leader(kma: RunningKma) -> str:
    client = RqliteNode(files_of(kma)).client()
    try:
        nodes = client.get_json("/nodes", ver="2", nonvoters="")["nodes"]
    finally:
        client.close()
    return next((n["id"] for n in nodes if n.get("leader")), "")


def test_killing_the_raft_leader_keeps_keys_readable_and_writes_resume(tmp_path: Path) -> None:
    with three_kmas(tmp_path) as kmas:
        first = kmas[0]
        op = first.client("op")
        op.create_data_unit("LDR001", "written before the leader dies")
        key = op.issue_key("backup-dallas", "LDR001")
        for kma in kmas:
            wait_until(lambda k=kma: _exists(k.client("op").get_key, key.id), 1.0, "the key everywhere")

        operators = [kma.client("op") for kma in kmas]  # signed in (a sign-in is a change)
        leader_id = _leader(first)
        leader = next(k for k in kmas if DataDir(k.data_dir).identity().kma_id == leader_id)
        os.kill(_rqlited_pid(leader), signal.SIGKILL)

        # Keys are read from each KMA's own replica: every KMA keeps serving them, the one whose
        # Raft node just died included.
        for operator in operators:
            assert operator.get_key(key.id).id == key.id
        # The two others elect a new leader: changes go through again, and new keys are issued.
        survivor = operators[next(i for i, k in enumerate(kmas) if k is not leader)]

        def change(make: Callable[[], object]) -> bool:
            try:
                make()
            except ClusterUnavailable:
                return False
            return True

        unit = lambda: survivor.create_data_unit("LDR002", "after the leader died")  # noqa: E731
        wait_until(lambda: change(unit), 3.0, "a change after the leader died")
        wait_until(lambda: change(lambda: survivor.issue_key("backup-dallas", "LDR002")), 3.0, "a new key")


def test_a_kma_cut_off_from_the_others_keeps_serving_keys_and_loses_no_audit_event(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with three_kmas(tmp_path) as kmas:
        stopped: list[int] = []
        try:
            cut = kmas[1]
            agent = enrolled_demo_agent(cut, tmp_path_factory, "t10k-dal-01")
            with kmip(agent) as drive:
                key_id = drive.create_and_activate(data_unit="CUT001")
                material = drive.get(key_id)

                # The other two nodes stop answering (the machine is cut off): no Raft majority here.
                stopped = [_rqlited_pid(k) for k in kmas if k is not cut]
                for pid in stopped:
                    os.kill(pid, signal.SIGSTOP)
                gets = 5
                for _ in range(gets):
                    assert drive.get(key_id) == material  # from the local replica; events to the outbox
                assert outbox_depth(cut) >= gets  # on the KMA's own disk, waiting for the cluster

            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
            stopped = []

            def sent_events(kma: RunningKma) -> list[int]:
                with replica(kma) as db:
                    rows = db.execute(
                        "SELECT chain_seq FROM audit_events WHERE kma_id = 'kma-dal-2' "
                        "AND operation = 'kmip.get' AND subject_id = ?",
                        (key_id,),
                    ).fetchall()
                return [r[0] for r in rows]

            for kma in kmas:  # every Get's event reaches every KMA, once
                wait_until(lambda k=kma: len(sent_events(k)) == gets + 1, 10.0, "the Gets' events everywhere")
                assert len(set(sent_events(kma))) == gets + 1
            assert outbox_depth(cut) == 0
            assert_every_kma_agrees(kmas)
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)


def test_a_kma_started_at_once_after_a_kill_waits_for_its_old_node_to_end(tmp_path: Path) -> None:
    """A KMA killed outright leaves its rqlited ending (the death signal is a SIGTERM, and a leader
    steps down first): `kma serve` started at once waits for the old node to let go of its ports,
    instead of failing with "address already in use" (a flaky restart in the one-key-one-tape test)."""
    kma, _ = first_node(tmp_path)
    try:
        old = _rqlited_pid(kma)
        os.kill(old, signal.SIGSTOP)  # an old node slow to end: it holds its ports until it runs again
        kma.kill()
        threading.Timer(2.0, os.kill, (old, signal.SIGCONT)).start()
        kma.start()
        assert _ended(old)
        assert kma.client("op").get_dashboard().kmas
    finally:
        kma.stop()
