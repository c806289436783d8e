"""Two-step sign-in on the wire (docs/directory.md): enrolment, its first code, and which roles
require it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kma.api.quorum_schemas import WithCredentials
from kma.api.schemas import Request, Response, Time


class SecondFactorPolicy(Response):
    roles: list[str] = Field(description="The roles that must sign in with a second factor.")
    updated_at: Time | None = None  # None: as the cluster was made or upgraded, never changed since


class SecondFactorCode(Request):
    code: Annotated[str, Field(min_length=1, max_length=32)]


class SecondFactorEnrolment(Response):
    """Shown once, never again: the secret (also as an otpauth:// URI, for a QR code) and the
    recovery codes."""

    secret: str
    otpauth_uri: str
    recovery_codes: list[str]


class SecondFactorPolicyPut(WithCredentials):
    roles: list[str] = Field(
        max_length=6, description="The roles that must sign in with a second factor; empty: none."
    )
