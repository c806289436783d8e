"""Request and response bodies of alert channels (docs/alerts.md). Secrets go in, never out."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kma.api.schemas import Response, Time


class AlertChannelSettings(BaseModel):
    """Where and how a channel sends; each kind reads its own fields and ignores the others."""

    model_config = ConfigDict(extra="forbid", from_attributes=True)

    address: str | None = Field(
        None, max_length=262, description="snmp, email: HOST:PORT of the manager or SMTP server"
    )
    mode: Literal["inform", "trap"] | None = Field(
        default=None, description="snmp: informs (acknowledged) or traps"
    )
    user: str | None = Field(default=None, max_length=32, description="snmp: the SNMPv3 user (authPriv)")
    auth_protocol: str | None = Field(
        None, max_length=16, description="snmp: SHA, SHA-224, SHA-256, SHA-384, SHA-512"
    )
    priv_protocol: str | None = Field(default=None, max_length=16, description="snmp: AES, AES-192, AES-256")
    url: str | None = Field(default=None, max_length=2000, description="webhook: https://HOST/PATH")
    ca_pem: str | None = Field(
        None, max_length=32_000, description="webhook, email: a pinned CA; none: the system's trust"
    )
    sender: str | None = Field(default=None, max_length=254, description="email: the From address")
    recipients: list[str] | None = Field(default=None, max_length=50, description="email: the To addresses")
    username: str | None = Field(
        None, max_length=254, description="email: the SMTP user, if the server wants one"
    )


class AlertChannelSecrets(BaseModel):
    """A channel's secrets; one left out (or empty) keeps the one stored."""

    model_config = ConfigDict(extra="forbid")

    auth_key: str | None = Field(
        default=None, max_length=256, description="snmp: the authentication passphrase"
    )
    priv_key: str | None = Field(default=None, max_length=256, description="snmp: the privacy passphrase")
    secret: str | None = Field(
        default=None, max_length=256, description="webhook: the shared secret it signs with"
    )
    password: str | None = Field(default=None, max_length=256, description="email: the SMTP password")


class AlertChannelPut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=80)
    kind: Literal["snmp", "webhook", "email"]
    settings: AlertChannelSettings
    secrets: AlertChannelSecrets = Field(default_factory=AlertChannelSecrets)
    enabled: bool = True
    warnings: bool = Field(True, description="carries the dashboard's warnings as they start and end")
    audit_classes: list[str] = Field(
        default_factory=list, max_length=40, description="audit event classes it carries"
    )


class AlertChannelStatus(Response):
    """How the channel fares on the KMA that answers (each KMA sends its own alerts)."""

    queued: int
    delivered: int
    dropped: int
    last_delivered_at: Time | None
    last_error: str | None


class AlertChannel(Response):
    id: str
    name: str
    kind: str
    enabled: bool
    warnings: bool
    audit_classes: list[str]
    settings: AlertChannelSettings
    secrets_set: list[str]  # which secrets are stored (never their values)
    updated_at: Time
    this_kma: AlertChannelStatus


class AlertChannels(Response):
    items: list[AlertChannel]
    snmp_engine_ids: dict[str, str]  # KMA id -> its SNMP engine ID (hex), for the managers' trap users
    mib: str  # KMA-ALERTS-MIB, for the SNMP managers


class AlertTestResult(Response):
    delivered: bool
    error: str | None
    alert_id: str
