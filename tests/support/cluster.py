"""Clusters of real KMAs on loopback, each `kma serve` running its own rqlited.

The first KMA is a demo KMA made a cluster's first node (`make_first_node`, the product's own
code; its next start boots rqlite from its embedded store). Further KMAs get their data dir from
the same cluster CA and their `kmas` row (with their node certificate, which every node's rqlited
then trusts) through the cluster, as the membership flow makes them; here the test provisions
them directly, so the store engine is tested on its own.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from kma.cluster.convert import cluster_ca, make_first_node
from kma.cluster.node_config import ClusterFiles, NodeConfig, issue_node_certificate
from kma.cluster.rqlited import RqliteNode
from kma.cluster.trust import bundle, member_pins
from kma.crypto import WrappingKey, entry_signature
from kma.crypto.ca import CertifiedKey, issue_server_certificate
from kma.datadir import DataDir, Identity, write_private
from kma.errors import ClusterUnavailable
from tests.support.kma_process import RunningKma
from tests.support.ports import free_port
from tests.support.waiting import wait_until

BINARY = Path(os.environ.get("KMA_RQLITED", Path.home() / ".cache/kms-manager/rqlite-v8.43.4/rqlited"))


@contextmanager
def private_files() -> Iterator[None]:
    """Files the test writes into a data dir are its owner's only (as `kma` itself makes them)."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


class Node(Protocol):
    """A running KMA or witness: what its data dir holds is all a test looks at here."""

    data_dir: Path


def files_of(kma: Node) -> ClusterFiles:
    return ClusterFiles.of(kma.data_dir)


