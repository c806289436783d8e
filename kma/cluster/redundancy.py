"""Whether each site's drives are served as the white paper advises (docs/media.md, chapter 5):
at least two KMAs per site, so that one can fail or be serviced, and the drives spread over them;
and what losing a site would leave behind: its tape libraries, and the media pools whose tapes no
drive at another site may read (their key group's drives are all at this site).

Which KMA served a drive is the KMA of the drive's newest audit event (every KMIP request is
one): one seek per drive, as the topology's last contact reads it, never a scan of a day's events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from kma.appliance import Appliance

DAY = 86400


def _drives_by_kma(kma: Appliance) -> dict[str, dict[str, int]]:
    """Per site: how many of its enabled drives each KMA served last, among those seen in a day."""
    rows = kma.store.query(
        "SELECT a.site_id AS site_id, e.kma_id AS kma_id, count(*) AS n FROM agents a "
        "JOIN audit_events e ON e.id = (SELECT max(id) FROM audit_events WHERE entity_id = a.id) "
        "WHERE a.enabled = 1 AND e.created_at >= ? GROUP BY a.site_id, e.kma_id",
        (kma.clock.now() - DAY,),
    )
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for r in rows:
        out[r["site_id"]][r["kma_id"]] = int(r["n"])
    return out


def _warnings(name: str, serving: Sequence[str], agents: int, drives: dict[str, int]) -> list[str]:
    out = []
    if agents and len(serving) < 2:
        how = "no KMA of its own" if not serving else "one KMA"
        out.append(
            f"Site {name} has {how} for its {agents} agents: keep at least two KMAs per site, on "
            "separate switches, so that one can fail or be serviced while its drives are served."
        )
    seen = sum(drives.values())
    if len(serving) >= 2 and seen >= 2 and len(drives) == 1:
        only = next(iter(drives))
        out.append(
            f"All {seen} of site {name}'s drives seen in the last day were served by KMA {only}: spread "
            "the drives over the site's KMAs (and its switches), so that losing one does not stop them all."
        )
    return out


def _libraries(kma: Appliance) -> dict[str, list[str]]:
    """Per site: the tape libraries its enabled drives are in (as the agents name them)."""
    rows = kma.store.query(
        "SELECT DISTINCT site_id, library FROM agents WHERE enabled = 1 AND library <> '' ORDER BY library"
    )
    out: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        out[r["site_id"]].append(str(r["library"]))
    return out


def _pools_only_at(kma: Appliance) -> dict[str, list[str]]:
    """Per site: the media pools bound to a key group whose enabled drives are all at that site, so
    that no drive anywhere else may read (or write) the pools' tapes once the site is lost."""
    rows = kma.store.query(
        "SELECT p.id AS pool, min(a.site_id) AS site, count(DISTINCT a.site_id) AS sites FROM media_pools p "
        "JOIN key_group_agents m ON m.key_group_id = p.key_group_id "
        "JOIN agents a ON a.id = m.agent_id AND a.enabled = 1 GROUP BY p.id ORDER BY p.id"
    )
    out: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r["sites"] == 1:
            out[r["site"]].append(str(r["pool"]))
    return out


def _if_lost(name: str, pools: Sequence[str]) -> list[str]:
    if not pools:
        return []
    those = f"media pool {pools[0]}" if len(pools) == 1 else f"media pools {', '.join(pools)}"
    return [
        f"Losing site {name} leaves {those} with no drive at another site that may read its tapes: "
        "give a drive at another site (a disaster recovery site) the pool's key group."
    ]


def site_redundancy(
    kma: Appliance, sites: Sequence[dict[str, Any]], nodes: Sequence[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per site ID: `drives_by_kma` (KMA ID -> drives it served last, in the last day), its
    `libraries`, the media pools only its drives may read (`pools_only_here`) and the redundancy
    `warnings`, what losing the site would leave behind among them."""
    served, libraries, only_here = _drives_by_kma(kma), _libraries(kma), _pools_only_at(kma)
    out = {}
    for site in sites:
        serving = [n["id"] for n in nodes if n["site_id"] == site["id"] and not n.get("witness")]
        drives = served.get(site["id"], {})
        agents = site["agents"]["total"] - site["agents"]["disabled"]
        pools = only_here.get(site["id"], [])
        out[site["id"]] = {
            "drives_by_kma": drives,
            "libraries": libraries.get(site["id"], []),
            "pools_only_here": pools,
            "warnings": _warnings(site["name"], serving, agents, drives) + _if_lost(site["name"], pools),
        }
    return out
