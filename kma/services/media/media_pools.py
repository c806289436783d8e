"""Media pools: which tapes are encrypted, in which key group, and the cluster's media settings.

A pool names its volsers by pattern or range (kma/domain/media.py) and is bound to a key group,
or never encrypted, or read only. The agent path asks `pools_of` at every write key, so the pools
are read once a second at most (a change takes effect within a second, as an agent's access does).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.media import GenerationRule, Unmatched, VolserPattern
from kma.domain.validation import check_id, check_text
from kma.errors import NotFound, ValidationFailed
from kma.services.common import describe, patch, refuse_taken, require, typed_row
from kma.services.paging import ListQuery, Page, PageRequest, list_page
from kma.store import Stmt

POOLS_TTL = 1.0  # seconds the agent path keeps the pools it read

LIST = ListQuery(
    select=(
        "SELECT id, description, pattern, key_group_id, never_encrypted, read_only, created_at, "
        "updated_at FROM media_pools"
    ),
    sort_fields={"id": "id", "created_at": "created_at"},
    default_sort="id",
    search=("id", "description", "pattern"),
)


# A listed data unit (`listed.id`) is in the pool :value, read from the pool's stored pattern: a
# range LOW-HIGH of one length, else a GLOB (kma/domain/media.py), upper case as the agent path
# matches. Each part of the pattern is read once (an uncorrelated subquery), not once per unit, and
# the volsers are a range of the index of upper-case volsers (migration 0104): from the range's low
# end, or the pattern's fixed prefix (up to its first * or ?), to its high end, or that prefix
# followed by a byte above any of UTF-8's. So a pool of few tapes among many is not every unit read.
def _of_pool(part: str) -> str:
    return f"(SELECT {part} FROM media_pools p WHERE p.id = :value)"


_IS_RANGE = "instr(p.pattern, '-') > 0"
_LOW = "substr(p.pattern, 1, instr(p.pattern, '-') - 1)"
_HIGH = "substr(p.pattern, instr(p.pattern, '-') + 1)"
_WILD = "min(instr(p.pattern || '*', '*'), instr(p.pattern || '?', '?'))"
_PREFIX = f"substr(p.pattern, 1, {_WILD} - 1)"
_FROM = f"CASE WHEN {_IS_RANGE} THEN {_LOW} ELSE {_PREFIX} END"
_TO = f"CASE WHEN {_IS_RANGE} THEN {_HIGH} ELSE {_PREFIX} || x'ff' END"


def in_pool(volser: str) -> str:
    """SQL: the unit whose upper-case volser is `volser` is in the pool :value."""
    return (
        f"{volser} >= {_of_pool(_FROM)} AND {volser} <= {_of_pool(_TO)} "
        f"AND CASE WHEN {_of_pool(_IS_RANGE)} THEN length({volser}) = {_of_pool(f'length({_LOW})')} "
        f"ELSE {volser} GLOB {_of_pool('p.pattern')} END"
    )


# The pool's units read from the index of upper-case volsers; and the same test of a listed unit,
# which the planner does not read that index for (`+` makes it another expression): with thousands
# of units in the pool, the page walks the list's order and finds a page at once.
IN_POOL = in_pool("upper(listed.id)")
IS_IN_POOL = in_pool("upper(+listed.id)")


@dataclass(frozen=True)
class MediaPool:
    id: str
    pattern: VolserPattern
    key_group_id: str | None
    never_encrypted: bool
    read_only: bool


@dataclass(frozen=True)
class MediaPoolRow:
    """A media pool as the API shows it (times in seconds since the epoch); the API's `MediaPool`
    reads it."""

    id: str
    description: str
    pattern: str
    key_group_id: str | None
    never_encrypted: bool
    read_only: bool
    created_at: int
    updated_at: int
    tapes: int  # the data units whose volser the pattern matches


class PoolCache:
    """This KMA's copy of the pools for the agent path (a KMA part)."""

    def __init__(self, kma: Appliance) -> None:
        self.kma = kma
        self._lock = threading.Lock()
        self._pools: tuple[MediaPool, ...] = ()
        self._settings: tuple[Unmatched, GenerationRule] = (Unmatched.SERVE, GenerationRule.WARN)
        self._read = -POOLS_TTL

    def current(self) -> tuple[tuple[MediaPool, ...], tuple[Unmatched, GenerationRule]]:
        with self._lock:
            if time.monotonic() - self._read >= POOLS_TTL:
                self._pools = tuple(_pool(r) for r in self.kma.store.query(LIST.select))
                self._settings = _settings(self.kma)
                self._read = time.monotonic()
            return self._pools, self._settings

    def forget(self) -> None:
        """A change made on this KMA applies at once here (others see it within POOLS_TTL)."""
        with self._lock:
            self._read = -POOLS_TTL


def _pool(row: Any) -> MediaPool:
    return MediaPool(
        row["id"],
        VolserPattern.parse(row["pattern"]),
        row["key_group_id"],
        bool(row["never_encrypted"]),
        bool(row["read_only"]),
    )


def _settings(kma: Appliance) -> tuple[Unmatched, GenerationRule]:
    row = kma.store.query_one("SELECT media_unmatched, media_generation_rule FROM cluster")
    if row is None:
        return Unmatched.SERVE, GenerationRule.WARN
    return Unmatched(row[0]), GenerationRule(row[1])


def pools_of(kma: Appliance, volser: str) -> list[MediaPool]:
    """The pools whose pattern the volser matches (more than one is a mistake the caller refuses)."""
    pools, _ = kma.part(PoolCache).current()
    return [p for p in pools if p.pattern.matches(volser.upper())]


