"""Response objects of the KMA management API (docs/api.md "Objects"), as frozen dataclasses.

`from_json` reads only the keys it knows, so a newer KMA may add fields without breaking an older
client. Times become timezone-aware `datetime`s (a time without an offset is taken as UTC, which is
what the contract says every time is); lists become tuples so the objects are truly immutable.
State, role, severity and similar enumerations stay plain strings: a newer KMA may add a value,
and the constants below list the ones this client knows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

JsonObject = Mapping[str, Any]
T = TypeVar("T")

ROLES = (
    "security_officer",
    "compliance_officer",
    "operator",
    "backup_operator",
    "auditor",
    "quorum_member",
)
# The names of the KMA's grant table (kma.domain.roles.Permission), which a User's `may` is asked.
PERMISSIONS = (
    "signed_in",
    "users.read",
    "users.write",
    "sites.write",
    "kmas.write",
    "policies.read",
    "policies.write",
    "agents.read",
    "agents.write",
    "data.read",
    "data.write",
    "audit.read",
    "audit.manage",
    "quorum.read",
    "quorum.approve",
    "quorum.delete",
    "quorum.submit",
    "backups.read",
    "backups.write",
    "backups.core",
)
DATA_UNIT_STATES = ("no_key", "readable_normal", "readable_needs_rekey", "shredded")
KEY_STATES = (
    "generated",
    "ready",
    "protect_and_process",
    "process_only",
    "deactivated",
    "destroyed",
)
SEVERITIES = ("info", "warning", "error")
CONDITIONS = ("success", "warning", "error")
RETENTIONS = ("long", "medium", "short")


def parse_time(value: str) -> datetime:
    """An ISO 8601 time from the KMA as an aware `datetime` (UTC when no offset is given)."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def maybe_time(value: str | None) -> datetime | None:
    return None if value is None else parse_time(value)


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: `next_cursor` is None on the last page; `total` counts the matches,
    or, when `total_exact` is false, is what the KMA counted before it stopped: more match."""

    items: list[T]
    next_cursor: str | None
    total: int
    total_exact: bool = True

    @classmethod
    def from_json(cls, d: JsonObject, item: Callable[[JsonObject], T]) -> Page[T]:
        return cls(
            items=[item(i) for i in d["items"]],
            next_cursor=d.get("next_cursor"),
            total=int(d["total"]),
            total_exact=bool(d.get("total_exact", True)),
        )


@dataclass(frozen=True)
class Status:
    cluster_name: str
    kma_id: str
    kma_name: str
    site_id: str
    version: str
    locked: bool
    autonomous_unlock: bool
    time: datetime
    warnings: tuple[str, ...]
    master_key: str = "software"  # or "pkcs11: token ... in MODULE": where the master key is
    caught_up: bool = True  # serves agents (False for a while after a cluster KMA's start)

    @classmethod
    def from_json(cls, d: JsonObject) -> Status:
        return cls(
            cluster_name=d["cluster_name"],
            kma_id=d["kma_id"],
            kma_name=d["kma_name"],
            site_id=d["site_id"],
            version=d["version"],
            locked=bool(d["locked"]),
            autonomous_unlock=bool(d["autonomous_unlock"]),
            time=parse_time(d["time"]),
            warnings=_strs(d.get("warnings")),
            master_key=str(d.get("master_key", "software")),
            caught_up=bool(d.get("caught_up", True)),
        )


@dataclass(frozen=True)
class User:
    id: str
    name: str
    roles: tuple[str, ...]
    enabled: bool
    locked_until: datetime | None
    created_at: datetime
    updated_at: datetime
    permissions: tuple[str, ...] = ()  # what the roles allow, named as in PERMISSIONS

    def may(self, permission: str) -> bool:
        """Whether the KMA lets this user do `permission` (a name from PERMISSIONS). The KMA still
        decides each request; this is for not offering what it would refuse."""
        if permission not in PERMISSIONS:
            raise ValueError(f"unknown permission {permission!r}; the KMA's are {', '.join(PERMISSIONS)}")
        return permission in self.permissions

    @classmethod
    def from_json(cls, d: JsonObject) -> User:
        return cls(
            id=d["id"],
            name=d["name"],
            roles=_strs(d["roles"]),
            enabled=bool(d["enabled"]),
            locked_until=maybe_time(d.get("locked_until")),
            created_at=parse_time(d["created_at"]),
            updated_at=parse_time(d["updated_at"]),
            permissions=_strs(d.get("permissions", ())),  # a KMA older than the field sends none
        )


@dataclass(frozen=True)
class Session:
    """A signed-in session. The token is a secret: it is left out of `repr`."""

    token: str = field(repr=False)
    expires_at: datetime
    user: User

    @classmethod
    def from_json(cls, d: JsonObject) -> Session:
        return cls(
            token=d["token"],
            expires_at=parse_time(d["expires_at"]),
            user=User.from_json(d["user"]),
        )


@dataclass(frozen=True)
class Site:
    id: str
    name: str
    description: str
    created_at: datetime

    @classmethod
    def from_json(cls, d: JsonObject) -> Site:
        return cls(
            id=d["id"],
            name=d["name"],
            description=d.get("description") or "",
            created_at=parse_time(d["created_at"]),
        )


@dataclass(frozen=True)
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
    voter: bool = True  # votes in Raft; else a read replica
    awaiting_join: bool = False  # the entry waits for its machine to join
    witness: bool = False  # a voter with no key service
    removed_at: datetime | None = None  # removed from the cluster (kept for its history)

    @classmethod
    def from_json(cls, d: JsonObject) -> Kma:
        return cls(
            id=d["id"],
            name=d["name"],
            site_id=d["site_id"],
            management_address=d["management_address"],
            service_address=d["service_address"],
            version=d["version"],
            locked=bool(d["locked"]),
            key_pool_size=int(d["key_pool_size"]),
            pool_ready=int(d["pool_ready"]),
            created_at=parse_time(d["created_at"]),
            raft_address=d.get("raft_address", ""),
            voter=bool(d.get("voter", True)),
            awaiting_join=bool(d.get("awaiting_join", False)),
            witness=bool(d.get("witness", False)),
            removed_at=parse_time(d["removed_at"]) if d.get("removed_at") else None,
        )


@dataclass(frozen=True)
class KeyPolicy:
    """Periods are whole seconds and cannot change once the policy exists."""

    id: str
    description: str
    encryption_period: int
    cryptoperiod: int
    allow_export: bool
    allow_import: bool
    agents_may_revoke: bool
    created_at: datetime
    updated_at: datetime
    general_keys: bool = False  # keys for generic KMIP clients; else tape keys

    @classmethod
    def from_json(cls, d: JsonObject) -> KeyPolicy:
        return cls(
            id=d["id"],
            description=d.get("description") or "",
            encryption_period=int(d["encryption_period"]),
            cryptoperiod=int(d["cryptoperiod"]),
            allow_export=bool(d["allow_export"]),
            allow_import=bool(d["allow_import"]),
            agents_may_revoke=bool(d["agents_may_revoke"]),
            created_at=parse_time(d["created_at"]),
            updated_at=parse_time(d["updated_at"]),
            general_keys=bool(d.get("general_keys", False)),
        )


@dataclass(frozen=True)
class KeyGroup:
    id: str
    description: str
    policy_id: str
    agent_ids: tuple[str, ...]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_json(cls, d: JsonObject) -> KeyGroup:
        return cls(
            id=d["id"],
            description=d.get("description") or "",
            policy_id=d["policy_id"],
            agent_ids=_strs(d.get("agent_ids")),
            created_at=parse_time(d["created_at"]),
            updated_at=parse_time(d["updated_at"]),
        )


@dataclass(frozen=True)
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

    @classmethod
    def from_json(cls, d: JsonObject) -> Agent:
        return cls(
            id=d["id"],
            description=d.get("description") or "",
            site_id=d["site_id"],
            default_key_group_id=d["default_key_group_id"],
            enabled=bool(d["enabled"]),
            enrolled=bool(d["enrolled"]),
            enrollment_pending=bool(d["enrollment_pending"]),
            created_at=parse_time(d["created_at"]),
            updated_at=parse_time(d["updated_at"]),
            last_contact_at=maybe_time(d.get("last_contact_at")),
            certificate_expires_at=maybe_time(d.get("certificate_expires_at")),
            keys_served_7d=int(d.get("keys_served_7d") or 0),
        )


@dataclass(frozen=True)
class DataUnit:
    """A tape cartridge or other unit an agent encrypts; `id` is its volser or external ID."""

    id: str
    description: str
    state: str
    key_count: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_json(cls, d: JsonObject) -> DataUnit:
        return cls(
            id=d["id"],
            description=d.get("description") or "",
            state=d["state"],
            key_count=int(d["key_count"]),
            created_at=parse_time(d["created_at"]),
            updated_at=parse_time(d["updated_at"]),
        )


@dataclass(frozen=True)
class HeldBackup:
    """A live database backup that still holds a destroyed key: deleting it (and any other one
    listed) completes the key's destruction."""

    id: str
    created_at: datetime

    @classmethod
    def from_json(cls, d: JsonObject) -> HeldBackup:
        return cls(id=d["id"], created_at=parse_time(d["created_at"]))


