"""The cluster at a glance, and the warnings a Security Officer must see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.lifecycle import KeyState, key_in_state
from kma.services import backups
from kma.services.backups import Readiness
from kma.services.certificates import certificate_expiry
from kma.services.integrity import row_macs
from kma.services.kmas import list_kmas
from kma.services.master_key import master_keys
from kma.services.overview.lag_warnings import forwarding_warnings, replication_warnings
from kma.services.paging import COUNT_LIMIT, PageRequest
from kma.services.quorum import pending_count


def counting(condition: str) -> str:
    """SQL: how many keys meet `condition`, read from its index up to COUNT_LIMIT + 1 (as the lists
    count): more than COUNT_LIMIT says "more than", not how many."""
    return f"SELECT count(*) FROM (SELECT 1 FROM keys WHERE {condition} LIMIT {COUNT_LIMIT + 1})"


def _counted(kma: Appliance, condition: str, params: dict[str, Any] | None = None) -> int:
    return int(kma.store.scalar(counting(condition), params or {}))


@dataclass(frozen=True)
class Warnings:
    """The dashboard's warnings by whom they are about: this KMA (each KMA announces its own), or
    the cluster (every KMA sees them in the store alike; one announces them, kma/services/alerts.py)."""

    this_kma: list[str]
    cluster: list[str]


def warnings(kma: Appliance, readiness: Readiness | None = None) -> list[str]:
    """This KMA's warnings, then the cluster's; `readiness` when the caller has it already (the
    dashboard: at a million keys each reading costs milliseconds)."""
    scoped = scoped_warnings(kma, readiness)
    return scoped.this_kma + scoped.cluster


def scoped_warnings(kma: Appliance, readiness: Readiness | None = None) -> Warnings:
    return Warnings(_this_kmas(kma), _the_clusters(kma, readiness or backups.readiness(kma)))


def _this_kmas(kma: Appliance) -> list[str]:
    out = []
    problem = kma.vault.hsm_problem
    if problem:
        out.append(f"The HSM holding the master key fails; this KMA serves no key material: {problem}")
    if kma.vault.locked:
        out.append("This KMA is locked: it serves no keys until a quorum unlocks it.")
    if not kma.store.caught_up():
        out.append(
            "This KMA is catching up with the cluster after its start: until its replica holds what "
            "the cluster has committed it serves no agent (they are told to try another KMA)."
        )
    out += forwarding_warnings(kma)
    if kma.test_clock:
        out.append("This KMA runs on a test clock (KMA_TEST_CLOCK_FILE); never in production.")
    return out


def _the_clusters(kma: Appliance, readiness: Readiness) -> list[str]:
    out = backups.warnings(readiness)
    rotation = master_keys.get_master_key(kma)
    if rotation.rotating:
        out.append(
            f"The {master_keys.describe(rotation)}. Drives are served throughout; the old generation is "
            "destroyed when it ends."
        )
    out += certificate_expiry.warnings(kma)  # the CA's, every KMA's and the agents' certificates
    tampered = row_macs.tamper_warning(kma)
    if tampered:
        out.append(tampered)
    unrecorded = int(kma.store.scalar("SELECT count(*) FROM unrecorded_bindings"))
    if unrecorded:
        out.append(
            f"{unrecorded} tapes were written with a key the cluster had already given to another tape (the "
            "binding was refused: see the audit trail's 'not recorded in the cluster' events). Each key "
            "stays readable by the drive that wrote with it."
        )
    return out + replication_warnings(kma)


def master_key(kma: Appliance) -> str:
    """Where this KMA's master key is: 'software', or 'pkcs11' with the token's name."""
    hsm = kma.vault.hsm
    return f"pkcs11: {hsm.token_name} in {hsm.module}" if hsm else "software"


@dataclass(frozen=True)
class KeyCounts:
    """Keys in each state, each up to COUNT_LIMIT, and whether each count is exact."""

    keys_by_state: dict[str, int]
    keys_by_state_exact: dict[str, bool]  # false: more than COUNT_LIMIT keys are in that state


def key_counts(kma: Appliance) -> KeyCounts:
    """Keys in each state, each counted from the index its state's list reads, up to COUNT_LIMIT
    (one pass over a million keys took seconds), and whether each count is exact."""
    now = {"now": kma.clock.now()}
    counted = {str(s): _counted(kma, key_in_state(s), now) for s in KeyState}
    return KeyCounts(
        {s: min(n, COUNT_LIMIT) for s, n in counted.items()},
        {s: n <= COUNT_LIMIT for s, n in counted.items()},
    )


@dataclass(frozen=True)
class Dashboard:
    """The cluster at a glance; the API's `Dashboard` reads it."""

    cluster_name: str
    sites: int
    kmas: list[dict[str, Any]]  # the first 20, as the KMAs' list shows them
    keys_by_state: dict[str, int]
    keys_by_state_exact: dict[str, bool]
    data_units: int
    agents: int
    users: int
    pending_quorum_operations: int
    backups: Readiness
    master_key: master_keys.MasterKeyRow
    warnings: list[str]
    certificates: list[dict[str, Any]]  # soonest expiry first


def get_dashboard(kma: Appliance) -> Dashboard:
    scalar = kma.store.scalar
    counts = key_counts(kma)
    readiness = backups.readiness(kma)
    return Dashboard(
        cluster_name=scalar("SELECT name FROM cluster"),
        sites=scalar("SELECT count(*) FROM sites"),
        kmas=list_kmas(kma, PageRequest(limit=20)).items,
        keys_by_state=counts.keys_by_state,
        keys_by_state_exact=counts.keys_by_state_exact,
        data_units=scalar("SELECT count(*) FROM data_units"),
        agents=scalar("SELECT count(*) FROM agents"),
        users=scalar("SELECT count(*) FROM users"),
        pending_quorum_operations=pending_count(kma),
        backups=readiness,
        master_key=master_keys.get_master_key(kma),
        warnings=warnings(kma, readiness),
        certificates=[e.as_answer() for e in certificate_expiry.expiries(kma)],
    )


@dataclass(frozen=True)
class Status:
    """This KMA's state; the API's `Status` reads it (and `kma status` prints it)."""

    cluster_name: str
    kma_id: str
    kma_name: str
    site_id: str
    version: str
    locked: bool
    autonomous_unlock: bool
    master_key: str  # "software", or "pkcs11: TOKEN in MODULE"
    master_key_generation: int
    caught_up: bool  # its replica holds what the cluster had committed at its start
    time: int
    warnings: list[str]
    certificates: list[dict[str, Any]]  # soonest expiry first


def get_status(kma: Appliance) -> Status:
    from kma import __version__

    row = kma.store.query_one("SELECT name FROM cluster")
    me = kma.store.query_one(
        "SELECT name, site_id, autounlock_master IS NOT NULL AS auto FROM kmas WHERE id = ?", (kma.kma_id,)
    )
    return Status(
        cluster_name=row["name"] if row else "",
        kma_id=kma.kma_id,
        kma_name=me["name"] if me else kma.kma_id,
        site_id=me["site_id"] if me else kma.identity.site_id,
        version=__version__,
        locked=kma.vault.locked,
        autonomous_unlock=bool(me["auto"]) if me else False,
        master_key=master_key(kma),
        master_key_generation=master_keys.current_generation(kma),
        caught_up=kma.store.caught_up(),
        time=kma.clock.now(),
        warnings=warnings(kma),
        certificates=[e.as_answer() for e in certificate_expiry.expiries(kma)],
    )
