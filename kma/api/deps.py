"""Typed dependencies: the appliance, the signed-in actor, and role checks on every route."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.roles import GRANTS, Permission, allows
from kma.errors import Forbidden, KmaLocked, Unauthenticated, ValidationFailed
from kma.services.paging import PageRequest
from kma.services.sign_in import auth, second_factor_policy

API_PREFIX = "/api/v1"


def get_appliance_even_locked(request: Request) -> Appliance:
    kma: Appliance = request.app.state.kma
    return kma


# The appliance, locked or not: only for what a locked KMA still answers (its state, signing in and
# out, and what a quorum needs to see and do to unlock it). Declared on those routes themselves.
KmaEvenLocked = Annotated[Appliance, Depends(get_appliance_even_locked)]


def get_appliance(kma: KmaEvenLocked) -> Appliance:
    if kma.vault.locked:
        raise KmaLocked(
            "This KMA is locked: it serves nothing secret and no management until a quorum "
            "of the key split unlocks it."
        )
    return kma


# The appliance of every other route: a locked KMA refuses them with 503 `kma_locked`.
Kma = Annotated[Appliance, Depends(get_appliance)]


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("Sign in first: this request carries no session token.")
    return token.strip()


# Declares the bearer token in the OpenAPI document (a `bearer` security scheme on every operation
# that takes one, so Swagger UI has its Authorize button); bearer_token reads and checks it.
BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="A session token from POST /api/v1/auth/sign-in; on GET /metrics also the metrics token.",
)


def session_token(
    request: Request, _declared: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]
) -> str:
    return bearer_token(request)


Token = Annotated[str, Depends(session_token)]


def current_actor(request: Request, kma: KmaEvenLocked, token: Token) -> Actor:
    actor = auth.authenticate(kma, token, client_address(request))
    request.state.actor = actor  # so a refusal later in the request is audited under this user
    return actor


CurrentActor = Annotated[Actor, Depends(current_actor)]


# The dependencies that refuse some users (403): the OpenAPI document lists 403 where one is used.
ROLE_CHECKS: set[Callable[..., Actor]] = set()


def require(permission: Permission) -> Callable[[Actor], Actor]:
    """A dependency that lets only the roles granted `permission` through."""

    def check(actor: CurrentActor) -> Actor:
        if actor.second_factor_pending:
            raise second_factor_policy.refuse_until_enrolled()
        if not allows(actor.roles, permission):
            roles = ", ".join(sorted(GRANTS[permission]))
            raise Forbidden(f"Your roles do not allow this; it needs one of: {roles}.")
        return actor

    ROLE_CHECKS.add(check)  # every one refuses a user who must enrol a second factor first
    return check


def page_request(
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
    search: Annotated[str | None, Query(max_length=200)] = None,
    sort: Annotated[str | None, Query(max_length=64)] = None,
    order: Annotated[str | None, Query(pattern="^(asc|desc)$")] = None,
    # The search's old name, which release 0.1.0's client sends; not in the OpenAPI document, so
    # that the generated client knows only `search` (docs/api.md).
    q: Annotated[str | None, Query(max_length=200, include_in_schema=False)] = None,
) -> PageRequest:
    if search is not None and q is not None:
        raise ValidationFailed("Give the search text once, as `search` (`q` is its old name).")
    return PageRequest(limit=limit, cursor=cursor, search=search if q is None else q, sort=sort, order=order)


Paging = Annotated[PageRequest, Depends(page_request)]


def with_filters(req: PageRequest, **filters: str | bool | int | None) -> PageRequest:
    given = {
        k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in filters.items() if v is not None
    }
    return PageRequest(req.limit, req.cursor, req.search, req.sort, req.order, given)


# The signed-in actor, checked against one permission: `actor: UsersWrite` in a route signature.
SignedIn = Annotated[Actor, Depends(require(Permission.SIGNED_IN))]
UsersRead = Annotated[Actor, Depends(require(Permission.USERS_READ))]
UsersWrite = Annotated[Actor, Depends(require(Permission.USERS_WRITE))]
AlertsRead = Annotated[Actor, Depends(require(Permission.ALERTS_READ))]
AlertsWrite = Annotated[Actor, Depends(require(Permission.ALERTS_WRITE))]
MediaRead = Annotated[Actor, Depends(require(Permission.MEDIA_READ))]
MediaWrite = Annotated[Actor, Depends(require(Permission.MEDIA_WRITE))]
SitesWrite = Annotated[Actor, Depends(require(Permission.SITES_WRITE))]
TransferRead = Annotated[Actor, Depends(require(Permission.TRANSFER_READ))]
TransferPartners = Annotated[Actor, Depends(require(Permission.TRANSFER_PARTNERS))]
TransferExport = Annotated[Actor, Depends(require(Permission.TRANSFER_EXPORT))]
TransferImport = Annotated[Actor, Depends(require(Permission.TRANSFER_IMPORT))]
KmasWrite = Annotated[Actor, Depends(require(Permission.KMAS_WRITE))]
PoliciesRead = Annotated[Actor, Depends(require(Permission.POLICIES_READ))]
PoliciesWrite = Annotated[Actor, Depends(require(Permission.POLICIES_WRITE))]
AgentsRead = Annotated[Actor, Depends(require(Permission.AGENTS_READ))]
AgentsWrite = Annotated[Actor, Depends(require(Permission.AGENTS_WRITE))]
DataRead = Annotated[Actor, Depends(require(Permission.DATA_READ))]
DataWrite = Annotated[Actor, Depends(require(Permission.DATA_WRITE))]
AuditRead = Annotated[Actor, Depends(require(Permission.AUDIT_READ))]
HistoryRead = Annotated[Actor, Depends(require(Permission.HISTORY_READ))]
AuditManage = Annotated[Actor, Depends(require(Permission.AUDIT_MANAGE))]
QuorumRead = Annotated[Actor, Depends(require(Permission.QUORUM_READ))]
QuorumApprove = Annotated[Actor, Depends(require(Permission.QUORUM_APPROVE))]
QuorumDelete = Annotated[Actor, Depends(require(Permission.QUORUM_DELETE))]
QuorumSubmit = Annotated[Actor, Depends(require(Permission.QUORUM_SUBMIT))]
BackupsRead = Annotated[Actor, Depends(require(Permission.BACKUPS_READ))]
BackupsWrite = Annotated[Actor, Depends(require(Permission.BACKUPS_WRITE))]
CoreBackup = Annotated[Actor, Depends(require(Permission.CORE_BACKUP))]
UpgradeCheck = Annotated[Actor, Depends(require(Permission.UPGRADE_CHECK))]
