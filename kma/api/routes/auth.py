from __future__ import annotations

from fastapi import APIRouter, Request, Response

from kma.api import schemas
from kma.api.deps import CurrentActor, Kma, KmaEvenLocked, SignedIn, Token, client_address
from kma.api.openapi import CHECKS_PASSPHRASES
from kma.services import auth, second_factor, users

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post("/sign-in", response_model=schemas.Session, responses={401: {}, **CHECKS_PASSPHRASES})
def sign_in(body: schemas.SignIn, kma: KmaEvenLocked, request: Request) -> auth.Session:
    return auth.sign_in(kma, body.user_id, body.passphrase, client_address(request), body.code)


@router.post("/sign-out", status_code=204)
def sign_out(kma: KmaEvenLocked, actor: CurrentActor, token: Token) -> Response:
    auth.sign_out(kma, actor, token)
    return Response(status_code=204)


@router.get("/me", response_model=schemas.User)
def get_me(kma: KmaEvenLocked, actor: CurrentActor) -> dict[str, object]:
    return users.get_user(kma, actor.entity_id)


# Two-step sign-in: each user enrols themselves (any signed-in user); a Security Officer turns a
# user's off under quorum (DELETE /users/{id}/second-factor).
@router.post("/second-factor", response_model=schemas.SecondFactorEnrolment, status_code=201)
def enrol_second_factor(kma: Kma, actor: SignedIn) -> dict[str, object]:
    return second_factor.enrol(kma, actor)


@router.post("/second-factor/confirm", status_code=204)
def confirm_second_factor(body: schemas.SecondFactorCode, kma: Kma, actor: SignedIn) -> Response:
    second_factor.confirm(kma, actor, body.code)
    return Response(status_code=204)
