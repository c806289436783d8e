"""Audit forwarding: a copy of every committed audit event of this KMA, to a syslog collector.

RFC 5424 messages over TLS (RFC 5425), octet-counted (kma/audit/syslog.py). A worker of its own
(kma/worker.py) reads this KMA's chain from the store after the events are committed, so the audit
write path never waits for the collector. Its position per collector (the last chain_seq that collector is
known to have read) is kept in the store: after a restart, a broken connection, or a switch to
another collector and back, it goes on from there.

Syslog over TLS has no acknowledgements, and a socket that still looks open proves nothing: a
collector that stopped reading holds what it was sent in its kernel buffers, and loses it when it
dies. So each batch travels on a connection of its own, which the KMA then ends (TLS
close_notify) and waits for the collector to close in turn. A collector closes a connection only
after reading to its end, so its close, with every byte acknowledged by its TCP, is the
acknowledgement: only then does the position move. Anything else (a reset, a
timeout, bytes its TCP never acknowledged) sends the batch again from the last known position.
An event may therefore arrive twice (the copy names its `kma_id` and `chain_seq`, which tell a
repeat apart), never not at all.

The cluster's setting is made by a Security Officer through the API, and every KMA of the cluster
follows it within a second; `[audit_forwarding]` in a KMA's kma.toml (address, ca_file) sends that
KMA's events elsewhere instead.
"""

from __future__ import annotations

import socket
import ssl
import struct
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cryptography import x509

from kma.audit import syslog
from kma.domain.actor import Actor
from kma.errors import ValidationFailed
from kma.metrics import AUDIT_FORWARDING_ERRORS
from kma.store import Batch, Stmt
from kma.worker import Worker

if TYPE_CHECKING:
    from kma.appliance import Appliance

BATCH = 500  # events per connection
POLL = 0.2  # seconds between looks for new events when idle
SETTING_CHECK = 1.0  # seconds between looks at the cluster's setting (changed through any KMA)
MAX_BACKOFF = 10.0
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0  # how long a collector may take to read a batch and close its end


@dataclass(frozen=True)
class Destination:
    address: str  # HOST:PORT
    ca_pem: str
    source: str  # "api" (the cluster's setting) or "kma.toml" (this KMA's own)

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.address.rpartition(":")
        return host.strip("[]"), int(port)


@dataclass(frozen=True)
class ForwardingStatus:
    address: str | None
    source: str | None
    connected: bool  # the collector took the last batch sent to it
    sent_seq: int  # the last event of this KMA's chain the collector is known to have read
    lag_events: int
    lag_seconds: float
    last_error: str | None


@dataclass(frozen=True)
class ForwardingSetting:
    """The cluster's collector as set (None: never set) and this KMA's forwarding; the API's
    `AuditForwarding` reads it."""

    address: str | None
    ca_pem: str | None
    enabled: bool
    updated_at: int | None
    this_kma: ForwardingStatus


def check_address(address: str) -> str:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
        raise ValidationFailed(
            f"The collector's address must be HOST:PORT, e.g. siem.example.com:6514; {address!r} is not."
        )
    return address


def check_ca(ca_pem: str) -> str:
    try:
        x509.load_pem_x509_certificates(ca_pem.encode())
    except ValueError:
        raise ValidationFailed("The collector's CA must be one or more PEM certificates.") from None
    return ca_pem


def _toml_destination(kma: Appliance) -> Destination | None:
    table = kma.data_dir.settings("audit_forwarding")
    if not table:
        return None
    unknown = sorted(set(table) - {"address", "ca_file"})
    if unknown:
        raise ValidationFailed(
            f"kma.toml [audit_forwarding]: unknown setting {unknown[0]!r}; the settings "
            "are address and ca_file."
        )
    if not isinstance(table.get("address"), str) or not isinstance(table.get("ca_file"), str):
        raise ValidationFailed(
            'kma.toml [audit_forwarding]: address = "HOST:PORT" and ca_file = "FILE" '
            "(the collector's CA, in the data directory) are both needed."
        )
    path = kma.data_dir.root / table["ca_file"]
    try:
        ca_pem = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"kma.toml [audit_forwarding]: cannot read {path}: {exc}.") from None
    return Destination(check_address(table["address"]), check_ca(ca_pem), "kma.toml")


def destination(kma: Appliance) -> Destination | None:
    """Where this KMA sends its events: its own kma.toml first, else the cluster's setting."""
    own = _toml_destination(kma)
    if own is not None:
        return own
    row = kma.store.query_one("SELECT address, ca_pem FROM audit_forwarding WHERE enabled = 1")
    return Destination(row["address"], row["ca_pem"], "api") if row else None


