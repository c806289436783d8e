from __future__ import annotations

from fastapi import APIRouter, Response

from kma.api import schemas
from kma.api.deps import Kma, Paging, SignedIn, SitesWrite
from kma.services import sites
from kma.services.paging import Page

router = APIRouter(prefix="/sites", tags=["sites"])


@router.get("", response_model=schemas.Page[schemas.Site])
def list_sites(kma: Kma, actor: SignedIn, paging: Paging) -> Page:
    return sites.list_sites(kma, paging)


@router.get("/{site_id}", response_model=schemas.Site)
def get_site(site_id: str, kma: Kma, actor: SignedIn) -> sites.SiteRow:
    return sites.get_site(kma, site_id)


@router.post("", response_model=schemas.Site, status_code=201)
def create_site(body: schemas.SiteCreate, kma: Kma, actor: SitesWrite) -> sites.SiteRow:
    return sites.create_site(kma, actor, body.id, body.name, body.description)


@router.patch("/{site_id}", response_model=schemas.Site)
def update_site(site_id: str, body: schemas.SitePatch, kma: Kma, actor: SitesWrite) -> sites.SiteRow:
    return sites.update_site(kma, actor, site_id, **body.model_dump(exclude_none=True))


@router.delete("/{site_id}", status_code=204)
def delete_site(site_id: str, kma: Kma, actor: SitesWrite) -> Response:
    sites.delete_site(kma, actor, site_id)
    return Response(status_code=204)
