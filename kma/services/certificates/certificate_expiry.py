"""When each certificate of the cluster expires, and the warnings before it does.

The certificates are the cluster CA's (the `cluster` row), each KMA's listener and node
certificates (`kma_certificates`: a KMA records its own at start and at renewal, a join records
the joining KMA's; the current one of a kind is the newest not revoked) and each enrolled agent's
(`agents.certificate_not_after`). A warning starts as each threshold of kma.toml's
`[certificates] warn_before` is reached (90 and 30 days by default) and again when the certificate
has expired; each is an audit event once (`certificate_warnings` remembers it was given), whichever
KMA's certificate watch (kma/services/certificates/certificate_renewal.py) notices first.

Certificates are judged on the machine's clock (`real_now`), as TLS judges them, even when a test
clock moves the KMA's own dates: a test proves expiry and renewal with short validities and real
handshakes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.certificate_settings import CertificateSettings
from kma.crypto import CertifiedKey, load_certificate
from kma.crypto.ca import CLOCK_SKEW
from kma.services.backups import describe_duration
from kma.services.paging import LAST_SECOND
from kma.store import Batch, Refused, Stmt

KIND_WORDS = {
    "ca": "the cluster CA certificate",
    "listener": "listener certificate",
    "node": "node certificate",
    "agent": "certificate",
}
_PURPOSE_KIND = {"server": "listener", "node": "node"}
AGENTS_SHOWN = 20  # the soonest-expiring agents' certificates a dashboard lists one by one


@dataclass(frozen=True)
class Expiry:
    kind: str  # ca, listener, node or agent
    owner: str  # the cluster's name, a KMA ID or an agent ID
    certificate: str  # serial (hex), or an agent certificate's SHA-256
    expires_at: int
    seconds_left: int
    warning: int | None  # the nearest warn_before reached (0: expired); None: no warning yet
    warned: int | None = None  # the nearest one an audit event was given for

    def as_answer(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "owner": self.owner,
            "expires_at": self.expires_at,
            "seconds_left": self.seconds_left,
            "warning": self.warning is not None,
            "expired": self.seconds_left <= 0,
        }

    def describe(self) -> str:
        whose = (
            KIND_WORDS["ca"].capitalize()
            if self.kind == "ca"
            else f"{'Agent' if self.kind == 'agent' else 'KMA'} {self.owner}'s {KIND_WORDS[self.kind]}"
        )
        day = datetime.fromtimestamp(self.expires_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        if self.seconds_left <= 0:
            return f"{whose} expired on {day}"
        return f"{whose} expires in {describe_duration(self.seconds_left)} ({day})"


def real_now() -> int:
    """The machine's clock: what every TLS handshake checks a certificate against."""
    return int(time.time())


def settings(kma: Appliance) -> CertificateSettings:
    return kma.data_dir.certificate_settings()


def cluster_ca(kma: Appliance) -> CertifiedKey:
    """The cluster CA with its private key (unwrapped under the master key: the KMA is unlocked)."""
    row = kma.store.query_one("SELECT ca_cert_pem, ca_key_wrapped FROM cluster WHERE id = 1")
    assert row is not None
    return CertifiedKey(
        row["ca_cert_pem"].encode(), kma.vault.master().unwrap("cluster-ca-key", row["ca_key_wrapped"])
    )


def first_certificate(pem: str) -> str:
    """The leaf of a chain file such as DIR/tls/server.pem (the KMA's certificate, then the CA's)."""
    end = "-----END CERTIFICATE-----"
    return pem[: pem.index(end) + len(end)] + "\n"


@lru_cache(maxsize=8)
def serial_and_expiry(pem: str) -> tuple[str, int]:
    cert = load_certificate(pem.encode("ascii"))
    return format(cert.serial_number, "x"), int(cert.not_valid_after_utc.timestamp())


def recorded(kma_id: str, purpose: str, pem: str) -> Stmt:
    """Records a KMA's certificate of `purpose` (server, node) as its current one; nothing if known."""
    serial, not_after = serial_and_expiry(pem)
    # When it was issued: every leaf is back-dated by CLOCK_SKEW (kma/crypto/ca.py), and the newest
    # issued is a KMA's current one, so a renewal minutes after a join must not look older than it.
    start = load_certificate(pem.encode("ascii")).not_valid_before_utc + CLOCK_SKEW
    issued = int(start.timestamp())
    return Stmt(
        "INSERT INTO kma_certificates (serial, kma_id, purpose, not_after, issued_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (serial) DO NOTHING",
        (serial, kma_id, purpose, not_after, issued),
    )


def _level(seconds_left: int, warn_before: tuple[int, ...]) -> int | None:
    reached = [t for t in (*warn_before, 0) if seconds_left <= t]
    return min(reached) if reached else None


_WARNED = "(SELECT min(w.warn_before) FROM certificate_warnings w WHERE w.certificate = {})"


