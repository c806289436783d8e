"""The data dir's `cluster/` folder: what makes a KMA a node of a cluster.

`cluster/` holds `ca.crt` (the cluster CA), `node.crt` and `node.key` (this node's certificate
from that CA, used for Raft between nodes and for the HTTP API of the local rqlited), `nodes.pem`
(the node certificates of the cluster's current KMAs: the only ones its rqlited lets in, see
kma/cluster/trust.py), `rqlite-auth.json` (the node credential rqlited asks of every command; the
owner's only) and `node.toml`:

    node_id = "kma-2"                  # the KMA ID
    raft_address = "10.0.0.2:4002"     # host:port the other nodes reach
    http_address = "127.0.0.1:4001"    # loopback only: only this KMA talks to its rqlited
    voter = true
    join = ["10.0.0.1:4002"]           # Raft addresses of existing members; empty for the first
    witness = false                    # true: a voter with no key service (kma/cluster/witness.py)

A data dir without `cluster/node.toml` is an embedded (one-KMA) store.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from kma.crypto.ca import SERVER_VALIDITY, CertifiedKey, issue_server_certificate
from kma.datadir import write_private
from kma.errors import ValidationFailed

NODE_USER = "kma-node"  # the one rqlite user: every node of a cluster holds its password


@dataclass(frozen=True)
class NodeConfig:
    node_id: str
    raft_address: str
    http_address: str
    voter: bool = True
    join: tuple[str, ...] = field(default_factory=tuple)
    witness: bool = False  # a voter with no key service: `kma serve` runs only rqlited

    def to_toml(self) -> str:
        return (
            f"node_id = {json.dumps(self.node_id)}\n"
            f"raft_address = {json.dumps(self.raft_address)}\n"
            f"http_address = {json.dumps(self.http_address)}\n"
            f"voter = {'true' if self.voter else 'false'}\n"
            f"join = {json.dumps(list(self.join))}\n" + ("witness = true\n" if self.witness else "")
        )


@dataclass(frozen=True)
class ClusterFiles:
    """Where a data dir keeps its cluster node's files."""

    folder: Path

    @classmethod
    def of(cls, data_root: Path) -> ClusterFiles:
        return cls(data_root / "cluster")

    @property
    def ca_cert(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def node_cert(self) -> Path:
        return self.folder / "node.crt"

    @property
    def node_key(self) -> Path:
        return self.folder / "node.key"

    @property
    def config_file(self) -> Path:
        return self.folder / "node.toml"

    @property
    def rqlite_dir(self) -> Path:
        """rqlited's own data (Raft log, snapshots, its SQLite file)."""
        return self.folder / "rqlite"

    @property
    def replica(self) -> Path:
        """rqlited's SQLite file: this node's replica, read directly by the KMA."""
        return self.rqlite_dir / "db.sqlite"

    @property
    def trusted_nodes(self) -> Path:
        """The node certificates this node's rqlited lets in on its Raft port (kma/cluster/trust.py);
        absent on a node of a cluster made before them, which trusts `ca_cert` until it has them."""
        return self.folder / "nodes.pem"

    @property
    def credential_file(self) -> Path:
        """rqlite's `-auth` file: the node credential, asked of every command on the Raft port and
        the HTTP API; absent on a node of a cluster made before it."""
        return self.folder / "rqlite-auth.json"

    def exists(self) -> bool:
        return self.config_file.exists()

    def credential(self) -> tuple[str, str] | None:
        """The node credential (user, password), or None when this node runs without one."""
        if not self.credential_file.exists():
            return None
        users = json.loads(self.credential_file.read_text(encoding="utf-8"))
        return next((u["username"], u["password"]) for u in users if u["username"] == NODE_USER)

    def write_credential(self, password: str) -> None:
        user = {"username": NODE_USER, "password": password, "perms": ["all"]}
        write_private(self.credential_file, json.dumps([user]).encode())

    def load(self) -> NodeConfig:
        return load_node_config(self.config_file)

    def write(
        self,
        config: NodeConfig,
        ca_pem: bytes,
        node: CertifiedKey,
        trusted_nodes: bytes | None,
        credential: str | None,
    ) -> None:
        """Write the node's configuration, certificates, the node certificates it trusts and the node
        credential (the key and the credential readable by this account only). `trusted_nodes` and
        `credential` are None only for a node joining a cluster made before them."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.ca_cert.write_bytes(ca_pem)
        self.node_cert.write_bytes(node.cert_pem)
        write_private(self.node_key, node.key_pem)
        if trusted_nodes is not None:
            write_private(self.trusted_nodes, trusted_nodes)
        if credential is not None:
            self.write_credential(credential)
        self.config_file.write_text(config.to_toml(), encoding="utf-8")


def new_credential() -> str:
    """A new cluster's node credential (256 random bits)."""
    return secrets.token_urlsafe(32)


def _address(data: dict[str, object], name: str, path: Path) -> str:
    value = data.get(name)
    host, _, port = str(value or "").rpartition(":")
    if not isinstance(value, str) or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValidationFailed(f"{path}: {name} must be host:port, not {value!r}.")
    return value


def load_node_config(path: Path) -> NodeConfig:
    """Read and check `cluster/node.toml`; a clear error names the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValidationFailed(f"{path} cannot be read: {exc}") from None
    node_id = data.get("node_id")
    if not isinstance(node_id, str) or not node_id:
        raise ValidationFailed(f"{path}: node_id (the KMA ID) is missing.")
    http_address = _address(data, "http_address", path)
    host = http_address.rpartition(":")[0].strip("[]")
    if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
        raise ValidationFailed(
            f"{path}: http_address must be on loopback (127.0.0.1:PORT): only this KMA may reach its "
            f"rqlite node's HTTP API, not {http_address}."
        )
    voter = data.get("voter", True)
    if not isinstance(voter, bool):
        raise ValidationFailed(f"{path}: voter must be true or false.")
    join = data.get("join", [])
    if not isinstance(join, list):
        raise ValidationFailed(f"{path}: join must be a list of raft addresses.")
    members = tuple(_address({"join": j}, "join", path) for j in join)
    witness = data.get("witness", False)
    if not isinstance(witness, bool):
        raise ValidationFailed(f"{path}: witness must be true or false.")
    return NodeConfig(node_id, _address(data, "raft_address", path), http_address, voter, members, witness)


def issue_node_certificate(
    ca: CertifiedKey, node_id: str, hosts: Sequence[str], validity: timedelta = SERVER_VALIDITY
) -> CertifiedKey:
    """A node's certificate from the cluster CA: serverAuth and clientAuth (Raft connections go
    both ways, and the KMA is the client of its rqlited's HTTP API), naming the hosts of its Raft
    address plus loopback."""
    return issue_server_certificate(ca, node_id, hosts, validity=validity)
