from __future__ import annotations

from fastapi import APIRouter

from kma.api import schemas
from kma.api.deps import DataRead, DataWrite, Kma, Paging, with_filters
from kma.services import data_units
from kma.services.paging import Page

router = APIRouter(prefix="/data-units", tags=["data units"])


@router.get("", response_model=schemas.Page[schemas.DataUnit])
def list_data_units(
    kma: Kma,
    actor: DataRead,
    paging: Paging,
    state: str | None = None,
    pool_id: str | None = None,
    writer_generation: str | None = None,
) -> Page:
    """`pool_id`: the tapes of a media pool; `writer_generation`: those a drive generation wrote."""
    filters = with_filters(paging, state=state, pool_id=pool_id, writer_generation=writer_generation)
    return data_units.list_data_units(kma, filters)


@router.get("/{unit_id}", response_model=schemas.DataUnit)
def get_data_unit(unit_id: str, kma: Kma, actor: DataRead) -> data_units.DataUnitRow:
    return data_units.get_data_unit(kma, unit_id)


@router.post("", response_model=schemas.DataUnit, status_code=201)
def create_data_unit(body: schemas.DataUnitCreate, kma: Kma, actor: DataWrite) -> data_units.DataUnitRow:
    return data_units.create_data_unit(kma, actor, body.id, body.description)


@router.patch("/{unit_id}", response_model=schemas.DataUnit)
def update_data_unit(
    unit_id: str, body: schemas.DataUnitPatch, kma: Kma, actor: DataWrite
) -> data_units.DataUnitRow:
    return data_units.update_data_unit(kma, actor, unit_id, body.description)
