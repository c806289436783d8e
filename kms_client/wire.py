"""The KMA management API's answers as frozen dataclasses, GENERATED from the OpenAPI document
the KMA serves by scripts/generate-client-models.py: do not edit; change kma/api's schemas and run
the script.

Read them with `kms_client.reader.read`; helper properties come from kms_client/behaviour.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import behaviour


@dataclass(frozen=True, kw_only=True)
class About:
    release: str
    api_version: int
    capabilities: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Agent:
    id: str
    description: str
    site_id: str
    default_key_group_id: str
    enabled: bool
    enrolled: bool
    enrollment_pending: bool
    created_at: datetime
    updated_at: datetime
    last_contact_at: datetime | None = None
    certificate_expires_at: datetime | None = None
    keys_served_7d: int = 0
    drive_model: str = ""
    drive_generation: str | None = None
    library: str = ""
    library_partition: str = ""


@dataclass(frozen=True, kw_only=True)
class AlertChannel:
    id: str
    name: str
    kind: str
    enabled: bool
    warnings: bool
    audit_classes: tuple[str, ...]
    settings: AlertChannelSettings
    secrets_set: tuple[str, ...]
    updated_at: datetime
    this_kma: AlertChannelStatus


@dataclass(frozen=True, kw_only=True)
class AlertChannelSettings:
    """Where and how a channel sends; each kind reads its own fields and ignores the others."""

    address: str | None = None
    mode: str | None = None
    user: str | None = None
    auth_protocol: str | None = None
    priv_protocol: str | None = None
    url: str | None = None
    ca_pem: str | None = None
    sender: str | None = None
    recipients: tuple[str, ...] | None = None
    username: str | None = None


@dataclass(frozen=True, kw_only=True)
class AlertChannelStatus:
    """How the channel fares on the KMA that answers (each KMA sends its own alerts)."""

    queued: int
    delivered: int
    dropped: int
    last_delivered_at: datetime | None
    last_error: str | None


@dataclass(frozen=True, kw_only=True)
class AlertChannels:
    items: tuple[AlertChannel, ...]
    snmp_engine_ids: Mapping[str, str]
    mib: str


@dataclass(frozen=True, kw_only=True)
class AlertTestResult:
    delivered: bool
    error: str | None
    alert_id: str


@dataclass(frozen=True, kw_only=True)
class AuditEvent:
    id: int
    kma_id: str
    chain_seq: int
    created_at: datetime
    site_id: str
    operation: str
    severity: str
    condition: str
    event_class: str
    entity_id: str
    entity_address: str
    message: str
    retention: str
    subject_type: str | None
    subject_id: str | None
    hash: str


@dataclass(frozen=True, kw_only=True)
class AuditForwarding:
    address: str | None
    ca_pem: str | None
    enabled: bool
    updated_at: datetime | None
    this_kma: ForwardingStatus


@dataclass(frozen=True, kw_only=True)
class AutonomousUnlock:
    kma_id: str
    enabled: bool


@dataclass(frozen=True, kw_only=True)
class Backup:
    id: str
    kma_id: str
    created_at: datetime
    created_by: str
    scheduled: bool
    size: int
    sha256: str
    keys: int
    audit_events: int
    schema_version: int
    deleted_at: datetime | None = None
    deleted_by: str | None = None


@dataclass(frozen=True, kw_only=True)
class BackupMade:
    id: str
    kma_id: str
    created_at: datetime
    created_by: str
    scheduled: bool
    size: int
    sha256: str
    keys: int
    audit_events: int
    schema_version: int
    deleted_at: datetime | None = None
    deleted_by: str | None = None
    core_security_backup: CoreSecurityBackupStatus


@dataclass(frozen=True, kw_only=True)
class BackupReadiness:
    """The last backup's age; in a one-KMA cluster, keys waiting for a backup and when the Ready
    keys run out at the recent issue rate (kma/services/backups.py `readiness`)."""

    last_backup_at: datetime | None
    last_backup_age: int | None
    one_kma: bool
    keys_waiting_for_backup: int
    ready_keys: int
    keys_issued_recently: int
    ready_keys_run_out_in: int | None
    keys_withheld_by_restore: int = 0
    keys_bound_after_restore: int = 0
    core_security_backup_up_to_date: bool


@dataclass(frozen=True, kw_only=True)
class BackupSchedule:
    kma_id: str
    frequency: str
    folder: str
    keep: int
    updated_at: datetime | None
    updated_by: str | None
    last_attempt_at: datetime | None
    last_error: str | None
    last_scheduled_backup_at: datetime | None
    next_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class Backups:
    items: tuple[Backup, ...]
    core_security_backup: CoreSecurityBackupStatus


@dataclass(frozen=True, kw_only=True)
class Boundary:
    kind: str
    at: datetime
    label: str
    planned: bool
    by: str | None
    lane: int


@dataclass(frozen=True, kw_only=True)
class CaInfo:
    ca_pem: str
    fingerprint: str
    previous_ca_pems: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class CertificateExpiry:
    """When one certificate of the cluster expires (kma/services/certificates/certificate_expiry.py)."""

    kind: str
    owner: str
    expires_at: datetime
    seconds_left: int
    warning: bool
    expired: bool


@dataclass(frozen=True, kw_only=True)
class ChainReport:
    intact: bool
    events_checked: int
    first_bad_event_id: int | None
    reason: str | None
    checkpoints: tuple[CheckpointRef, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class ChainVerification:
    """A verification of the audit chain running in the background, or the last one."""

    state: str
    started_at: datetime | None
    started_by: str | None
    finished_at: datetime | None
    events_checked: int
    events_total: int
    report: ChainReport | None
    error: str | None


@dataclass(frozen=True, kw_only=True)
class AuditCheckpoint:
    id: int
    kma_id: str
    chain_seq: int
    hash: str
    created_at: datetime
    retained_count: int
    signing_key_id: int = 0
    signing_key: str


@dataclass(frozen=True, kw_only=True)
class CheckpointRef:
    id: int
    kma_id: str
    chain_seq: int
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class CoreSecurityBackupStatus:
    exists: bool
    up_to_date: bool
    created_at: datetime | None
    created_by: str | None
    message: str


@dataclass(frozen=True, kw_only=True)
class Dashboard:
    cluster_name: str
    sites: int
    kmas: tuple[Kma, ...]
    keys_by_state: Mapping[str, int]
    keys_by_state_exact: Mapping[str, bool] = field(default_factory=dict)
    data_units: int
    agents: int
    users: int
    pending_quorum_operations: int
    backups: BackupReadiness | None = None
    master_key: MasterKeyState | None = None
    warnings: tuple[str, ...]
    certificates: tuple[CertificateExpiry, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class DataUnit:
    id: str
    description: str
    state: str
    key_count: int
    created_at: datetime
    updated_at: datetime
    pool_id: str | None = None
    writer_generation: str | None = None


@dataclass(frozen=True, kw_only=True)
class DayCount:
    day: str
    count: int


@dataclass(frozen=True, kw_only=True)
class DaySeverity:
    day: str
    info: int
    warning: int
    error: int


@dataclass(frozen=True, kw_only=True)
class DirectorySettings:
    configured: bool
    enabled: bool = False
    url: str = ""
    start_tls: bool = False
    ca_pem: str = ""
    bind_format: str = ""
    search_base: str = ""
    user_attribute: str = "sAMAccountName"
    group_attribute: str = "memberOf"
    name_attribute: str = "displayName"
    group_roles: tuple[GroupRolesOut, ...] = field(default_factory=tuple)
    updated_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class EnrollmentPassphrase:
    agent_id: str
    passphrase: str = field(repr=False)


@dataclass(frozen=True, kw_only=True)
class EnrollmentPassphrases:
    """One-time enrollment passphrases for several agents (drives that cannot renew their own
    certificate), each shown this once."""

    passphrases: tuple[EnrollmentPassphrase, ...]


@dataclass(frozen=True, kw_only=True)
class EnrolmentCodes:
    """New one-time codes for the members of a pending key split change still to enrol."""

    op_id: str
    enrolment_codes: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class AuditFacets:
    operation: tuple[str, ...]
    event_class: tuple[str, ...]
    entity_id: tuple[str, ...]
    kma_id: tuple[str, ...]
    site_id: tuple[str, ...]
    subject_type: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class FailureTolerance:
    voters: int
    voters_responding: int
    majority: int
    voters_may_lose: int
    management_writes: bool
    sites_whose_loss_stops_writes: tuple[str, ...]
    summary: str


@dataclass(frozen=True, kw_only=True)
class ForwardingStatus:
    """This KMA's forwarding: where to, connected, and how far behind its own chain it is."""

    address: str | None
    source: str | None
    connected: bool
    sent_seq: int
    lag_events: int
    lag_seconds: float
    last_error: str | None


