"""Request and response bodies of audit forwarding (a copy of the audit trail to a syslog collector)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from kma.api.schemas import Response, Time


class ForwardingStatus(Response):
    """This KMA's forwarding: where to, connected, and how far behind its own chain it is."""

    address: str | None
    source: str | None  # "api" (the cluster's setting) or "kma.toml" (this KMA's own)
    connected: bool
    sent_seq: int
    lag_events: int
    lag_seconds: float
    last_error: str | None


class AuditForwarding(Response):
    address: str | None
    ca_pem: str | None
    enabled: bool
    updated_at: Time | None
    this_kma: ForwardingStatus


class AuditForwardingPut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: str = Field(min_length=3, max_length=262, description="HOST:PORT of the collector (RFC 5425)")
    ca_pem: str = Field(min_length=1, max_length=32_000, description="the CA of the collector's certificate")
    enabled: bool = True
