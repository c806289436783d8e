"""A one-KMA cluster gains a second KMA through the whole membership flow, then loses it again,
with real `kma serve` processes each running its own rqlited (issue 11):

entry (quorum) -> one-time KMA passphrase -> `kma init` join on the new machine -> it starts,
catches up, and waits locked -> a quorum unlocks it -> it sees the same users -> it is locked
through the first KMA -> the quorum removes it -> it leaves Raft, its node certificate is refused
by the first KMA's node (it cannot join again), its certificate is refused by the first KMA's
listeners, nothing is lost.
"""

from __future__ import annotations

import sqlite3
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kma.cluster.node_config import ClusterFiles, NodeConfig
from kma.datadir import DataDir
from kms_client import KmaLocked, PendingQuorumOp
from tests.integration.test_adding_kmas import _answers
from tests.integration.test_kma_join_init import init_join, passphrase_in
from tests.integration.test_quorum import creds
from tests.integration.test_quorum_cli import kma_cli, secret_file
from tests.support.agents import service_address
from tests.support.cluster import (
    BINARY,
    files_of,
    first_node,
    free_port,
    raft_port_lets_in,
    replica,
)
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


# What removing a KMA updates in place: its row, its certificates, the quorum operation, sessions
# and write marks, and the audit trail's per-day counts (they grow with its events). Everything
# else may only gain rows.
REMOVAL_UPDATES = {
    "kmas",
    "kma_certificates",
    "pending_quorum_ops",
    "quorum_approvals",
    "sessions",
    "audit_heads",
    "cluster_write_marks",
    "cluster_outbox_marks",
    "lockouts",
    "audit_events_per_day",
}


def table_rows(conn: sqlite3.Connection) -> dict[str, set[str]]:
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    return {t: {repr(tuple(r)) for r in conn.execute(f'SELECT * FROM "{t}"')} for t in tables}


def raft_members(kma: RunningKma) -> set[str]:
    from kma.cluster.rqlited import RqliteNode
    from kma.errors import ClusterUnavailable

    client = RqliteNode(files_of(kma)).client()
    try:
        return {n["id"] for n in client.get_json("/nodes", ver="2", nonvoters="")["nodes"]}
    except ClusterUnavailable:  # its node restarting (to trust the current members only)
        return set()
    finally:
        client.close()


def as_kma(kma: RunningKma, data_dir: Path) -> ssl.SSLContext:
    """Present the (removed) KMA's own listener certificate as a client."""
    context = ssl.create_default_context(cadata=kma.ca_pem)
    context.load_cert_chain(data_dir / "tls" / "server.pem", data_dir / "tls" / "server.key")
    return context