def _rows(kma: Appliance, horizon: int, agents: int) -> list[tuple[str, str, str, int, int | None]]:
    """(kind, owner, certificate, expires_at, warned) of the CA, the KMAs' current certificates and
    up to `agents` agents' certificates expiring before `horizon`, soonest first."""
    store = kma.store
    ca = store.query_one("SELECT name, ca_cert_pem FROM cluster WHERE id = 1")
    out: list[tuple[str, str, str, int, int | None]] = []
    if ca is not None:
        serial, not_after = serial_and_expiry(ca["ca_cert_pem"])
        warned = store.scalar("SELECT " + _WARNED.format("?"), (serial,))
        out.append(("ca", ca["name"], serial, not_after, warned))
    for r in store.query(
        "SELECT c.kma_id, c.purpose, c.serial, c.not_after, " + _WARNED.format("c.serial") + " AS warned "
        "FROM kma_certificates c JOIN kmas k ON k.id = c.kma_id "
        "WHERE k.removed_at IS NULL AND c.revoked_at IS NULL AND c.issued_at = (SELECT max(d.issued_at) "
        "FROM kma_certificates d "
        "WHERE d.kma_id = c.kma_id AND d.purpose = c.purpose AND d.revoked_at IS NULL) "
        "ORDER BY c.kma_id, c.purpose DESC"
    ):
        out.append((_PURPOSE_KIND[r["purpose"]], r["kma_id"], r["serial"], r["not_after"], r["warned"]))
    if not any(kind == "listener" and owner == kma.kma_id for kind, owner, *_ in out):
        # never served yet (`kma status` after set-up): its own certificate is on its disk
        pem = first_certificate(kma.data_dir.server_cert.read_text(encoding="ascii"))
        serial, not_after = serial_and_expiry(pem)
        warned = store.scalar("SELECT " + _WARNED.format("?"), (serial,))
        out.insert(1, ("listener", kma.kma_id, serial, not_after, warned))
    for r in store.query(
        "SELECT id, certificate_fingerprint AS fp, certificate_not_after AS not_after, "
        + _WARNED.format("certificate_fingerprint")
        + " AS warned FROM agents WHERE certificate_not_after <= ? ORDER BY certificate_not_after LIMIT ?",
        (horizon, agents),
    ):
        out.append(("agent", r["id"], r["fp"], r["not_after"], r["warned"]))
    return out


def expiries(kma: Appliance, agents: int = AGENTS_SHOWN, every_agent: bool = False) -> list[Expiry]:
    """The CA's, every KMA's and the soonest-expiring agents' certificates (those a warning has
    reached, or `every_agent`), with how long each has left."""
    warn_before = settings(kma).warn_before
    now = real_now()
    horizon = LAST_SECOND if every_agent else now + warn_before[0]
    found = []
    for kind, owner, certificate, expires_at, warned in _rows(kma, horizon, agents):
        left = expires_at - now
        found.append(Expiry(kind, owner, certificate, expires_at, left, _level(left, warn_before), warned))
    return found


def agents_warned(kma: Appliance) -> tuple[int, int]:
    """How many agents' certificates a warning has reached, and how many of them expired."""
    now = real_now()
    row = kma.store.query_one(
        "SELECT count(*) AS near, coalesce(sum(certificate_not_after <= :now), 0) AS expired FROM agents "
        "WHERE certificate_not_after <= :horizon",
        {"now": now, "horizon": now + settings(kma).warn_before[0]},
    )
    return (int(row["near"]), int(row["expired"])) if row else (0, 0)


def warnings(kma: Appliance) -> list[str]:
    """The dashboard's lines: each KMA or CA certificate a warning reached, and the agents' in one."""
    found = expiries(kma, agents=1)
    out = [e.describe() + "." for e in found if e.warning is not None and e.kind != "agent"]
    near, expired = agents_warned(kma)
    if near:
        first = next(e for e in found if e.kind == "agent")
        out.append(
            f"{near} agent certificate{'s' if near != 1 else ''} expire within "
            f"{describe_duration(settings(kma).warn_before[0])}"
            + (f", {expired} already expired" if expired else "")
            + f"; the first: {first.describe()}. An agent renews its own before it expires; "
            "drives that cannot need a new enrollment passphrase (Agents page, filter by expiry)."
        )
    return out


def announce_warnings(kma: Appliance) -> int:
    """An audit event for each certificate whose warning started since the last round; how many.
    Another KMA that gave the same warning a moment ago wins; this one then says nothing."""
    given = 0
    for expiry in expiries(kma, agents=500):
        level = expiry.warning
        if level is None or (expiry.warned is not None and expiry.warned <= level):
            continue
        subject = ("agent", expiry.owner) if expiry.kind == "agent" else ("kma", kma.kma_id)
        if expiry.kind in ("listener", "node"):
            subject = ("kma", expiry.owner)
        event = kma.record(
            kma.itself,
            "certificate.expiry_warning",
            expiry.describe() + ("; it no longer works" if level == 0 else ""),
            subject=subject,
            condition=Condition.ERROR if level == 0 else Condition.WARNING,
            retention=Retention.LONG,
            event_class="security",
        )
        statement = Stmt(
            "INSERT INTO certificate_warnings (certificate, warn_before, warned_at) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (expiry.certificate, level, real_now()),
            expect=1,
            refusal="another KMA gave this warning a moment ago",
        )
        try:
            kma.store.write(Batch([statement], event))
        except Refused:
            continue
        given += 1
    return given
