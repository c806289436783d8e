from __future__ import annotations

from fastapi import APIRouter, Request, Response

from kma.api import schemas
from kma.api.deps import CurrentActor, KmaEvenLocked, Token, client_address
from kma.api.openapi import CHECKS_PASSPHRASES
from kma.services import auth, users

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post("/sign-in", response_model=schemas.Session, responses={401: {}, **CHECKS_PASSPHRASES})
def sign_in(body: schemas.SignIn, kma: KmaEvenLocked, request: Request) -> auth.Session:
    return auth.sign_in(kma, body.user_id, body.passphrase, client_address(request))


@router.post("/sign-out", status_code=204)
def sign_out(kma: KmaEvenLocked, actor: CurrentActor, token: Token) -> Response:
    auth.sign_out(kma, actor, token)
    return Response(status_code=204)


@router.get("/me", response_model=schemas.User)
def get_me(kma: KmaEvenLocked, actor: CurrentActor) -> dict[str, object]:
    return users.get_user(kma, actor.entity_id)
