"""Agent enrollment: an agent ID, its one-time passphrase and a CSR become a certificate.

The passphrase is checked against its Argon2id hash, then the cluster CA signs the CSR with
subject CN=<agent ID> (whatever the CSR claims), and one guarded UPDATE clears the passphrase
hash *only if it is still the hash that was checked* and the agent is still enabled, recording
the new certificate's fingerprint. Two enrollments racing with one passphrase: one wins, the
other is refused. The certificate fingerprint makes any earlier certificate of the agent stop
working on the service listener.

Refusals say no more than needed: an unknown agent and a wrong passphrase get the same answer
(and cost the same Argon2id time). A passphrase unused for `PASSPHRASE_LIFETIME` expires, and
after `MAX_FAILURES` wrong passphrases an agent ID is refused for `LOCKOUT` seconds.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import timedelta
from functools import cache
from typing import Any

from cryptography.hazmat.primitives import serialization

from kma.appliance import Appliance
from kma.crypto import (
    CertifiedKey,
    CryptoError,
    hash_passphrase,
    load_certificate,
    sign_agent_csr,
    verify_passphrase,
)
from kma.domain.actor import Actor
from kma.domain.validation import ID_PATTERN
from kma.errors import (
    ClusterUnavailable,
    Conflict,
    Forbidden,
    KmaError,
    LockedOut,
    Unauthenticated,
    ValidationFailed,
)
from kma.services import refusals
from kma.services.agents import DRIVE, drive_fields
from kma.services.common import describe, patch
from kma.services.integrity import entry_signatures
from kma.steps import step
from kma.store import Stmt

PASSPHRASE_LIFETIME = 7 * 86400
MAX_CSR_BYTES = 16384
MAX_FAILURES, LOCKOUT = 5, 900
MAX_TRACKED = 10_000
_AGENT_ID = re.compile(ID_PATTERN)
WRONG = "The agent ID or enrollment passphrase is wrong, or the passphrase was already used."
NOT_YET_KNOWN = (
    "This enrollment passphrase is not yet known to this KMA (it was set a moment ago through another "
    "KMA); try again in a moment."
)


@cache
def _decoy_hash() -> str:
    """Checked when there is no real hash, so an unknown agent costs the same time."""
    return hash_passphrase("no passphrase is set for this agent")


class _Failures:
    """Recent wrong passphrases per agent ID (in memory: a restart forgives)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, list[float]] = {}

    def locked(self, agent_id: str) -> bool:
        with self._lock:
            recent = [t for t in self._seen.get(agent_id, []) if time.monotonic() - t < LOCKOUT]
            self._seen[agent_id] = recent
            return len(recent) >= MAX_FAILURES

    def add(self, agent_id: str) -> None:
        with self._lock:
            now = time.monotonic()
            if len(self._seen) > MAX_TRACKED:  # made-up agent IDs must not grow this for ever
                self._seen = {a: ts for a, ts in self._seen.items() if ts and now - ts[-1] < LOCKOUT}
            self._seen.setdefault(agent_id, []).append(now)

    def clear(self, agent_id: str) -> None:
        with self._lock:
            self._seen.pop(agent_id, None)


FAILURES = _Failures()


@dataclass(frozen=True)
class AgentKma:
    """A KMA an agent may use, as the service listener tells agents (/v1/kmas, an enrollment)."""

    id: str
    name: str
    site_id: str
    service_address: str
    status: str  # ready | locked


@dataclass(frozen=True)
class Enrolled:
    """What an enrolled (or renewed) agent is sent: its certificate, the CA, the KMAs it may use."""

    agent_id: str
    site_id: str
    certificate_pem: str
    ca_pem: str
    kmas: list[AgentKma]


def cluster_kmas(kma: Appliance, own_service_address: str) -> list[AgentKma]:
    """The KMAs an agent may use, for discovery: its own site's first is the agent's choice."""
    rows = kma.store.query(
        "SELECT id, name, site_id, service_address, locked FROM kmas "  # a witness serves no agent
        "WHERE removed_at IS NULL AND awaiting_join = 0 AND witness = 0 ORDER BY site_id, id"
    )
    genuine = entry_signatures.genuine_ids(kma)  # a forged entry sends no agent anywhere
    out = []
    for r in rows:
        if r["id"] not in genuine:
            continue
        own = r["id"] == kma.kma_id
        locked = kma.vault.locked if own else bool(r["locked"])
        out.append(
            AgentKma(
                r["id"],
                r["name"],
                r["site_id"],
                own_service_address if own else r["service_address"],
                "locked" if locked else "ready",
            )
        )
    return out


