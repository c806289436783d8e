"""The cluster at a glance: sites, KMAs, agents per site, and how many failures it survives.

What the store knows about its nodes (`store.cluster_nodes()`: one node when embedded, the Raft
peers on rqlite) is joined with the sites, kmas and agents tables, so the same code answers for
one KMA and for twenty. A KMA the store has no node status for is "not responding".
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kma import __version__
from kma.appliance import Appliance
from kma.cluster.redundancy import site_redundancy
from kma.services.audit.audit_forwarding import audit_forwarder
from kma.services.certificates.certificate_expiry import expiries
from kma.services.integrity import entry_signatures
from kma.services.overview.replication_lag import replication_lags
from kma.store import cluster_version
from kma.store.cluster_view import NodeStatus

log = logging.getLogger(__name__)
HOUR = 3600
# A KMA whose writes have waited this long to reach the cluster is shown as lagging.
LAGGING_SECONDS = 10.0
STOPS_WRITES = "stops management writes, key service continues"
_COUNT = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


@dataclass(frozen=True)
class Member:
    """One KMA as the failure tolerance sees it."""

    site: str  # the site's ID
    voter: bool
    responding: bool
    witness: bool = False  # votes, serves no keys


@dataclass(frozen=True)
class FailureTolerance:
    voters: int
    voters_responding: int
    majority: int
    voters_may_lose: int  # further voters that may stop responding before management writes stop
    management_writes: bool  # a majority of the voters responds
    sites_whose_loss_stops_writes: tuple[str, ...]  # site IDs
    summary: str  # in words, with the sites' names


def _voters(n: int, more: bool = False) -> str:
    return f"{_COUNT.get(n, str(n))}{' more' if more else ''} voter{'' if n == 1 else 's'}"


def _either(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def failure_tolerance(
    members: Iterable[Member], site_names: Mapping[str, str] | None = None
) -> FailureTolerance:
    """A majority of the voters (floor(v/2)+1) keeps management writes going; the key service
    keeps going on every KMA that responds (each issues keys from its own pool), so losing voters
    stops management writes, and only losing every KMA stops key service."""
    kmas = list(members)
    voters = [m for m in kmas if m.voter]
    responding = [m for m in voters if m.responding]
    majority = len(voters) // 2 + 1
    may_lose = max(0, len(responding) - majority)
    sites = sorted({m.site for m in kmas})
    critical = tuple(s for s in sites if len(responding) - sum(m.site == s for m in responding) < majority)
    answering = {m.site for m in kmas if m.responding and not m.witness}  # sites with key service
    named = site_names or {}

    def loss_of(site: str) -> str:
        if answering <= {site}:
            return "stops everything"
        return STOPS_WRITES

    if sum(not m.witness for m in kmas) == 1:
        summary = (
            "This is the only KMA: losing it stops key service and management alike. Add KMAs (two per "
            "site, three voters) so that the cluster survives the loss of one."
        )
    elif len(responding) < majority:
        summary = (
            f"Management writes are stopped: {len(responding)} of {len(voters)} voters respond and a "
            f"majority needs {majority}. Key service continues on the KMAs that respond."
        )
    else:
        down = len(voters) - len(responding)
        if may_lose == 0 and down:
            head = f"losing one more {STOPS_WRITES}"
        elif may_lose == 0:
            which = "the only voter" if len(responding) == 1 else "any voter"
            head = f"survives the loss of no voter: losing {which} {STOPS_WRITES}"
        else:
            head = f"survives the loss of {_voters(may_lose, more=bool(down))}"
        lead = f"{down} of {len(voters)} voters not responding; " if down else ""
        parts = [(lead + head)[0].upper() + (lead + head)[1:]]
        by_outcome: dict[str, list[str]] = {}
        for site in critical:
            outcome = loss_of(site)
            if may_lose == 0 and outcome != "stops everything":
                continue  # said already: losing any voter stops management writes
            by_outcome.setdefault(outcome, []).append(named.get(site, site))
        parts += [f"losing {_either(names)} {outcome}" for outcome, names in by_outcome.items()]
        if not critical:
            parts.append("no single site's loss stops management writes")
        summary = "; ".join(parts) + "."
        if len(voters) % 2 == 0:
            summary += (
                f" {len(voters)} voters survive no more losses than {len(voters) - 1}: add a voter (another"
                " KMA, or a witness in a third site)."
            )
    return FailureTolerance(
        voters=len(voters),
        voters_responding=len(responding),
        majority=majority,
        voters_may_lose=may_lose,
        management_writes=len(responding) >= majority,
        sites_whose_loss_stops_writes=critical,
        summary=summary,
    )


def _health(node: dict[str, Any]) -> str:
    if not node["responding"]:
        return "down"
    lag = node["replication_lag"]
    if node["locked"] or (lag is not None and lag["age_seconds"] >= LAGGING_SECONDS):
        return "warning"
    return "ok"


def _node_status(kma: Appliance) -> dict[str, NodeStatus]:
    """What the store knows of its nodes; when it cannot say (no Raft leader, its node down), this
    KMA still answers for itself and shows the others as not responding: then the picture matters most."""
    try:
        return {n.kma_id: n for n in kma.store.cluster_nodes()}
    except Exception:
        log.warning("the store could not say how the cluster's nodes are", exc_info=True)
        return {}


def trusted_nodes(kma: Appliance) -> list[dict[str, Any]]:
    """The KMAs whose entry's signatures verify (kma/services/integrity/entry_signatures.py): an entry written
    or altered in the store (reported) sends no manager, upgrade check or other KMA anywhere; the
    KMA list flags it instead (kma/services/kmas.py)."""
    return kma_nodes(kma, entry_signatures.trusted_ids(kma))


def kma_nodes(kma: Appliance, trusted: Collection[str] | None = None) -> list[dict[str, Any]]:
    """Every member KMA as the topology shows it; only those in `trusted` when given."""
    status = _node_status(kma)
    lags = replication_lags(kma)
    rows = kma.store.query(
        "SELECT id, name, site_id, management_address, service_address, version, schema_version, "
        "rqlite_version, locked, witness, master_key "
        "FROM kmas "
        "WHERE removed_at IS NULL ORDER BY site_id, name, id"  # a removed KMA is history, not a member
    )
    nodes = []
    for row in (r for r in rows if trusted is None or r["id"] in trusted):
        node: NodeStatus | None = status.get(row["id"])
        me = row["id"] == kma.kma_id
        out = {
            "id": row["id"],
            "name": row["name"],
            "site_id": row["site_id"],
            "management_address": row["management_address"],
            "service_address": row["service_address"],
            "leader": bool(node and node.leader),
            "voter": bool(node and node.voter),
            "witness": bool(row["witness"]),
            "responding": me or bool(node and node.reachable),
            # This KMA knows its own lock state first-hand; the others' is what they last recorded.
            "locked": kma.vault.locked if me else bool(row["locked"]) and not row["witness"],
            "version": __version__ if me else row["version"],
            # What each KMA recorded at its last start (kma/runtime/running.py): during a rolling
            # upgrade, which KMAs run which release, know which migrations and run which rqlited. A
            # node that answers says its rqlited release itself (a witness, which records nothing, too).
            "schema_version": row["schema_version"],
            "rqlite_version": (node.rqlite_version if node else None) or row["rqlite_version"],
            # Where its master key is: software or its own HSM (docs/hsm.md#clusters); a witness has none.
            "master_key": None if row["witness"] else kma.vault.backend if me else row["master_key"],
            # Each KMA's outbox as its shipper last reported it into the cluster's store (ours: live).
            "replication_lag": asdict(lags[row["id"]]) if row["id"] in lags else None,
            "last_contact_seconds": 0.0 if me else (node.last_contact_seconds if node else None),
            "this_kma": me,
        }
        out["health"] = _health(out)
        nodes.append(out)
    return nodes


def _agents_by_site(kma: Appliance) -> dict[str, dict[str, int]]:
    # Last contact is the agent's newest audit event (every KMIP request is one). One query; per agent
    # two seeks (max(id) from the covering audit_entity index, then its row): about 5 ms for 2,000
    # agents over a million events, where scanning the last hour's events (audit_created) took 130 ms.
    rows = kma.store.query(
        "SELECT site_id, count(*) AS total, coalesce(sum(enrolled_at IS NOT NULL), 0) AS enrolled, "
        "coalesce(sum(enabled = 0), 0) AS disabled, coalesce(sum((SELECT created_at FROM audit_events "
        "WHERE id = (SELECT max(id) FROM audit_events WHERE entity_id = agents.id)) >= ?), 0) AS seen "
        "FROM agents GROUP BY site_id",
        (kma.clock.now() - HOUR,),
    )
    return {
        r["site_id"]: {
            "total": r["total"],
            "enrolled": r["enrolled"],
            "disabled": r["disabled"],
            "seen_last_hour": r["seen"],
        }
        for r in rows
    }


def _links(site_ids: Sequence[str], nodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pair of sites with KMAs replicates both ways; a link's lag is the largest known at its ends."""
    with_kmas = [s for s in site_ids if any(n["site_id"] == s for n in nodes)]
    links = []
    for i, a in enumerate(with_kmas):
        for b in with_kmas[i + 1 :]:
            lags = [
                n["replication_lag"]["age_seconds"]
                for n in nodes
                if n["site_id"] in (a, b) and n["replication_lag"] is not None
            ]
            links.append({"site_a": a, "site_b": b, "lag_seconds": max(lags) if lags else None})
    return links