@dataclass(frozen=True, kw_only=True)
class GenerationMigration:
    generation: str
    drives: int
    append: int
    read_only: int
    rewrite_from_bot: int
    unreadable_without: int


@dataclass(frozen=True, kw_only=True)
class GroupRolesOut:
    group: str
    roles: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class HeldBackup:
    """A live database backup that still holds a destroyed key."""

    id: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class History:
    subject_type: str
    subject_id: str
    title: str
    now: datetime
    state: str
    lanes: tuple[Lane, ...]
    boundaries: tuple[Boundary, ...]
    events: tuple[AuditEvent, ...]
    events_total: int
    events_truncated: bool
    facts: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Key:
    id: str
    key_group_id: str | None
    data_unit_id: str | None
    agent_id: str | None = None
    kma_id: str
    algorithm: str
    state: str
    compromised: bool
    created_at: datetime
    activated_at: datetime | None
    protect_until: datetime | None
    deactivate_at: datetime | None
    compromised_at: datetime | None = None
    destroyed_at: datetime | None
    destroy_comment: str | None
    destruction_complete: bool | None = None
    held_by_backups: tuple[HeldBackup, ...] = field(default_factory=tuple)
    name: str | None = None
    kmip_attributes: tuple[KmipAttribute, ...] = field(default_factory=tuple)
    rotation_due_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class KeyGroup:
    id: str
    description: str
    policy_id: str
    agent_ids: tuple[str, ...]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class KeyLeftBehind:
    data_unit_id: str
    key_id: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class KeyPolicy:
    id: str
    description: str
    encryption_period: int
    cryptoperiod: int
    allow_export: bool
    allow_import: bool
    import_needs_quorum: bool = False
    agents_may_revoke: bool
    general_keys: bool = False
    rotation_period: int | None = None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class KeySplit:
    threshold: int
    members: tuple[str, ...]
    generation: int
    operation_lifetime: int


