"""Request and response bodies. Requests refuse unknown fields; responses never carry key material.

The client's models (kms_client/wire.py) are generated from these, through the OpenAPI document
(scripts/generate-client-models.py): a response field added after a release takes a default, so a
newer manager still reads an older KMA's answers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, WithJsonSchema


def _from_epoch(value: Any) -> Any:
    return datetime.fromtimestamp(value, UTC) if isinstance(value, int) else value


Time = Annotated[
    datetime,
    BeforeValidator(_from_epoch),
    PlainSerializer(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"), return_type=str),
    # a time in the document, in and out (kms_client's generated models read it as a datetime)
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
Id = Annotated[str, Field(min_length=1, max_length=64)]
Text = Annotated[str, Field(max_length=200)]
Passphrase = Annotated[str, Field(min_length=1, max_length=256)]
Comment = Annotated[str, Field(min_length=1, max_length=500)]
Period = Annotated[int, Field(gt=0, le=100 * 365 * 86400)]
MAX_PASSPHRASES_AT_ONCE = 100  # each costs an Argon2id hash (about 0.1 s)
T = TypeVar("T")


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Response(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class Page(Response, Generic[T]):
    items: list[T]
    next_cursor: str | None
    total: int  # the matches, counted up to a limit: then `total_exact` is false ("more than total")
    total_exact: bool = True
    searched_to: Time | None = Field(
        default=None,
        description="a search that stopped, within its time, short of the end of the list (the audit "
        "trail's free text): the time of the last row it looked at (the oldest, newest first); the rows "
        "beyond are not searched yet, and `next_cursor` searches on from there. Null: searched to the end",
    )


class ErrorBody(BaseModel):
    code: str
    message: str


class Error(BaseModel):
    error: ErrorBody


# --- responses -------------------------------------------------------------------------
class CertificateExpiry(Response):
    """When one certificate of the cluster expires (kma/services/certificates/certificate_expiry.py)."""

    kind: str  # ca, listener, node (a KMA's) or agent
    owner: str  # the cluster's name (ca), a KMA ID or an agent ID
    expires_at: Time
    seconds_left: int  # by the KMA's clock; 0 or less: expired
    warning: bool  # a warning threshold (kma.toml [certificates] warn_before) is reached
    expired: bool


class Status(Response):
    cluster_name: str
    kma_id: str
    kma_name: str
    site_id: str
    version: str
    locked: bool
    autonomous_unlock: bool
    master_key: str = "software"  # "software", or "pkcs11: token ... in MODULE" (docs/hsm.md)
    caught_up: bool = True  # its replica holds what the cluster had committed at its start: it serves agents
    master_key_generation: int = 1  # of the cluster's master key (docs/backups.md#master-key-rotation)
    time: Time
    warnings: list[str]
    # The CA's and every KMA's certificates, and the agents' a warning reached (soonest first)
    certificates: list[CertificateExpiry] = []


class About(Response):
    release: str  # the KMA's release, e.g. 0.2.0
    api_version: int  # the management API's major version (/api/v1)
    capabilities: list[str]  # the features it offers, by name (kma/capabilities.py)


class CaInfo(Response):
    ca_pem: str
    fingerprint: str
    # The CA's earlier certificates, newest first: a client that pinned one accepts `ca_pem` when
    # it renews it (the same name and key: kms_client/trust.py)
    previous_ca_pems: list[str] = []


class User(Response):
    id: str
    name: str
    roles: list[str]
    enabled: bool
    locked_until: Time | None
    created_at: Time
    updated_at: Time
    permissions: list[str] = Field(
        default=[],  # a KMA older than the field sends none: such a user is offered nothing
        description="What the user's roles allow, by the names of the KMA's grant table "
        "(e.g. `agents.write`): a client asks these, never the roles.",
    )
    directory_account: str | None = Field(
        default=None,  # a KMA older than directory sign-in has local users only
        description="The directory entry (DN) of a user who signs in with a directory account; "
        "null for a local user.",
    )
    second_factor: bool = Field(
        default=False, description="Whether the user's sign-ins need a code from their authenticator app."
    )
    second_factor_required: bool = Field(
        default=False,  # a KMA older than the policy requires it of nobody
        description="Whether the user's roles require two-step sign-in (GET /auth/second-factor/policy). "
        "True while `second_factor` is false: the user may do nothing but enrol one.",
    )


class Session(Response):
    token: str
    expires_at: Time
    user: User


class Site(Response):
    id: str
    name: str
    description: str
    created_at: Time


class Kma(Response):
    id: str
    name: str
    site_id: str
    management_address: str
    service_address: str
    version: str
    locked: bool
    key_pool_size: int
    pool_ready: int
    created_at: Time
    raft_address: str = ""  # where the other KMAs reach its Raft node
    voter: bool = True  # votes in Raft (at most 5 do); else a read replica
    awaiting_join: bool = False  # the entry waits for its machine to join
    witness: bool = False  # a voter with no key service (no listeners, agents or key pool)
    removed_at: Time | None = None  # removed from the cluster (kept for its history)
    schema_version: int | None = None  # the newest schema its release knows; None: never started
    rqlite_version: str | None = None  # its cluster node's rqlited release; None: embedded, or never started
    certificate_expires_at: Time | None = None  # its listener certificate's; None: not known yet
    node_certificate_expires_at: Time | None = None  # its cluster node certificate's; None: embedded
    certificate_renewal_requested: bool = False  # a Security Officer asked it to renew its listener's
    entry_problem: str | None = None  # why its entry is not trusted (a signature does not verify)


class KeyPolicy(Response):
    id: str
    description: str
    encryption_period: int
    cryptoperiod: int
    allow_export: bool
    allow_import: bool
    import_needs_quorum: bool = Field(
        False, description="an import into its key groups is a quorum operation (docs/transfer.md)"
    )
    agents_may_revoke: bool
    general_keys: bool = False  # keys for generic KMIP clients; else tape keys (Name = volser, AES-256)
    # seconds after a general key's activation when the KMA makes its successor (None: never)
    rotation_period: int | None = None
    created_at: Time
    updated_at: Time


class KeyGroup(Response):
    id: str
    description: str
    policy_id: str
    agent_ids: list[str]
    created_at: Time
    updated_at: Time


class Agent(Response):
    id: str
    description: str
    site_id: str
    default_key_group_id: str
    enabled: bool
    enrolled: bool
    enrollment_pending: bool
    created_at: Time
    updated_at: Time
    last_contact_at: Time | None = None  # its newest request on the service listener
    certificate_expires_at: Time | None = None  # of the certificate it enrolled with last
    keys_served_7d: int = 0  # keys sent to it (KMIP Get) in the last seven days
    # a tape drive's model and generation (LTO-5..9, T10000A-D, T9840A-D: docs/media.md)
    drive_model: str = ""
    drive_generation: str | None = None
    library: str = ""
    library_partition: str = ""


class EnrollmentPassphrase(Response):
    agent_id: str
    passphrase: str


class EnrollmentPassphrases(Response):
    """One-time enrollment passphrases for several agents (drives that cannot renew their own
    certificate), each shown this once."""

    passphrases: list[EnrollmentPassphrase]


class DataUnit(Response):
    id: str
    description: str
    state: str
    key_count: int
    created_at: Time
    updated_at: Time
    pool_id: str | None = None  # its media pool (docs/media.md)
    writer_generation: str | None = None  # the drive generation that wrote it from BOT, or first


class HeldBackup(Response):
    """A live database backup that still holds a destroyed key."""

    id: str
    created_at: Time


class KmipAttribute(Response):
    """An attribute a KMIP client set on a key (Name, Application Specific Information, ...)."""

    name: str
    value: str  # as text (a structure's fields joined by ": ")


class Key(Response):
    id: str
    key_group_id: str | None
    data_unit_id: str | None
    agent_id: str | None = None
    kma_id: str
    algorithm: str
    state: str
    compromised: bool
    created_at: Time
    activated_at: Time | None
    protect_until: Time | None
    deactivate_at: Time | None
    compromised_at: Time | None = None
    destroyed_at: Time | None
    destroy_comment: str | None
    # Destroyed while a database backup holds the key: incomplete until no backup does (the
    # key's details name them; deleting or expiring them completes it). None when not destroyed.
    destruction_complete: bool | None = None
    held_by_backups: list[HeldBackup] = []  # in a key's details only
    # "AES-256" (a tape key), "AES-128", "AES-192", "Secret Data" or "Opaque Object"; the Name a
    # KMIP client gave the object, if any; in a key's details, every attribute a client set.
    name: str | None = None
    kmip_attributes: list[KmipAttribute] = []
    # When the KMA makes this general key's successor itself (its policy's rotation period); None:
    # it never will (no rotation period, a tape key, replaced already, ending before)
    rotation_due_at: Time | None = None


class AuditEvent(Response):
    id: int
    kma_id: str
    chain_seq: int
    created_at: Time
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


class ChainReport(Response):
    intact: bool
    events_checked: int
    first_bad_event_id: int | None
    reason: str | None


class BackupReadiness(Response):
    """The last backup's age; in a one-KMA cluster, keys waiting for a backup and when the Ready
    keys run out at the recent issue rate (kma/services/backups.py `readiness`)."""

    last_backup_at: Time | None
    last_backup_age: int | None  # seconds
    one_kma: bool
    keys_waiting_for_backup: int
    ready_keys: int
    keys_issued_recently: int  # by this KMA in the last 7 days
    # Seconds at that rate, or the last day's or hour's if faster; None when none were issued.
    ready_keys_run_out_in: int | None
    keys_withheld_by_restore: int = 0  # the backup's unassigned keys: perhaps issued after it, never again
    keys_bound_after_restore: int = 0  # of those, bound to a key group at a drive's first read by ID
    core_security_backup_up_to_date: bool


class MasterKeyRotation(Response):
    to_generation: int
    op_id: str
    started_at: Time
    started_by: str
    finished_at: Time | None
    blobs_total: int  # blobs under the old generation when it started
    blobs_done: int
    percent: int  # 100 once ended
    kmas_waiting: list[str]  # KMAs that have not taken the new generation up yet (down or locked)


class MasterKeyState(Response):
    generation: int  # 1: never rotated
    rotating: bool
    rotation: MasterKeyRotation | None  # the one under way, else the last one
    rotation_refused: str | None = None  # why a rotation cannot start now; None: it can


class Dashboard(Response):
    cluster_name: str
    sites: int
    kmas: list[Kma]
    keys_by_state: dict[str, int]  # each up to 10,000
    keys_by_state_exact: dict[str, bool] = {}  # false: more than 10,000 keys are in that state
    data_units: int
    agents: int
    users: int
    pending_quorum_operations: int
    backups: BackupReadiness | None = None  # None from a KMA before backups existed
    master_key: MasterKeyState | None = None  # None from a KMA before master key rotations
    warnings: list[str]
    # The CA's and every KMA's certificates, and the agents' a warning reached (soonest first)
    certificates: list[CertificateExpiry] = []


# --- requests --------------------------------------------------------------------------
class SignIn(Request):
    user_id: Annotated[str, Field(min_length=1, max_length=256)]
    passphrase: Passphrase
    code: Annotated[str, Field(max_length=32)] | None = Field(
        default=None,
        description="The code from the user's authenticator app (or a recovery code) when their "
        "two-step sign-in is on; without it such a user gets 401 `second_factor_required`.",
    )


class SignedReport(Response):
    """A report as a CSV file and its detached signature record (checked offline by
    `kma audit verify --export FILE --signature FILE.sig --ca CA.pem`)."""

    filename: str
    csv: str
    signature: str  # the .sig file's exact text (JSON)


class SiteCreate(Request):
    id: Id
    name: Text
    description: Text = ""


class SitePatch(Request):
    name: Text | None = None
    description: Text | None = None


class KmaPatch(Request):
    name: Text | None = None
    site_id: Id | None = None
    key_pool_size: Annotated[int, Field(ge=0, le=100_000)] | None = None


class UserCreate(Request):
    id: Id
    name: Text
    roles: list[str]
    passphrase: Passphrase


class UserPatch(Request):
    name: Text | None = None
    roles: list[str] | None = None
    enabled: bool | None = None


class PassphraseBody(Request):
    passphrase: Passphrase


class PolicyCreate(Request):
    id: Id
    description: Text = ""
    encryption_period: Period
    cryptoperiod: Period
    allow_export: bool = False
    allow_import: bool = False
    import_needs_quorum: bool = False
    agents_may_revoke: bool = False
    general_keys: bool = False
    rotation_period: Period | None = None  # general keys only; fixed for good, as the periods


class PolicyPatch(Request):
    description: Text | None = None
    allow_export: bool | None = None
    allow_import: bool | None = None
    import_needs_quorum: bool | None = None
    agents_may_revoke: bool | None = None
    general_keys: bool | None = None
    # Accepted only to be refused with a clear 409: periods never change once set.
    encryption_period: int | None = None
    cryptoperiod: int | None = None


class GroupCreate(Request):
    id: Id
    description: Text = ""
    policy_id: Id


class GroupPatch(Request):
    description: Text | None = None


class GroupAgents(Request):
    agent_ids: Annotated[list[Id], Field(max_length=10_000)]


class AgentCreate(Request):
    id: Id
    description: Text = ""
    site_id: Id
    default_key_group_id: Id
    drive_model: Text = ""
    drive_generation: Annotated[str, Field(max_length=20)] | None = None  # "" or none: not a tape drive
    library: Text = ""
    library_partition: Text = ""


class AgentIds(Request):
    agent_ids: Annotated[list[Id], Field(min_length=1, max_length=MAX_PASSPHRASES_AT_ONCE)]


class AgentPatch(Request):
    description: Text | None = None
    site_id: Id | None = None
    default_key_group_id: Id | None = None
    enabled: bool | None = None
    drive_model: Text | None = None
    drive_generation: Annotated[str, Field(max_length=20)] | None = None  # "" clears it
    library: Text | None = None
    library_partition: Text | None = None


class DataUnitCreate(Request):
    id: Id
    description: Text = ""


class DataUnitPatch(Request):
    description: Text | None = None


class KeyIssue(Request):
    key_group_id: Id
    data_unit_id: Id


class CommentBody(Request):
    comment: Comment