@dataclass(frozen=True)
class KmipAttribute:
    """An attribute a KMIP client set on a key, as text."""

    name: str
    value: str


@dataclass(frozen=True)
class Key:
    """A key's metadata; key material never leaves the KMA through this API."""

    id: str
    key_group_id: str | None
    data_unit_id: str | None
    kma_id: str
    algorithm: str
    state: str
    compromised: bool
    created_at: datetime
    activated_at: datetime | None
    protect_until: datetime | None
    deactivate_at: datetime | None
    destroyed_at: datetime | None
    destroy_comment: str | None
    agent_id: str | None = None  # the agent the key was issued to, if an agent asked for it
    compromised_at: datetime | None = None
    # False while a database backup still holds a destroyed key ("destroyed, incomplete"); those
    # backups are named in a key's details. None when the key is not destroyed.
    destruction_complete: bool | None = None
    held_by_backups: tuple[HeldBackup, ...] = ()
    name: str | None = None  # the Name a KMIP client gave it
    kmip_attributes: tuple[KmipAttribute, ...] = ()  # in a key's details: what KMIP clients set

    @classmethod
    def from_json(cls, d: JsonObject) -> Key:
        return cls(
            id=d["id"],
            key_group_id=d.get("key_group_id"),
            data_unit_id=d.get("data_unit_id"),
            kma_id=d["kma_id"],
            algorithm=d["algorithm"],
            state=d["state"],
            compromised=bool(d["compromised"]),
            created_at=parse_time(d["created_at"]),
            activated_at=maybe_time(d.get("activated_at")),
            protect_until=maybe_time(d.get("protect_until")),
            deactivate_at=maybe_time(d.get("deactivate_at")),
            destroyed_at=maybe_time(d.get("destroyed_at")),
            destroy_comment=d.get("destroy_comment"),
            agent_id=d.get("agent_id"),
            compromised_at=maybe_time(d.get("compromised_at")),
            destruction_complete=_opt_bool(d.get("destruction_complete")),
            held_by_backups=tuple(HeldBackup.from_json(b) for b in d.get("held_by_backups") or ()),
            name=d.get("name"),
            kmip_attributes=tuple(
                KmipAttribute(a["name"], a["value"]) for a in d.get("kmip_attributes") or ()
            ),
        )


