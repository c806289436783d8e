from __future__ import annotations

from fastapi import APIRouter

from kma.api import schemas
from kma.api.deps import DataRead, DataWrite, Kma, Paging, with_filters
from kma.services import keys
from kma.services.paging import Page

router = APIRouter(prefix="/keys", tags=["keys"])


@router.get("", response_model=schemas.Page[schemas.Key])
def list_keys(
    kma: Kma,
    actor: DataRead,
    paging: Paging,
    state: str | None = None,
    key_group_id: str | None = None,
    data_unit_id: str | None = None,
    agent_id: str | None = None,
    compromised: bool | None = None,
) -> Page:
    filters = with_filters(
        paging,
        state=state,
        key_group_id=key_group_id,
        data_unit_id=data_unit_id,
        agent_id=agent_id,
        compromised=compromised,
    )
    return keys.list_keys(kma, filters)


@router.get("/{key_id}", response_model=schemas.Key)
def get_key(key_id: str, kma: Kma, actor: DataRead) -> keys.KeyRow:
    return keys.get_key(kma, key_id)


@router.post("", response_model=schemas.Key, status_code=201)
def issue_key(body: schemas.KeyIssue, kma: Kma, actor: DataWrite) -> keys.KeyRow:
    return keys.issue_key(kma, actor, body.key_group_id, body.data_unit_id)


@router.post("/{key_id}/compromise", response_model=schemas.Key)
def compromise_key(key_id: str, body: schemas.CommentBody, kma: Kma, actor: DataWrite) -> keys.KeyRow:
    return keys.compromise_key(kma, actor, key_id, body.comment)


@router.post("/{key_id}/destroy", response_model=schemas.Key)
def destroy_key(key_id: str, body: schemas.CommentBody, kma: Kma, actor: DataWrite) -> keys.KeyRow:
    return keys.destroy_key(kma, actor, key_id, body.comment)
