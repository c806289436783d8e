"""`KmsClient`: one method per route of the KMA management API (docs/api.md).

Threading: use a client from one thread at a time (e.g. the GUI's serial worker lane); handing it
from one worker thread to another is fine, since the session token is a single attribute.
Never call it on the GUI thread: every method does network I/O and may block for up to
`timeout` seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx

from ._http import (
    Credentials,
    FilterValue,
    base_url,
    credentials_body,
    error_from_response,
    query,
    segment,
    translated_transport_errors,
    unreadable_response,
)
from ._http import present as _present
from .audit import AuditMethods
from .backups import BackupMethods
from .cluster_members import ClusterMemberMethods
from .errors import KmaUnreachable, TrustError, Unauthenticated
from .failover import Failover, KnownKma, failover_order, never_sent
from .models import KeySplitChange, key_split_change
from .paging import iter_all, iter_pages
from .reader import JsonObject, Page, read, read_page, reader
from .topology import TopologyMethods
from .trust import Trust, fingerprint_of, same_fingerprint, ssl_context_for
from .wire import (
    Agent,
    AuditEvent,
    AutonomousUnlock,
    CaInfo,
    ChainReport,
    Dashboard,
    DataUnit,
    EnrollmentPassphrase,
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
Order = Literal["asc", "desc"]


class KmsClient(AuditMethods, BackupMethods, ClusterMemberMethods, TopologyMethods):
    """A signed-in (or not yet) connection to one KMA, verified against a pinned cluster CA.

    `ca_pem` is the CA saved at first contact (`Trust.fetch`). Without it the CA is read from
    the KMA again and must still match `ca_fingerprint`, so the pin is what is trusted either
    way. Refuses (`TrustError`) a CA whose fingerprint is not `ca_fingerprint`.
    `transport` replaces the network, for tests.
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
    ) -> None:
        url = base_url(address)
        if ca_pem is None:
            ca_pem = Trust.fetch(address, timeout=timeout, transport=transport).ca_pem
        actual = fingerprint_of(ca_pem)
        if not same_fingerprint(actual, ca_fingerprint):
            raise TrustError(
                f"The cluster CA for {address} has fingerprint {actual}, not the pinned "
                f"{ca_fingerprint}. This is not the cluster you trusted; do not sign in. If the "
                "cluster CA really changed, confirm its new fingerprint with the KMA's "
                "administrator and trust it again."
            )
        self._address = address
        self._timeout = timeout
        self._token: str | None = None
        # The cluster's KMAs (failover.py): when this one stops answering, the client goes on
        # with another. `on_failover` hears of it (called on the thread of the request).
        self._cluster = tuple(cluster)
        self.on_failover = on_failover
        self._switching = threading.Lock()
        self._http = httpx.Client(
            base_url=url,
            verify=ssl_context_for(ca_pem),
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json"},
        )

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._address

    @property
    def cluster(self) -> tuple[KnownKma, ...]:
        """The cluster's KMAs as last learnt (empty until `learn_cluster` or `cluster=`)."""
        return self._cluster

    def learn_cluster(self) -> tuple[KnownKma, ...]:
        """Read the cluster's KMAs from the topology (any signed-in user) and keep them for
        failover; a removed KMA leaves the list."""
        topology = self.cluster_topology()
        self._cluster = tuple(KnownKma(k.id, k.name, k.site_id, k.management_address) for k in topology.kmas)
        return self._cluster

    @property
    def token(self) -> str | None:
        """The session token, or None when not signed in."""
        return self._token

    def use_token(self, token: str | None) -> None:
        """Resume a saved session (or forget it with None) without signing in again."""
        self._token = token

    def close(self) -> None:
        self._http.close()

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
        signed_in = "signed in" if self._token else "not signed in"
        return f"<KmsClient {self._address} {signed_in}>"

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        auth: bool = True,
    ) -> httpx.Response:
        headers = {}
        token = self._token
        if auth and token is not None:
            headers["Authorization"] = f"Bearer {token}"

        def send() -> httpx.Response:
            with translated_transport_errors(self._address, self._timeout):
                return self._http.request(method, path, params=params, json=body, headers=headers)

        tried = self._address
        try:
            response = send()
        except KmaUnreachable as lost:
            response = self._fail_over(lost, tried, send, again=method == "GET" or never_sent(lost))
        if response.is_error:
            raise error_from_response(response)
        return response

    def _fail_over(
        self, lost: KmaUnreachable, gone: str, send: Callable[[], httpx.Response], again: bool
    ) -> httpx.Response:
        """Go on with another KMA of the cluster after the one at `gone` stopped answering.

        The request is sent again there if it is a read or never reached the KMA; a change that
        may have been applied is not sent twice: the client switches and `lost` is raised."""

        def answers() -> httpx.Response:
            with translated_transport_errors(self._address, self._timeout):
                return self._http.request("GET", "/status")

        with self._switching:
            if self._address != gone:  # another thread switched meanwhile: go on where it went
                if not again:
                    raise lost
                return send()
            for kma in failover_order(self._cluster, gone):
                self._point_at(kma.address)
                try:
                    response = send() if again else answers()
                except KmaUnreachable:
                    continue
                except BaseException:
                    self._point_at(gone)
                    raise
                if self.on_failover is not None:
                    known = next((k.name for k in self._cluster if k.address == gone), gone)
                    self.on_failover(Failover(known, kma))
                if not again:
                    raise lost
                return response
            self._point_at(gone)
        raise lost

    def _point_at(self, address: str) -> None:
        self._address = address
        self._http.base_url = httpx.URL(base_url(address))

    def _call(
        self,
        method: str,
        path: str,
        parse: Callable[[JsonObject], T],
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        auth: bool = True,
    ) -> T:
        response = self._request(method, path, params=params, body=body, auth=auth)
        try:
            return parse(response.json())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise unreadable_response(response, exc) from exc

    def _list(self, path: str, item: type[T], params: dict[str, str]) -> Page[T]:
        return self._call("GET", path, lambda d: read_page(item, d), params=params)

    def _call_or_pending(
        self, method: str, path: str, parse: Callable[[JsonObject], T], body: dict[str, Any]
    ) -> T | PendingQuorumOp:
        """A quorum-protected call: its result when it ran (2xx), the pending operation on 202."""
        response = self._request(method, path, body=body)
        if response.status_code == 204:
            return parse({})
        try:
            if response.status_code == 202:
                return read(PendingQuorumOp, response.json())
            return parse(response.json())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise unreadable_response(response, exc) from exc

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
        return self._call("GET", "/status", reader(Status))

    def ca(self) -> CaInfo:
        """The CA as this KMA reports it, over the verified connection."""
        return self._call("GET", "/ca", reader(CaInfo))

    # -- session --------------------------------------------------------------------------------

    def sign_in(self, user_id: str, passphrase: str) -> Session:
        """Sign in and keep the token for later calls. Wrong credentials: `Unauthenticated`;
        too many failures in a row: `LockedOut`."""
        session = self._call(
            "POST",
            "/auth/sign-in",
            reader(Session),
            body={"user_id": user_id, "passphrase": passphrase},
            auth=False,
        )
        self._token = session.token
        return session

    def sign_out(self) -> None:
        """End the session on the KMA and forget the token; an already expired session is fine."""
        if self._token is None:
            return
        try:
            self._request("POST", "/auth/sign-out")
        except Unauthenticated:
            pass
        finally:
            self._token = None

    def me(self) -> User:
        return self._call("GET", "/auth/me", reader(User))

    def dashboard(self) -> Dashboard:
        return self._call("GET", "/dashboard", reader(Dashboard))

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
        return self._list(
            "/sites",
            Site,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_sites(self, **kw: Any) -> Iterator[Site]:
        return iter_all(self.list_sites, **kw)

    def create_site(self, id: str, name: str, description: str | None = None) -> Site:
        body = _present(id=id, name=name, description=description)
        return self._call("POST", "/sites", reader(Site), body=body)

    def update_site(
        self, id: str, *, name: str | None = None, description: str | None = None
    ) -> Site:
        body = _present(name=name, description=description)
        return self._call("PATCH", f"/sites/{segment(id)}", reader(Site), body=body)

    def delete_site(self, id: str) -> None:
        """`Conflict` while KMAs or agents still belong to the site."""
        self._request("DELETE", f"/sites/{segment(id)}")

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
        return self._list(
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
        body = _present(name=name, site_id=site_id, key_pool_size=key_pool_size)
        return self._call("PATCH", f"/kmas/{segment(id)}", reader(Kma), body=body)

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
        return self._list(
            "/users",
            User,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_users(self, **kw: Any) -> Iterator[User]:
        return iter_all(self.list_users, **kw)

    def get_user(self, id: str) -> User:
        return self._call("GET", f"/users/{segment(id)}", reader(User))

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
        body = {"id": id, "name": name, "roles": list(roles), "passphrase": passphrase}
        body.update(_present(credentials=credentials_body(credentials)))
        return self._call_or_pending("POST", "/users", reader(User), body)

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
        body = _present(
            name=name,
            roles=None if roles is None else list(roles),
            enabled=enabled,
            credentials=credentials_body(credentials),
        )
        return self._call_or_pending("PATCH", f"/users/{segment(id)}", reader(User), body)

    def set_user_passphrase(
        self, id: str, passphrase: str, *, credentials: Credentials | None = None
    ) -> PendingQuorumOp | None:
        """Quorum-protected: None when the passphrase was set, else the pending operation."""
        body = _present(passphrase=passphrase, credentials=credentials_body(credentials))
        return self._call_or_pending("PUT", f"/users/{segment(id)}/passphrase", lambda d: None, body)

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
        return self._list(
            "/key-policies",
            KeyPolicy,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_key_policies(self, **kw: Any) -> Iterator[KeyPolicy]:
        return iter_all(self.list_key_policies, **kw)

    def get_key_policy(self, id: str) -> KeyPolicy:
        return self._call("GET", f"/key-policies/{segment(id)}", reader(KeyPolicy))

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
    ) -> KeyPolicy:
        """Periods are whole seconds, > 0, cryptoperiod >= encryption_period; fixed for good."""
        body = _present(
            id=id,
            description=description,
            encryption_period=encryption_period,
            cryptoperiod=cryptoperiod,
            allow_export=allow_export,
            allow_import=allow_import,
            agents_may_revoke=agents_may_revoke,
            general_keys=general_keys,
        )
        return self._call("POST", "/key-policies", reader(KeyPolicy), body=body)

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
        body = _present(
            description=description,
            allow_export=allow_export,
            allow_import=allow_import,
            agents_may_revoke=agents_may_revoke,
            general_keys=general_keys,
        )
        return self._call("PATCH", f"/key-policies/{segment(id)}", reader(KeyPolicy), body=body)

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
        return self._list(
            "/key-groups",
            KeyGroup,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_key_groups(self, **kw: Any) -> Iterator[KeyGroup]:
        return iter_all(self.list_key_groups, **kw)

    def get_key_group(self, id: str) -> KeyGroup:
        return self._call("GET", f"/key-groups/{segment(id)}", reader(KeyGroup))

    def create_key_group(self, id: str, policy_id: str, description: str | None = None) -> KeyGroup:
        body = _present(id=id, description=description, policy_id=policy_id)
        return self._call("POST", "/key-groups", reader(KeyGroup), body=body)

    def update_key_group(self, id: str, *, description: str | None = None) -> KeyGroup:
        body = _present(description=description)
        return self._call("PATCH", f"/key-groups/{segment(id)}", reader(KeyGroup), body=body)

    def set_key_group_agents(self, id: str, agent_ids: Iterable[str]) -> KeyGroup:
        """Replace the set of agents that may use the key group."""
        body = {"agent_ids": list(agent_ids)}
        return self._call("PUT", f"/key-groups/{segment(id)}/agents", reader(KeyGroup), body=body)

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
        """Filters: `site_id`, `enabled`."""
        return self._list(
            "/agents",
            Agent,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_agents(self, **kw: Any) -> Iterator[Agent]:
        return iter_all(self.list_agents, **kw)

    def get_agent(self, id: str) -> Agent:
        return self._call("GET", f"/agents/{segment(id)}", reader(Agent))

    def create_agent(
        self,
        id: str,
        site_id: str,
        default_key_group_id: str,
        description: str | None = None,
    ) -> Agent:
        body = _present(
            id=id,
            description=description,
            site_id=site_id,
            default_key_group_id=default_key_group_id,
        )
        return self._call("POST", "/agents", reader(Agent), body=body)

    def update_agent(
        self,
        id: str,
        *,
        description: str | None = None,
        site_id: str | None = None,
        default_key_group_id: str | None = None,
        enabled: bool | None = None,
    ) -> Agent:
        body = _present(
            description=description,
            site_id=site_id,
            default_key_group_id=default_key_group_id,
            enabled=enabled,
        )
        return self._call("PATCH", f"/agents/{segment(id)}", reader(Agent), body=body)

    def new_enrollment_passphrase(self, id: str) -> EnrollmentPassphrase:
        """A new one-time passphrase for the agent (replaces any earlier one); shown once."""
        return self._call(
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
        return self._list(
            "/data-units",
            DataUnit,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_data_units(self, **kw: Any) -> Iterator[DataUnit]:
        return iter_all(self.list_data_units, **kw)

    def get_data_unit(self, id: str) -> DataUnit:
        return self._call("GET", f"/data-units/{segment(id)}", reader(DataUnit))

    def create_data_unit(self, id: str, description: str | None = None) -> DataUnit:
        body = _present(id=id, description=description)
        return self._call("POST", "/data-units", reader(DataUnit), body=body)

    def update_data_unit(self, id: str, *, description: str | None = None) -> DataUnit:
        body = _present(description=description)
        return self._call("PATCH", f"/data-units/{segment(id)}", reader(DataUnit), body=body)

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
        return self._list(
            "/keys",
            Key,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_keys(self, **kw: Any) -> Iterator[Key]:
        return iter_all(self.list_keys, **kw)

    def get_key(self, id: str) -> Key:
        return self._call("GET", f"/keys/{segment(id)}", reader(Key))

    def issue_key(self, key_group_id: str, data_unit_id: str) -> Key:
        """Issue a key from this KMA's pool for the data unit, as an agent's request would."""
        body = {"key_group_id": key_group_id, "data_unit_id": data_unit_id}
        return self._call("POST", "/keys", reader(Key), body=body)

    def compromise_key(self, id: str, comment: str) -> Key:
        return self._call(
            "POST", f"/keys/{segment(id)}/compromise", reader(Key), body={"comment": comment}
        )

    def destroy_key(self, id: str, comment: str) -> Key:
        """`Conflict` unless the key is deactivated or compromised; comment 1..500 characters."""
        return self._call(
            "POST", f"/keys/{segment(id)}/destroy", reader(Key), body={"comment": comment}
        )

    # -- audit ----------------------------------------------------------------------------------

    def list_audit_events(
        self,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[AuditEvent]:
        """Newest first by default. Filters: `operation`, `severity`, `condition`,
        `event_class`, `entity_id`, `kma_id`, `site_id`, `subject_type`, `subject_id`, `since`,
        `until` (a `datetime` is sent as ISO 8601 UTC)."""
        return self._list(
            "/audit-events",
            AuditEvent,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_audit_events(self, **kw: Any) -> Iterator[AuditEvent]:
        return iter_all(self.list_audit_events, **kw)

    def verify_audit_chain(self) -> ChainReport:
        return self._call("GET", "/audit-events/verify", reader(ChainReport))

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
        return self._list(
            "/quorum-operations",
            PendingQuorumOp,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_quorum_operations(self, **kw: Any) -> Iterator[PendingQuorumOp]:
        return iter_all(self.list_quorum_operations, **kw)

    def get_quorum_operation(self, id: str) -> PendingQuorumOp:
        return self._call("GET", f"/quorum-operations/{segment(id)}", reader(PendingQuorumOp))

    def approve_quorum_operation(self, id: str, member: str, passphrase: str) -> PendingQuorumOp:
        """Approve as key split member `member`; at the M-th approval the operation runs, and the
        returned operation says `executed` (or `failed`, with the reason in `result`)."""
        return self._call(
            "POST",
            f"/quorum-operations/{segment(id)}/approve",
            reader(PendingQuorumOp),
            body={"member": member, "passphrase": passphrase},
        )

    def delete_quorum_operation(self, id: str) -> None:
        """Security Officer: a deleted operation never runs. `Conflict` unless it is pending."""
        self._request("DELETE", f"/quorum-operations/{segment(id)}")

    def lock_kma(self, id: str) -> Kma:
        """Security Officer: the KMA serves nothing secret until a quorum unlocks it."""
        return self._call("POST", f"/kmas/{segment(id)}/lock", reader(Kma))

    def unlock_kma(self, id: str, *, credentials: Credentials | None = None) -> Kma | PendingQuorumOp:
        """Quorum-protected; a locked KMA still answers this (and sign-in, status, approvals)."""
        body = _present(credentials=credentials_body(credentials))
        return self._call_or_pending("POST", f"/kmas/{segment(id)}/unlock", reader(Kma), body)

    def get_key_split(self) -> KeySplit:
        return self._call("GET", "/cluster/key-split", reader(KeySplit))

    def change_key_split(
        self,
        threshold: int,
        members: Iterable[str],
        *,
        credentials: Credentials | None = None,
    ) -> KeySplitChange:
        """Re-split under a new root secret among the named new `members`; `credentials` are those
        of current members (the old quorum). Always pending: it runs once every new member has set
        their own passphrase (`enrol_key_split_member`, with the code in `enrolment_codes`) and M
        current members have approved. Old shares then stop working."""
        body = _present(
            threshold=threshold,
            members=[{"name": m} for m in members],
            credentials=credentials_body(credentials),
        )
        return self._call("PUT", "/cluster/key-split", key_split_change, body=body)

    def enrol_key_split_member(self, op_id: str, member: str, code: str, passphrase: str) -> PendingQuorumOp:
        """A new key split member sets their own passphrase for a pending key split change; the
        one-time `code` authenticates them (no sign-in needed)."""
        return self._call(
            "POST",
            f"/quorum-operations/{segment(op_id)}/enrol",
            reader(PendingQuorumOp),
            body={"member": member, "code": code, "passphrase": passphrase},
        )

    def set_quorum_lifetime(self, seconds: int) -> KeySplit:
        """How long new pending quorum operations wait for approvals (default 24 hours)."""
        return self._call("PUT", "/cluster/quorum-lifetime", reader(KeySplit), body={"seconds": seconds})

    def get_autonomous_unlock(self) -> AutonomousUnlock:
        return self._call("GET", "/cluster/autonomous-unlock", reader(AutonomousUnlock))

    def set_autonomous_unlock(
        self, enabled: bool, *, credentials: Credentials | None = None
    ) -> AutonomousUnlock | PendingQuorumOp:
        """Quorum-protected; applies to the KMA this client talks to."""
        body = _present(enabled=enabled, credentials=credentials_body(credentials))
        return self._call_or_pending(
            "PUT", "/cluster/autonomous-unlock", reader(AutonomousUnlock), body
        )
