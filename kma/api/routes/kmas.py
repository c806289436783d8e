from __future__ import annotations

from fastapi import APIRouter

from kma.api import schemas
from kma.api.deps import Kma, KmasWrite, Paging, SignedIn
from kma.services import kmas
from kma.services.paging import Page

router = APIRouter(prefix="/kmas", tags=["kmas"])


@router.get("", response_model=schemas.Page[schemas.Kma])
def list_kmas(kma: Kma, actor: SignedIn, paging: Paging) -> Page:
    return kmas.list_kmas(kma, paging)


@router.get("/{kma_id}", response_model=schemas.Kma)
def get_kma(kma_id: str, kma: Kma, actor: SignedIn) -> dict[str, object]:
    return kmas.get_kma(kma, kma_id)


@router.patch("/{kma_id}", response_model=schemas.Kma)
def update_kma(kma_id: str, body: schemas.KmaPatch, kma: Kma, actor: KmasWrite) -> dict[str, object]:
    return kmas.update_kma(kma, actor, kma_id, **body.model_dump(exclude_none=True))
