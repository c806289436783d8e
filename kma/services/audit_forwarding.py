"""Audit forwarding: a copy of every committed audit event of this KMA, to a syslog collector.

RFC 5424 messages over TLS (RFC 5425), octet-counted (kma/audit/syslog.py). A thread of its own
reads this KMA's chain from the store after the events are committed, so the audit write path
never waits for the collector. Its position (the last chain_seq the collector confirmed) is kept
in the store: after a restart, or when the collector comes back, it goes on from there.

Syslog over TCP has no acknowledgements. A batch counts as delivered once the connection is
still open at the next look (a collector that stopped closes it); otherwise it is sent again. So
an event may arrive twice if the collector dies right after reading it, never not at all; the
copy names its `kma_id` and `chain_seq`, which tell a repeat apart.

The cluster's setting is made by a Security Officer through the API; `[audit_forwarding]` in a
KMA's kma.toml (address, ca_file) sends that KMA's events elsewhere instead.
"""

from __future__ import annotations

import logging
import select
import socket
import ssl
import threading
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from cryptography import x509

from kma.audit import syslog
from kma.domain.actor import Actor
from kma.errors import ValidationFailed
from kma.metrics import AUDIT_FORWARDING_ERRORS
from kma.store import Batch, Stmt

if TYPE_CHECKING:
    from kma.appliance import Appliance

log = logging.getLogger(__name__)

BATCH = 500  # events per send
POLL = 0.2  # seconds between looks for new events when idle
MAX_BACKOFF = 10.0
CONNECT_TIMEOUT = 10.0


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
    connected: bool
    sent_seq: int  # the last event of this KMA's chain the collector confirmed
    lag_events: int
    lag_seconds: float
    last_error: str | None


def check_address(address: str) -> str:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
        raise ValidationFailed(f"The collector's address must be HOST:PORT, e.g. siem.example.com:6514; "
                               f"{address!r} is not.")  # fmt: skip
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
        raise ValidationFailed(f"kma.toml [audit_forwarding]: unknown setting {unknown[0]!r}; the settings "
                               "are address and ca_file.")  # fmt: skip
    if not isinstance(table.get("address"), str) or not isinstance(table.get("ca_file"), str):
        raise ValidationFailed('kma.toml [audit_forwarding]: address = "HOST:PORT" and ca_file = "FILE" '
                               "(the collector's CA, in the data directory) are both needed.")  # fmt: skip
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
    "ON CONFLICT(kma_id) DO UPDATE SET destination = excluded.destination, "
    "chain_seq = excluded.chain_seq, updated_at = excluded.updated_at"
)


def _head(kma: Appliance) -> int:
    """The newest event of this KMA's own chain."""
    return int(kma.store.scalar("SELECT chain_seq FROM audit_heads WHERE kma_id = ?", (kma.kma_id,)) or 0)


def get_setting(kma: Appliance) -> dict[str, Any]:
    row = kma.store.query_one("SELECT address, ca_pem, enabled, updated_at FROM audit_forwarding")
    status = audit_forwarder(kma).status()
    return {
        "address": row["address"] if row else None,
        "ca_pem": row["ca_pem"] if row else None,
        "enabled": bool(row["enabled"]) if row else False,
        "updated_at": row["updated_at"] if row else None,
        "this_kma": asdict(status),
    }


def set_setting(kma: Appliance, actor: Actor, address: str, ca_pem: str, enabled: bool) -> dict[str, Any]:
    """The cluster's collector. This KMA starts from the head of its chain as it is before this
    change's own event, so the change is the first event the collector gets."""
    check_address(address)
    check_ca(ca_pem)
    now, me = kma.clock.now(), kma.kma_id
    setting = Stmt(
        "INSERT INTO audit_forwarding (id, address, ca_pem, enabled, updated_at) VALUES (1, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET address = excluded.address, ca_pem = excluded.ca_pem, "
        "enabled = excluded.enabled, updated_at = excluded.updated_at",
        (address, ca_pem, int(enabled), now),
    )
    start = Stmt(
        "INSERT INTO audit_forwarding_positions (kma_id, destination, chain_seq, updated_at) "
        "SELECT ?, ?, coalesce((SELECT chain_seq FROM audit_heads WHERE kma_id = ?), 0), ? "
        "WHERE NOT EXISTS (SELECT 1 FROM audit_forwarding_positions WHERE kma_id = ? AND destination = ?) "
        f"{_UPSERT_POSITION}",
        (me, address, me, now, me, address),
    )
    said = f"audit forwarding to {address}" if enabled else "audit forwarding turned off"
    kma.commit(actor, "audit.forwarding", [setting, start], said, ("cluster", "audit_forwarding"))
    audit_forwarder(kma).reload()
    return get_setting(kma)


