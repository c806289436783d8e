"""The cluster topology (`GET /cluster/topology`) as frozen dataclasses; unknown keys are ignored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .models import JsonObject, parse_time

KMA_HEALTH = ("ok", "warning", "down")


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class ReplicationLag:
    depth: int
    age_seconds: float

    @classmethod
    def from_json(cls, d: JsonObject | None) -> ReplicationLag | None:
        return None if d is None else cls(depth=int(d["depth"]), age_seconds=float(d["age_seconds"]))


@dataclass(frozen=True)
class KmaNode:
    id: str
    name: str
    site_id: str
    management_address: str
    service_address: str
    leader: bool
    voter: bool
    responding: bool
    locked: bool
    version: str
    replication_lag: ReplicationLag | None
    last_contact_seconds: float | None
    this_kma: bool
    health: str  # see KMA_HEALTH
    witness: bool = False  # a voter with no key service
    master_key: str | None = None  # software | pkcs11 (the KMA's own HSM); None for a witness

    @property
    def master_key_text(self) -> str:
        return {"software": "master key in software", "pkcs11": "master key in HSM"}.get(
            self.master_key or "", "no master key"
        )

    @classmethod
    def from_json(cls, d: JsonObject) -> KmaNode:
        return cls(
            id=d["id"],
            name=d["name"],
            site_id=d["site_id"],
            management_address=d["management_address"],
            service_address=d["service_address"],
            leader=bool(d["leader"]),
            voter=bool(d["voter"]),
            responding=bool(d["responding"]),
            locked=bool(d["locked"]),
            version=d["version"],
            replication_lag=ReplicationLag.from_json(d.get("replication_lag")),
            last_contact_seconds=_opt_float(d.get("last_contact_seconds")),
            this_kma=bool(d.get("this_kma", False)),
            health=d["health"],
            witness=bool(d.get("witness", False)),
            master_key=d.get("master_key"),
        )


@dataclass(frozen=True)
class SiteAgents:
    total: int
    enrolled: int
    disabled: int
    seen_last_hour: int

    @classmethod
    def from_json(cls, d: JsonObject) -> SiteAgents:
        return cls(int(d["total"]), int(d["enrolled"]), int(d["disabled"]), int(d["seen_last_hour"]))


@dataclass(frozen=True)
class TopologySite:
    id: str
    name: str
    kmas: tuple[KmaNode, ...]
    agents: SiteAgents

    @classmethod
    def from_json(cls, d: JsonObject) -> TopologySite:
        return cls(d["id"], d["name"], tuple(KmaNode.from_json(k) for k in d["kmas"]),
                   SiteAgents.from_json(d["agents"]))  # fmt: skip


@dataclass(frozen=True)
class SiteLink:
    site_a: str
    site_b: str
    lag_seconds: float | None

    @classmethod
    def from_json(cls, d: JsonObject) -> SiteLink:
        return cls(d["site_a"], d["site_b"], _opt_float(d.get("lag_seconds")))


@dataclass(frozen=True)
class FailureTolerance:
    voters: int
    voters_responding: int
    majority: int
    voters_may_lose: int
    management_writes: bool
    sites_whose_loss_stops_writes: tuple[str, ...]
    summary: str

    @classmethod
    def from_json(cls, d: JsonObject) -> FailureTolerance:
        return cls(
            voters=int(d["voters"]),
            voters_responding=int(d["voters_responding"]),
            majority=int(d["majority"]),
            voters_may_lose=int(d["voters_may_lose"]),
            management_writes=bool(d["management_writes"]),
            sites_whose_loss_stops_writes=tuple(str(s) for s in d["sites_whose_loss_stops_writes"]),
            summary=d["summary"],
        )


@dataclass(frozen=True)
class ForwardingStatus:
    """One KMA's copy of its audit trail to a syslog collector."""

    address: str | None
    source: str | None
    connected: bool
    sent_seq: int
    lag_events: int
    lag_seconds: float
    last_error: str | None

    @classmethod
    def from_json(cls, d: JsonObject) -> ForwardingStatus:
        return cls(
            address=d.get("address"),
            source=d.get("source"),
            connected=bool(d["connected"]),
            sent_seq=int(d["sent_seq"]),
            lag_events=int(d["lag_events"]),
            lag_seconds=float(d["lag_seconds"]),
            last_error=d.get("last_error"),
        )


@dataclass(frozen=True)
class AuditForwarding:
    """The cluster's collector, and how this KMA's forwarding goes."""

    address: str | None
    ca_pem: str | None
    enabled: bool
    this_kma: ForwardingStatus

    @classmethod
    def from_json(cls, d: JsonObject) -> AuditForwarding:
        return cls(
            d.get("address"), d.get("ca_pem"), bool(d["enabled"]), ForwardingStatus.from_json(d["this_kma"])
        )


@dataclass(frozen=True)
class Topology:
    cluster_name: str
    answered_by: str
    time: datetime
    sites: tuple[TopologySite, ...]
    links: tuple[SiteLink, ...]
    failure_tolerance: FailureTolerance
    audit_forwarding: ForwardingStatus | None = None  # the answering KMA's, when it forwards

    @classmethod
    def from_json(cls, d: JsonObject) -> Topology:
        return cls(
            cluster_name=d["cluster_name"],
            answered_by=d["answered_by"],
            time=parse_time(d["time"]),
            sites=tuple(TopologySite.from_json(s) for s in d["sites"]),
            links=tuple(SiteLink.from_json(x) for x in d["links"]),
            failure_tolerance=FailureTolerance.from_json(d["failure_tolerance"]),
            audit_forwarding=(
                ForwardingStatus.from_json(d["audit_forwarding"]) if d.get("audit_forwarding") else None
            ),
        )

    @property
    def kmas(self) -> tuple[KmaNode, ...]:
        return tuple(k for s in self.sites for k in s.kmas)
