"""What the media rules let a site see ahead: a pool's migration view and the relabel list."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from kma.appliance import Appliance
from kma.domain import media
from kma.domain.lifecycle import DataUnitState
from kma.domain.media import VolserPattern
from kma.services.data_units import list_data_units
from kma.services.media_pools import get_media_pool
from kma.services.paging import Page, PageRequest


def _writers(kma: Appliance, pattern: VolserPattern) -> Counter[str | None]:
    where, params = pattern.sql()
    rows = kma.store.query(
        f"SELECT writer_generation AS g, count(*) AS n FROM data_units WHERE {where} "
        "GROUP BY writer_generation",
        params,
    )
    return Counter({r["g"]: int(r["n"]) for r in rows})


def _drives(kma: Appliance) -> Counter[str]:
    rows = kma.store.query(
        "SELECT drive_generation AS g, count(*) AS n FROM agents WHERE drive_generation IS NOT NULL "
        "AND enabled = 1 GROUP BY drive_generation"
    )
    return Counter({r["g"]: int(r["n"]) for r in rows})


def _row(generation: str, drives: Counter[str], writers: Counter[str | None]) -> dict[str, Any]:
    written = {g: n for g, n in writers.items() if g is not None}
    readers = [d for d in drives if media.family(d) == media.family(generation)]
    # what retiring this generation's drives leaves unreadable: tapes no other drive here reads
    alone = [
        n
        for w, n in written.items()
        if media.can_read(generation, w) and not any(media.can_read(d, w) for d in readers if d != generation)
    ]
    return {
        "generation": generation,
        "drives": drives[generation],
        "append": sum(n for w, n in written.items() if media.can_append(generation, w)),
        "read_only": sum(
            n
            for w, n in written.items()
            if media.can_read(generation, w) and not media.can_append(generation, w)
        ),
        "rewrite_from_bot": sum(n for w, n in written.items() if not media.can_read(generation, w)),
        "unreadable_without": sum(alone),
    }


def migration_view(kma: Appliance, pool_id: str) -> dict[str, Any]:
    """Per drive generation (those of the cluster's drives and of the pool's tapes' writers): the
    pool's tapes it can append to, only read, or must rewrite from BOT; and the tapes that would
    be unreadable if its drives were retired."""
    pool = get_media_pool(kma, pool_id)
    writers = _writers(kma, VolserPattern.parse(pool["pattern"]))
    drives = _drives(kma)
    generations = sorted({*drives, *(g for g in writers if g is not None)}, key=media.GENERATIONS.index)
    return {
        "pool_id": pool_id,
        "tapes": sum(writers.values()),
        "writer_unknown": writers[None],
        "written_by": [{"generation": g, "tapes": writers[g]} for g in generations if writers[g]],
        "generations": [_row(g, drives, writers) for g in generations],
    }


def relabel_list(kma: Appliance, req: PageRequest) -> Page:
    """Tapes whose keys were all destroyed (Shredded): each must be written from BOT, overwriting
    its labels, before it is reused; a Write Key for one is refused until then."""
    shredded = replace(req, filters={**req.filters, "state": str(DataUnitState.SHREDDED)})
    page = list_data_units(kma, shredded)
    return page
