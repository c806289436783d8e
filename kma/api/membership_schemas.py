"""Bodies of the cluster membership routes: a KMA's entry, its one-time passphrase, the join."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kma.api.quorum_schemas import PendingQuorumOp, WithCredentials
from kma.api.schemas import Id, Passphrase, Request, Response, Text

Address = Annotated[str, Field(min_length=3, max_length=300)]
Csr = Annotated[str, Field(min_length=1, max_length=16384)]


class AddKmaBody(WithCredentials):
    id: Id
    name: Text | None = None
    site_id: Id
    management_address: Address | None = None  # required, except for a witness (which has none)
    service_address: Address | None = None
    raft_address: Address
    voter: bool = True
    witness: bool = False  # a voter with no key service: only its rqlite node runs
    key_pool_size: Annotated[int, Field(ge=0, le=100_000)] = 1000


class KmaPassphraseBody(WithCredentials):
    pass


class ClusterVersionRaise(WithCredentials):
    version: int  # the cluster version to raise to (kma/store/cluster_version.py)


class KmaAdmission(PendingQuorumOp):
    """The quorum operation, and for the submitter's eyes only the one-time KMA passphrase: it
    works once the operation has run (`state` executed), on the new machine's `kma init`."""

    kma_passphrase: str
    voters: int  # voters in the cluster once this entry exists
    voter_warning: str | None  # e.g. that two voters stop management writes when either is lost


class JoinBody(Request):
    kma_id: Id
    passphrase: Passphrase
    node_csr_pem: Csr  # the Raft node's key, made on the joining machine
    server_csr_pem: Csr  # the listeners' key, made on the joining machine
    # A joining KMA with an HSM: the public key its token made for this join (PEM); the answer then
    # holds the cluster's master key wrapped to it (docs/hsm.md#clusters).
    master_key_public_pem: Csr | None = None


class JoinMember(Response):
    id: str
    raft_address: str
    voter: bool
    node_certificate_pem: str | None = None  # None: a KMA of a cluster made before node pins


class JoinedKma(Response):
    id: str
    name: str
    site_id: str
    management_address: str
    service_address: str
    raft_address: str
    voter: bool
    witness: bool = False


class JoinGrant(Response):
    cluster_name: str
    ca_pem: str
    ca_fingerprint: str
    kma: JoinedKma
    node_certificate_pem: str
    server_certificate_pem: str
    members: list[JoinMember]  # the Raft addresses to join
    node_credential: str | None = None  # what rqlited asks of every command; None: an older cluster
    master_key_wrapped: str | None = None  # base64 RSA-OAEP to master_key_public_pem, when it was sent


class MasterKeyRotationRequest(WithCredentials):
    """Rotate the master key (quorum-protected): nothing to choose but the credentials."""


class CaRenewalRequest(WithCredentials):
    """Renew the cluster CA certificate now (quorum-protected): nothing to choose but the credentials."""
