"""The KMA management API's calls, one method per operation, named as the route's function;
GENERATED from the OpenAPI document the KMA serves by scripts/generate-client-models.py: do not
edit; change kma/api's routes and run the script.

`KmsClient` (client.py) is a `Calls` with a connection; it adds only what the document cannot say
(failover, paging iterators, downloads with progress, answers composed on the client).
Threading: as `KmsClient`'s (one thread at a time, never the GUI thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._http import Credentials, Order, credentials_body, present, query, segment
from .connection import Connection
from .reader import Page, reader
from .wire import (
    About,
    Agent,
    AlertChannel,
    AlertChannels,
    AlertTestResult,
    AuditCheckpoint,
    AuditEvent,
    AuditFacets,
    AuditForwarding,
    AuditReport,
    AutonomousUnlock,
    Backup,
    BackupMade,
    Backups,
    BackupSchedule,
    CaInfo,
    ChainReport,
    ChainVerification,
    CoreSecurityBackupStatus,
    Dashboard,
    DataUnit,
    DirectorySettings,
    EnrollmentPassphrase,
    EnrollmentPassphrases,
    EnrolmentCodes,
    History,
    Key,
    KeyGroup,
    KeyPolicy,
    KeySplit,
    Kma,
    MasterKeyState,
    MediaPool,
    MediaPoolMigration,
    MediaRefusals,
    MediaSettings,
    PendingQuorumOp,
    PruneResult,
    ReportSchedule,
    Retention,
    SecondFactorEnrolment,
    SecondFactorPolicy,
    Series,
    Session,
    SignedReport,
    Site,
    Status,
    TapeMovedBetweenPools,
    TapeToRelabel,
    Topology,
    TransferExport,
    TransferIdentity,
    TransferImport,
    TransferJob,
    TransferPartner,
    UpgradeCheck,
    User,
)


class Calls:
    """The generated calls; a subclass gives `_connection`."""

    _connection: Connection

    def get_status(self) -> Status:
        """`GET /api/v1/status`."""
        return self._connection.call("GET", "/status", reader(Status), auth=False)

    def get_about(self) -> About:
        """What this KMA offers, before sign-in and locked or not: a manager of another release hides
        what it lacks."""
        return self._connection.call("GET", "/about", reader(About), auth=False)

    def get_ca(self) -> CaInfo:
        """`GET /api/v1/ca`."""
        return self._connection.call("GET", "/ca", reader(CaInfo), auth=False)

    def get_dashboard(self) -> Dashboard:
        """`GET /api/v1/dashboard`."""
        return self._connection.call("GET", "/dashboard", reader(Dashboard))

    def sign_in(self, user_id: str, passphrase: str, code: str | None = None) -> Session:
        """`POST /api/v1/auth/sign-in`."""
        return self._connection.call(
            "POST",
            "/auth/sign-in",
            reader(Session),
            body=present(user_id=user_id, passphrase=passphrase, code=code),
            auth=False,
        )

    def sign_out(self) -> None:
        """`POST /api/v1/auth/sign-out`."""
        self._connection.request("POST", "/auth/sign-out")

    def get_me(self) -> User:
        """`GET /api/v1/auth/me`."""
        return self._connection.call("GET", "/auth/me", reader(User))

    def enrol_second_factor(self) -> SecondFactorEnrolment:
        """`POST /api/v1/auth/second-factor`."""
        return self._connection.call("POST", "/auth/second-factor", reader(SecondFactorEnrolment))

    def confirm_second_factor(self, code: str) -> None:
        """`POST /api/v1/auth/second-factor/confirm`."""
        self._connection.request("POST", "/auth/second-factor/confirm", body=present(code=code))

    def get_second_factor_policy(self) -> SecondFactorPolicy:
        """`GET /api/v1/auth/second-factor/policy`."""
        return self._connection.call("GET", "/auth/second-factor/policy", reader(SecondFactorPolicy))

    def set_second_factor_policy(
        self, roles: Iterable[str], *, credentials: Credentials | None = None
    ) -> SecondFactorPolicy | PendingQuorumOp:
        """`PUT /api/v1/auth/second-factor/policy`."""
        return self._connection.call_or_pending(
            "PUT",
            "/auth/second-factor/policy",
            reader(SecondFactorPolicy),
            present(roles=list(roles), credentials=credentials_body(credentials)),
        )

    def list_sites(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[Site]:
        """`GET /api/v1/sites`."""
        return self._connection.list(
            "/sites",
            Site,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def create_site(self, id: str, name: str, description: str | None = None) -> Site:
        """`POST /api/v1/sites`."""
        return self._connection.call(
            "POST", "/sites", reader(Site), body=present(id=id, name=name, description=description)
        )

    def get_site(self, site_id: str) -> Site:
        """`GET /api/v1/sites/{site_id}`."""
        return self._connection.call("GET", f"/sites/{segment(site_id)}", reader(Site))

    def update_site(self, site_id: str, name: str | None = None, description: str | None = None) -> Site:
        """`PATCH /api/v1/sites/{site_id}`."""
        return self._connection.call(
            "PATCH",
            f"/sites/{segment(site_id)}",
            reader(Site),
            body=present(name=name, description=description),
        )

    def delete_site(self, site_id: str) -> None:
        """`DELETE /api/v1/sites/{site_id}`."""
        self._connection.request("DELETE", f"/sites/{segment(site_id)}")

    def list_kmas(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[Kma]:
        """`GET /api/v1/kmas`."""
        return self._connection.list(
            "/kmas",
            Kma,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def get_kma(self, kma_id: str) -> Kma:
        """`GET /api/v1/kmas/{kma_id}`."""
        return self._connection.call("GET", f"/kmas/{segment(kma_id)}", reader(Kma))

    def update_kma(
        self,
        kma_id: str,
        name: str | None = None,
        site_id: str | None = None,
        key_pool_size: int | None = None,
    ) -> Kma:
        """`PATCH /api/v1/kmas/{kma_id}`."""
        return self._connection.call(
            "PATCH",
            f"/kmas/{segment(kma_id)}",
            reader(Kma),
            body=present(name=name, site_id=site_id, key_pool_size=key_pool_size),
        )

    def renew_kma_certificate(self, kma_id: str) -> Kma:
        """A new listener certificate for that KMA now: made at once if it is the KMA answering, else
        by that KMA within a second or so (it holds the key). For a witness: a new node certificate,
        which it asks for and an unlocked KMA signs, trusted by every node before the witness moves
        to it."""
        return self._connection.call("POST", f"/kmas/{segment(kma_id)}/certificate/renew", reader(Kma))

    def lock_kma(self, kma_id: str) -> Kma:
        """`POST /api/v1/kmas/{kma_id}/lock`."""
        return self._connection.call("POST", f"/kmas/{segment(kma_id)}/lock", reader(Kma))

    def unlock_kma(self, kma_id: str, *, credentials: Credentials | None = None) -> Kma | PendingQuorumOp:
        """`POST /api/v1/kmas/{kma_id}/unlock`."""
        return self._connection.call_or_pending(
            "POST",
            f"/kmas/{segment(kma_id)}/unlock",
            reader(Kma),
            present(credentials=credentials_body(credentials)),
        )

    def list_users(
        self,
        *,
        role: str | None = None,
        enabled: bool | None = None,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[User]:
        """`GET /api/v1/users`."""
        return self._connection.list(
            "/users",
            User,
            query(
                {
                    "role": role,
                    "enabled": enabled,
                    "limit": limit,
                    "cursor": cursor,
                    "search": search,
                    "sort": sort,
                    "order": order,
                }
            ),
        )

    def create_user(
        self,
        id: str,
        name: str,
        roles: Iterable[str],
        passphrase: str,
        *,
        credentials: Credentials | None = None,
    ) -> User | PendingQuorumOp:
        """`POST /api/v1/users`."""
        return self._connection.call_or_pending(
            "POST",
            "/users",
            reader(User),
            present(
                id=id,
                name=name,
                roles=list(roles),
                passphrase=passphrase,
                credentials=credentials_body(credentials),
            ),
        )

    def get_user(self, user_id: str) -> User:
        """`GET /api/v1/users/{user_id}`."""
        return self._connection.call("GET", f"/users/{segment(user_id)}", reader(User))

    def update_user(
        self,
        user_id: str,
        name: str | None = None,
        roles: Iterable[str] | None = None,
        enabled: bool | None = None,
        *,
        credentials: Credentials | None = None,
    ) -> User | PendingQuorumOp:
        """`PATCH /api/v1/users/{user_id}`."""
        return self._connection.call_or_pending(
            "PATCH",
            f"/users/{segment(user_id)}",
            reader(User),
            present(
                credentials=credentials_body(credentials),
                name=name,
                roles=None if roles is None else list(roles),
                enabled=enabled,
            ),
        )

    def set_user_passphrase(
        self, user_id: str, passphrase: str, *, credentials: Credentials | None = None
    ) -> PendingQuorumOp | None:
        """`PUT /api/v1/users/{user_id}/passphrase`."""
        return self._connection.call_or_pending(
            "PUT",
            f"/users/{segment(user_id)}/passphrase",
            lambda _: None,
            present(passphrase=passphrase, credentials=credentials_body(credentials)),
        )

    def turn_off_second_factor(
        self, user_id: str, *, credentials: Credentials | None = None
    ) -> PendingQuorumOp | None:
        """For a user who lost their authenticator and their recovery codes: they sign in with their
        passphrase alone again, and may enrol anew."""
        return self._connection.call_or_pending(
            "DELETE",
            f"/users/{segment(user_id)}/second-factor",
            lambda _: None,
            present(credentials=credentials_body(credentials)),
        )

    def list_key_policies(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[KeyPolicy]:
        """`GET /api/v1/key-policies`."""
        return self._connection.list(
            "/key-policies",
            KeyPolicy,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def create_key_policy(
        self,
        id: str,
        encryption_period: int,
        cryptoperiod: int,
        description: str | None = None,
        allow_export: bool | None = None,
        allow_import: bool | None = None,
        import_needs_quorum: bool | None = None,
        agents_may_revoke: bool | None = None,
        general_keys: bool | None = None,
        rotation_period: int | None = None,
    ) -> KeyPolicy:
        """`POST /api/v1/key-policies`."""
        return self._connection.call(
            "POST",
            "/key-policies",
            reader(KeyPolicy),
            body=present(
                id=id,
                encryption_period=encryption_period,
                cryptoperiod=cryptoperiod,
                description=description,
                allow_export=allow_export,
                allow_import=allow_import,
                import_needs_quorum=import_needs_quorum,
                agents_may_revoke=agents_may_revoke,
                general_keys=general_keys,
                rotation_period=rotation_period,
            ),
        )

    def get_key_policy(self, policy_id: str) -> KeyPolicy:
        """`GET /api/v1/key-policies/{policy_id}`."""
        return self._connection.call("GET", f"/key-policies/{segment(policy_id)}", reader(KeyPolicy))

    def update_key_policy(
        self,
        policy_id: str,
        description: str | None = None,
        allow_export: bool | None = None,
        allow_import: bool | None = None,
        import_needs_quorum: bool | None = None,
        agents_may_revoke: bool | None = None,
        general_keys: bool | None = None,
        encryption_period: int | None = None,
        cryptoperiod: int | None = None,
    ) -> KeyPolicy:
        """`PATCH /api/v1/key-policies/{policy_id}`."""
        return self._connection.call(
            "PATCH",
            f"/key-policies/{segment(policy_id)}",
            reader(KeyPolicy),
            body=present(
                description=description,
                allow_export=allow_export,
                allow_import=allow_import,
                import_needs_quorum=import_needs_quorum,
                agents_may_revoke=agents_may_revoke,
                general_keys=general_keys,
                encryption_period=encryption_period,
                cryptoperiod=cryptoperiod,
            ),
        )

    def list_key_groups(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[KeyGroup]:
        """`GET /api/v1/key-groups`."""
        return self._connection.list(
            "/key-groups",
            KeyGroup,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def create_key_group(self, id: str, policy_id: str, description: str | None = None) -> KeyGroup:
        """`POST /api/v1/key-groups`."""
        return self._connection.call(
            "POST",
            "/key-groups",
            reader(KeyGroup),
            body=present(id=id, policy_id=policy_id, description=description),
        )

    def get_key_group(self, group_id: str) -> KeyGroup:
        """`GET /api/v1/key-groups/{group_id}`."""
        return self._connection.call("GET", f"/key-groups/{segment(group_id)}", reader(KeyGroup))

    def update_key_group(self, group_id: str, description: str | None = None) -> KeyGroup:
        """`PATCH /api/v1/key-groups/{group_id}`."""
        return self._connection.call(
            "PATCH",
            f"/key-groups/{segment(group_id)}",
            reader(KeyGroup),
            body=present(description=description),
        )

    def set_key_group_agents(self, group_id: str, agent_ids: Iterable[str]) -> KeyGroup:
        """`PUT /api/v1/key-groups/{group_id}/agents`."""
        return self._connection.call(
            "PUT",
            f"/key-groups/{segment(group_id)}/agents",
            reader(KeyGroup),
            body=present(agent_ids=list(agent_ids)),
        )

    def list_agents(
        self,
        *,
        site_id: str | None = None,
        enabled: bool | None = None,
        key_group_id: str | None = None,
        drive_generation: str | None = None,
        library: str | None = None,
        expires_within_days: int | None = None,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[Agent]:
        """`expires_within_days`: only agents whose certificate expires within that many days (or has
        expired): those to renew or give a new enrollment passphrase."""
        return self._connection.list(
            "/agents",
            Agent,
            query(
                {
                    "site_id": site_id,
                    "enabled": enabled,
                    "key_group_id": key_group_id,
                    "drive_generation": drive_generation,
                    "library": library,
                    "expires_within_days": expires_within_days,
                    "limit": limit,
                    "cursor": cursor,
                    "search": search,
                    "sort": sort,
                    "order": order,
                }
            ),
        )

    def create_agent(
        self,
        id: str,
        site_id: str,
        default_key_group_id: str,
        description: str | None = None,
        drive_model: str | None = None,
        drive_generation: str | None = None,
        library: str | None = None,
        library_partition: str | None = None,
    ) -> Agent:
        """`POST /api/v1/agents`."""
        return self._connection.call(
            "POST",
            "/agents",
            reader(Agent),
            body=present(
                id=id,
                site_id=site_id,
                default_key_group_id=default_key_group_id,
                description=description,
                drive_model=drive_model,
                drive_generation=drive_generation,
                library=library,
                library_partition=library_partition,
            ),
        )

    def get_agent(self, agent_id: str) -> Agent:
        """`GET /api/v1/agents/{agent_id}`."""
        return self._connection.call("GET", f"/agents/{segment(agent_id)}", reader(Agent))

    def update_agent(
        self,
        agent_id: str,
        description: str | None = None,
        site_id: str | None = None,
        default_key_group_id: str | None = None,
        enabled: bool | None = None,
        drive_model: str | None = None,
        drive_generation: str | None = None,
        library: str | None = None,
        library_partition: str | None = None,
    ) -> Agent:
        """`PATCH /api/v1/agents/{agent_id}`."""
        return self._connection.call(
            "PATCH",
            f"/agents/{segment(agent_id)}",
            reader(Agent),
            body=present(
                description=description,
                site_id=site_id,
                default_key_group_id=default_key_group_id,
                enabled=enabled,
                drive_model=drive_model,
                drive_generation=drive_generation,
                library=library,
                library_partition=library_partition,
            ),
        )

    def new_enrollment_passphrases(self, agent_ids: Iterable[str]) -> EnrollmentPassphrases:
        """A new one-time passphrase for each agent listed (at most 100 a request): for drives whose
        certificate an operator installs, before it expires. Each replaces the agent's earlier one."""
        return self._connection.call(
            "POST",
            "/agents/enrollment-passphrases",
            reader(EnrollmentPassphrases),
            body=present(agent_ids=list(agent_ids)),
        )

    def new_enrollment_passphrase(self, agent_id: str) -> EnrollmentPassphrase:
        """`POST /api/v1/agents/{agent_id}/enrollment-passphrase`."""
        return self._connection.call(
            "POST", f"/agents/{segment(agent_id)}/enrollment-passphrase", reader(EnrollmentPassphrase)
        )

    def list_data_units(
        self,
        *,
        state: str | None = None,
        pool_id: str | None = None,
        writer_generation: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[DataUnit]:
        """`pool_id`: the tapes of a media pool; `writer_generation`: those a drive generation wrote."""
        return self._connection.list(
            "/data-units",
            DataUnit,
            query(
                {
                    "state": state,
                    "pool_id": pool_id,
                    "writer_generation": writer_generation,
                    "limit": limit,
                    "cursor": cursor,
                    "search": search,
                    "sort": sort,
                    "order": order,
                }
            ),
        )

    def create_data_unit(self, id: str, description: str | None = None) -> DataUnit:
        """`POST /api/v1/data-units`."""
        return self._connection.call(
            "POST", "/data-units", reader(DataUnit), body=present(id=id, description=description)
        )

    def get_data_unit(self, unit_id: str) -> DataUnit:
        """`GET /api/v1/data-units/{unit_id}`."""
        return self._connection.call("GET", f"/data-units/{segment(unit_id)}", reader(DataUnit))

    def update_data_unit(self, unit_id: str, description: str | None = None) -> DataUnit:
        """`PATCH /api/v1/data-units/{unit_id}`."""
        return self._connection.call(
            "PATCH",
            f"/data-units/{segment(unit_id)}",
            reader(DataUnit),
            body=present(description=description),
        )

    def list_keys(
        self,
        *,
        state: str | None = None,
        key_group_id: str | None = None,
        data_unit_id: str | None = None,
        agent_id: str | None = None,
        compromised: bool | None = None,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[Key]:
        """`GET /api/v1/keys`."""
        return self._connection.list(
            "/keys",
            Key,
            query(
                {
                    "state": state,
                    "key_group_id": key_group_id,
                    "data_unit_id": data_unit_id,
                    "agent_id": agent_id,
                    "compromised": compromised,
                    "limit": limit,
                    "cursor": cursor,
                    "search": search,
                    "sort": sort,
                    "order": order,
                }
            ),
        )

    def issue_key(self, key_group_id: str, data_unit_id: str) -> Key:
        """`POST /api/v1/keys`."""
        return self._connection.call(
            "POST", "/keys", reader(Key), body=present(key_group_id=key_group_id, data_unit_id=data_unit_id)
        )

    def get_key(self, key_id: str) -> Key:
        """`GET /api/v1/keys/{key_id}`."""
        return self._connection.call("GET", f"/keys/{segment(key_id)}", reader(Key))

    def compromise_key(self, key_id: str, comment: str) -> Key:
        """`POST /api/v1/keys/{key_id}/compromise`."""
        return self._connection.call(
            "POST", f"/keys/{segment(key_id)}/compromise", reader(Key), body=present(comment=comment)
        )

    def destroy_key(self, key_id: str, comment: str) -> Key:
        """`POST /api/v1/keys/{key_id}/destroy`."""
        return self._connection.call(
            "POST", f"/keys/{segment(key_id)}/destroy", reader(Key), body=present(comment=comment)
        )

    def list_audit_events(
        self,
        *,
        operation: str | None = None,
        severity: str | None = None,
        condition: str | None = None,
        event_class: str | None = None,
        entity_id: str | None = None,
        kma_id: str | None = None,
        site_id: str | None = None,
        subject_type: str | None = None,
        subject_id: str | None = None,
        retention: str | None = None,
        since: str | None = None,
        until: str | None = None,
        after_id: int | None = None,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[AuditEvent]:
        """`GET /api/v1/audit-events`."""
        return self._connection.list(
            "/audit-events",
            AuditEvent,
            query(
                {
                    "operation": operation,
                    "severity": severity,
                    "condition": condition,
                    "event_class": event_class,
                    "entity_id": entity_id,
                    "kma_id": kma_id,
                    "site_id": site_id,
                    "subject_type": subject_type,
                    "subject_id": subject_id,
                    "retention": retention,
                    "since": since,
                    "until": until,
                    "after_id": after_id,
                    "limit": limit,
                    "cursor": cursor,
                    "search": search,
                    "sort": sort,
                    "order": order,
                }
            ),
        )

    def verify_audit_chain(self) -> ChainReport:
        """The report of a verification that ends within 10 s (a small trail: at once); else 503
        `verification_running`. For clients older than POST/GET /audit-events/verification."""
        return self._connection.call("GET", "/audit-events/verify", reader(ChainReport))

    def get_audit_verification(self) -> ChainVerification:
        """The running verification's progress, or the last one's result."""
        return self._connection.call("GET", "/audit-events/verification", reader(ChainVerification))

    def start_audit_verification(self) -> ChainVerification:
        """Start verifying the chain in the background, or join the verification running."""
        return self._connection.call("POST", "/audit-events/verification", reader(ChainVerification))

    def get_audit_facets(self) -> AuditFacets:
        """`GET /api/v1/audit-events/facets`."""
        return self._connection.call("GET", "/audit-events/facets", reader(AuditFacets))

    def get_audit_report(
        self,
        operation: str | None = None,
        severity: str | None = None,
        condition: str | None = None,
        event_class: str | None = None,
        entity_id: str | None = None,
        kma_id: str | None = None,
        site_id: str | None = None,
        subject_type: str | None = None,
        subject_id: str | None = None,
        retention: str | None = None,
        since: str | None = None,
        until: str | None = None,
        after_id: int | None = None,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> AuditReport:
        """`GET /api/v1/audit-events/report`."""
        return self._connection.call(
            "GET",
            "/audit-events/report",
            reader(AuditReport),
            params=query(
                {
                    "operation": operation,
                    "severity": severity,
                    "condition": condition,
                    "event_class": event_class,
                    "entity_id": entity_id,
                    "kma_id": kma_id,
                    "site_id": site_id,
                    "subject_type": subject_type,
                    "subject_id": subject_id,
                    "retention": retention,
                    "since": since,
                    "until": until,
                    "after_id": after_id,
                    "limit": limit,
                    "cursor": cursor,
                    "search": search,
                    "sort": sort,
                    "order": order,
                }
            ),
        )

    def list_audit_checkpoints(self) -> list[AuditCheckpoint]:
        """`GET /api/v1/audit-events/checkpoints`."""
        return self._connection.call("GET", "/audit-events/checkpoints", reader(list[AuditCheckpoint]))

    def create_audit_checkpoint(self) -> list[AuditCheckpoint]:
        """`POST /api/v1/audit-events/checkpoints`."""
        return self._connection.call("POST", "/audit-events/checkpoints", reader(list[AuditCheckpoint]))

    def get_audit_retention(self) -> Retention:
        """`GET /api/v1/audit-events/retention`."""
        return self._connection.call("GET", "/audit-events/retention", reader(Retention))

    def set_audit_retention(
        self,
        long: int | None = None,
        medium: int | None = None,
        short: int | None = None,
        auto_prune: bool | None = None,
        *,
        credentials: Credentials | None = None,
    ) -> Retention | PendingQuorumOp:
        """Lengthening runs at once; shortening any period is quorum-protected (it lets pruning remove
        history): with M key split credentials it runs, with fewer it answers 202 pending."""
        return self._connection.call_or_pending(
            "PATCH",
            "/audit-events/retention",
            reader(Retention),
            present(
                credentials=credentials_body(credentials),
                long=long,
                medium=medium,
                short=short,
                auto_prune=auto_prune,
            ),
        )

    def prune_audit_events(self) -> PruneResult:
        """`POST /api/v1/audit-events/prune`."""
        return self._connection.call("POST", "/audit-events/prune", reader(PruneResult))

    def key_history(self, key_id: str) -> History:
        """`GET /api/v1/keys/{key_id}/history`."""
        return self._connection.call("GET", f"/keys/{segment(key_id)}/history", reader(History))

    def data_unit_history(self, unit_id: str) -> History:
        """`GET /api/v1/data-units/{unit_id}/history`."""
        return self._connection.call("GET", f"/data-units/{segment(unit_id)}/history", reader(History))

    def agent_history(self, agent_id: str) -> History:
        """`GET /api/v1/agents/{agent_id}/history`."""
        return self._connection.call("GET", f"/agents/{segment(agent_id)}/history", reader(History))

    def get_dashboard_series(self, days: int = 30) -> Series:
        """`GET /api/v1/dashboard/series`."""
        return self._connection.call("GET", "/dashboard/series", reader(Series), params=query({"days": days}))

    def list_quorum_operations(
        self,
        *,
        state: str | None = None,
        type: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[PendingQuorumOp]:
        """`GET /api/v1/quorum-operations`."""
        return self._connection.list(
            "/quorum-operations",
            PendingQuorumOp,
            query(
                {
                    "state": state,
                    "type": type,
                    "limit": limit,
                    "cursor": cursor,
                    "search": search,
                    "sort": sort,
                    "order": order,
                }
            ),
        )

    def get_quorum_operation(self, op_id: str) -> PendingQuorumOp:
        """`GET /api/v1/quorum-operations/{op_id}`."""
        return self._connection.call("GET", f"/quorum-operations/{segment(op_id)}", reader(PendingQuorumOp))

    def delete_quorum_operation(self, op_id: str) -> None:
        """`DELETE /api/v1/quorum-operations/{op_id}`."""
        self._connection.request("DELETE", f"/quorum-operations/{segment(op_id)}")

    def approve_quorum_operation(self, op_id: str, member: str, passphrase: str) -> PendingQuorumOp:
        """`POST /api/v1/quorum-operations/{op_id}/approve`."""
        return self._connection.call(
            "POST",
            f"/quorum-operations/{segment(op_id)}/approve",
            reader(PendingQuorumOp),
            body=present(member=member, passphrase=passphrase),
        )

    def get_key_split(self) -> KeySplit:
        """`GET /api/v1/cluster/key-split`."""
        return self._connection.call("GET", "/cluster/key-split", reader(KeySplit))

    def enrol_key_split_member(self, op_id: str, member: str, code: str, passphrase: str) -> PendingQuorumOp:
        """A new key split member sets their own passphrase; their one-time code authenticates them."""
        return self._connection.call(
            "POST",
            f"/quorum-operations/{segment(op_id)}/enrol",
            reader(PendingQuorumOp),
            body=present(member=member, code=code, passphrase=passphrase),
            auth=False,
        )

    def new_enrolment_codes(self, op_id: str) -> EnrolmentCodes:
        """Resume an interrupted ceremony: new codes for the members still to enrol (earlier ones
        stop)."""
        return self._connection.call(
            "POST", f"/quorum-operations/{segment(op_id)}/enrolment-codes", reader(EnrolmentCodes)
        )

    def set_quorum_lifetime(self, seconds: int) -> KeySplit:
        """`PUT /api/v1/cluster/quorum-lifetime`."""
        return self._connection.call(
            "PUT", "/cluster/quorum-lifetime", reader(KeySplit), body=present(seconds=seconds)
        )

    def get_autonomous_unlock(self) -> AutonomousUnlock:
        """`GET /api/v1/cluster/autonomous-unlock`."""
        return self._connection.call("GET", "/cluster/autonomous-unlock", reader(AutonomousUnlock))

    def set_autonomous_unlock(
        self, enabled: bool, *, credentials: Credentials | None = None
    ) -> AutonomousUnlock | PendingQuorumOp:
        """`PUT /api/v1/cluster/autonomous-unlock`."""
        return self._connection.call_or_pending(
            "PUT",
            "/cluster/autonomous-unlock",
            reader(AutonomousUnlock),
            present(enabled=enabled, credentials=credentials_body(credentials)),
        )

    def remove_kma(self, kma_id: str, *, credentials: Credentials | None = None) -> Kma | PendingQuorumOp:
        """Quorum-protected: the KMA leaves the cluster; its certificates stop working at once."""
        return self._connection.call_or_pending(
            "POST",
            f"/kmas/{segment(kma_id)}/remove",
            reader(Kma),
            present(credentials=credentials_body(credentials)),
        )

    def raise_cluster_version(
        self, version: int, *, credentials: Credentials | None = None
    ) -> PendingQuorumOp:
        """Quorum-protected: raise the cluster version, once every KMA runs a release that supports it
        (refused, naming the KMAs still too old, until then)."""
        return self._connection.call(
            "POST",
            "/cluster/version",
            reader(PendingQuorumOp),
            body=present(version=version, credentials=credentials_body(credentials)),
        )

    def get_master_key(self) -> MasterKeyState:
        """The master key's generation and its rotation (under way, or the last one), with its
        progress."""
        return self._connection.call("GET", "/cluster/master-key", reader(MasterKeyState))

    def rotate_master_key(self, *, credentials: Credentials | None = None) -> PendingQuorumOp:
        """Quorum-protected: a new master key generation; every blob is re-wrapped under it in the
        background (progress: GET /cluster/master-key), then the old generation is destroyed."""
        return self._connection.call(
            "POST",
            "/cluster/master-key/rotation",
            reader(PendingQuorumOp),
            body=present(credentials=credentials_body(credentials)),
        )

    def renew_cluster_ca(self, *, credentials: Credentials | None = None) -> PendingQuorumOp:
        """Quorum-protected: the cluster CA's next certificate now (the same name and key; the cluster
        also renews it by itself `ca_renew_before` its end); every KMA re-issues its certificates
        under it."""
        return self._connection.call(
            "POST",
            "/cluster/ca/renewal",
            reader(PendingQuorumOp),
            body=present(credentials=credentials_body(credentials)),
        )

    def list_backups(self) -> Backups:
        """`GET /api/v1/backups`."""
        return self._connection.call("GET", "/backups", reader(Backups))

    def create_backup(self) -> BackupMade:
        """`POST /api/v1/backups`."""
        return self._connection.call("POST", "/backups", reader(BackupMade))

    def get_backup_schedule(self) -> BackupSchedule:
        """`GET /api/v1/backups/schedule`."""
        return self._connection.call("GET", "/backups/schedule", reader(BackupSchedule))

    def set_backup_schedule(
        self, frequency: str, folder: str | None = None, keep: int | None = None
    ) -> BackupSchedule:
        """`PUT /api/v1/backups/schedule`."""
        return self._connection.call(
            "PUT",
            "/backups/schedule",
            reader(BackupSchedule),
            body=present(frequency=frequency, folder=folder, keep=keep),
        )

    def get_backup(self, backup_id: str) -> Backup:
        """`GET /api/v1/backups/{backup_id}`."""
        return self._connection.call("GET", f"/backups/{segment(backup_id)}", reader(Backup))

    def delete_backup(self, backup_id: str) -> None:
        """`DELETE /api/v1/backups/{backup_id}`."""
        self._connection.request("DELETE", f"/backups/{segment(backup_id)}")

    def core_security_backup_status(self) -> CoreSecurityBackupStatus:
        """`GET /api/v1/core-security-backup`."""
        return self._connection.call("GET", "/core-security-backup", reader(CoreSecurityBackupStatus))

    def get_topology(self) -> Topology:
        """`GET /api/v1/cluster/topology`."""
        return self._connection.call("GET", "/cluster/topology", reader(Topology))

    def get_upgrade_check(self) -> UpgradeCheck:
        """Read-only: whether every KMA responds with an empty outbox and a database backup is recent,
        and the order to upgrade the KMAs in (`kma upgrade check`, the manager's Cluster page)."""
        return self._connection.call("GET", "/cluster/upgrade-check", reader(UpgradeCheck))

    def get_audit_forwarding(self) -> AuditForwarding:
        """`GET /api/v1/audit-forwarding`."""
        return self._connection.call("GET", "/audit-forwarding", reader(AuditForwarding))

    def set_audit_forwarding(self, address: str, ca_pem: str, enabled: bool | None = None) -> AuditForwarding:
        """`PUT /api/v1/audit-forwarding`."""
        return self._connection.call(
            "PUT",
            "/audit-forwarding",
            reader(AuditForwarding),
            body=present(address=address, ca_pem=ca_pem, enabled=enabled),
        )

    def list_alert_channels(self) -> AlertChannels:
        """`GET /api/v1/alert-channels`."""
        return self._connection.call("GET", "/alert-channels", reader(AlertChannels))

    def add_alert_channel(
        self,
        name: str,
        kind: str,
        settings: Mapping[str, Any],
        secrets: Mapping[str, Any] | None = None,
        enabled: bool | None = None,
        warnings: bool | None = None,
        audit_classes: Iterable[str] | None = None,
    ) -> AlertChannel:
        """`POST /api/v1/alert-channels`."""
        return self._connection.call(
            "POST",
            "/alert-channels",
            reader(AlertChannel),
            body=present(
                name=name,
                kind=kind,
                settings=dict(settings),
                secrets=None if secrets is None else dict(secrets),
                enabled=enabled,
                warnings=warnings,
                audit_classes=None if audit_classes is None else list(audit_classes),
            ),
        )

    def change_alert_channel(
        self,
        channel_id: str,
        name: str,
        kind: str,
        settings: Mapping[str, Any],
        secrets: Mapping[str, Any] | None = None,
        enabled: bool | None = None,
        warnings: bool | None = None,
        audit_classes: Iterable[str] | None = None,
    ) -> AlertChannel:
        """`PUT /api/v1/alert-channels/{channel_id}`."""
        return self._connection.call(
            "PUT",
            f"/alert-channels/{segment(channel_id)}",
            reader(AlertChannel),
            body=present(
                name=name,
                kind=kind,
                settings=dict(settings),
                secrets=None if secrets is None else dict(secrets),
                enabled=enabled,
                warnings=warnings,
                audit_classes=None if audit_classes is None else list(audit_classes),
            ),
        )

    def remove_alert_channel(self, channel_id: str) -> None:
        """`DELETE /api/v1/alert-channels/{channel_id}`."""
        self._connection.request("DELETE", f"/alert-channels/{segment(channel_id)}")

    def send_test_alert(self, channel_id: str) -> AlertTestResult:
        """`POST /api/v1/alert-channels/{channel_id}/test`."""
        return self._connection.call(
            "POST", f"/alert-channels/{segment(channel_id)}/test", reader(AlertTestResult)
        )

    def get_transfer_identity(self) -> TransferIdentity:
        """This cluster's identity: the line partners register and the fingerprint to read to them."""
        return self._connection.call("GET", "/transfer-identity", reader(TransferIdentity))

    def list_transfer_partners(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[TransferPartner]:
        """`GET /api/v1/transfer-partners`."""
        return self._connection.list(
            "/transfer-partners",
            TransferPartner,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def register_transfer_partner(
        self,
        id: str,
        name: str,
        identity: str,
        contact: str | None = None,
        fingerprint: str | None = None,
        may_send: bool | None = None,
        may_receive: bool | None = None,
        *,
        credentials: Credentials | None = None,
    ) -> TransferPartner | PendingQuorumOp:
        """Quorum-protected: with M key split credentials the partner is registered at once."""
        return self._connection.call_or_pending(
            "POST",
            "/transfer-partners",
            reader(TransferPartner),
            present(
                id=id,
                name=name,
                identity=identity,
                credentials=credentials_body(credentials),
                contact=contact,
                fingerprint=fingerprint,
                may_send=may_send,
                may_receive=may_receive,
            ),
        )

    def get_transfer_partner(self, partner_id: str) -> TransferPartner:
        """`GET /api/v1/transfer-partners/{partner_id}`."""
        return self._connection.call(
            "GET", f"/transfer-partners/{segment(partner_id)}", reader(TransferPartner)
        )

    def remove_transfer_partner(self, partner_id: str) -> None:
        """`DELETE /api/v1/transfer-partners/{partner_id}`."""
        self._connection.request("DELETE", f"/transfer-partners/{segment(partner_id)}")

    def enable_transfer_partner(self, partner_id: str) -> TransferPartner:
        """`POST /api/v1/transfer-partners/{partner_id}/enable`."""
        return self._connection.call(
            "POST", f"/transfer-partners/{segment(partner_id)}/enable", reader(TransferPartner)
        )

    def disable_transfer_partner(self, partner_id: str) -> TransferPartner:
        """`POST /api/v1/transfer-partners/{partner_id}/disable`."""
        return self._connection.call(
            "POST", f"/transfer-partners/{segment(partner_id)}/disable", reader(TransferPartner)
        )

    def export_transfer_file(
        self,
        partner_id: str,
        volsers: Iterable[str] | None = None,
        volser_from: str | None = None,
        volser_to: str | None = None,
        key_group_id: str | None = None,
        written_from: int | None = None,
        written_to: int | None = None,
        valid_days: int | None = None,
    ) -> TransferExport:
        """The transfer file for a partner with the chosen data units' keys (only those whose policy
        allows export: the others are named), signed by this cluster and wrapped to the partner."""
        return self._connection.call(
            "POST",
            "/transfer-exports",
            reader(TransferExport),
            body=present(
                partner_id=partner_id,
                volsers=None if volsers is None else list(volsers),
                volser_from=volser_from,
                volser_to=volser_to,
                key_group_id=key_group_id,
                written_from=written_from,
                written_to=written_to,
                valid_days=valid_days,
            ),
        )

    def start_transfer_export(
        self,
        partner_id: str,
        volsers: Iterable[str] | None = None,
        volser_from: str | None = None,
        volser_to: str | None = None,
        key_group_id: str | None = None,
        written_from: int | None = None,
        written_to: int | None = None,
        valid_days: int | None = None,
    ) -> TransferJob:
        """The export as a background job: poll `GET /transfer-jobs/{id}` for its progress; the
        finished job holds the answer with the file (`exported`)."""
        return self._connection.call(
            "POST",
            "/transfer-exports/jobs",
            reader(TransferJob),
            body=present(
                partner_id=partner_id,
                volsers=None if volsers is None else list(volsers),
                volser_from=volser_from,
                volser_to=volser_to,
                key_group_id=key_group_id,
                written_from=written_from,
                written_to=written_to,
                valid_days=valid_days,
            ),
        )

    def preview_transfer_import(self, upload_id: str) -> TransferImport:
        """What importing the uploaded file would do (it is checked as for an import); writes nothing
        and leaves the upload for the import."""
        return self._connection.call(
            "POST", "/transfer-imports/preview", reader(TransferImport), body=present(upload_id=upload_id)
        )

    def import_transfer_file(
        self, upload_id: str, key_group_id: str, *, credentials: Credentials | None = None
    ) -> TransferImport | PendingQuorumOp:
        """Imports the uploaded file (the upload is removed then); when the key group's policy has
        `import_needs_quorum`, a quorum operation (202 with it when the credentials that came are
        fewer than M)."""
        return self._connection.call_or_pending(
            "POST",
            "/transfer-imports",
            reader(TransferImport),
            present(
                upload_id=upload_id, key_group_id=key_group_id, credentials=credentials_body(credentials)
            ),
        )

    def start_transfer_import(
        self, upload_id: str, key_group_id: str, *, credentials: Credentials | None = None
    ) -> TransferJob:
        """The import of the uploaded file as a background job: poll `GET /transfer-jobs/{id}` for its
        progress; the finished job holds the answer (`imported`) or, under quorum, the operation
        (`pending_op`). The file is held with the job (the upload is removed; the credentials are
        not held): an interrupted import is resumed from it."""
        return self._connection.call(
            "POST",
            "/transfer-imports/jobs",
            reader(TransferJob),
            body=present(
                upload_id=upload_id, key_group_id=key_group_id, credentials=credentials_body(credentials)
            ),
        )

    def list_transfer_jobs(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[TransferJob]:
        """The transfer jobs the cluster keeps, newest first (a finished one an hour, an interrupted
        one a week): their progress, their answers, and the interrupted imports to resume."""
        return self._connection.list(
            "/transfer-jobs",
            TransferJob,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def get_transfer_job(self, job_id: str) -> TransferJob:
        """A transfer job of the cluster: its progress, then its answer, why it failed, or what
        interrupted it."""
        return self._connection.call("GET", f"/transfer-jobs/{segment(job_id)}", reader(TransferJob))

    def resume_transfer_job(self, job_id: str) -> TransferJob:
        """An interrupted import job, run again on this KMA from the file it holds: what was written is
        skipped, the rest written (an import the quorum approved needs no new approval)."""
        return self._connection.call("POST", f"/transfer-jobs/{segment(job_id)}/resume", reader(TransferJob))

    def get_directory(self) -> DirectorySettings:
        """`GET /api/v1/directory`."""
        return self._connection.call("GET", "/directory", reader(DirectorySettings))

    def set_directory(
        self,
        url: str,
        ca_pem: str,
        bind_format: str,
        search_base: str,
        enabled: bool | None = None,
        start_tls: bool | None = None,
        user_attribute: str | None = None,
        group_attribute: str | None = None,
        name_attribute: str | None = None,
        group_roles: Iterable[Mapping[str, Any]] | None = None,
        *,
        credentials: Credentials | None = None,
    ) -> DirectorySettings | PendingQuorumOp:
        """`PUT /api/v1/directory`."""
        return self._connection.call_or_pending(
            "PUT",
            "/directory",
            reader(DirectorySettings),
            present(
                url=url,
                ca_pem=ca_pem,
                bind_format=bind_format,
                search_base=search_base,
                credentials=credentials_body(credentials),
                enabled=enabled,
                start_tls=start_tls,
                user_attribute=user_attribute,
                group_attribute=group_attribute,
                name_attribute=name_attribute,
                group_roles=None if group_roles is None else [dict(x) for x in group_roles],
            ),
        )

    def get_users_report(self) -> SignedReport:
        """`GET /api/v1/reports/users`."""
        return self._connection.call("GET", "/reports/users", reader(SignedReport))

    def get_media_report(self) -> SignedReport:
        """`GET /api/v1/reports/media`."""
        return self._connection.call("GET", "/reports/media", reader(SignedReport))

    def get_key_inventory_report(self) -> SignedReport:
        """`GET /api/v1/reports/key-inventory`."""
        return self._connection.call("GET", "/reports/key-inventory", reader(SignedReport))

    def get_cryptoperiods_report(self, days: int = 90) -> SignedReport:
        """The keys whose cryptoperiod ends within `days`."""
        return self._connection.call(
            "GET", "/reports/cryptoperiods", reader(SignedReport), params=query({"days": days})
        )

    def get_agents_report(self, silent_days: int = 30, expiring_days: int = 90) -> SignedReport:
        """Agents silent for `silent_days` or more, or whose certificate expires within
        `expiring_days`."""
        return self._connection.call(
            "GET",
            "/reports/agents",
            reader(SignedReport),
            params=query({"silent_days": silent_days, "expiring_days": expiring_days}),
        )

    def get_quorum_operations_report(
        self, since: str | None = None, until: str | None = None
    ) -> SignedReport:
        """Quorum operations carried out from the day `since` to the day `until`, both included (UTC);
        by default the last 90 days, today included."""
        return self._connection.call(
            "GET",
            "/reports/quorum-operations",
            reader(SignedReport),
            params=query({"since": since, "until": until}),
        )

    def get_report_schedule(self) -> ReportSchedule:
        """This KMA's schedule of signed reports (its folder is on this KMA's machine)."""
        return self._connection.call("GET", "/reports/schedule", reader(ReportSchedule))

    def set_report_schedule(
        self,
        frequency: str,
        folder: str | None = None,
        reports: Iterable[str] | None = None,
        email_channel_id: str | None = None,
    ) -> ReportSchedule:
        """`PUT /api/v1/reports/schedule`."""
        return self._connection.call(
            "PUT",
            "/reports/schedule",
            reader(ReportSchedule),
            body=present(
                frequency=frequency,
                folder=folder,
                reports=None if reports is None else list(reports),
                email_channel_id=email_channel_id,
            ),
        )

    def list_media_pools(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[MediaPool]:
        """`GET /api/v1/media-pools`."""
        return self._connection.list(
            "/media-pools",
            MediaPool,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def create_media_pool(
        self,
        id: str,
        pattern: str,
        description: str | None = None,
        key_group_id: str | None = None,
        never_encrypted: bool | None = None,
        read_only: bool | None = None,
    ) -> MediaPool:
        """`POST /api/v1/media-pools`."""
        return self._connection.call(
            "POST",
            "/media-pools",
            reader(MediaPool),
            body=present(
                id=id,
                pattern=pattern,
                description=description,
                key_group_id=key_group_id,
                never_encrypted=never_encrypted,
                read_only=read_only,
            ),
        )

    def get_media_pool(self, pool_id: str) -> MediaPool:
        """`GET /api/v1/media-pools/{pool_id}`."""
        return self._connection.call("GET", f"/media-pools/{segment(pool_id)}", reader(MediaPool))

    def update_media_pool(
        self,
        pool_id: str,
        pattern: str | None = None,
        description: str | None = None,
        key_group_id: str | None = None,
        never_encrypted: bool | None = None,
        read_only: bool | None = None,
    ) -> MediaPool:
        """`PATCH /api/v1/media-pools/{pool_id}`."""
        return self._connection.call(
            "PATCH",
            f"/media-pools/{segment(pool_id)}",
            reader(MediaPool),
            body=present(
                pattern=pattern,
                description=description,
                key_group_id=key_group_id,
                never_encrypted=never_encrypted,
                read_only=read_only,
            ),
        )

    def delete_media_pool(self, pool_id: str) -> None:
        """`DELETE /api/v1/media-pools/{pool_id}`."""
        self._connection.request("DELETE", f"/media-pools/{segment(pool_id)}")

    def get_media_pool_migration(self, pool_id: str) -> MediaPoolMigration:
        """Per drive generation: the pool's tapes it appends to, only reads, or must rewrite from BOT."""
        return self._connection.call(
            "GET", f"/media-pools/{segment(pool_id)}/migration", reader(MediaPoolMigration)
        )

    def get_media_settings(self) -> MediaSettings:
        """`GET /api/v1/media/settings`."""
        return self._connection.call("GET", "/media/settings", reader(MediaSettings))

    def update_media_settings(
        self, unmatched: str | None = None, generation_rule: str | None = None
    ) -> MediaSettings:
        """`PATCH /api/v1/media/settings`."""
        return self._connection.call(
            "PATCH",
            "/media/settings",
            reader(MediaSettings),
            body=present(unmatched=unmatched, generation_rule=generation_rule),
        )

    def get_media_refusals(self) -> MediaRefusals:
        """`GET /api/v1/media/refusals`."""
        return self._connection.call("GET", "/media/refusals", reader(MediaRefusals))

    def list_tapes_to_relabel(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[TapeToRelabel]:
        """Tapes whose keys were all destroyed: to be written from BOT before they are reused."""
        return self._connection.list(
            "/media/relabel",
            TapeToRelabel,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )

    def list_tapes_moved_between_pools(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
    ) -> Page[TapeMovedBetweenPools]:
        """Tapes holding a live key of another key group than their media pool's: written under another
        pool, or the pools were redrawn since."""
        return self._connection.list(
            "/media/moved",
            TapeMovedBetweenPools,
            query({"limit": limit, "cursor": cursor, "search": search, "sort": sort, "order": order}),
        )
