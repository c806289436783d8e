"""`KmsClient`: one method per route of the KMA management API (docs/api.md).

Threading: use a client from one thread at a time (e.g. the GUI's serial worker lane); handing it
from one worker thread to another is fine, since the session token is a single attribute.
Never call it on the GUI thread: every method does network I/O and may block for up to
`timeout` seconds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from ._http import (
    API_VERSION,
    Credentials,
    FilterValue,
    Order,
    credentials_body,
    present,
    query,
    segment,
)
from .alerts import AlertCalls
from .audit import AuditCalls
from .backups import BackupCalls
from .connection import Connection
from .directory import DirectoryCalls
from .errors import IncompatibleKma, NotFound, Unauthenticated
from .failover import Failover, KnownKma
from .media import MediaCalls
from .membership import MembershipCalls
from .models import KeySplitChange, key_split_change
from .paging import iter_all, iter_pages
from .reader import Page, reader
from .release import release
from .topology import TopologyCalls
from .transfer import TransferCalls
from .trust import Trust, renews
from .wire import (
    About,
    Agent,
    AutonomousUnlock,
    CaInfo,
    Dashboard,
    DataUnit,
    EnrollmentPassphrase,
    EnrollmentPassphrases,
    EnrolmentCodes,
    Key,
    KeyGroup,
    KeyPolicy,
    KeySplit,
    Kma,
    PendingQuorumOp,
    Session,
    Site,
    Status,
    User,
)

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


def _part(part: str, method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
    """`method` of the client's `part`, offered as the client's own (same name, signature, doc)."""

    @functools.wraps(method)
    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, part), *args, **kwargs)

    return call


class KmsClient:
    """A signed-in (or not yet) connection to one KMA, verified against a pinned cluster CA.

    `ca_pem` is the CA saved at first contact (`Trust.fetch`). Without it the CA is read from
    the KMA again and must still match `ca_fingerprint`, so the pin is what is trusted either
    way. Refuses (`TrustError`) a CA whose fingerprint is not `ca_fingerprint`.
    `transport` replaces the network, for tests.

    The routes of the auditor, backups, cluster membership and the topology are answered by parts
    given the same connection (audit.py, backups.py, membership.py, topology.py); the client
    offers their methods under its own name, so a caller needs one object.
    """

    def __init__(
        self,
        address: str,
        *,
        ca_pem: str | None = None,
        ca_fingerprint: str,
        timeout: float = 15,
        transport: httpx.BaseTransport | None = None,
        cluster: Sequence[KnownKma] = (),
        on_failover: Callable[[Failover], None] | None = None,
        kma_id: str | None = None,
    ) -> None:
        """`kma_id`: the KMA expected at `address`; its certificate must name it (another KMA's or a
        drive's certificate from the same cluster CA is refused, `TrustError`)."""
        self._connection = connection = Connection(
            address,
            ca_pem=ca_pem,
            ca_fingerprint=ca_fingerprint,
            timeout=timeout,
            transport=transport,
            cluster=cluster,
            on_failover=on_failover,
        )
        connection.expect(kma_id)
        self._audit = AuditCalls(connection)
        self._backups = BackupCalls(connection)
        self._members = MembershipCalls(connection)
        self._topology = TopologyCalls(connection)
        self._alerts = AlertCalls(connection)
        self._transfer = TransferCalls(connection)
        self._directory = DirectoryCalls(connection)
        self._media = MediaCalls(connection)

    # -- the connection -------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._connection.address

    @property
    def cluster(self) -> tuple[KnownKma, ...]:
        """The cluster's KMAs as last learnt (empty until `learn_cluster` or `cluster=`)."""
        return self._connection.cluster

    @property
    def on_failover(self) -> Callable[[Failover], None] | None:
        """Hears of a switch to another KMA (called on the thread of the request)."""
        return self._connection.on_failover

    @on_failover.setter
    def on_failover(self, listener: Callable[[Failover], None] | None) -> None:
        self._connection.on_failover = listener

    def learn_cluster(self) -> tuple[KnownKma, ...]:
        """Read the cluster's KMAs from the topology (any signed-in user) and keep them for
        failover; a removed KMA leaves the list."""
        topology = self.cluster_topology()
        known = tuple(KnownKma(k.id, k.name, k.site_id, k.management_address) for k in topology.kmas)
        self._connection.cluster = known
        return known

    @property
    def token(self) -> str | None:
        """The session token, or None when not signed in."""
        return self._connection.token

    def use_token(self, token: str | None) -> None:
        """Resume a saved session (or forget it with None) without signing in again."""
        self._connection.token = token

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> KmsClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        signed_in = "signed in" if self.token else "not signed in"
        return f"<KmsClient {self.address} {signed_in}>"

    # -- paging helpers -------------------------------------------------------------------------

    @staticmethod
    def iter_pages(list_method: Callable[..., Page[T]], /, **kw: Any) -> Iterator[Page[T]]:
        """Every page of `list_method` (e.g. `client.list_keys`), following `next_cursor`."""
        return iter_pages(list_method, **kw)

    @staticmethod
    def iter_all(list_method: Callable[..., Page[T]], /, **kw: Any) -> Iterator[T]:
        """Every item of `list_method` across all pages."""
        return iter_all(list_method, **kw)

    # -- no sign-in -----------------------------------------------------------------------------

    def status(self) -> Status:
        return self._connection.call("GET", "/status", reader(Status))

    def about(self) -> About:
        """What this KMA offers (release, API version, capabilities), before sign-in: a manager
        hides what the KMA lacks. A KMA this client cannot manage raises `IncompatibleKma` naming
        its release: one too old to say (release 0.1.0 has no GET /about), or one speaking a newer
        API major version."""
        try:
            about = self._connection.call("GET", "/about", reader(About), auth=False)
        except NotFound:
            older = self.status().version
            raise IncompatibleKma(
                f"The KMA at {self.address} runs release {older}, too old for this manager (release "
                f"{release()}): it does not say what it offers. Upgrade the KMA to this release or later "
                "(docs/upgrades.md), or sign in with the manager of its release.",
                older,
            ) from None
        if about.api_version > API_VERSION:
            raise IncompatibleKma(
                f"The KMA at {self.address} runs release {about.release}, whose management API (version "
                f"{about.api_version}) is newer than this manager's (release {release()}, API version "
                f"{API_VERSION}). Install the manager of release {about.release} or later.",
                about.release,
            )
        return about

    def ca(self) -> CaInfo:
        """The CA as this KMA reports it, over the verified connection."""
        return self._connection.call("GET", "/ca", reader(CaInfo))

    def ca_renewal(self) -> Trust | None:
        """The cluster CA's renewed certificate when the cluster renewed the pinned one (the same name
        and key, a later end; docs/security.md), else None: save it as the new pin, so that this
        client still connects once the pinned certificate has expired."""
        connection = self._connection
        if connection.renewed_ca is not None:  # accepted at connection: the pinned one had expired
            return connection.renewed_ca
        served = self.ca().ca_pem
        if served.strip() != connection.ca_pem.strip() and renews(connection.ca_pem, served):
            return Trust.from_pem(served)
        return None

    # -- session --------------------------------------------------------------------------------

    def sign_in(self, user_id: str, passphrase: str, code: str | None = None) -> Session:
        """Sign in and keep the token for later calls. Wrong credentials: `Unauthenticated`;
        too many failures in a row: `LockedOut`; a user whose two-step sign-in is on and no
        `code` (from their authenticator app, or a recovery code): `SecondFactorRequired`."""
        session = self._connection.call(
            "POST",
            "/auth/sign-in",
            reader(Session),
            body=present(user_id=user_id, passphrase=passphrase, code=code),
            auth=False,
        )
        self._connection.token = session.token
        return session

    def sign_out(self) -> None:
        """End the session on the KMA and forget the token; an already expired session is fine."""
        if self._connection.token is None:
            return
        try:
            self._connection.request("POST", "/auth/sign-out")
        except Unauthenticated:
            pass
        finally:
            self._connection.token = None

    def me(self) -> User:
        return self._connection.call("GET", "/auth/me", reader(User))

    def dashboard(self) -> Dashboard:
        return self._connection.call("GET", "/dashboard", reader(Dashboard))

    # -- sites ----------------------------------------------------------------------------------

    def list_sites(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[Site]:
        return self._connection.list(
            "/sites",
            Site,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_sites(self, **kw: Any) -> Iterator[Site]:
        return iter_all(self.list_sites, **kw)

    def create_site(self, id: str, name: str, description: str | None = None) -> Site:
        body = present(id=id, name=name, description=description)
        return self._connection.call("POST", "/sites", reader(Site), body=body)

    def update_site(self, id: str, *, name: str | None = None, description: str | None = None) -> Site:
        body = present(name=name, description=description)
        return self._connection.call("PATCH", f"/sites/{segment(id)}", reader(Site), body=body)

    def delete_site(self, id: str) -> None:
        """`Conflict` while KMAs or agents still belong to the site."""
        self._connection.request("DELETE", f"/sites/{segment(id)}")

    # -- KMAs -----------------------------------------------------------------------------------

    def list_kmas(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[Kma]:
        return self._connection.list(
            "/kmas",
            Kma,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_kmas(self, **kw: Any) -> Iterator[Kma]:
        return iter_all(self.list_kmas, **kw)

    def update_kma(
        self,
        id: str,
        *,
        name: str | None = None,
        site_id: str | None = None,
        key_pool_size: int | None = None,
    ) -> Kma:
        body = present(name=name, site_id=site_id, key_pool_size=key_pool_size)
        return self._connection.call("PATCH", f"/kmas/{segment(id)}", reader(Kma), body=body)

    # -- users ----------------------------------------------------------------------------------

    def list_users(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[User]:
        """Filters: `role`."""
        return self._connection.list(
            "/users",
            User,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_users(self, **kw: Any) -> Iterator[User]:
        return iter_all(self.list_users, **kw)

    def get_user(self, id: str) -> User:
        return self._connection.call("GET", f"/users/{segment(id)}", reader(User))

    def create_user(
        self,
        id: str,
        name: str,
        roles: Iterable[str],
        passphrase: str,
        *,
        credentials: Credentials | None = None,
    ) -> User | PendingQuorumOp:
        """Quorum-protected: with M key split `credentials` the user is made at once (`User`);
        with fewer it becomes a `PendingQuorumOp` for Quorum Members to approve."""
        given = credentials_body(credentials)
        body = present(id=id, name=name, roles=list(roles), passphrase=passphrase, credentials=given)
        return self._connection.call_or_pending("POST", "/users", reader(User), body)

    def update_user(
        self,
        id: str,
        *,
        name: str | None = None,
        roles: Iterable[str] | None = None,
        enabled: bool | None = None,
        credentials: Credentials | None = None,
    ) -> User | PendingQuorumOp:
        """Quorum-protected, like `create_user`."""
        body = present(
            name=name,
            roles=None if roles is None else list(roles),
            enabled=enabled,
            credentials=credentials_body(credentials),
        )
        return self._connection.call_or_pending("PATCH", f"/users/{segment(id)}", reader(User), body)

    def set_user_passphrase(
        self, id: str, passphrase: str, *, credentials: Credentials | None = None
    ) -> PendingQuorumOp | None:
        """Quorum-protected: None when the passphrase was set, else the pending operation."""
        body = present(passphrase=passphrase, credentials=credentials_body(credentials))
        path = f"/users/{segment(id)}/passphrase"
        return self._connection.call_or_pending("PUT", path, lambda _: None, body)

    # -- key policies ---------------------------------------------------------------------------

    def list_key_policies(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[KeyPolicy]:
        return self._connection.list(
            "/key-policies",
            KeyPolicy,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_key_policies(self, **kw: Any) -> Iterator[KeyPolicy]:
        return iter_all(self.list_key_policies, **kw)

    def get_key_policy(self, id: str) -> KeyPolicy:
        return self._connection.call("GET", f"/key-policies/{segment(id)}", reader(KeyPolicy))

    def create_key_policy(
        self,
        id: str,
        *,
        encryption_period: int,
        cryptoperiod: int,
        description: str | None = None,
        allow_export: bool | None = None,
        allow_import: bool | None = None,
        agents_may_revoke: bool | None = None,
        general_keys: bool | None = None,
        rotation_period: int | None = None,
    ) -> KeyPolicy:
        """Periods are whole seconds, > 0, cryptoperiod >= encryption_period; fixed for good. A
        rotation period (general keys): the KMA makes a key's successor that long after its
        activation."""
        body = present(
            id=id,
            description=description,
            encryption_period=encryption_period,
            cryptoperiod=cryptoperiod,
            allow_export=allow_export,
            allow_import=allow_import,
            agents_may_revoke=agents_may_revoke,
            general_keys=general_keys,
            rotation_period=rotation_period,
        )
        return self._connection.call("POST", "/key-policies", reader(KeyPolicy), body=body)

    def update_key_policy(
        self,
        id: str,
        *,
        description: str | None = None,
        allow_export: bool | None = None,
        allow_import: bool | None = None,
        agents_may_revoke: bool | None = None,
        general_keys: bool | None = None,
    ) -> KeyPolicy:
        """Periods cannot change once set, so they are not arguments here."""
        body = present(
            description=description,
            allow_export=allow_export,
            allow_import=allow_import,
            agents_may_revoke=agents_may_revoke,
            general_keys=general_keys,
        )
        return self._connection.call("PATCH", f"/key-policies/{segment(id)}", reader(KeyPolicy), body=body)

    # -- key groups -----------------------------------------------------------------------------

    def list_key_groups(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[KeyGroup]:
        return self._connection.list(
            "/key-groups",
            KeyGroup,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_key_groups(self, **kw: Any) -> Iterator[KeyGroup]:
        return iter_all(self.list_key_groups, **kw)

    def get_key_group(self, id: str) -> KeyGroup:
        return self._connection.call("GET", f"/key-groups/{segment(id)}", reader(KeyGroup))

    def create_key_group(self, id: str, policy_id: str, description: str | None = None) -> KeyGroup:
        body = present(id=id, description=description, policy_id=policy_id)
        return self._connection.call("POST", "/key-groups", reader(KeyGroup), body=body)

    def update_key_group(self, id: str, *, description: str | None = None) -> KeyGroup:
        body = present(description=description)
        return self._connection.call("PATCH", f"/key-groups/{segment(id)}", reader(KeyGroup), body=body)

    def set_key_group_agents(self, id: str, agent_ids: Iterable[str]) -> KeyGroup:
        """Replace the set of agents that may use the key group."""
        body = {"agent_ids": list(agent_ids)}
        return self._connection.call("PUT", f"/key-groups/{segment(id)}/agents", reader(KeyGroup), body=body)

    # -- agents ---------------------------------------------------------------------------------

    def list_agents(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[Agent]:
        """Filters: `site_id`, `enabled`, `key_group_id`, `expires_within_days` (the agent's
        certificate expires within that many days, or has expired)."""
        return self._connection.list(
            "/agents",
            Agent,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_agents(self, **kw: Any) -> Iterator[Agent]:
        return iter_all(self.list_agents, **kw)

    def get_agent(self, id: str) -> Agent:
        return self._connection.call("GET", f"/agents/{segment(id)}", reader(Agent))

    def create_agent(
        self,
        id: str,
        site_id: str,
        default_key_group_id: str,
        description: str | None = None,
        *,
        drive_model: str | None = None,
        drive_generation: str | None = None,
        library: str | None = None,
        library_partition: str | None = None,
    ) -> Agent:
        body = present(
            id=id,
            description=description,
            site_id=site_id,
            default_key_group_id=default_key_group_id,
            drive_model=drive_model,
            drive_generation=drive_generation,
            library=library,
            library_partition=library_partition,
        )
        return self._connection.call("POST", "/agents", reader(Agent), body=body)

    def update_agent(
        self,
        id: str,
        *,
        description: str | None = None,
        site_id: str | None = None,
        default_key_group_id: str | None = None,
        enabled: bool | None = None,
        drive_model: str | None = None,
        drive_generation: str | None = None,
        library: str | None = None,
        library_partition: str | None = None,
    ) -> Agent:
        """`drive_generation`: LTO-5..LTO-9, T10000A-D, T9840A-D ("" clears it; docs/media.md)."""
        body = present(
            description=description,
            site_id=site_id,
            default_key_group_id=default_key_group_id,
            enabled=enabled,
            drive_model=drive_model,
            drive_generation=drive_generation,
            library=library,
            library_partition=library_partition,
        )
        return self._connection.call("PATCH", f"/agents/{segment(id)}", reader(Agent), body=body)

    def new_enrollment_passphrases(self, agent_ids: Sequence[str]) -> list[EnrollmentPassphrase]:
        """Operator: a new one-time passphrase for each agent (drives that cannot renew their own
        certificate), asked for 100 at a time; each replaces the agent's earlier one."""
        out: list[EnrollmentPassphrase] = []
        ids = list(agent_ids)
        for start in range(0, len(ids), 100):
            body = {"agent_ids": ids[start : start + 100]}
            made = self._connection.call(
                "POST", "/agents/enrollment-passphrases", reader(EnrollmentPassphrases), body=body
            )
            out.extend(made.passphrases)
        return out

    def new_enrollment_passphrase(self, id: str) -> EnrollmentPassphrase:
        """A new one-time passphrase for the agent (replaces any earlier one); shown once."""
        return self._connection.call(
            "POST", f"/agents/{segment(id)}/enrollment-passphrase", reader(EnrollmentPassphrase)
        )

    # -- data units -----------------------------------------------------------------------------

    def list_data_units(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[DataUnit]:
        """Filters: `state`."""
        return self._connection.list(
            "/data-units",
            DataUnit,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_data_units(self, **kw: Any) -> Iterator[DataUnit]:
        return iter_all(self.list_data_units, **kw)

    def get_data_unit(self, id: str) -> DataUnit:
        return self._connection.call("GET", f"/data-units/{segment(id)}", reader(DataUnit))

    def create_data_unit(self, id: str, description: str | None = None) -> DataUnit:
        body = present(id=id, description=description)
        return self._connection.call("POST", "/data-units", reader(DataUnit), body=body)

    def update_data_unit(self, id: str, *, description: str | None = None) -> DataUnit:
        body = present(description=description)
        return self._connection.call("PATCH", f"/data-units/{segment(id)}", reader(DataUnit), body=body)

    # -- keys -----------------------------------------------------------------------------------

    def list_keys(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[Key]:
        """Filters: `state`, `key_group_id`, `data_unit_id`, `compromised`."""
        return self._connection.list(
            "/keys",
            Key,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_keys(self, **kw: Any) -> Iterator[Key]:
        return iter_all(self.list_keys, **kw)

    def get_key(self, id: str) -> Key:
        return self._connection.call("GET", f"/keys/{segment(id)}", reader(Key))

    def issue_key(self, key_group_id: str, data_unit_id: str) -> Key:
        """Issue a key from this KMA's pool for the data unit, as an agent's request would."""
        body = {"key_group_id": key_group_id, "data_unit_id": data_unit_id}
        return self._connection.call("POST", "/keys", reader(Key), body=body)

    def compromise_key(self, id: str, comment: str) -> Key:
        return self._connection.call(
            "POST", f"/keys/{segment(id)}/compromise", reader(Key), body={"comment": comment}
        )

    def destroy_key(self, id: str, comment: str) -> Key:
        """`Conflict` unless the key is deactivated or compromised; comment 1..500 characters."""
        return self._connection.call(
            "POST", f"/keys/{segment(id)}/destroy", reader(Key), body={"comment": comment}
        )

    # -- quorum ---------------------------------------------------------------------------------

    def list_quorum_operations(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[PendingQuorumOp]:
        """Newest first by default. Filters: `state`, `type`."""
        return self._connection.list(
            "/quorum-operations",
            PendingQuorumOp,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_quorum_operations(self, **kw: Any) -> Iterator[PendingQuorumOp]:
        return iter_all(self.list_quorum_operations, **kw)

    def get_quorum_operation(self, id: str) -> PendingQuorumOp:
        return self._connection.call("GET", f"/quorum-operations/{segment(id)}", reader(PendingQuorumOp))

    def approve_quorum_operation(self, id: str, member: str, passphrase: str) -> PendingQuorumOp:
        """Approve as key split member `member`; at the M-th approval the operation runs, and the
        returned operation says `executed` (or `failed`, with the reason in `result`)."""
        return self._connection.call(
            "POST",
            f"/quorum-operations/{segment(id)}/approve",
            reader(PendingQuorumOp),
            body={"member": member, "passphrase": passphrase},
        )

    def delete_quorum_operation(self, id: str) -> None:
        """Security Officer: a deleted operation never runs. `Conflict` unless it is pending."""
        self._connection.request("DELETE", f"/quorum-operations/{segment(id)}")

    def lock_kma(self, id: str) -> Kma:
        """Security Officer: the KMA serves nothing secret until a quorum unlocks it."""
        return self._connection.call("POST", f"/kmas/{segment(id)}/lock", reader(Kma))

    def renew_kma_certificate(self, id: str) -> Kma:
        """Security Officer: that KMA's listener certificate is renewed now (by the KMA answering
        when it is its own, else by that KMA within a second or so; `certificate_renewal_requested`
        says it has not yet)."""
        return self._connection.call("POST", f"/kmas/{segment(id)}/certificate/renew", reader(Kma))

    def unlock_kma(self, id: str, *, credentials: Credentials | None = None) -> Kma | PendingQuorumOp:
        """Quorum-protected; a locked KMA still answers this (and sign-in, status, approvals)."""
        body = present(credentials=credentials_body(credentials))
        return self._connection.call_or_pending("POST", f"/kmas/{segment(id)}/unlock", reader(Kma), body)

    def get_key_split(self) -> KeySplit:
        return self._connection.call("GET", "/cluster/key-split", reader(KeySplit))

    def change_key_split(
        self,
        threshold: int,
        members: Iterable[str],
        *,
        credentials: Credentials | None = None,
        rotate_master_key: bool = False,
    ) -> KeySplitChange:
        """Re-split under a new root secret among the named new `members`; `credentials` are those
        of current members (the old quorum). Always pending: it runs once every new member has set
        their own passphrase (`enrol_key_split_member`, with the code in `enrolment_codes`) and M
        current members have approved. Old shares then stop working. `rotate_master_key`: the new
        split protects a new master key generation, and every blob is re-wrapped under it."""
        body = present(
            threshold=threshold,
            members=[{"name": m} for m in members],
            credentials=credentials_body(credentials),
            rotate_master_key=rotate_master_key or None,
        )
        return self._connection.call("PUT", "/cluster/key-split", key_split_change, body=body)

    def enrol_key_split_member(self, op_id: str, member: str, code: str, passphrase: str) -> PendingQuorumOp:
        """A new key split member sets their own passphrase for a pending key split change; the
        one-time `code` authenticates them (no sign-in needed)."""
        return self._connection.call(
            "POST",
            f"/quorum-operations/{segment(op_id)}/enrol",
            reader(PendingQuorumOp),
            body={"member": member, "code": code, "passphrase": passphrase},
        )

    def new_enrolment_codes(self, op_id: str) -> EnrolmentCodes:
        """New one-time codes for the members of a pending key split change still to enrol (an
        interrupted ceremony resumes with them); their earlier codes stop working."""
        return self._connection.call(
            "POST", f"/quorum-operations/{segment(op_id)}/enrolment-codes", reader(EnrolmentCodes)
        )

    def set_quorum_lifetime(self, seconds: int) -> KeySplit:
        """How long new pending quorum operations wait for approvals (default 24 hours)."""
        body = {"seconds": seconds}
        return self._connection.call("PUT", "/cluster/quorum-lifetime", reader(KeySplit), body=body)

    def get_autonomous_unlock(self) -> AutonomousUnlock:
        return self._connection.call("GET", "/cluster/autonomous-unlock", reader(AutonomousUnlock))

    def set_autonomous_unlock(
        self, enabled: bool, *, credentials: Credentials | None = None
    ) -> AutonomousUnlock | PendingQuorumOp:
        """Quorum-protected; applies to the KMA this client talks to."""
        body = present(enabled=enabled, credentials=credentials_body(credentials))
        return self._connection.call_or_pending(
            "PUT", "/cluster/autonomous-unlock", reader(AutonomousUnlock), body
        )

    # -- the auditor's routes (audit.py) ------------------------------------------------------
    history = _part("_audit", AuditCalls.history)
    key_history = _part("_audit", AuditCalls.key_history)
    data_unit_history = _part("_audit", AuditCalls.data_unit_history)
    agent_history = _part("_audit", AuditCalls.agent_history)
    list_audit_events = _part("_audit", AuditCalls.list_audit_events)
    iter_audit_events = _part("_audit", AuditCalls.iter_audit_events)
    verify_audit_chain = _part("_audit", AuditCalls.verify_audit_chain)
    tail_audit_events = _part("_audit", AuditCalls.tail_audit_events)
    audit_facets = _part("_audit", AuditCalls.audit_facets)
    export_audit_csv = _part("_audit", AuditCalls.export_audit_csv)
    audit_report = _part("_audit", AuditCalls.audit_report)
    audit_retention = _part("_audit", AuditCalls.audit_retention)
    set_audit_retention = _part("_audit", AuditCalls.set_audit_retention)
    list_audit_checkpoints = _part("_audit", AuditCalls.list_audit_checkpoints)
    create_audit_checkpoint = _part("_audit", AuditCalls.create_audit_checkpoint)
    prune_audit_events = _part("_audit", AuditCalls.prune_audit_events)
    dashboard_series = _part("_audit", AuditCalls.dashboard_series)

    # -- database and core security backups (backups.py) --------------------------------------
    list_backups = _part("_backups", BackupCalls.list_backups)
    get_backup = _part("_backups", BackupCalls.get_backup)
    create_backup = _part("_backups", BackupCalls.create_backup)
    delete_backup = _part("_backups", BackupCalls.delete_backup)
    download_backup = _part("_backups", BackupCalls.download_backup)
    backup_schedule = _part("_backups", BackupCalls.backup_schedule)
    set_backup_schedule = _part("_backups", BackupCalls.set_backup_schedule)
    core_security_backup_status = _part("_backups", BackupCalls.core_security_backup_status)
    take_core_security_backup = _part("_backups", BackupCalls.take_core_security_backup)

    # -- cluster membership (membership.py) ----------------------------------------------
    get_kma = _part("_members", MembershipCalls.get_kma)
    create_kma_entry = _part("_members", MembershipCalls.create_kma_entry)
    set_kma_passphrase = _part("_members", MembershipCalls.set_kma_passphrase)
    remove_kma = _part("_members", MembershipCalls.remove_kma)
    raise_cluster_version = _part("_members", MembershipCalls.raise_cluster_version)
    master_key = _part("_members", MembershipCalls.master_key)
    rotate_master_key = _part("_members", MembershipCalls.rotate_master_key)
    renew_cluster_ca = _part("_members", MembershipCalls.renew_cluster_ca)
    join_cluster = _part("_members", MembershipCalls.join_cluster)

    # -- the cluster at a glance (topology.py) ------------------------------------------------
    cluster_topology = _part("_topology", TopologyCalls.cluster_topology)
    audit_forwarding = _part("_topology", TopologyCalls.audit_forwarding)
    set_audit_forwarding = _part("_topology", TopologyCalls.set_audit_forwarding)
    upgrade_check = _part("_topology", TopologyCalls.upgrade_check)

    # -- alert channels (alerts.py) -------------------------------------------------------------
    alert_channels = _part("_alerts", AlertCalls.alert_channels)
    add_alert_channel = _part("_alerts", AlertCalls.add_alert_channel)
    change_alert_channel = _part("_alerts", AlertCalls.change_alert_channel)
    remove_alert_channel = _part("_alerts", AlertCalls.remove_alert_channel)
    send_test_alert = _part("_alerts", AlertCalls.send_test_alert)

    # -- transfer partners, exports, imports (transfer.py) ------------------------------------------
    get_transfer_identity = _part("_transfer", TransferCalls.get_transfer_identity)
    list_transfer_partners = _part("_transfer", TransferCalls.list_transfer_partners)
    get_transfer_partner = _part("_transfer", TransferCalls.get_transfer_partner)
    register_transfer_partner = _part("_transfer", TransferCalls.register_transfer_partner)
    enable_transfer_partner = _part("_transfer", TransferCalls.enable_transfer_partner)
    disable_transfer_partner = _part("_transfer", TransferCalls.disable_transfer_partner)
    remove_transfer_partner = _part("_transfer", TransferCalls.remove_transfer_partner)
    export_transfer_file = _part("_transfer", TransferCalls.export_transfer_file)
    preview_transfer_import = _part("_transfer", TransferCalls.preview_transfer_import)
    import_transfer_file = _part("_transfer", TransferCalls.import_transfer_file)
    # -- directory sign-in (directory.py) -------------------------------------------------------
    get_directory = _part("_directory", DirectoryCalls.get_directory)
    set_directory = _part("_directory", DirectoryCalls.set_directory)
    enrol_second_factor = _part("_directory", DirectoryCalls.enrol_second_factor)
    confirm_second_factor = _part("_directory", DirectoryCalls.confirm_second_factor)
    turn_off_second_factor = _part("_directory", DirectoryCalls.turn_off_second_factor)
    get_users_report = _part("_directory", DirectoryCalls.get_users_report)
    # -- media pools and the media rules (media.py) ----------------------------------------------
    list_media_pools = _part("_media", MediaCalls.list_media_pools)
    get_media_pool = _part("_media", MediaCalls.get_media_pool)
    create_media_pool = _part("_media", MediaCalls.create_media_pool)
    update_media_pool = _part("_media", MediaCalls.update_media_pool)
    delete_media_pool = _part("_media", MediaCalls.delete_media_pool)
    get_media_pool_migration = _part("_media", MediaCalls.get_media_pool_migration)
    get_media_settings = _part("_media", MediaCalls.get_media_settings)
    update_media_settings = _part("_media", MediaCalls.update_media_settings)
    get_media_refusals = _part("_media", MediaCalls.get_media_refusals)
    list_tapes_to_relabel = _part("_media", MediaCalls.list_tapes_to_relabel)