class AuditForwarder:
    """The thread that sends this KMA's committed events to the collector, in chain order."""

    def __init__(self, kma: Appliance) -> None:
        self.kma = kma
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: ssl.SSLSocket | None = None
        self._dest: Destination | None = None
        self._sent: int | None = None  # sent, not yet confirmed
        self._confirmed = 0
        self._last_error: str | None = None

    # --- control ---------------------------------------------------------------------------
    def start(self) -> None:
        destination(self.kma)  # a wrong [audit_forwarding] stops `kma serve` at start, with the fix
        self._thread = threading.Thread(target=self._run, name="kma-audit-forwarder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._close()

    def reload(self) -> None:
        self._wake.set()

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
        return ForwardingStatus(dest.address, dest.source, self._sock is not None, sent, max(0, head - sent),
                                age, self._last_error)  # fmt: skip

    # --- the thread ------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                if self._wake.is_set() or self._dest is None:
                    self._wake.clear()
                    self._switch(destination(self.kma))
                if self._dest is None:
                    self._wake.wait(5.0)
                    continue
                self._confirm()
                if not self._send_next():
                    self._wake.wait(POLL)
                backoff = 0.5
            except (OSError, ssl.SSLError, ValidationFailed) as exc:
                self._last_error = str(exc) or type(exc).__name__
                AUDIT_FORWARDING_ERRORS.inc()
                log.warning("audit forwarding to %s: %s", self._dest and self._dest.address, self._last_error)
                self._close()
                self._wake.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
            except Exception:
                log.exception("audit forwarding failed")
                AUDIT_FORWARDING_ERRORS.inc()
                self._close()
                self._wake.wait(MAX_BACKOFF)

    def _switch(self, dest: Destination | None) -> None:
        if dest == self._dest:
            return
        self._close()
        self._dest = dest
        if dest is None:
            return
        row = self.kma.store.query_one(
            "SELECT destination, chain_seq FROM audit_forwarding_positions WHERE kma_id = ?",
            (self.kma.kma_id,),
        )
        if row is not None and row["destination"] == dest.address:
            self._confirmed = int(row["chain_seq"])
        else:  # a new collector gets this KMA's events from now on
            self._save(_head(self.kma))

    def _send_next(self) -> bool:
        assert self._dest is not None
        after = self._sent if self._sent is not None else self._confirmed
        rows = self.kma.store.query(
            "SELECT * FROM audit_events WHERE kma_id = ? AND chain_seq > ? ORDER BY chain_seq LIMIT ?",
            (self.kma.kma_id, after, BATCH),
        )
        if not rows:
            return False
        sock = self._connection(self._dest)
        sock.sendall(b"".join(syslog.frame(syslog.message(dict(r))) for r in rows))
        self._sent = int(rows[-1]["chain_seq"])
        return True

    def _confirm(self) -> None:
        """What was sent counts as delivered if the connection is still open now."""
        if self._sent is None:
            return
        if self._sock is None or not _open(self._sock):
            self._close()  # send it again from the last confirmed event
            raise ConnectionError("the collector closed the connection")
        self._save(self._sent)
        self._sent = None

    def _save(self, seq: int) -> None:
        assert self._dest is not None
        self.kma.store.write(Batch([Stmt(
            "INSERT INTO audit_forwarding_positions (kma_id, destination, chain_seq, updated_at) "
            f"VALUES (?, ?, ?, ?) {_UPSERT_POSITION}",
            (self.kma.kma_id, self._dest.address, seq, self.kma.clock.now()),
        )]))  # fmt: skip
        self._confirmed = seq
        self._last_error = None

    def _connection(self, dest: Destination) -> ssl.SSLSocket:
        if self._sock is not None:
            return self._sock
        host, port = dest.host_port
        context = ssl.create_default_context(cadata=dest.ca_pem)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        raw = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        try:
            self._sock = context.wrap_socket(raw, server_hostname=host)
        except BaseException:
            raw.close()
            raise
        return self._sock

    def _close(self) -> None:
        self._sent = None
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None


def _open(sock: ssl.SSLSocket) -> bool:
    """A collector never writes to us: a readable socket means it closed (or broke) the connection."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return True
    try:
        sock.setblocking(False)
        return bool(sock.recv(1))
    except (ssl.SSLWantReadError, BlockingIOError):
        return True
    except (OSError, ssl.SSLError):
        return False
    finally:
        sock.settimeout(CONNECT_TIMEOUT)


_FORWARDERS: WeakKeyDictionary[Appliance, AuditForwarder] = WeakKeyDictionary()
_FORWARDERS_LOCK = threading.Lock()


def audit_forwarder(kma: Appliance) -> AuditForwarder:
    """This KMA's one forwarder (started by `kma serve`, kma/services/running.py)."""
    forwarder = _FORWARDERS.get(kma)
    if forwarder is None:
        with _FORWARDERS_LOCK:
            forwarder = _FORWARDERS.setdefault(kma, AuditForwarder(kma))
    return forwarder