_UPSERT_POSITION = (
    "ON CONFLICT(kma_id, destination) DO UPDATE SET chain_seq = excluded.chain_seq, "
    "updated_at = excluded.updated_at"
)


def _head(kma: Appliance) -> int:
    """The newest event of this KMA's own chain."""
    return int(kma.store.scalar("SELECT chain_seq FROM audit_heads WHERE kma_id = ?", (kma.kma_id,)) or 0)


def get_audit_forwarding(kma: Appliance) -> ForwardingSetting:
    row = kma.store.query_one("SELECT address, ca_pem, enabled, updated_at FROM audit_forwarding")
    status = audit_forwarder(kma).status()
    if row is None:
        return ForwardingSetting(None, None, False, None, status)
    return ForwardingSetting(row["address"], row["ca_pem"], bool(row["enabled"]), row["updated_at"], status)


def set_audit_forwarding(
    kma: Appliance, actor: Actor, address: str, ca_pem: str, enabled: bool
) -> ForwardingSetting:
    """The cluster's collector, followed by every KMA. A collector new to a KMA gets that KMA's
    events from the head of its chain as it is before this change's own event (so the change is the
    first event it gets from this KMA); one it sent to before resumes from its own position."""
    check_address(address)
    check_ca(ca_pem)
    now = kma.clock.now()
    setting = Stmt(
        "INSERT INTO audit_forwarding (id, address, ca_pem, enabled, updated_at) VALUES (1, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET address = excluded.address, ca_pem = excluded.ca_pem, "
        "enabled = excluded.enabled, updated_at = excluded.updated_at",
        (address, ca_pem, int(enabled), now),
    )
    start = Stmt(
        "INSERT INTO audit_forwarding_positions (kma_id, destination, chain_seq, updated_at) "
        "SELECT kma_id, ?, chain_seq, ? FROM audit_heads WHERE true "
        "ON CONFLICT(kma_id, destination) DO NOTHING",
        (address, now),
    )
    said = f"audit forwarding to {address}" if enabled else "audit forwarding turned off"
    kma.commit(actor, "audit.forwarding", [setting, start], said, ("cluster", "audit_forwarding"))
    audit_forwarder(kma).reload()
    return get_audit_forwarding(kma)