@dataclass(frozen=True, kw_only=True)
class Kma:
    id: str
    name: str
    site_id: str
    management_address: str
    service_address: str
    version: str
    locked: bool
    key_pool_size: int
    pool_ready: int
    created_at: datetime
    raft_address: str = ""
    voter: bool = True
    awaiting_join: bool = False
    witness: bool = False
    removed_at: datetime | None = None
    schema_version: int | None = None
    rqlite_version: str | None = None
    certificate_expires_at: datetime | None = None
    node_certificate_expires_at: datetime | None = None
    certificate_renewal_requested: bool = False
    entry_problem: str | None = None


@dataclass(frozen=True, kw_only=True)
class KmaNode(behaviour.KmaNodeText):
    id: str
    name: str
    site_id: str
    management_address: str
    service_address: str
    leader: bool
    voter: bool
    witness: bool = False
    responding: bool
    locked: bool
    version: str
    schema_version: int | None = None
    rqlite_version: str | None = None
    master_key: str | None = None
    replication_lag: ReplicationLag | None
    last_contact_seconds: float | None
    this_kma: bool
    health: str
    certificate_expires_at: datetime | None = None
    node_certificate_expires_at: datetime | None = None
    certificate_warning: bool = False


@dataclass(frozen=True, kw_only=True)
class KmipAttribute:
    """An attribute a KMIP client set on a key (Name, Application Specific Information, ...)."""

    name: str
    value: str


@dataclass(frozen=True, kw_only=True)
class Lane:
    label: str
    subject_type: str
    subject_id: str
    spans: tuple[Span, ...]


@dataclass(frozen=True, kw_only=True)
class MasterKeyRotation:
    to_generation: int
    op_id: str
    started_at: datetime
    started_by: str
    finished_at: datetime | None
    blobs_total: int
    blobs_done: int
    percent: int
    kmas_waiting: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class MasterKeyState:
    generation: int
    rotating: bool
    rotation: MasterKeyRotation | None
    rotation_refused: str | None = None