def settings_now(kma: Appliance) -> tuple[Unmatched, GenerationRule]:
    return kma.part(PoolCache).current()[1]


def pool_id_of(kma: Appliance, volser: str) -> str | None:
    """The one pool of the volser (None: no pool, or two)."""
    pools = pools_of(kma, volser)
    return pools[0].id if len(pools) == 1 else None


def _row(kma: Appliance, row: Any) -> dict[str, Any]:
    out = dict(row)
    out["never_encrypted"], out["read_only"] = bool(out["never_encrypted"]), bool(out["read_only"])
    where, params = VolserPattern.parse(out["pattern"]).sql()
    out["tapes"] = int(kma.store.scalar(f"SELECT count(*) FROM data_units WHERE {where}", params))
    return out


def list_media_pools(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req)
    return page.with_items([_row(kma, r) for r in page.items])


def get_media_pool(kma: Appliance, pool_id: str) -> MediaPoolRow:
    row = kma.store.query_one(LIST.select + " WHERE id = ?", (pool_id,))
    if row is None:
        raise NotFound(f"There is no media pool '{pool_id}'.")
    return typed_row(MediaPoolRow, _row(kma, row))


def _checked(changes: dict[str, Any]) -> dict[str, Any]:
    if "pattern" in changes:
        try:
            changes["pattern"] = VolserPattern.parse(changes["pattern"]).text
        except ValueError as bad:
            raise ValidationFailed(f"The volser pattern {bad}.") from None
    if "description" in changes:
        check_text(changes["description"], "The description")
    if changes.get("never_encrypted") and changes.get("key_group_id"):
        raise ValidationFailed(
            "A pool never encrypted has no key group: its tapes get no key (choose one or the other)."
        )
    for flag in ("never_encrypted", "read_only"):
        if flag in changes:
            changes[flag] = int(changes[flag])
    return changes


def create_media_pool(kma: Appliance, actor: Actor, pool_id: str, **fields: Any) -> MediaPoolRow:
    check_id(pool_id, "The media pool ID")
    fields = _checked({"description": "", "never_encrypted": False, "read_only": False, **fields})
    if "pattern" not in fields:
        raise ValidationFailed("A media pool needs a volser pattern or range (E*, E00000-E49999).")
    if fields.get("key_group_id"):
        require(kma, "key group", fields["key_group_id"])
    refuse_taken(kma, "media pool", pool_id)
    now = kma.clock.now()
    columns = ["id", *fields, "created_at", "updated_at"]
    kma.commit(
        actor,
        "media_pool.create",
        [
            Stmt(
                f"INSERT INTO media_pools ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                (pool_id, *fields.values(), now, now),
            )
        ],
        f"created media pool '{pool_id}' ({_summary(fields)})",
        ("media_pool", pool_id),
    )
    kma.part(PoolCache).forget()
    return get_media_pool(kma, pool_id)


def _summary(fields: dict[str, Any]) -> str:
    if fields.get("never_encrypted"):
        kind = "never encrypted"
    elif fields.get("key_group_id"):
        kind = f"key group '{fields['key_group_id']}'"
    else:
        kind = "the drive's default key group"
    return f"volsers {fields['pattern']}, {kind}{', read only' if fields.get('read_only') else ''}"


def update_media_pool(kma: Appliance, actor: Actor, pool_id: str, **changes: Any) -> MediaPoolRow:
    current = get_media_pool(kma, pool_id)
    changes = _checked({k: v for k, v in changes.items() if v is not None})
    if changes.get("key_group_id") == "":
        changes["key_group_id"] = None  # "" unbinds the pool from its key group
    elif changes.get("key_group_id"):
        require(kma, "key group", changes["key_group_id"])
    _checked({**asdict(current), **changes})
    if changes:
        kma.commit(
            actor,
            "media_pool.update",
            [patch("media pool", pool_id, changes, kma.clock.now())],
            f"changed media pool '{pool_id}': {describe(changes)}",
            ("media_pool", pool_id),
        )
        kma.part(PoolCache).forget()
    return get_media_pool(kma, pool_id)


def delete_media_pool(kma: Appliance, actor: Actor, pool_id: str) -> None:
    require(kma, "media pool", pool_id)
    kma.commit(
        actor,
        "media_pool.delete",
        [Stmt("DELETE FROM media_pools WHERE id = ?", (pool_id,), expect=1, refusal="it was deleted")],
        f"deleted media pool '{pool_id}' (its tapes follow the setting for volsers of no pool)",
        ("media_pool", pool_id),
    )
    kma.part(PoolCache).forget()


def get_media_settings(kma: Appliance) -> dict[str, str]:
    unmatched, rule = _settings(kma)
    return {"unmatched": str(unmatched), "generation_rule": str(rule)}


def update_media_settings(
    kma: Appliance, actor: Actor, unmatched: str | None = None, generation_rule: str | None = None
) -> dict[str, str]:
    changes = {}
    if unmatched is not None:
        changes["media_unmatched"] = str(Unmatched(unmatched))
    if generation_rule is not None:
        changes["media_generation_rule"] = str(GenerationRule(generation_rule))
    if changes:
        sets = ", ".join(f"{k} = :{k}" for k in changes)
        kma.commit(
            actor,
            "media.settings",
            [Stmt(f"UPDATE cluster SET {sets} WHERE id = 1", changes, expect=1)],
            f"changed the media settings: {describe(changes)}",
            ("cluster", "media"),
        )
        kma.part(PoolCache).forget()
    return get_media_settings(kma)
