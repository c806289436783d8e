"""Cluster membership: a KMA's entry and its one-time KMA passphrase (quorum), the join, and the
cluster version (quorum).

What `KmsClient` adds to the generated calls (calls.py) here: the answers read into the client's
own composition (the one-time KMA passphrase beside its operation; the join grant's decoded key).
Same threading rule: network I/O, never on the GUI thread.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ._http import Credentials, credentials_body, present, segment
from .calls import Calls
from .reader import JsonObject, read
from .wire import PendingQuorumOp


@dataclass(frozen=True)
class KmaAdmission:
    """A KMA's entry (or new passphrase) just submitted: the quorum operation, and the one-time
    KMA passphrase, shown this once; it works on the new machine once `op` has executed."""

    op: PendingQuorumOp
    kma_passphrase: str
    voters: int  # voters in the cluster once the entry exists
    voter_warning: str | None  # e.g. that two voters stop management writes when either is lost


def _admission(d: JsonObject) -> KmaAdmission:
    warning = d.get("voter_warning")
    op, passphrase, voters = read(PendingQuorumOp, d), read(str, d["kma_passphrase"]), read(int, d["voters"])
    return KmaAdmission(op, passphrase, voters, None if warning is None else read(str, warning))


@dataclass(frozen=True)
class ClusterMember:
    id: str
    raft_address: str
    voter: bool
    node_certificate_pem: str | None = None  # None: a KMA of a cluster made before node pins


@dataclass(frozen=True)
class JoinGrant:
    """What a joining KMA receives: certificates for its own keys, the CA, whom to join."""

    cluster_name: str
    ca_pem: str
    ca_fingerprint: str
    kma: Mapping[str, Any]  # the entry: id, name, site_id, addresses, voter
    node_certificate_pem: str
    server_certificate_pem: str
    members: tuple[ClusterMember, ...]
    node_credential: str | None = field(default=None, repr=False)  # rqlite's, for the new node
    master_key_wrapped: bytes | None = None  # to the join key the joining KMA's token made, if sent


def _join_grant(d: JsonObject) -> JoinGrant:
    """The grant as the wire has it (read like any answer), the wrapped master key decoded."""
    wrapped = d.get("master_key_wrapped")
    fields = {**d, "master_key_wrapped": None}
    return replace(read(JoinGrant, fields), master_key_wrapped=base64.b64decode(wrapped) if wrapped else None)


class MembershipCalls(Calls):
    def add_kma(
        self,
        id: str,  # noqa: A002  the API's field name
        site_id: str,
        *,
        raft_address: str,
        management_address: str | None = None,
        service_address: str | None = None,
        name: str | None = None,
        voter: bool = True,
        witness: bool = False,
        key_pool_size: int = 1000,
        credentials: Credentials | None = None,
    ) -> KmaAdmission:
        """Security Officer, quorum-protected: the new KMA's entry. The answer carries the
        one-time KMA passphrase (this once) and a warning when the voter count would be even."""
        body = present(
            id=id,
            name=name,
            site_id=site_id,
            management_address=management_address,
            service_address=service_address,
            raft_address=raft_address,
            voter=voter,
            witness=witness,
            key_pool_size=key_pool_size,
            credentials=credentials_body(credentials),
        )
        return self._connection.call("POST", "/kmas", _admission, body=body)

    def set_kma_passphrase(self, kma_id: str, *, credentials: Credentials | None = None) -> KmaAdmission:
        """Security Officer, quorum-protected: a new one-time KMA passphrase for an entry; a
        machine that joins with it becomes that KMA (how a dead KMA is replaced)."""
        body = present(credentials=credentials_body(credentials))
        return self._connection.call("PUT", f"/kmas/{segment(kma_id)}/passphrase", _admission, body=body)

    def join_cluster(
        self,
        kma_id: str,
        passphrase: str,
        node_csr_pem: str,
        server_csr_pem: str,
        master_key_public_pem: str | None = None,
    ) -> JoinGrant:
        """No sign-in: the joining machine's side of the handshake (used by `kma init`). With
        `master_key_public_pem` (a joining KMA's token's join key), the grant holds the cluster's
        master key wrapped to it."""
        body = present(
            kma_id=kma_id,
            passphrase=passphrase,
            node_csr_pem=node_csr_pem,
            server_csr_pem=server_csr_pem,
            master_key_public_pem=master_key_public_pem,
        )
        return self._connection.call("POST", "/cluster/join", _join_grant, body=body, auth=False)
