"""Cluster membership: a KMA's entry and its one-time KMA passphrase (quorum), the join, the
cluster version (quorum) and the master key's rotation (quorum)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from kma.api import schemas
from kma.api.deps import Kma, QuorumSubmit, SignedIn, client_address
from kma.api.membership_schemas import (
    AddKmaBody,
    CaRenewalRequest,
    ClusterVersionRaise,
    JoinBody,
    JoinGrant,
    KmaAdmission,
    KmaPassphraseBody,
    MasterKeyRotationRequest,
)
from kma.api.openapi import CHECKS_PASSPHRASES
from kma.api.quorum_schemas import PENDING, PendingQuorumOp
from kma.api.schemas import MasterKeyState
from kma.appliance import Appliance
from kma.cluster import join, membership
from kma.quorum import engine
from kma.quorum.engine import Submitted
from kma.services import kmas
from kma.services.master_key import master_keys
from kma.services.quorum import master_rotation

router = APIRouter(tags=["cluster"])
ANSWERS: dict[int | str, dict[str, object]] = {
    201: {"description": "Ran at once (M credentials came with it)"},
    202: {"description": "Fewer than M credentials: now a pending quorum operation"},
    **CHECKS_PASSPHRASES,
}


def _answer(kma: Appliance, done: Submitted, response: Response, adds_voter: bool) -> KmaAdmission:
    response.status_code = 201 if done.executed else 202
    voters = membership.voter_count(kma) + int(adds_voter and not done.executed)
    return KmaAdmission.model_validate(
        {
            **done.op,
            "kma_passphrase": done.handed_out["kma_passphrase"],
            "voters": voters,
            "voter_warning": membership.voter_advice(voters),
        }
    )


@router.post("/kmas", response_model=KmaAdmission, status_code=202, responses=ANSWERS)
def add_kma(body: AddKmaBody, kma: Kma, actor: QuorumSubmit, response: Response) -> KmaAdmission:
    """Quorum-protected. The one-time KMA passphrase is in this answer only."""
    request = body.model_dump(exclude={"credentials"})
    done = engine.submit(kma, actor, "add_kma", request, body.key_split_credentials())
    return _answer(kma, done, response, body.voter or body.witness)


@router.put("/kmas/{kma_id}/passphrase", response_model=KmaAdmission, status_code=202, responses=ANSWERS)
def set_kma_passphrase(
    kma_id: str, body: KmaPassphraseBody, kma: Kma, actor: QuorumSubmit, response: Response
) -> KmaAdmission:
    """Quorum-protected: a new one-time KMA passphrase (also how a dead KMA is replaced)."""
    done = engine.submit(kma, actor, "set_kma_passphrase", {"kma_id": kma_id}, body.key_split_credentials())
    return _answer(kma, done, response, adds_voter=False)


@router.post("/kmas/{kma_id}/remove", response_model=schemas.Kma | PendingQuorumOp, responses=PENDING)
def remove_kma(
    kma_id: str, body: KmaPassphraseBody, kma: Kma, actor: QuorumSubmit, response: Response
) -> schemas.Kma | PendingQuorumOp:
    """Quorum-protected: the KMA leaves the cluster; its certificates stop working at once."""
    done = engine.submit(kma, actor, "remove_kma", {"kma_id": kma_id}, body.key_split_credentials())
    if not done.executed:
        response.status_code = 202
        return PendingQuorumOp.model_validate(done.op)
    return schemas.Kma.model_validate(kmas.get_kma(kma, kma_id))


@router.post("/cluster/version", response_model=PendingQuorumOp, status_code=202, responses=ANSWERS)
def raise_cluster_version(
    body: ClusterVersionRaise, kma: Kma, actor: QuorumSubmit, response: Response
) -> PendingQuorumOp:
    """Quorum-protected: raise the cluster version, once every KMA runs a release that supports it
    (refused, naming the KMAs still too old, until then)."""
    done = engine.submit(
        kma, actor, "raise_cluster_version", {"version": body.version}, body.key_split_credentials()
    )
    response.status_code = 201 if done.executed else 202
    return PendingQuorumOp.model_validate(done.op)


@router.post("/cluster/join", response_model=JoinGrant, responses=CHECKS_PASSPHRASES)
def join_cluster(body: JoinBody, kma: Kma, request: Request) -> dict[str, object]:
    """No sign-in: the joining machine proves itself with the KMA ID and its one-time passphrase."""
    return join.join(
        kma,
        body.kma_id,
        body.passphrase,
        body.node_csr_pem,
        body.server_csr_pem,
        client_address(request),
        body.master_key_public_pem,
    )


@router.get("/cluster/master-key", response_model=MasterKeyState)
def get_master_key(kma: Kma, actor: SignedIn) -> MasterKeyState:
    """The master key's generation and its rotation (under way, or the last one), with its progress."""
    found = MasterKeyState.model_validate(master_keys.get_master_key(kma))
    return found.model_copy(update={"rotation_refused": master_rotation.refusal(kma)})


@router.post(
    "/cluster/master-key/rotation", response_model=PendingQuorumOp, status_code=202, responses=ANSWERS
)
def rotate_master_key(
    body: MasterKeyRotationRequest, kma: Kma, actor: QuorumSubmit, response: Response
) -> PendingQuorumOp:
    """Quorum-protected: a new master key generation; every blob is re-wrapped under it in the
    background (progress: GET /cluster/master-key), then the old generation is destroyed."""
    done = engine.submit(kma, actor, "rotate_master_key", {}, body.key_split_credentials())
    response.status_code = 201 if done.executed else 202
    return PendingQuorumOp.model_validate(done.op)


@router.post("/cluster/ca/renewal", response_model=PendingQuorumOp, status_code=202, responses=ANSWERS)
def renew_cluster_ca(
    body: CaRenewalRequest, kma: Kma, actor: QuorumSubmit, response: Response
) -> PendingQuorumOp:
    """Quorum-protected: the cluster CA's next certificate now (the same name and key; the cluster
    also renews it by itself `ca_renew_before` its end); every KMA re-issues its certificates under it."""
    done = engine.submit(kma, actor, "renew_cluster_ca", {}, body.key_split_credentials())
    response.status_code = 201 if done.executed else 202
    return PendingQuorumOp.model_validate(done.op)
