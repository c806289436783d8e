"""Data units: what an agent encrypts (a tape cartridge, by volser), and their state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.lifecycle import DATA_UNIT_STATE_SQL, DataUnitState, data_unit_conditions
from kma.domain.validation import check_id, check_text
from kma.errors import NotFound
from kma.services.common import patch, typed_row
from kma.services.media.media_pools import IN_POOL, IS_IN_POOL, pool_id_of
from kma.services.paging import (
    Filter,
    ListQuery,
    Page,
    PageRequest,
    SearchIndex,
    choice,
    indexed_rows,
    list_page,
)
from kma.store import Stmt

# A unit with no key is one whose has_keys the store's triggers cleared (migration 0015): a
# condition a small index of such units serves, where testing each unit for a key walked them all.
# The state column keeps the lifecycle's own definition; a test keeps the two in agreement.
LIST = ListQuery(
    select=(
        f"SELECT id, description, {DATA_UNIT_STATE_SQL} AS state, "
        "(SELECT count(*) FROM keys k WHERE k.data_unit_id = data_units.id) AS key_count, "
        "created_at, updated_at, has_keys, writer_generation FROM data_units"
    ),
    # No index holds units in state order; units in a state are listed by ID only.
    sort_fields={"id": "id", "created_at": "created_at"},
    default_sort="id",
    search=("id", "description"),
    search_index=SearchIndex("id", indexed_rows("data_units_text", "id")),
    filters={
        "state": choice({**data_unit_conditions("listed.id"), DataUnitState.NO_KEY: "has_keys = 0"}),
        # docs/media.md: the generation of the drive that wrote the tape, and its media pool
        "writer_generation": Filter("writer_generation = :value"),
        "pool_id": Filter(IS_IN_POOL, indexed=IN_POOL),  # its tapes: a range of upper-case volsers
    },
)


@dataclass(frozen=True)
class DataUnitRow:
    """A data unit (a tape, by its volser) as the API shows it (times in seconds since the epoch);
    the API's `DataUnit` reads it."""

    id: str
    description: str
    state: str
    key_count: int
    created_at: int
    updated_at: int
    writer_generation: str | None  # the drive generation that wrote it from BOT, or first
    pool_id: str | None  # its media pool (docs/media.md)


def _row(kma: Appliance, row: Any) -> dict[str, Any]:
    out = dict(row)
    del out["has_keys"]  # what the no_key filter reads; the state says it
    out["pool_id"] = pool_id_of(kma, out["id"])
    return out


def list_data_units(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req, {"now": kma.clock.now()})
    return page.with_items([_row(kma, r) for r in page.items])


def get_data_unit(kma: Appliance, unit_id: str) -> DataUnitRow:
    row = kma.store.query_one(
        f"SELECT * FROM ({LIST.select}) WHERE id = :id", {"id": unit_id, "now": kma.clock.now()}
    )
    if row is None:
        raise NotFound(f"There is no data unit '{unit_id}'.")
    return typed_row(DataUnitRow, _row(kma, row))


def create_data_unit(kma: Appliance, actor: Actor, unit_id: str, description: str = "") -> DataUnitRow:
    check_id(unit_id, "The data unit's external ID")
    check_text(description, "The description")
    now = kma.clock.now()
    kma.commit(
        actor,
        "data_unit.create",
        [
            Stmt(
                "INSERT INTO data_units (id, description, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (unit_id, description, now, now),
            )
        ],
        f"registered data unit '{unit_id}'",
        ("data_unit", unit_id),
    )
    return get_data_unit(kma, unit_id)


def update_data_unit(
    kma: Appliance, actor: Actor, unit_id: str, description: str | None = None
) -> DataUnitRow:
    if description is not None:
        check_text(description, "The description")
        kma.commit(
            actor,
            "data_unit.update",
            [patch("data unit", unit_id, {"description": description}, kma.clock.now())],
            f"changed data unit '{unit_id}' description",
            ("data_unit", unit_id),
        )
    return get_data_unit(kma, unit_id)
