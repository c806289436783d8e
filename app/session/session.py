"""The signed-in session and the connection's health.

One :class:`SessionController` owns the ``KmsClient`` after sign-in. Pages never see a traceback
for the two failures that are about the session rather than the operation:

* ``Unauthenticated`` (token expired or revoked): :attr:`session_expired` fires once; the main
  window asks for the passphrase again over the page the user was on, then :meth:`resume`.
* The KMA stops answering in a cluster: the client goes on with another KMA of the profile's
  list (learnt at sign-in and every :data:`LEARN_CLUSTER_MS` while connected, saved with the
  profile) and :attr:`failed_over` says which; the session goes on there (sessions are
  replicated), or, should that KMA refuse the token, ``Unauthenticated`` asks for the passphrase.
* ``KmaUnreachable`` (no KMA of the cluster answers): the state becomes ``reconnecting``; a probe
  retries with exponential backoff (1, 2, 4 ... 30 s) until a KMA answers, then :attr:`reconnected`
  fires so pages reload.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

import kms_client
from app.operations import Operations
from app.session.profiles import ConnectionProfile

MAX_BACKOFF_S = 30
LEARN_CLUSTER_MS = 60_000  # how often the profile's list of the cluster's KMAs is refreshed


class ConnectionState(Enum):
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    EXPIRED = "expired"
    SIGNED_OUT = "signed_out"


class SessionController(QObject):
    """Holds the client, the signed-in user, and reacts to session-level failures."""

    state_changed = Signal(object)  # ConnectionState
    session_expired = Signal()
    reconnected = Signal()
    retry_scheduled = Signal(int)  # seconds until the next reconnect attempt
    user_changed = Signal(object)  # kms_client.User
    failed_over = Signal(object)  # kms_client.Failover: now connected to another KMA
    cluster_learnt = Signal(object)  # tuple[kms_client.KnownKma, ...], saved with the profile

    def __init__(self, ops: Operations, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.ops = ops
        self.client: kms_client.KmsClient | None = None
        self.user: kms_client.User | None = None
        self.about: kms_client.About | None = None  # what the KMA offers (its release, capabilities)
        self.profile: ConnectionProfile | None = None
        self.local_mode = False
        self.state = ConnectionState.SIGNED_OUT
        self._attempt = 0
        self._retry = QTimer(self)
        self._retry.setSingleShot(True)
        self._retry.timeout.connect(self.retry_now)
        self._learn = QTimer(self)
        self._learn.setInterval(LEARN_CLUSTER_MS)
        self._learn.timeout.connect(self.learn_cluster)
        self.last_error: str = ""

    # -- lifecycle ----------------------------------------------------------------------------
    def start(
        self,
        client: kms_client.KmsClient,
        user: kms_client.User,
        profile: ConnectionProfile,
        about: kms_client.About | None = None,
    ) -> None:
        self.client = client
        self.about = about
        self.ops.client = client
        self.profile = profile
        client.on_failover = self.failed_over.emit  # from a worker thread: a queued signal
        self._set_user(user)
        self._set_state(ConnectionState.CONNECTED)
        self.learn_cluster()
        self._learn.start()

    def resume(self, user: kms_client.User) -> None:
        """After signing in again (same client, new token): carry on where the user was."""
        self._set_user(user)
        self._set_state(ConnectionState.CONNECTED)
        self.reconnected.emit()

    def sign_out(self) -> None:
        """End the session on the KMA (best effort, in the background) and forget the client."""
        client = self.client
        self._retry.stop()
        self._learn.stop()
        self._set_state(ConnectionState.SIGNED_OUT)
        if client is not None:
            self.ops.write(lambda ctx: ctx.client.sign_out(), client=client, quiet=True)
        self.client = None
        self.user = None

    def may(self, permission: str) -> bool:
        """Whether the signed-in user may do `permission` (a name of the KMA's grant table, e.g.
        ``agents.write``), as the KMA said at sign-in: the manager asks this, never a role."""
        return self.user is not None and self.user.may(permission)

    def offers(self, capability: str) -> bool:
        """Whether the KMA signed in to offers `capability` (kma/capabilities.py), as it said at
        sign-in: the manager hides what a KMA of another release lacks, with a note."""
        return self.about is not None and capability in self.about.capabilities

    # -- session-level failures ---------------------------------------------------------------
    def expire(self) -> None:
        if self.state in (ConnectionState.EXPIRED, ConnectionState.SIGNED_OUT):
            return
        self._set_state(ConnectionState.EXPIRED)
        self.session_expired.emit()

    def connection_lost(self, reason: str = "") -> None:
        if self.state is ConnectionState.SIGNED_OUT:
            return
        self.last_error = reason
        if self.state is not ConnectionState.RECONNECTING:
            self._attempt = 0
            self._set_state(ConnectionState.RECONNECTING)
            self._schedule()

    def retry_now(self) -> None:
        """Probe the KMA now (the banner's Retry button, or the backoff timer)."""
        if self.state is not ConnectionState.RECONNECTING or self.client is None:
            return
        self._retry.stop()
        self.ops.read(
            lambda ctx: ctx.client.get_me(),
            quiet=True,
            success=self._probe_ok,
            failure=self._probe_failed,
        )

    def learn_cluster(self) -> None:
        """Refresh the cluster's KMAs (the client fails over among them) and keep them with the
        profile: a KMA added appears, a removed one leaves."""
        if self.client is None or self.state is not ConnectionState.CONNECTED:
            return
        self.ops.read(
            lambda ctx: ctx.client.learn_cluster(),
            quiet=True,
            success=self._learnt,
            failure=lambda _exc: True,
        )

    def _learnt(self, kmas: tuple[kms_client.KnownKma, ...]) -> None:
        profile = self.profile
        if profile is None or list(kmas) == profile.kmas:
            return
        profile.kmas = list(kmas)
        self.cluster_learnt.emit(kmas)

    def next_delay(self) -> int:
        return int(min(MAX_BACKOFF_S, 2**self._attempt))

    # -- internals ----------------------------------------------------------------------------
    def _schedule(self) -> None:
        delay = self.next_delay()
        self._attempt += 1
        self._retry.start(delay * 1000)
        self.retry_scheduled.emit(delay)

    def _probe_ok(self, user: Any) -> None:
        if self.state is not ConnectionState.RECONNECTING:
            return
        self._attempt = 0
        self._set_user(user)
        self._set_state(ConnectionState.CONNECTED)
        self.reconnected.emit()

    def _probe_failed(self, exc: BaseException) -> bool:
        if self.state is not ConnectionState.RECONNECTING:
            return True
        if isinstance(exc, kms_client.Unauthenticated):
            self._set_state(ConnectionState.CONNECTED)  # reachable again, but must sign in
            self.expire()
            return True
        self.last_error = str(exc)
        self._schedule()
        return True

    def _set_user(self, user: kms_client.User) -> None:
        self.user = user
        self.user_changed.emit(user)

    def _set_state(self, state: ConnectionState) -> None:
        if state is not self.state:
            self.state = state
            self.state_changed.emit(state)