def test_a_one_kma_cluster_gains_a_kma_through_the_whole_flow_and_loses_it_with_nothing_lost(
    tmp_path: Path,
) -> None:
    first, _ = first_node(tmp_path / "a")
    second: RunningKma | None = None
    try:
        first.client("co").create_key_policy("before-join", encryption_period=60, cryptoperiod=120)
        # Given the Security Officer adds the new KMA's entry, with a quorum
        addresses = {name: f"127.0.0.1:{free_port()}" for name in ("management", "service", "raft")}
        cred_file = secret_file(tmp_path, "creds", "\n".join(f"{m} {p}" for m, p in creds(first, "alice")))
        code, out, err = kma_cli(
            first,
            tmp_path,
            "so",
            "cluster",
            "add-kma",
            "kma-bos-1",
            "--site",
            "boston",
            "--management-address",
            addresses["management"],
            "--service-address",
            addresses["service"],
            "--raft-address",
            addresses["raft"],
            "--credentials-file",
            cred_file,
        )
        assert code == 0 and "Pending quorum operation" in out and "two-voter cluster" in out, err
        op_id = out.split("Pending quorum operation ", 1)[1].split(":", 1)[0]
        passphrases = {m["name"]: m["passphrase"] for m in first.demo["key_split"]["members"]}
        first.client("qm1").approve_quorum_operation(op_id, "bob", passphrases["bob"])
        assert first.client("qm2").approve_quorum_operation(op_id, "carol", passphrases["carol"]).state == (
            "executed"
        )

        # When the new machine joins with its passphrase and starts
        new_dir = tmp_path / "b" / "kma"
        code, said = init_join(
            tmp_path,
            new_dir,
            first.address,
            first.fingerprint,
            "kma-bos-1",
            passphrase_in(out),
            rqlite_http=f"127.0.0.1:{free_port()}",
        )
        assert code == 0, said
        second = RunningKma(new_dir, first.demo, None)
        second.start()

        # Then it has caught up, starts locked, and a quorum unlocks it
        status = second.client().get_status()
        assert status.kma_id == "kma-bos-1" and status.locked
        assert raft_members(first) == {"kma-dal-1", "kma-bos-1"}
        with pytest.raises(KmaLocked):
            second.client("so").list_users()
        unlocked = second.client("so").unlock_kma(
            "kma-bos-1", credentials=creds(first, "alice", "bob", "carol")
        )
        assert not isinstance(unlocked, PendingQuorumOp) and not unlocked.locked
        users_first = sorted(u.id for u in first.client("so").iter_users())
        assert sorted(u.id for u in second.client("so").iter_users()) == users_first
        assert second.client("co").get_key_policy("before-join").cryptoperiod == 120
        second.client("co").create_key_policy("made-on-second", encryption_period=60, cryptoperiod=120)
        wait_until(lambda: _has_policy(first, "made-on-second"), 1.0, "the second KMA's change on the first")
        # A Security Officer locks it through the first KMA: it locks itself at once
        first.client("so").lock_kma("kma-bos-1")
        wait_until(
            lambda: second.client().get_status().locked, 3.0, "the second KMA locked through the first"
        )
        with replica(first) as db:
            before = table_rows(db)

        # When the quorum removes it (through the first KMA)
        so = first.client("so")
        removed = so.remove_kma("kma-bos-1", credentials=creds(first, "alice", "bob", "carol"))
        assert not isinstance(removed, PendingQuorumOp) and removed.removed_at is not None

        # Then it has left Raft, its certificate is refused by both of the first KMA's listeners,
        # and nothing the cluster held is lost
        wait_until(lambda: raft_members(first) == {"kma-dal-1"}, 5.0, "the node out of Raft")
        client_cert = as_kma(first, new_dir)
        assert _answers(client_cert, f"https://{first.address}/api/v1/status") is None
        assert _answers(client_cert, f"https://{service_address(first)}/v1/ca") is None
        second.stop()
        second = None
        # Its node certificate is refused by the first KMA's node from then on: a removed machine
        # that wipes its Raft state and asks to join again does not get in.
        node = ClusterFiles.of(new_dir)
        wait_until(
            lambda: not raft_port_lets_in(first, node.node_cert, node.node_key),
            30.0,
            "the removed KMA's node certificate refused",
        )
        assert not rejoin_as_removed(new_dir)
        assert raft_members(first) == {"kma-dal-1"}
        first.client("co").create_key_policy("after-remove", encryption_period=60, cryptoperiod=120)
        with replica(first) as db:
            after = table_rows(db)
        # Every row the cluster held before the removal is still there, unchanged, in every table
        # the removal has no business with; the audit trail only grew.
        for table, rows in before.items():
            # (audit_fts_*, *_text_*, text_index_marks: the free-text indexes' own tables and marks,
            # rewritten as rows come and the writers index them in the background)
            free_text = table.startswith("audit_fts_") or "_text_" in table or table == "text_index_marks"
            if table not in REMOVAL_UPDATES and not free_text:
                assert rows <= after[table], f"rows lost or changed in {table}"
        assert len(after["audit_events"]) > len(before["audit_events"])
        assert sorted(u.id for u in first.client("so").iter_users()) == users_first
        assert first.client("co").get_key_policy("made-on-second").encryption_period == 60
        assert DataDir(first.data_dir).is_initialised()
    finally:
        if second is not None:
            second.stop()
        first.stop()