@dataclass(frozen=True, kw_only=True)
class MediaPool:
    id: str
    description: str
    pattern: str
    key_group_id: str | None
    never_encrypted: bool
    read_only: bool
    tapes: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class MediaPoolMigration:
    pool_id: str
    tapes: int
    writer_unknown: int
    written_by: tuple[WrittenBy, ...]
    generations: tuple[GenerationMigration, ...]


@dataclass(frozen=True, kw_only=True)
class MediaRefusals:
    """This KMA's refused write keys by reason since it started; `cluster`, the same summed over the
    cluster's `cluster_kmas` serving KMAs (each since its own start)."""

    two_pools: int
    never_encrypted: int
    read_only: int
    no_pool: int
    key_group: int
    generation: int
    relabel: int
    cluster: Mapping[str, int] = field(default_factory=dict)
    cluster_kmas: int = 1


@dataclass(frozen=True, kw_only=True)
class MediaSettings:
    unmatched: str
    generation_rule: str


@dataclass(frozen=True, kw_only=True)
class MemberEnrolment(behaviour.MemberEnrolmentState):
    member: str
    enrolled_at: datetime | None
    enrolled_from: str | None


@dataclass(frozen=True, kw_only=True)
class PendingQuorumOp(behaviour.PendingQuorumOpState):
    id: str
    type: str
    summary: str
    request: Mapping[str, Any]
    requested_by: str
    submitted_at: datetime
    updated_at: datetime
    expires_at: datetime
    state: str
    approvals_needed: int
    approvals: tuple[QuorumApproval, ...]
    enrolment: tuple[MemberEnrolment, ...] = field(default_factory=tuple)
    result: str | None


@dataclass(frozen=True, kw_only=True)
class PruneResult:
    removed: int
    checkpoints: int
    retention: Retention


@dataclass(frozen=True, kw_only=True)
class QuorumApproval:
    member: str
    approved_by: str
    approved_at: datetime


@dataclass(frozen=True, kw_only=True)
class ReplicationLag:
    depth: int
    age_seconds: float


@dataclass(frozen=True, kw_only=True)
class AuditReport(behaviour.AuditReportFiles):
    filename: str
    html: str
    signature: str
    chain: ChainReport


@dataclass(frozen=True, kw_only=True)
class ReportSchedule:
    kma_id: str
    frequency: str
    folder: str
    reports: tuple[str, ...]
    email_channel_id: str | None
    updated_at: datetime | None
    updated_by: str | None
    last_attempt_at: datetime | None
    last_error: str | None
    next_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class Retention:
    long: int
    medium: int
    short: int
    auto_prune: bool = False
    updated_at: datetime
    last_pruned_at: datetime | None
    last_prune: str | None
    checkpoints: int


@dataclass(frozen=True, kw_only=True)
class SecondFactorEnrolment:
    """Shown once, never again: the secret (also as an otpauth:// URI, for a QR code) and the
    recovery codes."""

    secret: str
    otpauth_uri: str
    recovery_codes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SecondFactorPolicy:
    roles: tuple[str, ...]
    updated_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Series:
    days: int
    start: datetime
    keys_by_state: Mapping[str, int]
    keys_by_state_exact: Mapping[str, bool]
    keys_issued: tuple[DayCount, ...]
    events_by_severity: tuple[DaySeverity, ...]


@dataclass(frozen=True, kw_only=True)
class Session:
    token: str = field(repr=False)
    expires_at: datetime
    user: User


@dataclass(frozen=True, kw_only=True)
class SignedReport:
    """A report as a CSV file and its detached signature record (checked offline by
    `kma audit verify --export FILE --signature FILE.sig --ca CA.pem`)."""

    filename: str
    csv: str
    signature: str


@dataclass(frozen=True, kw_only=True)
class Site:
    id: str
    name: str
    description: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class SiteAgents:
    total: int
    enrolled: int
    disabled: int
    seen_last_hour: int


@dataclass(frozen=True, kw_only=True)
class SiteLink:
    site_a: str
    site_b: str
    lag_seconds: float | None


@dataclass(frozen=True, kw_only=True)
class Span:
    state: str
    start: datetime
    end: datetime | None
    by: str | None
    note: str | None


