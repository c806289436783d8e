"""Response bodies of the cluster topology: sites, KMAs, agents per site, failure tolerance."""

from __future__ import annotations

from kma.api.forwarding_schemas import ForwardingStatus
from kma.api.schemas import Response, Time


class ReplicationLag(Response):
    depth: int  # agent-path writes not yet in the cluster's store
    age_seconds: float  # age of the oldest of them


class KmaNode(Response):
    id: str
    name: str
    site_id: str
    management_address: str
    service_address: str
    leader: bool
    voter: bool
    witness: bool = False  # a voter with no key service (no listeners, agents or key pool)
    responding: bool
    locked: bool
    version: str  # its release
    schema_version: int | None = None  # the newest schema its release knows; None: never recorded one
    rqlite_version: str | None = None  # its node's rqlited release; None: embedded, or never recorded
    master_key: str | None = None  # software | pkcs11 (in the KMA's own HSM); None: a witness
    replication_lag: ReplicationLag | None  # as each KMA last reported it; None: it never shipped
    last_contact_seconds: float | None
    this_kma: bool
    health: str  # ok | warning (locked or lagging) | down (not responding)
    certificate_expires_at: Time | None = None  # its listener certificate; None: not recorded yet
    node_certificate_expires_at: Time | None = None  # its cluster node certificate; None: embedded
    # A warning threshold (kma.toml [certificates] warn_before) reached by either, or expired
    certificate_warning: bool = False


class SiteAgents(Response):
    total: int
    enrolled: int
    disabled: int
    seen_last_hour: int


class TopologySite(Response):
    id: str
    name: str
    kmas: list[KmaNode]
    agents: SiteAgents
    # the white paper's redundancy advice (kma/cluster/redundancy.py): which KMA served each of the
    # site's drives last, among those seen in the last day, and what falls short of it
    drives_by_kma: dict[str, int] = {}
    # what losing the site leaves behind: its tape libraries (as its drives name them), and the
    # media pools no drive at another site may read
    libraries: list[str] = []
    pools_only_here: list[str] = []
    warnings: list[str] = []


class SiteLink(Response):
    site_a: str
    site_b: str
    lag_seconds: float | None


class FailureTolerance(Response):
    voters: int
    voters_responding: int
    majority: int
    voters_may_lose: int
    management_writes: bool
    sites_whose_loss_stops_writes: list[str]
    summary: str


class Topology(Response):
    cluster_name: str
    answered_by: str
    cluster_version: int = 1  # docs/upgrades.md, "The cluster version" (1: a KMA before 0.2.0 answers)
    time: Time
    sites: list[TopologySite]
    links: list[SiteLink]
    audit_forwarding: ForwardingStatus | None = None  # the answering KMA's, when it forwards
    failure_tolerance: FailureTolerance


class UpgradeCheckItem(Response):
    name: str  # responding | caught-up | outbox | backup
    ok: bool
    message: str  # what was found
    todo: str  # what to do, when it failed
    kma_id: str | None  # the KMA it is about; None: the cluster


class UpgradeStep(Response):
    id: str
    name: str
    site_id: str
    witness: bool
    leader: bool
    this_kma: bool  # the KMA that answered: upgraded last
    version: str
    schema_version: int | None
    rqlite_version: str | None


class UpgradeCheck(Response):
    ready: bool  # every check passed
    checks: list[UpgradeCheckItem]
    order: list[UpgradeStep]  # the KMAs, in the order to upgrade them (docs/upgrades.md)
