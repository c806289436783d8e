"""Media pools and the media rules (docs/media.md)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from kma.api import media_schemas as schemas
from kma.api.deps import Kma, MediaRead, MediaWrite, Paging
from kma.api.schemas import Page as PageOf
from kma.services.media import media_pools, media_refusals, media_views
from kma.services.paging import Page

router = APIRouter(tags=["media"])


@router.get("/media-pools", response_model=PageOf[schemas.MediaPool])
def list_media_pools(kma: Kma, actor: MediaRead, paging: Paging) -> Page:
    return media_pools.list_media_pools(kma, paging)


@router.get("/media-pools/{pool_id}", response_model=schemas.MediaPool)
def get_media_pool(pool_id: str, kma: Kma, actor: MediaRead) -> media_pools.MediaPoolRow:
    return media_pools.get_media_pool(kma, pool_id)


@router.post("/media-pools", response_model=schemas.MediaPool, status_code=201)
def create_media_pool(body: schemas.MediaPoolCreate, kma: Kma, actor: MediaWrite) -> media_pools.MediaPoolRow:
    return media_pools.create_media_pool(kma, actor, body.id, **body.model_dump(exclude={"id"}))


@router.patch("/media-pools/{pool_id}", response_model=schemas.MediaPool)
def update_media_pool(
    pool_id: str, body: schemas.MediaPoolPatch, kma: Kma, actor: MediaWrite
) -> media_pools.MediaPoolRow:
    return media_pools.update_media_pool(kma, actor, pool_id, **body.model_dump(exclude_none=True))


@router.delete("/media-pools/{pool_id}", status_code=204)
def delete_media_pool(pool_id: str, kma: Kma, actor: MediaWrite) -> Response:
    media_pools.delete_media_pool(kma, actor, pool_id)
    return Response(status_code=204)


@router.get("/media-pools/{pool_id}/migration", response_model=schemas.MediaPoolMigration)
def get_media_pool_migration(pool_id: str, kma: Kma, actor: MediaRead) -> media_views.PoolMigration:
    """Per drive generation: the pool's tapes it appends to, only reads, or must rewrite from BOT."""
    return media_views.get_media_pool_migration(kma, pool_id)


@router.get("/media/settings", response_model=schemas.MediaSettings)
def get_media_settings(kma: Kma, actor: MediaRead) -> dict[str, str]:
    return media_pools.get_media_settings(kma)


@router.patch("/media/settings", response_model=schemas.MediaSettings)
def update_media_settings(body: schemas.MediaSettingsPatch, kma: Kma, actor: MediaWrite) -> dict[str, str]:
    return media_pools.update_media_settings(kma, actor, body.unmatched, body.generation_rule)


@router.get("/media/refusals", response_model=schemas.MediaRefusals)
def get_media_refusals(kma: Kma, actor: MediaRead) -> media_refusals.MediaRefusalsRow:
    return media_refusals.get_media_refusals(kma)


@router.get("/media/relabel", response_model=PageOf[schemas.TapeToRelabel])
def list_tapes_to_relabel(kma: Kma, actor: MediaRead, paging: Paging) -> Page:
    """Tapes whose keys were all destroyed: to be written from BOT before they are reused."""
    return media_views.list_tapes_to_relabel(kma, paging)


@router.get("/media/moved", response_model=PageOf[schemas.TapeMovedBetweenPools])
def list_tapes_moved_between_pools(kma: Kma, actor: MediaRead, paging: Paging) -> Page:
    """Tapes holding a live key of another key group than their media pool's: written under another
    pool, or the pools were redrawn since."""
    return media_views.list_tapes_moved_between_pools(kma, paging)
