"""A cluster node lets in only the cluster's current KMAs (issue 26, item 1), on a real cluster of
`kma serve` processes each running its own rqlited:

- an enrolled drive's agent certificate, or a KMA's listener certificate (both from the cluster
  CA), is refused by a node's Raft port and by its rqlited's HTTP API;
- the node certificate alone, without the node credential, reads nothing through the HTTP API;
- a removed KMA that keeps its files is cut off: its node certificate is refused by the others,
  also after its entry is written back with the signature it had before its removal;
- the first node's entry names its Raft address once it runs as a cluster node.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from kms_client import ClusterUnavailable
from tests.integration.test_quorum import creds
from tests.support.agents import demo_passphrase, enroll
from tests.support.cluster import (
    BINARY,
    add_node,
    execute,
    files_of,
    first_node,
    raft_port_lets_in,
    replica,
)
from tests.support.kma_process import RunningKma
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


def http_api_reads(kma: RunningKma, cert: Path, key: Path, auth: tuple[str, str] | None = None) -> bool:
    """Whether the KMA's rqlited answers a query for the users (their password hashes) to this
    certificate on its loopback HTTP API."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(cert, key)
    address = files_of(kma).load().http_address
    try:
        with httpx.Client(verify=context, timeout=10, auth=auth) as http:
            query = {"q": "SELECT id, passphrase_hash FROM users"}
            answer = http.get(f"https://{address}/db/query", params=query)
    except httpx.HTTPError:  # the handshake refused
        return False
    return answer.status_code == 200 and "values" in answer.text


def test_a_drive_or_listener_certificate_is_refused_by_the_raft_port_and_rqlites_http_api(
    tmp_path: Path,
) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        agent_id = first.demo["agents"][0]["id"]
        agent = tmp_path / "agent" / agent_id
        enroll(first, agent_id, agent, demo_passphrase(first, agent_id))
        node = files_of(second)
        # The nodes themselves talk to each other (the control: the same probe lets a node in)
        assert raft_port_lets_in(first, node.node_cert, node.node_key)

        # When an enrolled drive presents its agent certificate to a KMA's Raft port and HTTP API
        # Then it is refused by both, and reads nothing
        assert not raft_port_lets_in(first, agent / "agent.pem", agent / "agent.key")
        assert not http_api_reads(first, agent / "agent.pem", agent / "agent.key")
        # and so is a KMA's listener certificate (also from the cluster CA)
        listener = (second.data_dir / "tls" / "server.pem", second.data_dir / "tls" / "server.key")
        assert not raft_port_lets_in(first, *listener)
        assert not http_api_reads(first, *listener)
        # A node certificate without the node credential reads nothing either; with it, it does
        own = files_of(first)
        assert not http_api_reads(first, own.node_cert, own.node_key)
        assert http_api_reads(first, own.node_cert, own.node_key, own.credential())
        assert oct(own.credential_file.stat().st_mode & 0o777) == "0o600"

        # and the first node's entry names its Raft address (set once it runs as a node)
        with replica(first) as db:
            row = db.execute("SELECT raft_address FROM kmas WHERE id = 'kma-dal-1'").fetchone()
        assert row["raft_address"] == own.load().raft_address
    finally:
        second.stop()
        first.stop()


def test_a_removed_kma_keeping_its_files_is_cut_off_by_the_others(tmp_path: Path) -> None:
    first, ca = first_node(tmp_path / "a")
    second = add_node(first, ca, tmp_path, "kma-dal-2")
    try:
        second.start()
        files = files_of(second)
        assert raft_port_lets_in(first, files.node_cert, files.node_key)

        with replica(first) as db:
            before = db.execute("SELECT signature FROM kmas WHERE id = 'kma-dal-2'").fetchone()[0]
        # When the quorum removes the second KMA, which keeps running with all its files
        quorum = creds(first, "alice", "bob", "carol")
        removed = first.client("so").remove_kma("kma-dal-2", credentials=quorum)
        assert removed.removed_at is not None  # type: ignore[union-attr]

        # Then the first KMA's node refuses its node certificate (the node credential is no help)
        wait_until(
            lambda: not raft_port_lets_in(first, files.node_cert, files.node_key),
            60.0,
            "the removed KMA's node certificate refused",
        )
        # and the cluster goes on taking changes
        wait_until(lambda: _written(first), 30.0, "a management write after the removal")

        # When someone with a node's credential writes the entry back as it was before its removal,
        # signature and all
        execute(first, [["UPDATE kmas SET removed_at = NULL, signature = ? WHERE id = 'kma-dal-2'", before]])

        # Then it is reported, and the removed KMA's node certificate is still trusted by no one
        def reported() -> bool:
            try:
                events = list(first.client("auditor").iter_audit_events())
            except ClusterUnavailable:
                return False
            return any(
                e.operation == "security.tamper"
                and e.subject_id == "kma-dal-2"
                and "written back" in e.message
                for e in events
            )

        wait_until(reported, 60.0, "the tamper event")
        pem = files.node_cert.read_text(encoding="ascii").strip()
        assert pem not in files_of(first).trusted_nodes.read_text(encoding="ascii")
    finally:
        second.stop()
        first.stop()


def _written(kma: RunningKma) -> bool:
    try:
        kma.client("co").create_key_policy("after-removal", encryption_period=60, cryptoperiod=120)
    except ClusterUnavailable:
        return False
    return True
