"""The KMAs of the cluster: list, show, rename; lock one, and unlock it with a quorum."""

from __future__ import annotations

from fastapi import APIRouter, Response

from kma.api import schemas
from kma.api.deps import Kma, KmaEvenLocked, KmasWrite, Paging, QuorumSubmit, SignedIn
from kma.api.quorum_schemas import PENDING, PendingQuorumOp, UnlockBody, ran_or_pending
from kma.quorum import engine
from kma.services import kmas
from kma.services.certificates import certificate_renewal
from kma.services.paging import Page
from kma.services.quorum import locking

router = APIRouter(prefix="/kmas", tags=["kmas"])


@router.get("", response_model=schemas.Page[schemas.Kma])
def list_kmas(kma: Kma, actor: SignedIn, paging: Paging) -> Page:
    return kmas.list_kmas(kma, paging)


@router.get("/{kma_id}", response_model=schemas.Kma)
def get_kma(kma_id: str, kma: Kma, actor: SignedIn) -> kmas.KmaRow:
    return kmas.get_kma(kma, kma_id)


@router.patch("/{kma_id}", response_model=schemas.Kma)
def update_kma(kma_id: str, body: schemas.KmaPatch, kma: Kma, actor: KmasWrite) -> kmas.KmaRow:
    return kmas.update_kma(kma, actor, kma_id, **body.model_dump(exclude_none=True))


@router.post("/{kma_id}/certificate/renew", response_model=schemas.Kma)
def renew_kma_certificate(kma_id: str, kma: Kma, actor: KmasWrite) -> kmas.KmaRow:
    """A new listener certificate for that KMA now: made at once if it is the KMA answering, else
    by that KMA within a second or so (it holds the key). For a witness: a new node certificate, which
    it asks for and an unlocked KMA signs, trusted by every node before the witness moves to it."""
    return certificate_renewal.renew_kma_certificate(kma, actor, kma_id)


@router.post("/{kma_id}/lock", response_model=schemas.Kma)
def lock_kma(kma_id: str, kma: Kma, actor: QuorumSubmit) -> kmas.KmaRow:
    return locking.lock_kma(kma, actor, kma_id)


@router.post("/{kma_id}/unlock", response_model=schemas.Kma | PendingQuorumOp, responses=PENDING)
def unlock_kma(
    kma_id: str, body: UnlockBody, kma: KmaEvenLocked, actor: QuorumSubmit, response: Response
) -> schemas.Kma | PendingQuorumOp:
    done = engine.submit(kma, actor, "unlock_kma", {"kma_id": kma_id}, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: schemas.Kma.model_validate(kmas.get_kma(kma, kma_id)))
