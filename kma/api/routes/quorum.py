"""Pending quorum operations, the key split and autonomous unlock (lock and unlock: routes/kmas.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from kma.api import schemas
from kma.api.deps import (
    Kma,
    KmaEvenLocked,
    Paging,
    QuorumApprove,
    QuorumDelete,
    QuorumRead,
    QuorumSubmit,
    client_address,
    with_filters,
)
from kma.api.openapi import CHECKS_PASSPHRASES
from kma.api.quorum_schemas import (
    PENDING,
    AutonomousUnlock,
    AutonomousUnlockBody,
    CredentialBody,
    EnrolmentBody,
    EnrolmentCodes,
    KeySplit,
    KeySplitChange,
    KeySplitChangePending,
    LifetimeBody,
    PendingQuorumOp,
    ran_or_pending,
)
from kma.quorum import engine, member_enrolment
from kma.services.paging import Page
from kma.services.quorum import key_split, locking
from kma.services.quorum.key_split import Credential

router = APIRouter(tags=["quorum"])


@router.get("/quorum-operations", response_model=schemas.Page[PendingQuorumOp])
def list_quorum_operations(
    kma: KmaEvenLocked, actor: QuorumRead, paging: Paging, state: str | None = None, type: str | None = None
) -> Page:  # noqa: A002
    return engine.list_ops(kma, with_filters(paging, state=state, type=type))


@router.get("/quorum-operations/{op_id}", response_model=PendingQuorumOp)
def get_quorum_operation(op_id: str, kma: KmaEvenLocked, actor: QuorumRead) -> dict[str, object]:
    return engine.show_op(kma, op_id)


@router.post(
    "/quorum-operations/{op_id}/approve", response_model=PendingQuorumOp, responses=CHECKS_PASSPHRASES
)
def approve_quorum_operation(
    op_id: str, body: CredentialBody, kma: KmaEvenLocked, actor: QuorumApprove
) -> dict[str, object]:
    return engine.approve(kma, actor, op_id, Credential(body.member, body.passphrase))


@router.delete("/quorum-operations/{op_id}", status_code=204)
def delete_quorum_operation(op_id: str, kma: Kma, actor: QuorumDelete) -> Response:
    engine.delete(kma, actor, op_id)
    return Response(status_code=204)


@router.get("/cluster/key-split", response_model=KeySplit)
def get_key_split(kma: Kma, actor: QuorumRead) -> key_split.KeySplitRow:
    return key_split.get_key_split(kma)


@router.put("/cluster/key-split", response_model=KeySplitChangePending, status_code=202)
def change_key_split(body: KeySplitChange, kma: Kma, actor: QuorumSubmit) -> KeySplitChangePending:
    """Always pending: it runs once each new member has set their passphrase (POST
    /quorum-operations/{id}/enrol with their code) and M current members have approved."""
    request = {
        "threshold": body.threshold,
        "members": [{"name": m.name} for m in body.members],
        "rotate_master_key": body.rotate_master_key,
    }
    done = engine.submit(kma, actor, "change_key_split", request, body.key_split_credentials())
    return KeySplitChangePending.model_validate({**done.op, "enrolment_codes": done.handed_out})


@router.post("/quorum-operations/{op_id}/enrol", response_model=PendingQuorumOp)
def enrol_key_split_member(op_id: str, body: EnrolmentBody, kma: Kma, request: Request) -> dict[str, object]:
    """A new key split member sets their own passphrase; their one-time code authenticates them."""
    return member_enrolment.enrol(
        kma, client_address(request), op_id, body.member, body.code, body.passphrase
    )


@router.post("/quorum-operations/{op_id}/enrolment-codes", response_model=EnrolmentCodes)
def new_enrolment_codes(op_id: str, kma: Kma, actor: QuorumSubmit) -> dict[str, object]:
    """Resume an interrupted ceremony: new codes for the members still to enrol (earlier ones stop)."""
    return {"op_id": op_id, "enrolment_codes": member_enrolment.new_codes(kma, actor, op_id)}


@router.put("/cluster/quorum-lifetime", response_model=KeySplit)
def set_quorum_lifetime(body: LifetimeBody, kma: Kma, actor: QuorumSubmit) -> key_split.KeySplitRow:
    return key_split.set_quorum_lifetime(kma, actor, body.seconds)


@router.get("/cluster/autonomous-unlock", response_model=AutonomousUnlock)
def get_autonomous_unlock(kma: Kma, actor: QuorumRead) -> dict[str, object]:
    return {"kma_id": kma.kma_id, "enabled": locking.autonomous_unlock_on(kma)}


@router.put(
    "/cluster/autonomous-unlock", response_model=AutonomousUnlock | PendingQuorumOp, responses=PENDING
)
def set_autonomous_unlock(
    body: AutonomousUnlockBody, kma: Kma, actor: QuorumSubmit, response: Response
) -> AutonomousUnlock | PendingQuorumOp:
    done = engine.submit(
        kma, actor, "set_autonomous_unlock", {"enabled": body.enabled}, body.key_split_credentials()
    )
    return ran_or_pending(
        done, response, lambda: AutonomousUnlock(kma_id=kma.kma_id, enabled=locking.autonomous_unlock_on(kma))
    )