def _opt_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


@dataclass(frozen=True)
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

    @classmethod
    def from_json(cls, d: JsonObject) -> AuditEvent:
        return cls(
            id=int(d["id"]),
            kma_id=d["kma_id"],
            chain_seq=int(d["chain_seq"]),
            created_at=parse_time(d["created_at"]),
            site_id=d["site_id"],
            operation=d["operation"],
            severity=d["severity"],
            condition=d["condition"],
            event_class=d["event_class"],
            entity_id=d["entity_id"],
            entity_address=d["entity_address"],
            message=d["message"],
            retention=d["retention"],
            subject_type=d.get("subject_type"),
            subject_id=d.get("subject_id"),
            hash=d["hash"],
        )


@dataclass(frozen=True)
class Dashboard:
    cluster_name: str
    sites: int
    kmas: tuple[Kma, ...]
    keys_by_state: Mapping[str, int]  # each up to 10,000
    data_units: int
    agents: int
    users: int
    pending_quorum_operations: int
    warnings: tuple[str, ...]
    backups: BackupReadiness | None = None  # None from a KMA before backups existed
    keys_by_state_exact: Mapping[str, bool] = field(default_factory=dict)  # false: more than the count

    @classmethod
    def from_json(cls, d: JsonObject) -> Dashboard:
        return cls(
            cluster_name=d["cluster_name"],
            sites=int(d["sites"]),
            kmas=tuple(Kma.from_json(k) for k in d.get("kmas") or ()),
            keys_by_state={str(k): int(v) for k, v in (d.get("keys_by_state") or {}).items()},
            data_units=int(d["data_units"]),
            agents=int(d["agents"]),
            users=int(d["users"]),
            pending_quorum_operations=int(d["pending_quorum_operations"]),
            keys_by_state_exact={str(k): bool(v) for k, v in (d.get("keys_by_state_exact") or {}).items()},
            warnings=_strs(d.get("warnings")),
            backups=BackupReadiness.from_json(d["backups"]) if d.get("backups") else None,
        )