def replica(kma: Node) -> sqlite3.Connection:
    """A read-only look at a cluster node's local replica (rqlite's SQLite file)."""
    conn = sqlite3.connect(f"file:{files_of(kma).replica}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def first_node(tmp: Path) -> tuple[RunningKma, CertifiedKey]:
    """A demo KMA turned into a cluster's first node, running; and the cluster CA."""
    kma = RunningKma.demo_in(tmp)
    kma.stop()
    data_dir = DataDir(kma.data_dir)
    ca = cluster_ca(data_dir)
    with private_files():
        make_first_node(data_dir, f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}", ca)
    kma.start()
    return kma, ca


def credential_of(kma: Node) -> str | None:
    """The cluster's node credential, as a node holds it."""
    credential = files_of(kma).credential()
    return credential[1] if credential else None


def raft_port_lets_in(kma: Node | str, cert: Path, key: Path) -> bool:
    """Whether the KMA's Raft port (or the one at this address) keeps a mutual-TLS connection made
    with this certificate open, as it does for a node's (a refused certificate gets an alert and
    the connection closed)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the attacker does not care who the server is
    context.load_cert_chain(cert, key)
    host, port = (kma if isinstance(kma, str) else files_of(kma).load().raft_address).rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw) as tls:
            tls.settimeout(3)
            return tls.recv(1) != b""  # an accepted client is sent nothing: the read times out
    except TimeoutError:
        return True
    except (ssl.SSLError, OSError):  # refused, or the node not listening (restarting)
        return False


def settle(first: RunningKma, newcomer: ClusterFiles) -> None:
    """Wait until every node of the first KMA's cluster trusts the newcomer's node certificate
    (each restarts its rqlited for it) and the cluster has a leader again."""

    def members_known() -> list[str] | None:
        try:
            return raft_addresses(first)
        except ClusterUnavailable:  # the first's rqlited may be restarting for the newcomer already
            return None

    members = wait_until(members_known, 60.0, "the first KMA's node answering")
    wait_until(
        lambda: all(raft_port_lets_in(a, newcomer.node_cert, newcomer.node_key) for a in members),
        60.0,
        "every member's node trusting the newcomer",
    )

    def ready() -> bool:
        client = RqliteNode(files_of(first)).client()
        try:
            return client.ready()
        finally:
            client.close()

    wait_until(ready, 60.0, "a leader")


def raft_addresses(kma: RunningKma) -> list[str]:
    """The Raft addresses of the cluster's nodes, as the KMA's node knows them."""
    client = RqliteNode(files_of(kma)).client()
    try:
        return [str(n["addr"]) for n in client.get_json("/nodes", ver="2", nonvoters="")["nodes"]]
    finally:
        client.close()


def execute(kma: RunningKma, statements: list[list[Any]]) -> None:
    """Statements through a running cluster KMA's rqlited, with its node certificate."""
    client = RqliteNode(files_of(kma)).client()
    try:
        client.execute(statements)
    finally:
        client.close()


def entry(kma_id: str, service: str, node_cert_pem: str | None) -> dict[str, object]:
    """The signed fields of a joined KMA's entry (kma/crypto/entry_signature.py)."""
    return {
        "id": kma_id,
        "witness": 0,
        "awaiting_join": 0,
        "removed_at": None,
        "service_address": service,
        "raft_address": "",
        "node_cert_pem": node_cert_pem,
        "join_passphrase_hash": None,
    }


def entry_changed(kma: RunningKma, ca: CertifiedKey, kma_id: str, **changes: str) -> list[Any]:
    """The statement that changes a KMA entry's signed fields through rqlite and signs it again with
    the cluster CA, as the KMA would (a test's shortcut; `kma` is a running node)."""
    with replica(kma) as db:
        row = dict(db.execute(f"{entry_signature.SELECT} WHERE id = ?", (kma_id,)).fetchone())
    sets = ", ".join(f"{f} = ?" for f in changes)
    signature = entry_signature.sign(ca.key_pem, {**row, **changes})
    return [f"UPDATE kmas SET {sets}, signature = ? WHERE id = ?", *changes.values(), signature, kma_id]


def add_node(
    first: RunningKma,
    ca: CertifiedKey,
    tmp: Path,
    kma_id: str,
    voter: bool = True,
    join_ca: CertifiedKey | None = None,
    site: str | None = None,
    ports: tuple[int, int] | None = None,
) -> RunningKma:
    """A further KMA (of the first one's site unless `site`), with autonomous unlock, joined to the
    cluster; not started. `join_ca`: a node certificate from another CA instead (a node that must
    not join). `ports`: its management and service ports, fixed (in its entry, so agents find it)."""
    first_dir = DataDir(first.data_dir)
    site = site or first_dir.identity().site_id
    management, service = (f"127.0.0.1:{p}" for p in ports or (0, 0))
    data_dir = DataDir(tmp / kma_id / "kma")  # its own parent: its own ready file
    with private_files():
        data_dir.create()
        data_dir.identity_file.write_text(
            Identity(kma_id, site, management, service).to_toml(), encoding="utf-8"
        )
        data_dir.ca_cert.parent.mkdir(parents=True, exist_ok=True)
        server = issue_server_certificate(ca, kma_id, ["127.0.0.1"])
        data_dir.ca_cert.write_bytes(ca.cert_pem)
        data_dir.server_cert.write_bytes(server.cert_pem + ca.cert_pem)
        write_private(data_dir.server_key, server.key_pem)
        # Autonomous unlock: the master key under this KMA's own local unlock key.
        with replica(first) as db:
            blob = db.execute(
                "SELECT autounlock_master FROM kmas WHERE id = ?", (first_dir.identity().kma_id,)
            ).fetchone()[0]
        master = WrappingKey(
            WrappingKey(first_dir.unlock_key.read_bytes()).unwrap(
                f"autounlock:{first_dir.identity().kma_id}", blob
            )
        )
        local = WrappingKey.generate()
        write_private(data_dir.unlock_key, local.raw())
        now = int(time.time())
        node = issue_node_certificate(join_ca or ca, kma_id, ["127.0.0.1"])
        # As a join records it: the node certificate every member's rqlited is to trust (not for a
        # node that must not join).
        pin = None if join_ca else node.cert_pem.decode("ascii")
        members = member_pins(files_of(first))
        execute(
            first,
            [
                [
                    "INSERT INTO kmas (id, name, site_id, management_address, service_address, version, "
                    "key_pool_size, autounlock_master, node_cert_pem, created_at, updated_at, signature, "
                    "route_signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    kma_id,
                    kma_id,
                    site,
                    management,
                    service,
                    "0.1.0",
                    200,
                    "x'" + local.wrap(f"autounlock:{kma_id}", master.raw()).hex() + "'",
                    pin,
                    now,
                    now,
                    entry_signature.sign(ca.key_pem, entry(kma_id, service, pin)),  # as a join signs it
                    entry_signature.sign_routes(
                        ca.key_pem,
                        {
                            "id": kma_id,
                            "name": kma_id,
                            "site_id": site,
                            "management_address": management,
                            "voter": 1,
                            "key_pool_size": 200,
                        },
                    ),  # as the quorum operation that made the entry signs it
                ]
            ],
        )
        files = ClusterFiles.of(data_dir.root)
        config = NodeConfig(
            kma_id,
            f"127.0.0.1:{free_port()}",
            f"127.0.0.1:{free_port()}",
            voter,
            (files_of(first).load().raft_address,),
        )
        trusted = bundle({**members, kma_id: node.cert_pem.decode("ascii")})  # type: ignore[dict-item]
        files.write(config, ca.cert_pem, node, trusted, credential_of(first))
    if pin is not None:  # every member's node restarts to trust it; then it may join
        settle(first, files)
    return RunningKma(data_dir.root, first.demo, None, service_port=ports[1] if ports else 0)


@contextmanager
def three_kmas(tmp: Path) -> Iterator[list[RunningKma]]:
    """A running cluster of three KMAs of one site (kma-dal-1 first, then kma-dal-2, kma-dal-3),
    stopped afterwards (a test may stop or kill one itself on the way)."""
    first, ca = first_node(tmp / "a")
    kmas = [first]
    try:
        for kma_id in ("kma-dal-2", "kma-dal-3"):
            kmas.append(add_node(first, ca, tmp, kma_id))
            kmas[-1].start()
        yield kmas
    finally:
        for kma in reversed(kmas):
            kma.stop()


def not_the_leader(kmas: list[RunningKma]) -> tuple[RunningKma, list[RunningKma]]:
    """A KMA that is not the Raft leader (killing it leaves the cluster taking changes at once),
    and the others."""
    topology = kmas[0].client("co").get_topology()
    leader = next(k.management_address for k in topology.kmas if k.leader)
    connected = next(k for k in kmas if k.address != leader)
    return connected, [k for k in kmas if k is not connected]


def children(pid: int) -> list[int]:
    """A process's children, whichever of its threads started them (a KMA's cluster watch restarts
    its rqlited when the members change)."""
    try:
        return [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except OSError:
        return []


def rqlited_pid(pid: int) -> int | None:
    """The rqlited a `kma serve` runs (its child process), if it runs one."""
    pids = [p for p in children(pid) if "rqlited" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    return pids[0] if pids else None


def processes(kma: RunningKma) -> list[int]:
    """The KMA's `kma serve` process and the rqlited it runs (to SIGSTOP both: a KMA cut off)."""
    assert kma.process is not None
    pid = kma.process.pid
    node = rqlited_pid(pid)  # a child of any of its threads: the cluster watch restarts it
    return [pid] + ([node] if node is not None else [])


def outbox_depth(kma: RunningKma) -> int:
    """Entries committed on this KMA and not yet shipped to the cluster."""
    with sqlite3.connect(f"file:{files_of(kma).folder / 'outbox.db'}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT count(*) FROM outbox").fetchone()[0])


def assert_every_kma_agrees(kmas: list[RunningKma]) -> None:
    """Every KMA's audit chains verify, and every replica comes to hold the same rows."""
    from tests.support.kma_process import run_kma

    for kma in kmas:
        assert run_kma("audit", "verify", "--data-dir", str(kma.data_dir)).returncode == 0
    conns = [replica(k) for k in kmas]
    try:
        same = lambda: len({tuple(table_checksums(c).items()) for c in conns}) == 1  # noqa: E731
        wait_until(same, 10.0, "equal tables on every KMA")
    finally:
        for conn in conns:
            conn.close()


def table_checksums(conn: sqlite3.Connection, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every table's rows, in primary-key order, hashed: equal checksums = equal contents."""
    import hashlib

    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
        )
    ]
    out = {}
    for table in tables:
        if table in skip:
            continue
        digest = hashlib.sha256()
        for row in sorted(repr(tuple(r)) for r in conn.execute(f'SELECT * FROM "{table}"')):
            digest.update(row.encode())
        out[table] = digest.hexdigest()
    return out
