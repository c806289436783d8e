"""Synthetic `GET /cluster/topology` answers: layouts a single test KMA cannot show (two sites,
twenty KMAs, one down), built from the same JSON the KMA sends and the same failure tolerance."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

from kma.cluster.rqlited import VERSION as RQLITE_VERSION
from kma.cluster.topology import Member, failure_tolerance
from kma.store.schema import latest_schema_version
from kms_client import Topology, read
from kms_client.release import release

NAMES = {"dallas": "Dallas", "boston": "Boston", "austin": "Austin", "denver": "Denver", "seattle": "Seattle"}
SITE_NAMES = {**NAMES, "witness": "Witness"}  # a third place for a witness: a site with no agents


def kma_json(
    kma_id: str,
    site: str,
    *,
    leader: bool = False,
    voter: bool = True,
    up: bool = True,
    locked: bool = False,
    lag: float | None = None,
    witness: bool = False,
    master_key: str = "software",
) -> dict[str, Any]:
    health = "down" if not up else ("warning" if locked or (lag or 0) >= 10 else "ok")
    n = kma_id.rsplit("-", 1)[-1]
    return {
        "id": kma_id,
        "name": f"KMA {NAMES.get(site, site)} {n}",
        "site_id": site,
        "management_address": f"10.0.{len(site)}.{n}:8443",
        "service_address": f"10.1.{len(site)}.{n}:5696",
        "leader": leader and up,
        "voter": voter,
        "responding": up,
        "locked": locked,
        "version": release(),  # every KMA runs this release, on a cluster node
        "schema_version": latest_schema_version(),
        "rqlite_version": RQLITE_VERSION,
        "replication_lag": None if lag is None else {"depth": int(lag * 40), "age_seconds": lag},
        "last_contact_seconds": None if not up else (0.0 if lag is not None else 0.4),
        "this_kma": lag is not None,
        "health": health,
        "witness": witness,
        "master_key": None if witness else master_key,
        **({"name": f"Witness {n}", "management_address": "", "service_address": ""} if witness else {}),
    }


def topology(kmas: list[dict[str, Any]], agents: dict[str, tuple[int, int, int]] | None = None) -> Topology:
    """An answer for these KMAs; `agents` per site: (enrolled, disabled, seen in the last hour)."""
    sites = sorted({k["site_id"] for k in kmas} | set(agents or {}), key=lambda s: SITE_NAMES.get(s, s))
    tolerance = failure_tolerance(
        [Member(k["site_id"], k["voter"], k["responding"], k.get("witness", False)) for k in kmas], SITE_NAMES
    )
    with_kmas = [s for s in sites if any(k["site_id"] == s for k in kmas)]
    here = next(k["site_id"] for k in kmas if k["this_kma"])  # only its own links' lag is known
    links = [
        {"site_a": a, "site_b": b, "lag_seconds": 0.3 if here in (a, b) else None}
        for n, a in enumerate(with_kmas)
        for b in with_kmas[n + 1 :]
    ]
    counts = agents or {}
    return read(
        Topology,
        {
            "cluster_name": "Acme Tape Vault",
            "answered_by": next(k["id"] for k in kmas if k["this_kma"]),
            "time": "2026-11-24T02:00:00Z",
            "sites": [
                {
                    "id": s,
                    "name": SITE_NAMES.get(s, s),
                    "kmas": [k for k in kmas if k["site_id"] == s],
                    "agents": _agents(counts.get(s, (0, 0, 0))),
                }
                for s in sites
            ],
            "links": links,
            "audit_forwarding": None,
            "failure_tolerance": {
                "voters": tolerance.voters,
                "voters_responding": tolerance.voters_responding,
                "majority": tolerance.majority,
                "voters_may_lose": tolerance.voters_may_lose,
                "management_writes": tolerance.management_writes,
                "sites_whose_loss_stops_writes": list(tolerance.sites_whose_loss_stops_writes),
                "summary": tolerance.summary,
            },
        },
    )


def _agents(counts: tuple[int, int, int]) -> dict[str, int]:
    enrolled, disabled, seen = counts
    return {"total": enrolled + disabled, "enrolled": enrolled, "disabled": disabled, "seen_last_hour": seen}


def two_sites_one_down() -> Topology:
    """Dallas and Boston with two KMAs each (the white paper's layout), Boston 2 not responding."""
    return topology(
        [
            kma_json("kma-dal-1", "dallas", leader=True, lag=0.2),
            kma_json("kma-dal-2", "dallas"),
            kma_json("kma-bos-1", "boston"),
            kma_json("kma-bos-2", "boston", up=False),
        ],
        {"dallas": (8, 0, 7), "boston": (8, 1, 5)},
    )


def two_sites_and_a_witness_boston_down() -> Topology:
    """The white paper's layout with a witness at a third site, Boston lost: Dallas's two KMAs and
    the witness are 3 of 5 voters, so management writes go on."""
    return topology(
        [
            kma_json("kma-dal-1", "dallas", leader=True, lag=0.2),
            kma_json("kma-dal-2", "dallas"),
            kma_json("kma-bos-1", "boston", up=False),
            kma_json("kma-bos-2", "boston", up=False),
            kma_json("witness-1", "witness", witness=True),
        ],
        {"dallas": (8, 0, 8), "boston": (8, 0, 8)},
    )


def twenty_kmas() -> Topology:
    """Twenty KMAs across five sites: five voters, the rest read replicas; one locked, one down."""
    kmas = []
    for s, site in enumerate(("dallas", "boston", "austin", "denver", "seattle")):
        for n in range(1, 5):
            here = (s, n) == (0, 1)
            kmas.append(
                kma_json(
                    f"kma-{site[:3]}-{n}",
                    site,
                    leader=here,
                    voter=n == 1,
                    up=(s, n) != (3, 2),
                    locked=(s, n) == (1, 3),
                    lag=0.1 if here else None,
                )
            )
    return topology(kmas, {site: (16, 1, 12) for site in NAMES})


class _ReadsNothing(QObject):
    busy = 0
    changed = Signal(object)  # no write runs either, so it never fires

    def read(self, *args: Any, **kw: Any) -> None:
        return None


class ShownOnly:
    """A page context whose background reads never run: the page shows only what it is handed."""

    def __init__(self, *permissions: str, lacks: frozenset[str] = frozenset()) -> None:
        self.ops = _ReadsNothing()
        self.permissions = frozenset(permissions)  # what the KMA would grant the user
        self.lacks = lacks  # capabilities the KMA does not offer (an earlier release)

    def may(self, permission: str) -> bool:
        return permission in self.permissions

    def offers(self, capability: str) -> bool:
        return capability not in self.lacks

    def not_offered(self, what: str) -> str:
        return f"This KMA (release 0.2.0) does not offer {what}."
