"""Request and response bodies of quorum-protected routes, and how they answer.

A quorum-protected request may carry key split credentials; the route answers with its usual
result when they reach the threshold, or 202 with the `PendingQuorumOp` when they do not.
Threshold and member rules of a new key split are left to `check_key_split` on purpose, so a
refusal says the domain's reason ("the threshold cannot exceed the number of members") rather than
a schema error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Response as HttpResponse
from pydantic import Field

from kma.api.openapi import CHECKS_PASSPHRASES
from kma.api.schemas import PassphraseBody, Request, Response, Time, UserCreate, UserPatch
from kma.quorum.engine import Submitted
from kma.services.quorum.key_split import Credential

MemberName = Annotated[str, Field(min_length=1, max_length=64)]


class CredentialBody(Request):
    member: MemberName
    passphrase: Annotated[str, Field(min_length=1, max_length=256)]


Credentials = Annotated[list[CredentialBody], Field(max_length=10)]


class WithCredentials(Request):
    credentials: Credentials = Field(default_factory=list)

    def key_split_credentials(self) -> list[Credential]:
        return [Credential(c.member, c.passphrase) for c in self.credentials]


class UserCreateQuorum(UserCreate, WithCredentials):
    pass


class UserPatchQuorum(UserPatch, WithCredentials):
    pass


class PassphraseQuorum(PassphraseBody, WithCredentials):
    pass


class UnlockBody(WithCredentials):
    pass


class AutonomousUnlockBody(WithCredentials):
    enabled: bool


class NewMember(Request):
    """A new member is named only: each sets their own passphrase (`EnrolmentBody`)."""

    name: Annotated[str, Field(max_length=64)]


class EnrolmentBody(Request):
    member: MemberName
    code: Annotated[str, Field(min_length=1, max_length=64)]
    passphrase: Annotated[str, Field(min_length=1, max_length=256)]


class KeySplitChange(WithCredentials):
    threshold: int | None = None
    members: Annotated[list[NewMember], Field(max_length=64)] = Field(default_factory=list)
    rotate_master_key: bool = False  # and rotate the master key, in the same ceremony (docs/backups.md)


class LifetimeBody(Request):
    seconds: int


class QuorumApproval(Response):
    member: str
    approved_by: str
    approved_at: Time


class MemberEnrolment(Response):
    member: str
    enrolled_at: Time | None
    enrolled_from: str | None


class PendingQuorumOp(Response):
    id: str
    type: str
    summary: str
    request: dict[str, Any]
    requested_by: str
    submitted_at: Time
    updated_at: Time
    expires_at: Time
    state: str
    approvals_needed: int
    approvals: list[QuorumApproval]
    enrolment: list[MemberEnrolment] = []  # key split changes: the new members, who has enrolled
    result: str | None


class KeySplitChangePending(PendingQuorumOp):
    """Shown once, to the submitter only: each new member's one-time enrolment code, to pass on."""

    enrolment_codes: dict[str, str]


class EnrolmentCodes(Response):
    """New one-time codes for the members of a pending key split change still to enrol."""

    op_id: str
    enrolment_codes: dict[str, str]


class KeySplit(Response):
    threshold: int
    members: list[str]
    generation: int
    operation_lifetime: int


class AutonomousUnlock(Response):
    kma_id: str
    enabled: bool


PENDING: dict[int | str, dict[str, Any]] = {
    202: {
        "model": PendingQuorumOp,
        "description": "Fewer than M credentials: now a pending quorum operation",
    },
    **CHECKS_PASSPHRASES,  # the key split members' credentials it carries
}


T = TypeVar("T")


def ran_or_pending(done: Submitted, response: HttpResponse, ran: Callable[[], T]) -> T | PendingQuorumOp:
    """The answer to a quorum-protected request: what `ran` shows when it ran at once (M
    credentials came with it), else 202 with the pending quorum operation."""
    if done.executed:
        return ran()
    response.status_code = 202
    return PendingQuorumOp.model_validate(done.op)
