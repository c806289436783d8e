from __future__ import annotations

from fastapi import APIRouter, Response

from kma.api import schemas
from kma.api.deps import Kma, Paging, UsersRead, UsersWrite, with_filters
from kma.api.quorum_schemas import (
    PENDING,
    PassphraseQuorum,
    PendingQuorumOp,
    UserCreateQuorum,
    UserPatchQuorum,
    WithCredentials,
    ran_or_pending,
)
from kma.quorum import engine
from kma.services import users
from kma.services.paging import Page

router = APIRouter(prefix="/users", tags=["users"])


@router.get("", response_model=schemas.Page[schemas.User])
def list_users(
    kma: Kma, actor: UsersRead, paging: Paging, role: str | None = None, enabled: bool | None = None
) -> Page:
    return users.list_users(kma, with_filters(paging, role=role, enabled=enabled))


@router.get("/{user_id}", response_model=schemas.User)
def get_user(user_id: str, kma: Kma, actor: UsersRead) -> users.UserRow:
    return users.get_user(kma, user_id)


# Creating, changing and setting the passphrase of a user are quorum-protected: with M key split
# credentials in the body they run at once, with fewer they answer 202 with the pending operation.
@router.post("", response_model=schemas.User | PendingQuorumOp, status_code=201, responses=PENDING)
def create_user(
    body: UserCreateQuorum, kma: Kma, actor: UsersWrite, response: Response
) -> schemas.User | PendingQuorumOp:
    request = body.model_dump(exclude={"credentials"})
    done = engine.submit(kma, actor, "create_user", request, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: schemas.User.model_validate(users.get_user(kma, body.id)))


@router.patch("/{user_id}", response_model=schemas.User | PendingQuorumOp, responses=PENDING)
def update_user(
    user_id: str, body: UserPatchQuorum, kma: Kma, actor: UsersWrite, response: Response
) -> schemas.User | PendingQuorumOp:
    request = {"id": user_id, **body.model_dump(exclude={"credentials"}, exclude_none=True)}
    if len(request) == 1:  # nothing to change: no quorum needed to say so
        return schemas.User.model_validate(users.get_user(kma, user_id))
    done = engine.submit(kma, actor, "update_user", request, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: schemas.User.model_validate(users.get_user(kma, user_id)))


@router.put("/{user_id}/passphrase", status_code=204, response_model=None, responses=PENDING)
def set_user_passphrase(
    user_id: str, body: PassphraseQuorum, kma: Kma, actor: UsersWrite, response: Response
) -> Response | PendingQuorumOp:
    request = {"id": user_id, "passphrase": body.passphrase}
    done = engine.submit(kma, actor, "set_user_passphrase", request, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: Response(status_code=204))


@router.delete("/{user_id}/second-factor", status_code=204, response_model=None, responses=PENDING)
def turn_off_second_factor(
    user_id: str, body: WithCredentials, kma: Kma, actor: UsersWrite, response: Response
) -> Response | PendingQuorumOp:
    """For a user who lost their authenticator and their recovery codes: they sign in with their
    passphrase alone again, and may enrol anew."""
    done = engine.submit(kma, actor, "turn_off_second_factor", {"id": user_id}, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: Response(status_code=204))
