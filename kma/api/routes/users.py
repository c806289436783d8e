from __future__ import annotations

from fastapi import APIRouter, Response

from kma.api import schemas
from kma.api.deps import Kma, Paging, UsersRead, UsersWrite, with_filters
from kma.services import users
from kma.services.paging import Page

router = APIRouter(prefix="/users", tags=["users"])


@router.get("", response_model=schemas.Page[schemas.User])
def list_users(kma: Kma, actor: UsersRead, paging: Paging, role: str | None = None,
               enabled: bool | None = None) -> Page:  # fmt: skip
    return users.list_users(kma, with_filters(paging, role=role, enabled=enabled))


@router.get("/{user_id}", response_model=schemas.User)
def get_user(user_id: str, kma: Kma, actor: UsersRead) -> dict[str, object]:
    return users.get_user(kma, user_id)


@router.post("", response_model=schemas.User, status_code=201)
def create_user(body: schemas.UserCreate, kma: Kma, actor: UsersWrite) -> dict[str, object]:
    return users.create_user(kma, actor, body.id, body.name, body.roles, body.passphrase)


@router.patch("/{user_id}", response_model=schemas.User)
def update_user(user_id: str, body: schemas.UserPatch, kma: Kma, actor: UsersWrite) -> dict[str, object]:
    return users.update_user(kma, actor, user_id, body.name, body.roles, body.enabled)


@router.put("/{user_id}/passphrase", status_code=204)
def set_passphrase(user_id: str, body: schemas.PassphraseBody, kma: Kma, actor: UsersWrite) -> Response:
    users.set_passphrase(kma, actor, user_id, body.passphrase)
    return Response(status_code=204)
