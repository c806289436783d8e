"""What the media rules let a site see ahead: a pool's migration view, the relabel list, and the
tapes that moved between pools."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from kma.appliance import Appliance
from kma.domain import media
from kma.domain.lifecycle import DataUnitState
from kma.domain.media import VolserPattern
from kma.services.data_units import list_data_units
from kma.services.media.media_pools import get_media_pool
from kma.services.paging import ListQuery, Page, PageRequest, list_page


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


@dataclass(frozen=True)
class GenerationMigration:
    """What one drive generation does with a pool's tapes (the API's `GenerationMigration`)."""

    generation: str
    drives: int  # enabled drives of this generation
    append: int
    read_only: int
    rewrite_from_bot: int
    unreadable_without: int  # the pool's tapes no other generation's drives here can read


@dataclass(frozen=True)
class WrittenBy:
    generation: str
    tapes: int


@dataclass(frozen=True)
class PoolMigration:
    """A pool's migration view; the API's `MediaPoolMigration` reads it."""

    pool_id: str
    tapes: int
    writer_unknown: int
    written_by: list[WrittenBy]
    generations: list[GenerationMigration]


def _row(generation: str, drives: Counter[str], writers: Counter[str | None]) -> GenerationMigration:
    written = {g: n for g, n in writers.items() if g is not None}
    readers = [d for d in drives if media.family(d) == media.family(generation)]
    # what retiring this generation's drives leaves unreadable: tapes no other drive here reads
    alone = [
        n
        for w, n in written.items()
        if media.can_read(generation, w) and not any(media.can_read(d, w) for d in readers if d != generation)
    ]
    return GenerationMigration(
        generation=generation,
        drives=drives[generation],
        append=sum(n for w, n in written.items() if media.can_append(generation, w)),
        read_only=sum(
            n
            for w, n in written.items()
            if media.can_read(generation, w) and not media.can_append(generation, w)
        ),
        rewrite_from_bot=sum(n for w, n in written.items() if not media.can_read(generation, w)),
        unreadable_without=sum(alone),
    )


def get_media_pool_migration(kma: Appliance, pool_id: str) -> PoolMigration:
    """Per drive generation (those of the cluster's drives and of the pool's tapes' writers): the
    pool's tapes it can append to, only read, or must rewrite from BOT; and the tapes that would
    be unreadable if its drives were retired."""
    pool = get_media_pool(kma, pool_id)
    writers = _writers(kma, VolserPattern.parse(pool.pattern))
    drives = _drives(kma)
    generations = sorted({*drives, *(g for g in writers if g is not None)}, key=media.GENERATIONS.index)
    return PoolMigration(
        pool_id=pool_id,
        tapes=sum(writers.values()),
        writer_unknown=writers[None],
        written_by=[WrittenBy(g, writers[g]) for g in generations if writers[g]],
        generations=[_row(g, drives, writers) for g in generations],
    )


def list_tapes_to_relabel(kma: Appliance, req: PageRequest) -> Page:
    """Tapes whose keys were all destroyed (Shredded): each must be written from BOT, overwriting
    its labels, before it is reused; a Write Key for one is refused until then."""
    shredded = replace(req, filters={**req.filters, "state": str(DataUnitState.SHREDDED)})
    page = list_data_units(kma, shredded)
    return page


def _moved_select(kma: Appliance) -> tuple[str, dict[str, Any]]:
    """One SELECT per pool, joined: the pool's tapes holding a live key of another key group than
    the pool's (a never-encrypted pool: any live key). Such a tape was written under another pool,
    or the pools were redrawn since: its next write key comes from the pool's group (or is
    refused), and a drive of its old group that reads it may be refused."""
    parts, params = [], {}
    for n, row in enumerate(kma.store.query("SELECT id, pattern, key_group_id FROM media_pools ORDER BY id")):
        where, bound = VolserPattern.parse(row["pattern"]).sql()
        for name, value in bound.items():
            where = where.replace(f":{name}", f":p{n}_{name}")
            params[f"p{n}_{name}"] = value
        params[f"p{n}_id"], params[f"p{n}_group"] = row["id"], row["key_group_id"]
        live = "k.data_unit_id = d.id AND k.destroyed_at IS NULL"
        parts.append(
            f"SELECT d.id AS id, :p{n}_id AS pool_id, :p{n}_group AS pool_key_group_id, "
            f"(SELECT group_concat(g, ' ') FROM (SELECT DISTINCT k.key_group_id AS g FROM keys k "
            f"WHERE {live} ORDER BY g)) AS key_groups, d.writer_generation AS writer_generation, "
            f"d.updated_at AS updated_at FROM data_units d WHERE {where} AND EXISTS "
            f"(SELECT 1 FROM keys k WHERE {live} AND k.key_group_id IS NOT :p{n}_group)"
        )
    if not parts:
        return "SELECT NULL AS id, NULL AS pool_id WHERE 0", {}
    return " UNION ALL ".join(parts), params


def list_tapes_moved_between_pools(kma: Appliance, req: PageRequest) -> Page:
    """Tapes whose live keys are of another key group than their media pool's (docs/media.md)."""
    select, params = _moved_select(kma)
    query = ListQuery(select=select, sort_fields={"id": ("id", "pool_id")}, default_sort="id", search=("id",))
    page = list_page(kma.store, query, req, params)
    return page.with_items([{**dict(r), "key_groups": (r["key_groups"] or "").split()} for r in page.items])
