"""Typed client for the KMA management API (docs/api.md). No Qt: used by the GUI and scripts.

from kms_client import KmsClient, Trust
trust = Trust.fetch("127.0.0.1:8443")   # first contact: show trust.fingerprint to the user
client = KmsClient("127.0.0.1:8443", ca_pem=trust.ca_pem, ca_fingerprint=trust.fingerprint)
client.sign_in("so", "passphrase")
for key in client.iter_keys(state="deactivated"): ...
"""

from __future__ import annotations

from ._http import Credentials, FilterValue
from .client import KmsClient, Order
from .errors import (
    ERROR_CLASSES,
    ApiError,
    BadRequest,
    ClusterUnavailable,
    Conflict,
    Forbidden,
    InternalError,
    KmaLocked,
    KmaUnreachable,
    KmsError,
    LockedOut,
    NotFound,
    NotSetUp,
    PayloadTooLarge,
    TrustError,
    Unauthenticated,
    ValidationFailed,
    api_error,
)
from .failover import Failover, KnownKma
from .models import (
    CONDITIONS,
    DATA_UNIT_STATES,
    KEY_STATES,
    PERMISSIONS,
    QUORUM_OP_STATES,
    QUORUM_OP_TYPES,
    RETENTIONS,
    ROLES,
    SEVERITIES,
    Agent,
    AuditEvent,
    AutonomousUnlock,
    CaInfo,
    ChainReport,
    Credential,
    Dashboard,
    DataUnit,
    EnrollmentPassphrase,
    Key,
    KeyGroup,
    KeyPolicy,
    KeySplit,
    KeySplitChange,
    Kma,
    MemberEnrolment,
    Page,
    PendingQuorumOp,
    QuorumApproval,
    Session,
    Site,
    Status,
    User,
)
from .paging import iter_all, iter_pages
from .trust import Trust, fingerprint_of, ssl_context_for

__all__ = [
    "CONDITIONS",
    "DATA_UNIT_STATES",
    "ERROR_CLASSES",
    "KEY_STATES",
    "PERMISSIONS",
    "QUORUM_OP_STATES",
    "QUORUM_OP_TYPES",
    "RETENTIONS",
    "ROLES",
    "SEVERITIES",
    "Agent",
    "ApiError",
    "AuditEvent",
    "AutonomousUnlock",
    "BadRequest",
    "CaInfo",
    "ClusterUnavailable",
    "ChainReport",
    "Conflict",
    "Credential",
    "Dashboard",
    "DataUnit",
    "EnrollmentPassphrase",
    "Failover",
    "Credentials",
    "FilterValue",
    "Forbidden",
    "InternalError",
    "Key",
    "KeyGroup",
    "KeyPolicy",
    "KeySplit",
    "KeySplitChange",
    "Kma",
    "KmaLocked",
    "KmaUnreachable",
    "KmsClient",
    "KnownKma",
    "KmsError",
    "LockedOut",
    "NotFound",
    "NotSetUp",
    "Order",
    "Page",
    "MemberEnrolment",
    "PendingQuorumOp",
    "QuorumApproval",
    "PayloadTooLarge",
    "Session",
    "Site",
    "Status",
    "Trust",
    "TrustError",
    "Unauthenticated",
    "User",
    "ValidationFailed",
    "api_error",
    "fingerprint_of",
    "iter_all",
    "iter_pages",
    "ssl_context_for",
]

from .audit_models import (  # noqa: E402  the auditor's routes
    AuditCheckpoint,
    AuditFacets,
    AuditReport,
    Boundary,
    History,
    Lane,
    PruneResult,
    Retention,
    Series,
    Span,
)

__all__ += ["AuditCheckpoint", "AuditFacets", "AuditReport", "Boundary", "History", "Lane", "PruneResult",
            "Retention", "Series", "Span"]  # fmt: skip

from .backups import (  # noqa: E402  database and core security backups
    Backup,
    Backups,
    BackupSchedule,
    CoreSecurityBackupStatus,
)

__all__ += ["Backup", "BackupSchedule", "Backups", "CoreSecurityBackupStatus"]

from .topology_models import (  # noqa: E402  the cluster at a glance
    KMA_HEALTH,
    AuditForwarding,
    FailureTolerance,
    ForwardingStatus,
    KmaNode,
    ReplicationLag,
    SiteAgents,
    SiteLink,
    Topology,
    TopologySite,
)

__all__ += ["KMA_HEALTH", "AuditForwarding", "FailureTolerance", "ForwardingStatus", "KmaNode",
            "ReplicationLag", "SiteAgents", "SiteLink", "Topology", "TopologySite"]  # fmt: skip