@dataclass(frozen=True)
class BackupReadiness:
    """The last backup's age; in a one-KMA cluster, how many keys wait for a backup and when the
    Ready keys run out at the recent issue rate (seconds; None when no key was issued lately)."""

    last_backup_at: datetime | None
    last_backup_age: int | None
    one_kma: bool
    keys_waiting_for_backup: int
    ready_keys: int
    keys_issued_recently: int
    ready_keys_run_out_in: int | None
    core_security_backup_up_to_date: bool
    keys_withheld_by_restore: int = 0

    @classmethod
    def from_json(cls, d: JsonObject) -> BackupReadiness:
        age, runs_out = d.get("last_backup_age"), d.get("ready_keys_run_out_in")
        return cls(maybe_time(d.get("last_backup_at")), None if age is None else int(age), bool(d["one_kma"]),
                   int(d["keys_waiting_for_backup"]), int(d["ready_keys"]), int(d["keys_issued_recently"]),
                   None if runs_out is None else int(runs_out),
                   bool(d["core_security_backup_up_to_date"]),
                   int(d.get("keys_withheld_by_restore", 0)))  # fmt: skip


@dataclass(frozen=True)
class ChainReport:
    """Result of checking the audit hash chain; `intact` False means an event was altered."""

    intact: bool
    events_checked: int
    first_bad_event_id: int | None
    reason: str | None
    # The signed checkpoints verification started from, one per pruned or checkpointed chain.
    checkpoints: tuple[CheckpointRef, ...] = ()

    @classmethod
    def from_json(cls, d: JsonObject) -> ChainReport:
        bad = d.get("first_bad_event_id")
        return cls(
            intact=bool(d["intact"]),
            events_checked=int(d["events_checked"]),
            first_bad_event_id=None if bad is None else int(bad),
            reason=d.get("reason"),
            checkpoints=tuple(CheckpointRef.from_json(c) for c in d.get("checkpoints") or ()),
        )


@dataclass(frozen=True)
class CheckpointRef:
    """A signed checkpoint: KMA `kma_id`'s chain up to `chain_seq`, signed at `created_at`."""

    id: int
    kma_id: str
    chain_seq: int
    created_at: datetime

    @classmethod
    def from_json(cls, d: JsonObject) -> CheckpointRef:
        return cls(int(d["id"]), d["kma_id"], int(d["chain_seq"]), parse_time(d["created_at"]))


@dataclass(frozen=True)
class EnrollmentPassphrase:
    """A one-time agent enrollment passphrase, shown once; left out of `repr`."""

    agent_id: str
    passphrase: str = field(repr=False)

    @classmethod
    def from_json(cls, d: JsonObject) -> EnrollmentPassphrase:
        return cls(agent_id=d["agent_id"], passphrase=d["passphrase"])


@dataclass(frozen=True)
class CaInfo:
    """The cluster CA as the KMA describes it (`GET /ca`); not yet checked by this client."""

    ca_pem: str
    fingerprint: str

    @classmethod
    def from_json(cls, d: JsonObject) -> CaInfo:
        return cls(ca_pem=d["ca_pem"], fingerprint=d["fingerprint"])


# -- quorum ---------------------------------------------------------------------------------------