@dataclass(frozen=True, kw_only=True)
class Status:
    cluster_name: str
    kma_id: str
    kma_name: str
    site_id: str
    version: str
    locked: bool
    autonomous_unlock: bool
    master_key: str = "software"
    caught_up: bool = True
    master_key_generation: int = 1
    time: datetime
    warnings: tuple[str, ...]
    certificates: tuple[CertificateExpiry, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class TapeMovedBetweenPools:
    """A tape holding a live key of another key group than its media pool's (docs/media.md)."""

    id: str
    pool_id: str
    pool_key_group_id: str | None
    key_groups: tuple[str, ...]
    writer_generation: str | None = None
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class TapeToRelabel:
    id: str
    description: str
    key_count: int
    pool_id: str | None
    writer_generation: str | None = None
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class Topology(behaviour.TopologyKmas["KmaNode"]):
    cluster_name: str
    answered_by: str
    cluster_version: int = 1
    time: datetime
    sites: tuple[TopologySite, ...]
    links: tuple[SiteLink, ...]
    audit_forwarding: ForwardingStatus | None = None
    failure_tolerance: FailureTolerance


@dataclass(frozen=True, kw_only=True)
class TopologySite(behaviour.TopologySiteKmas["KmaNode"]):
    id: str
    name: str
    kmas: tuple[KmaNode, ...]
    agents: SiteAgents
    drives_by_kma: Mapping[str, int] = field(default_factory=dict)
    libraries: tuple[str, ...] = field(default_factory=tuple)
    pools_only_here: tuple[str, ...] = field(default_factory=tuple)
    warnings: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, kw_only=True)
class TransferConflict:
    data_unit_id: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class TransferExport:
    file_id: str
    partner_id: str
    recipient_fingerprint: str
    sender_fingerprint: str
    data_units: int
    keys: int
    expires_at: datetime
    not_exported: tuple[KeyLeftBehind, ...]
    not_found: tuple[str, ...]
    file: str | None = None


@dataclass(frozen=True, kw_only=True)
class TransferIdentity:
    identity: str
    fingerprint: str
    created_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class TransferImport:
    file_id: str
    partner_id: str
    partner_name: str
    sender_name: str
    created_at: datetime | None
    expires_at: datetime
    data_units: int
    keys: int
    new: int
    already_here: int
    conflicts: tuple[TransferConflict, ...]
    imported_before_at: datetime | None
    imported: int
    key_group_id: str | None
    keys_awaiting_backup: int = 0


@dataclass(frozen=True, kw_only=True)
class TransferJob:
    """An export or import running in the background on a KMA of the cluster; its client polls it
    through any KMA of the cluster (the job is a row of the store)."""

    id: str
    kind: str
    state: str
    phase: str
    done: int
    total: int
    kma_id: str
    started_by: str
    started_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    error: TransferJobError | None = None
    exported: TransferExport | None = None
    imported: TransferImport | None = None
    pending_op: PendingQuorumOp | None = None


@dataclass(frozen=True, kw_only=True)
class TransferJobError:
    status: int
    code: str
    message: str


@dataclass(frozen=True, kw_only=True)
class TransferPartner:
    id: str
    name: str
    contact: str
    identity: str
    fingerprint: str
    may_send: bool
    may_receive: bool
    enabled: bool
    registered_by_op: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class TransferUpload:
    id: str
    size: int
    sha256: str
    expires_at: datetime


@dataclass(frozen=True, kw_only=True)
class UpgradeCheck:
    ready: bool
    checks: tuple[UpgradeCheckItem, ...]
    order: tuple[UpgradeStep, ...]


@dataclass(frozen=True, kw_only=True)
class UpgradeCheckItem:
    name: str
    ok: bool
    message: str
    todo: str
    kma_id: str | None


@dataclass(frozen=True, kw_only=True)
class UpgradeStep(behaviour.KmaVersions):
    id: str
    name: str
    site_id: str
    witness: bool
    leader: bool
    this_kma: bool
    version: str
    schema_version: int | None
    rqlite_version: str | None


@dataclass(frozen=True, kw_only=True)
class User(behaviour.UserPermissions):
    id: str
    name: str
    roles: tuple[str, ...]
    enabled: bool
    locked_until: datetime | None
    created_at: datetime
    updated_at: datetime
    permissions: tuple[str, ...] = field(default_factory=tuple)
    directory_account: str | None = None
    second_factor: bool = False
    second_factor_required: bool = False


@dataclass(frozen=True, kw_only=True)
class WrittenBy:
    generation: str
    tapes: int
