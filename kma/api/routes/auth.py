from __future__ import annotations

from fastapi import APIRouter, Request, Response

from kma.api import schemas, second_factor_schemas
from kma.api.deps import CurrentActor, Kma, KmaEvenLocked, SignedIn, Token, UsersWrite, client_address
from kma.api.openapi import CHECKS_PASSPHRASES
from kma.api.quorum_schemas import PENDING, PendingQuorumOp, ran_or_pending
from kma.quorum import engine
from kma.services import users
from kma.services.sign_in import auth, second_factor, second_factor_policy

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post("/sign-in", response_model=schemas.Session, responses={401: {}, **CHECKS_PASSPHRASES})
def sign_in(body: schemas.SignIn, kma: KmaEvenLocked, request: Request) -> auth.Session:
    return auth.sign_in(kma, body.user_id, body.passphrase, client_address(request), body.code)


@router.post("/sign-out", status_code=204)
def sign_out(kma: KmaEvenLocked, actor: CurrentActor, token: Token) -> Response:
    auth.sign_out(kma, actor, token)
    return Response(status_code=204)


@router.get("/me", response_model=schemas.User)
def get_me(kma: KmaEvenLocked, actor: CurrentActor) -> users.UserRow:
    return users.get_me(kma, actor)


# Two-step sign-in: each user enrols themselves (any signed-in user, also one whose role requires it
# and who may do nothing else until then); a Security Officer turns a user's off under quorum
# (DELETE /users/{id}/second-factor) and sets which roles require it (PUT /auth/second-factor/policy).
@router.post("/second-factor", response_model=second_factor_schemas.SecondFactorEnrolment, status_code=201)
def enrol_second_factor(kma: Kma, actor: CurrentActor) -> second_factor.Enrolment:
    return second_factor.enrol_second_factor(kma, actor)


@router.post("/second-factor/confirm", status_code=204)
def confirm_second_factor(
    body: second_factor_schemas.SecondFactorCode, kma: Kma, actor: CurrentActor
) -> Response:
    second_factor.confirm(kma, actor, body.code)
    return Response(status_code=204)


@router.get("/second-factor/policy", response_model=second_factor_schemas.SecondFactorPolicy)
def get_second_factor_policy(kma: Kma, actor: SignedIn) -> second_factor_policy.Policy:
    return second_factor_policy.get_second_factor_policy(kma)


# Quorum-protected, as lifting the requirement weakens every sign-in of those roles: with M key
# split credentials it runs at once, with fewer it answers 202 with the pending operation.
@router.put(
    "/second-factor/policy",
    response_model=second_factor_schemas.SecondFactorPolicy | PendingQuorumOp,
    responses=PENDING,
)
def set_second_factor_policy(
    body: second_factor_schemas.SecondFactorPolicyPut, kma: Kma, actor: UsersWrite, response: Response
) -> second_factor_policy.Policy | PendingQuorumOp:
    request = {"roles": body.roles}
    done = engine.submit(kma, actor, "set_second_factor_roles", request, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: second_factor_policy.get_second_factor_policy(kma))