class AuditForwarder(Worker):
    """The worker that sends this KMA's committed events to the collector, in chain order."""

    name = "kma-audit-forwarder"
    pause_s = MAX_BACKOFF
    stop_wait_s = 10.0

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma
        self._dest: Destination | None = None
        self._in_flight: ssl.SSLSocket | None = None  # the batch's connection, while it waits
        self._setting_checked = 0.0
        self._backoff = 0.5
        self._confirmed = 0
        self._connected = False
        self._last_error: str | None = None

    # --- control ---------------------------------------------------------------------------
    def start(self) -> None:
        destination(self.kma)  # a wrong [audit_forwarding] stops `kma serve` at start, with the fix
        super().start()

    def interrupt(self) -> None:
        sock = self._in_flight
        if sock is not None:  # a hung collector does not hold up the KMA's stop: end the wait now
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def reload(self) -> None:
        self.wake()

    # --- what the topology, the API and /metrics show --------------------------------------
    def status(self) -> ForwardingStatus:
        dest = self._dest
        if dest is None:
            return ForwardingStatus(None, None, False, 0, 0, 0.0, None)
        kma_id = self.kma.kma_id
        sent = self._confirmed
        head = _head(self.kma)
        oldest = self.kma.store.scalar(
            "SELECT min(created_at) FROM audit_events WHERE kma_id = ? AND chain_seq = "
            "(SELECT min(chain_seq) FROM audit_events WHERE kma_id = ? AND chain_seq > ?)",
            (kma_id, kma_id, sent),
        )
        age = max(0.0, float(self.kma.clock.now() - oldest)) if oldest is not None else 0.0
        return ForwardingStatus(
            dest.address, dest.source, self._connected, sent, max(0, head - sent), age, self._last_error
        )

    # --- the worker ------------------------------------------------------------------------
    def work(self) -> float:
        try:
            if self.woken or time.monotonic() - self._setting_checked >= SETTING_CHECK:
                self.woken = False
                self._setting_checked = time.monotonic()
                self._switch(destination(self.kma))
            if self._dest is None:
                return SETTING_CHECK
            delivered = self._deliver_next(self._dest)
            self._backoff = 0.5
            return 0.0 if delivered else POLL
        except (OSError, ssl.SSLError, ValidationFailed) as exc:
            self._connected = False
            self._last_error = str(exc) or type(exc).__name__
            AUDIT_FORWARDING_ERRORS.inc()
            where = self._dest and self._dest.address
            self.log.warning("audit forwarding to %s: %s", where, self._last_error)
            pause, self._backoff = self._backoff, min(self._backoff * 2, MAX_BACKOFF)
            return pause

    def failed(self, exc: Exception) -> float:
        self._connected = False
        AUDIT_FORWARDING_ERRORS.inc()
        return super().failed(exc)

    def _switch(self, dest: Destination | None) -> None:
        if dest == self._dest:
            return
        self._connected, self._last_error = False, None
        if dest is not None:
            seq = self.kma.store.scalar(
                "SELECT chain_seq FROM audit_forwarding_positions WHERE kma_id = ? AND destination = ?",
                (self.kma.kma_id, dest.address),
            )
            if seq is not None:  # a collector this KMA sent to before: on from where it was
                self._confirmed = int(seq)
            else:  # one it never sent to (e.g. its own kma.toml's) gets its events from now on
                self._save(dest, _head(self.kma))
        self._dest = dest  # last: the status never shows one collector with another's position

    def _deliver_next(self, dest: Destination) -> bool:
        """Send the next batch on a connection of its own; the position moves only once the
        collector is known to have read it (`_read_by_collector`)."""
        rows = self.kma.store.query(
            "SELECT * FROM audit_events WHERE kma_id = ? AND chain_seq > ? ORDER BY chain_seq LIMIT ?",
            (self.kma.kma_id, self._confirmed, BATCH),
        )
        if not rows:
            return False
        sock = self._in_flight = _connect(dest)
        try:
            sock.sendall(b"".join(syslog.frame(syslog.message(dict(r))) for r in rows))
            _read_by_collector(sock)
        finally:
            self._in_flight = None
            sock.close()
        self._save(dest, int(rows[-1]["chain_seq"]))
        self._connected = True
        return True

    def _save(self, dest: Destination, seq: int) -> None:
        self.kma.store.write(
            Batch(
                [
                    Stmt(
                        "INSERT INTO audit_forwarding_positions (kma_id, destination, chain_seq, updated_at) "
                        f"VALUES (?, ?, ?, ?) {_UPSERT_POSITION}",
                        (self.kma.kma_id, dest.address, seq, self.kma.clock.now()),
                    )
                ]
            )
        )
        self._confirmed = seq
        self._last_error = None


def _connect(dest: Destination) -> ssl.SSLSocket:
    host, port = dest.host_port
    context = ssl.create_default_context(cadata=dest.ca_pem)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    raw = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
    try:
        return context.wrap_socket(raw, server_hostname=host)
    except BaseException:
        raw.close()
        raise


def _read_by_collector(sock: ssl.SSLSocket) -> None:
    """Close our end and wait for the collector to close its own; raises ConnectionError unless
    it did so having read everything.

    A collector closes a connection the sender closed once it has read to the end; had it closed
    with bytes unread, or before they came, its TCP would have reset the connection instead of
    acknowledging them. So: our close_notify and FIN, then the collector's close (its
    close_notify, or its FIN alone), then nothing of ours left unacknowledged."""
    sock.settimeout(READ_TIMEOUT)
    try:
        raw = sock.unwrap()  # sends close_notify; returns on the collector's own close_notify
    except ssl.SSLEOFError:
        raw = None  # the collector closed its TCP end without a close_notify: closed all the same
    except ssl.SSLError as exc:
        raise ConnectionError(f"the collector broke the connection: {exc}") from None
    if raw is not None:
        raw.shutdown(socket.SHUT_WR)
        while raw.recv(4096):
            pass
    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) or _unacknowledged(sock) > 0:
        raise ConnectionError("the collector closed the connection before reading every event")


def _unacknowledged(sock: socket.socket) -> int:
    """Bytes sent on `sock` that the peer's TCP has not acknowledged (Linux's SIOCOUTQ; a reset,
    which empties it, shows in SO_ERROR). Other systems (a manager's local KMA) have no such
    count: there the collector's close after ours, without a reset, is the whole check."""
    if not sys.platform.startswith("linux"):
        return 0
    import fcntl
    import termios

    return int(struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0])


def audit_forwarder(kma: Appliance) -> AuditForwarder:
    """This KMA's one forwarder (started by `kma serve`, kma/runtime/running.py)."""
    return kma.part(AuditForwarder)
