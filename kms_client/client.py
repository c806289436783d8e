"""`KmsClient`: the KMA management API's calls (generated, calls.py, one per route and named as
the route's function) over one connection, plus what the OpenAPI document cannot say: the
connection itself (pinned TLS, token, failover), paging iterators, files saved with progress, and
answers composed on the client (audit.py, backups.py, membership.py, alerts.py, transfers.py,
below).

Threading: use a client from one thread at a time (e.g. the GUI's serial worker lane); handing it
from one worker thread to another is fine, since the session token is a single attribute.
Never call it on the GUI thread: every method does network I/O and may block for up to
`timeout` seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx

from ._http import API_VERSION, Credentials, credentials_body, present
from .alerts import AlertCalls
from .audit import AuditCalls
from .backups import BackupCalls
from .connection import Connection
from .errors import IncompatibleKma, NotFound, Unauthenticated
from .failover import Failover, KnownKma
from .membership import MembershipCalls
from .models import KeySplitChange, key_split_change
from .paging import iter_all, iter_pages
from .reader import Page
from .release import release
from .transfers import TransferCalls
from .trust import Trust, renews
from .wire import (
    About,
    Agent,
    DataUnit,
    EnrollmentPassphrase,
    Key,
    KeyGroup,
    KeyPolicy,
    Kma,
    PendingQuorumOp,
    Session,
    Site,
    User,
)

T = TypeVar("T")


class KmsClient(AuditCalls, BackupCalls, MembershipCalls, AlertCalls, TransferCalls):
    """A signed-in (or not yet) connection to one KMA, verified against a pinned cluster CA.

    `ca_pem` is the CA saved at first contact (`Trust.fetch`). Without it the CA is read from
    the KMA again and must still match `ca_fingerprint`, so the pin is what is trusted either
    way. Refuses (`TrustError`) a CA whose fingerprint is not `ca_fingerprint`.
    `transport` replaces the network, for tests.

    Every route is a method named as the route's function (`approve_quorum_operation` for
    `POST /quorum-operations/{op_id}/approve`), generated in calls.py; this class and its bases
    add only what generation cannot know.
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
        topology = self.get_topology()
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

    # -- every item of a list, across its pages -------------------------------------------------

    def iter_sites(self, **kw: Any) -> Iterator[Site]:
        return iter_all(self.list_sites, **kw)

    def iter_kmas(self, **kw: Any) -> Iterator[Kma]:
        return iter_all(self.list_kmas, **kw)

    def iter_users(self, **kw: Any) -> Iterator[User]:
        return iter_all(self.list_users, **kw)

    def iter_key_policies(self, **kw: Any) -> Iterator[KeyPolicy]:
        return iter_all(self.list_key_policies, **kw)

    def iter_key_groups(self, **kw: Any) -> Iterator[KeyGroup]:
        return iter_all(self.list_key_groups, **kw)

    def iter_agents(self, **kw: Any) -> Iterator[Agent]:
        return iter_all(self.list_agents, **kw)

    def iter_data_units(self, **kw: Any) -> Iterator[DataUnit]:
        return iter_all(self.list_data_units, **kw)

    def iter_keys(self, **kw: Any) -> Iterator[Key]:
        return iter_all(self.list_keys, **kw)

    def iter_quorum_operations(self, **kw: Any) -> Iterator[PendingQuorumOp]:
        return iter_all(self.list_quorum_operations, **kw)

    # -- what the document cannot say ------------------------------------------------------------

    def get_about(self) -> About:
        """What this KMA offers (release, API version, capabilities), before sign-in: a manager
        hides what the KMA lacks. A KMA this client cannot manage raises `IncompatibleKma` naming
        its release: one too old to say (release 0.1.0 has no GET /about), or one speaking a newer
        API major version."""
        try:
            about = super().get_about()
        except NotFound:
            older = self.get_status().version
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

    def sign_in(self, user_id: str, passphrase: str, code: str | None = None) -> Session:
        """Sign in and keep the token for later calls. Wrong credentials: `Unauthenticated`;
        too many failures in a row: `LockedOut`; a user whose two-step sign-in is on and no
        `code` (from their authenticator app, or a recovery code): `SecondFactorRequired`."""
        session = super().sign_in(user_id, passphrase, code)
        self._connection.token = session.token
        return session

    def ca_renewal(self) -> Trust | None:
        """The cluster CA's renewed certificate when the cluster renewed the pinned one (the same name
        and key, a later end; docs/security.md), else None: save it as the new pin, so that this
        client still connects once the pinned certificate has expired."""
        connection = self._connection
        if connection.renewed_ca is not None:  # accepted at connection: the pinned one had expired
            return connection.renewed_ca
        served = self.get_ca().ca_pem
        if served.strip() != connection.ca_pem.strip() and renews(connection.ca_pem, served):
            return Trust.from_pem(served)
        return None

    def sign_out(self) -> None:
        """End the session on the KMA and forget the token; an already expired session is fine."""
        if self._connection.token is None:
            return
        try:
            super().sign_out()
        except Unauthenticated:
            pass
        finally:
            self._connection.token = None

    # One list of passphrases however many agents: the KMA takes 100 at a time.
    def new_enrollment_passphrases(  # type: ignore[override]
        self, agent_ids: Iterable[str]
    ) -> list[EnrollmentPassphrase]:
        """Operator: a new one-time passphrase for each agent (drives that cannot renew their own
        certificate), asked for 100 at a time; each replaces the agent's earlier one."""
        out: list[EnrollmentPassphrase] = []
        ids = list(agent_ids)
        for start in range(0, len(ids), 100):
            out.extend(super().new_enrollment_passphrases(ids[start : start + 100]).passphrases)
        return out

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
