"""Whether each site's drives are served as the white paper advises (docs/media.md, chapter 5):
at least two KMAs per site, so that one can fail or be serviced, and the drives spread over them.

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


def site_redundancy(
    kma: Appliance, sites: Sequence[dict[str, Any]], nodes: Sequence[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per site ID: `drives_by_kma` (KMA ID -> drives it served last, in the last day) and the
    redundancy `warnings`."""
    served = _drives_by_kma(kma)
    out = {}
    for site in sites:
        serving = [n["id"] for n in nodes if n["site_id"] == site["id"] and not n.get("witness")]
        drives = served.get(site["id"], {})
        agents = site["agents"]["total"] - site["agents"]["disabled"]
        out[site["id"]] = {
            "drives_by_kma": drives,
            "warnings": _warnings(site["name"], serving, agents, drives),
        }
    return out