def rejoin_as_removed(data_dir: Path) -> bool:
    """What a removed machine could do with its files: a fresh rqlite node asking to join; whether
    it got in."""
    import shutil
    from dataclasses import replace

    from kma.cluster.node_config import ClusterFiles
    from kma.cluster.rqlited import NodeFailed, RqliteNode

    files = ClusterFiles.of(data_dir)
    shutil.rmtree(files.rqlite_dir, ignore_errors=True)
    # As a read replica, which would copy the store if it got in.
    node = RqliteNode(files, replace(files.load(), voter=False))
    try:
        node.start(join=True, timeout=40)
    except NodeFailed:
        return False  # refused (or taken out before it was ready)
    finally:
        node.stop()
    return True


def _has_policy(kma: RunningKma, policy_id: str) -> bool:
    from kms_client import NotFound

    try:
        kma.client("co").get_key_policy(policy_id)
    except NotFound:
        return False
    return True


def test_a_removed_kma_restarting_its_node_with_its_old_certificate_does_not_get_back_in(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from kms_client import ClusterUnavailable
    from tests.support.cluster import add_node

    first, ca = first_node(tmp_path / "a")
    kmas = [first]
    try:
        for kma_id in ("kma-dal-2", "kma-dal-3"):
            kmas.append(add_node(first, ca, tmp_path, kma_id))
            kmas[-1].start()
        removed = kmas.pop()
        removed.stop()
        done = first.client("so").remove_kma("kma-dal-3", credentials=creds(first, "alice", "bob", "carol"))
        assert not isinstance(done, PendingQuorumOp)
        wait_until(lambda: raft_members(first) == {"kma-dal-1", "kma-dal-2"}, 5.0, "the node out of Raft")
        files = ClusterFiles.of(removed.data_dir)
        join = files.load().join
        for kma in kmas:  # every remaining node refuses its certificate
            wait_until(
                lambda: not raft_port_lets_in(kma, files.node_cert, files.node_key),  # noqa: B023
                30.0,
                "the removed KMA's node certificate refused",
            )

        # When the removed machine starts its rqlited again with its Raft state and asks to join,
        # and then as a fresh node under a made-up node ID (rqlite does not tie the ID to the
        # certificate)
        for config, fresh in ((files.load(), False), (replace(files.load(), node_id="not-a-kma"), True)):
            with rejoined(files, config, join, fresh) as process:
                # Then it gives up: no node lets it in
                wait_until(lambda: process.poll() is not None, 60.0, "the removed machine giving up")  # noqa: B023
            assert raft_members(first) == {"kma-dal-1", "kma-dal-2"}

        # and the cluster keeps its leader: management writes go on
        def written() -> bool:
            try:
                first.client("co").create_key_policy("after-rejoins", encryption_period=60, cryptoperiod=120)
            except ClusterUnavailable:
                return False
            return True

        wait_until(written, 10.0, "a management write")
        wait_until(lambda: _has_policy(kmas[1], "after-rejoins"), 1.0, "the write on the other KMA")
    finally:
        for kma in reversed(kmas):
            kma.stop()


@contextmanager
def rejoined(
    files: ClusterFiles, config: NodeConfig, join: tuple[str, ...], fresh: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """What a removed machine could do with its files: start its rqlited (as a voter) and ask to
    join; it runs until the block ends."""
    import shutil

    from kma.cluster.rqlited import RqliteNode

    if fresh:
        shutil.rmtree(files.rqlite_dir, ignore_errors=True)
    command = RqliteNode(files, config).command(join=False)
    command[-1:-1] = ["-join", ",".join(join), "-join-attempts", "5", "-join-interval", "1s"]
    with (files.folder / "rqlited.log").open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(20)
