from __future__ import annotations

from fastapi import APIRouter

from kma.api import schemas
from kma.api.deps import Kma, Paging, role, with_filters
from kma.domain.roles import Permission
from kma.services import data_units
from kma.services.paging import Page

router = APIRouter(prefix="/data-units", tags=["data units"])
Reader, Writer = role(Permission.DATA_READ), role(Permission.DATA_WRITE)


@router.get("", response_model=schemas.Page[schemas.DataUnit])
def list_data_units(kma: Kma, actor: Reader, paging: Paging, state: str | None = None) -> Page:
    return data_units.list_data_units(kma, with_filters(paging, state=state))


@router.get("/{unit_id}", response_model=schemas.DataUnit)
def get_data_unit(unit_id: str, kma: Kma, actor: Reader) -> dict[str, object]:
    return data_units.get_data_unit(kma, unit_id)


@router.post("", response_model=schemas.DataUnit, status_code=201)
def create_data_unit(body: schemas.DataUnitCreate, kma: Kma, actor: Writer) -> dict[str, object]:
    return data_units.create_data_unit(kma, actor, body.id, body.description)


@router.patch("/{unit_id}", response_model=schemas.DataUnit)
def update_data_unit(unit_id: str, body: schemas.DataUnitPatch, kma: Kma, actor: Writer) -> dict[str, object]:
    return data_units.update_data_unit(kma, actor, unit_id, body.description)