QUORUM_OP_STATES = ("pending", "executed", "expired", "deleted", "failed")
QUORUM_OP_TYPES = (
    "create_user",
    "update_user",
    "set_user_passphrase",
    "unlock_kma",
    "set_autonomous_unlock",
    "change_key_split",
    "shorten_audit_retention",
    "add_kma",
    "set_kma_passphrase",
    "remove_kma",
    "raise_cluster_version",
)


@dataclass(frozen=True)
class Credential:
    """One key split member's credential sent with a quorum-protected request; never logged."""

    member: str
    passphrase: str = field(repr=False)

    def to_json(self) -> dict[str, str]:
        return {"member": self.member, "passphrase": self.passphrase}


@dataclass(frozen=True)
class QuorumApproval:
    member: str  # the key split member
    approved_by: str  # the signed-in user who entered the member's passphrase
    approved_at: datetime

    @classmethod
    def from_json(cls, d: JsonObject) -> QuorumApproval:
        return cls(
            member=d["member"],
            approved_by=d["approved_by"],
            approved_at=parse_time(d["approved_at"]),
        )


@dataclass(frozen=True)
class MemberEnrolment:
    """A new member of a pending key split change, and whether they have set their passphrase."""

    member: str
    enrolled_at: datetime | None
    enrolled_from: str | None

    @property
    def enrolled(self) -> bool:
        return self.enrolled_at is not None

    @classmethod
    def from_json(cls, d: JsonObject) -> MemberEnrolment:
        return cls(d["member"], maybe_time(d.get("enrolled_at")), d.get("enrolled_from"))


@dataclass(frozen=True)
class PendingQuorumOp:
    """A quorum-protected request waiting for (or done with) approvals by key split members.

    `request` is the canonical request exactly as it will run; secrets in it are replaced by a note.
    """

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
    result: str | None
    enrolment: tuple[MemberEnrolment, ...] = ()  # key split changes: the new members

    @property
    def pending(self) -> bool:
        return self.state == "pending"

    @property
    def awaiting_enrolment(self) -> tuple[str, ...]:
        """New key split members who have not set their passphrase yet."""
        return tuple(e.member for e in self.enrolment if not e.enrolled)

    @classmethod
    def from_json(cls, d: JsonObject) -> PendingQuorumOp:
        return cls(
            id=d["id"],
            type=d["type"],
            summary=d["summary"],
            request=dict(d.get("request") or {}),
            requested_by=d["requested_by"],
            submitted_at=parse_time(d["submitted_at"]),
            updated_at=parse_time(d["updated_at"]),
            expires_at=parse_time(d["expires_at"]),
            state=d["state"],
            approvals_needed=int(d["approvals_needed"]),
            approvals=tuple(QuorumApproval.from_json(a) for a in d.get("approvals") or ()),
            result=d.get("result"),
            enrolment=tuple(MemberEnrolment.from_json(e) for e in d.get("enrolment") or ()),
        )


@dataclass(frozen=True)
class KeySplitChange:
    """A key split change just submitted: the pending operation, and each new member's one-time
    enrolment code (shown this once; pass each to its member, who sets their own passphrase)."""

    op: PendingQuorumOp
    enrolment_codes: Mapping[str, str]

    @classmethod
    def from_json(cls, d: JsonObject) -> KeySplitChange:
        return cls(PendingQuorumOp.from_json(d), dict(d["enrolment_codes"]))


@dataclass(frozen=True)
class KeySplit:
    """The key split configuration: M of N member names (never their shares or passphrases)."""

    threshold: int
    members: tuple[str, ...]
    generation: int
    operation_lifetime: int  # seconds a pending quorum operation waits before it expires

    @classmethod
    def from_json(cls, d: JsonObject) -> KeySplit:
        return cls(
            threshold=int(d["threshold"]),
            members=_strs(d["members"]),
            generation=int(d["generation"]),
            operation_lifetime=int(d["operation_lifetime"]),
        )


@dataclass(frozen=True)
class AutonomousUnlock:
    kma_id: str
    enabled: bool

    @classmethod
    def from_json(cls, d: JsonObject) -> AutonomousUnlock:
        return cls(kma_id=d["kma_id"], enabled=bool(d["enabled"]))