def _set_since(kma: Appliance, agent_id: str, seen: str | None, passphrase: str) -> bool:
    """The passphrase is right by the cluster's newest state, which this KMA's replica has not
    caught up with yet (replication lag, a moment after the passphrase was set elsewhere)."""
    try:
        rows = kma.store.query_leader(
            "SELECT enrollment_passphrase_hash FROM agents WHERE id = ?", (agent_id,)
        )
    except ClusterUnavailable:
        return False
    newest = rows[0][0] if rows else None
    return newest is not None and newest != seen and verify_passphrase(passphrase, newest)


def kmas_marker(kmas: list[AgentKma]) -> str:
    """Changes whenever the KMA list does: an agent compares it with the one it holds."""
    return hashlib.sha256(json.dumps([asdict(k) for k in kmas], sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Enrolment:
    """One enrollment being checked: the agent it claims to be, and from where."""

    kma: Appliance
    agent_id: str
    address: str

    @property
    def known_form(self) -> bool:
        return bool(_AGENT_ID.match(self.agent_id))

    @property
    def actor(self) -> Actor:
        return Actor(self.agent_id if self.known_form else "unknown", self.address, kind="agent")

    @property
    def subject(self) -> tuple[str, str] | None:
        return ("agent", self.agent_id) if self.known_form else None

    def refuse(self, message: str, error: type[KmaError], audit: str, known: bool = True) -> KmaError:
        if known:
            self.kma.audit(self.actor, "agent.enroll", f"refused enrollment: {audit}", subject=self.subject)
        else:  # anyone can make these up: audited within the rate limit for unknown peers
            refusals.audit_unknown(self.kma, self.address, "agent.enroll", f"refused enrollment: {audit}")
        return error(message, audited=True)


def enroll(
    kma: Appliance,
    agent_id: str,
    passphrase: str,
    csr_pem: bytes,
    address: str,
    own_service_address: str,
    drive: Mapping[str, str] | None = None,
) -> Enrolled:
    """Blocking (Argon2id, signing, a durable commit): run it off any event loop. `drive`: what a
    tape drive says it is (kma/services/agents.py's drive fields), recorded with the enrollment."""
    enrolment = _Enrolment(kma, agent_id, address)
    row = _check_the_enrollment_passphrase(enrolment, passphrase)
    _check_the_agent_may_enroll(enrolment, row, csr_pem)
    told = _check_the_drive_description(enrolment, drive)
    cert_pem, ca_pem = _sign_the_certificate(enrolment, csr_pem)
    _record_the_enrollment(enrolment, row["hash"], cert_pem, told)
    FAILURES.clear(agent_id)
    return Enrolled(
        agent_id, row["site_id"], cert_pem.decode(), ca_pem, cluster_kmas(kma, own_service_address)
    )


@step("enrollment")
def _check_the_enrollment_passphrase(enrolment: _Enrolment, passphrase: str) -> Any:
    """The agent's row, if the passphrase is its own (a wrong one counts towards its lockout)."""
    kma, agent_id, refuse = enrolment.kma, enrolment.agent_id, enrolment.refuse
    if not enrolment.known_form or len(passphrase) > 256:
        raise refuse(WRONG, Unauthenticated, "malformed agent ID or passphrase", known=False)
    if FAILURES.locked(agent_id):
        raise refuse(
            f"Too many wrong passphrases for agent '{agent_id}'; try again in 15 minutes.",
            LockedOut,
            "too many wrong passphrases in a row",
        )
    row = kma.store.query_one(
        "SELECT enabled, site_id, enrollment_passphrase_hash AS hash, enrollment_passphrase_set_at AS set_at "
        "FROM agents WHERE id = ?",
        (agent_id,),
    )
    stored = row["hash"] if row is not None else None
    if not verify_passphrase(passphrase, stored or _decoy_hash()) or stored is None:
        if _set_since(kma, agent_id, stored, passphrase):
            raise refuse(
                NOT_YET_KNOWN,
                Conflict,
                "the passphrase was set a moment ago through another "
                "KMA and is not yet known to this one (not counted as a wrong passphrase)",
            )
        FAILURES.add(agent_id)
        if row is None:
            raise refuse(WRONG, Unauthenticated, f"no agent '{agent_id}'", known=False)
        raise refuse(WRONG, Unauthenticated, "no passphrase set" if stored is None else "wrong passphrase")
    assert row is not None
    return row


@step("enrollment")
def _check_the_agent_may_enroll(enrolment: _Enrolment, row: Any, csr_pem: bytes) -> None:
    """A fresh passphrase, an enabled agent, a CSR of a sane size."""
    refuse = enrolment.refuse
    if row["set_at"] is None or enrolment.kma.clock.now() - int(row["set_at"]) > PASSPHRASE_LIFETIME:
        raise refuse(
            "This enrollment passphrase has expired (they last 7 days); ask an Operator for a new one.",
            Unauthenticated,
            "the enrollment passphrase has expired",
        )
    if not row["enabled"]:
        raise refuse(
            f"Agent '{enrolment.agent_id}' is disabled; an Operator must enable it first.",
            Forbidden,
            "the agent is disabled",
        )
    if len(csr_pem) > MAX_CSR_BYTES:
        raise refuse("The certificate signing request is too large.", ValidationFailed, "oversize CSR")


@step("enrollment")
def _check_the_drive_description(enrolment: _Enrolment, drive: Mapping[str, str] | None) -> dict[str, Any]:
    """What the drive says it is (model, generation, library), checked before anything is spent."""
    try:
        return drive_fields({k: v for k, v in (drive or {}).items() if k in DRIVE.split(", ")})
    except ValidationFailed as bad:
        raise enrolment.refuse(
            bad.message, ValidationFailed, f"bad drive description ({bad.message})"
        ) from None


@step("enrollment")
def _sign_the_certificate(enrolment: _Enrolment, csr_pem: bytes) -> tuple[bytes, str]:
    """The agent's certificate from the cluster CA, and the CA's certificate (PEM)."""
    kma = enrolment.kma
    cluster = kma.store.query_one("SELECT ca_cert_pem, ca_key_wrapped FROM cluster WHERE id = 1")
    assert cluster is not None
    ca = CertifiedKey(
        cluster["ca_cert_pem"].encode(),
        kma.vault.master().unwrap("cluster-ca-key", cluster["ca_key_wrapped"]),
    )
    try:
        validity = timedelta(seconds=kma.data_dir.certificate_settings().agent_validity)
        return sign_agent_csr(ca, csr_pem, enrolment.agent_id, validity=validity), cluster["ca_cert_pem"]
    except (CryptoError, ValueError) as exc:
        raise enrolment.refuse(
            f"The certificate signing request was refused: {exc}.", ValidationFailed, f"bad CSR ({exc})"
        ) from None


@step("enrollment")
def _record_the_enrollment(enrolment: _Enrolment, stored: str, cert_pem: bytes, told: dict[str, Any]) -> None:
    """The passphrase spent and the certificate recorded, only if the passphrase is still the one
    checked (two enrollments racing with one passphrase: one wins)."""
    kma, agent_id = enrolment.kma, enrolment.agent_id
    cert = load_certificate(cert_pem)
    fingerprint = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    not_after = int(cert.not_valid_after_utc.timestamp())
    now = kma.clock.now()
    kma.commit(
        enrolment.actor,
        "agent.enroll",
        [
            Stmt(
                "UPDATE agents SET enrollment_passphrase_hash = NULL, enrollment_passphrase_set_at = NULL, "
                "enrolled_at = :now, certificate_fingerprint = :fp, certificate_not_after = :not_after, "
                "previous_certificate_fingerprint = NULL, "
                "updated_at = :now WHERE id = :id AND enabled = 1 AND enrollment_passphrase_hash = :hash",
                {"now": now, "fp": fingerprint, "not_after": not_after, "id": agent_id, "hash": stored},
                expect=1,
                refusal="the passphrase was used by another enrollment a moment ago, "
                "or the agent was disabled",
            ),
            *([patch("agent", agent_id, told, now)] if told else []),
        ],
        f"agent '{agent_id}' enrolled; certificate sha256 {fingerprint[:16]}..., valid until "
        f"{cert.not_valid_after_utc:%Y-%m-%d}" + (f"; drive {describe(told)}" if told else ""),
        enrolment.subject,
    )