def _forwarding(kma: Appliance) -> dict[str, Any] | None:
    """The answering KMA's copy of its audit trail to a syslog collector, when it sends one."""
    status = audit_forwarder(kma).status()
    return None if status.address is None else asdict(status)


def _certificates(kma: Appliance) -> dict[str, dict[str, Any]]:
    """Each KMA's listener and node certificates' expiry, and whether a warning reached either."""
    found: dict[str, dict[str, Any]] = {}
    for expiry in expiries(kma, agents=0):
        if expiry.kind in ("listener", "node"):
            mine = found.setdefault(expiry.owner, {"certificate_warning": False})
            name = "certificate_expires_at" if expiry.kind == "listener" else "node_certificate_expires_at"
            mine[name] = expiry.expires_at
            mine["certificate_warning"] |= expiry.warning is not None
    return found


def topology(kma: Appliance) -> dict[str, Any]:
    certificates = _certificates(kma)
    nodes = [{**n, **certificates.get(n["id"], {})} for n in trusted_nodes(kma)]
    agents = _agents_by_site(kma)
    sites = [dict(r) for r in kma.store.query("SELECT id, name FROM sites ORDER BY name, id")]
    names = {s["id"]: s["name"] for s in sites}
    none = {"total": 0, "enrolled": 0, "disabled": 0, "seen_last_hour": 0}
    members = (Member(n["site_id"], n["voter"], n["responding"], n["witness"]) for n in nodes)
    tolerance = failure_tolerance(members, names)
    listed = [
        {**s, "kmas": [n for n in nodes if n["site_id"] == s["id"]], "agents": agents.get(s["id"], none)}
        for s in sites
    ]
    redundancy = site_redundancy(kma, listed, nodes)  # kma/cluster/redundancy.py
    return {
        "cluster_name": kma.store.scalar("SELECT name FROM cluster") or "",
        "answered_by": kma.kma_id,
        "cluster_version": cluster_version.current(kma.store.query(cluster_version.CURRENT_SQL))[0],
        "time": kma.clock.now(),
        "sites": [{**s, **redundancy[s["id"]]} for s in listed],
        "links": _links([s["id"] for s in sites], nodes),
        "audit_forwarding": _forwarding(kma),
        "failure_tolerance": {
            "voters": tolerance.voters,
            "voters_responding": tolerance.voters_responding,
            "majority": tolerance.majority,
            "voters_may_lose": tolerance.voters_may_lose,
            "management_writes": tolerance.management_writes,
            "sites_whose_loss_stops_writes": list(tolerance.sites_whose_loss_stops_writes),
            "summary": tolerance.summary,
        },
    }
