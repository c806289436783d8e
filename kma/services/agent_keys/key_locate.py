"""KMIP Locate's search over the keys an agent sees, the keys this KMA issued and has not shipped
yet included (they come first: they are the newest)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kma.appliance import Appliance
from kma.domain.lifecycle import KeyState, key_in_state
from kma.services.agent_keys.key_access import AGENT_GROUPS, AgentAccess, may_see, mine
from kma.services.integrity import key_macs


def _kmip_state(*states: KeyState, compromised: bool = False) -> str:
    """A KMIP State: the lifecycle's states (kma/domain/lifecycle.py), compromised or not."""
    either = " OR ".join(key_in_state(s, "k.") for s in states)
    return f"({either}) AND k.compromised_at IS {'NOT ' if compromised else ''}NULL"


STATE_SQL = {  # KMIP State -> condition on a key row
    1: _kmip_state(KeyState.GENERATED, KeyState.READY, KeyState.PRE_ACTIVE, KeyState.WITHHELD),  # Pre-Active
    2: _kmip_state(KeyState.PROTECT_AND_PROCESS, KeyState.PROCESS_ONLY),  # Active
    3: _kmip_state(KeyState.DEACTIVATED),
    4: f"NOT {key_in_state(KeyState.DESTROYED, 'k.')} AND k.compromised_at IS NOT NULL",  # Compromised
    5: _kmip_state(KeyState.DESTROYED),
    6: _kmip_state(KeyState.DESTROYED, compromised=True),  # Destroyed Compromised
}


@dataclass
class LocateFilter:
    """What a Locate asks for; every condition must hold (KMIP: all attributes match)."""

    data_units: list[str]
    groups: list[str]
    states: list[int]
    custom: list[tuple[str, str, bytes | None]]  # kept attributes: name, text, TTLV value unless text
    key_ids: list[str]
    names: list[str] = field(default_factory=list)  # Name: the data unit, or a Name a client set
    object_types: list[int] = field(default_factory=list)  # KMIP Object Type
    bits: list[int] = field(default_factory=list)  # Cryptographic Length
    algorithms: list[int] = field(default_factory=list)  # a registered public or private key's
    certificate_types: list[int] = field(default_factory=list)  # a registered certificate's
    usage_mask: int | None = None
    nothing: bool = False  # e.g. an object type other than symmetric keys: no match at all
    # a lifecycle date's column -> the dates asked for: one is that date, two a range (KMIP)
    dates: dict[str, list[int]] = field(default_factory=dict)


def locate(
    kma: Appliance, agent: AgentAccess, now: int, wanted: LocateFilter, offset: int, limit: int
) -> tuple[list[str], int]:
    """(IDs newest first, from `offset`, at most `limit`; how many match in all)."""
    if wanted.nothing:
        return [], 0
    where = [f"k.key_group_id IN {AGENT_GROUPS}"]
    params: dict[str, Any] = {**mine(agent), "now": now}

    def bind(prefix: str, values: Sequence[Any]) -> list[str]:
        names = []
        for i, value in enumerate(values):
            params[f"{prefix}{i}"] = value
            names.append(f":{prefix}{i}")
        return names

    where += [f"k.data_unit_id = {p}" for p in bind("du", wanted.data_units)]
    where += [f"k.key_group_id = {p}" for p in bind("g", wanted.groups)]
    where += [f"k.id = {p}" for p in bind("id", wanted.key_ids)]
    # An attribute's value names the keys that have it, through its index (migration 0050): as a
    # test of each key in turn (EXISTS, or OR-ed with the data unit) a Locate by Name read every
    # key of the agent's groups, 270 ms at a million keys, seconds with 16 drives asking at once.
    for i, (name, value, item) in enumerate(wanted.custom):
        params[f"cn{i}"], params[f"cv{i}"], params[f"ci{i}"] = name, value, item
        where.append(
            f"k.id IN (SELECT c.key_id FROM key_custom_attributes c "
            f"WHERE c.name = :cn{i} AND c.value = :cv{i} AND c.item IS :ci{i})"
        )
    form = "(SELECT {c} FROM key_kmip f WHERE f.key_id = k.id)"
    where += [f"coalesce({form.format(c='object_type')}, 2) = {p}" for p in bind("ot", wanted.object_types)]
    where += [f"coalesce({form.format(c='bits')}, 256) = {p}" for p in bind("bits", wanted.bits)]
    where += [f"{form.format(c='algorithm')} = {p}" for p in bind("alg", wanted.algorithms)]
    where += [  # a certificate (Object Type 1) whose Certificate Type is X.509 (1) unless kept
        f"{form.format(c='object_type')} = 1 AND coalesce({form.format(c='data_type')}, 1) = {p}"
        for p in bind("ct", wanted.certificate_types)
    ]
    for p in bind("nm", wanted.names):
        where.append(
            f"k.id IN (SELECT n.id FROM keys n WHERE n.data_unit_id = {p} UNION ALL "
            f"SELECT c.key_id FROM key_custom_attributes c WHERE c.name = 'Name' AND c.value = {p})"
        )
    for column, (earliest, latest) in _date_ranges(wanted).items():
        params[f"{column}_from"], params[f"{column}_to"] = earliest, latest
        where.append(f"k.{column} BETWEEN :{column}_from AND :{column}_to")
    if wanted.states:
        where.append("(" + " OR ".join(f"({STATE_SQL[s]})" for s in wanted.states) + ")")
    else:
        where.append("k.destroyed_at IS NULL")  # destroyed keys only when asked for by state
    if wanted.usage_mask is not None:
        params["mask"] = wanted.usage_mask
        where.append(
            "(coalesce((SELECT usage_mask FROM key_kmip m WHERE m.key_id = k.id), 12) & :mask) = :mask"
        )
    issued_here = _issued_here(kma, agent, now, wanted)
    # Counted once: one the replica shows by now (its outbox entry not yet forgotten) is left out.
    if issued_here:
        where.append(f"k.id NOT IN ({', '.join(bind('here', issued_here))})")
    condition = " AND ".join(where)
    total = int(kma.store.scalar(f"SELECT count(*) FROM keys k WHERE {condition}", params) or 0)
    total += len(issued_here)
    first = issued_here[offset : offset + limit]  # the newest keys: they come first
    params["limit"], params["offset"] = limit - len(first), max(0, offset - len(issued_here))
    rows = kma.store.query(  # a row whose MAC fails is left out (and reported)
        f"SELECT {key_macs.COLUMNS} FROM keys k WHERE {condition} ORDER BY k.activated_at IS NULL DESC, "
        "k.activated_at DESC, k.created_at DESC, k.id LIMIT :limit OFFSET :offset",
        params,
    )
    found = first + key_macs.genuine_ids(kma, rows)
    if total == 0 and offset == 0:  # a tape the cluster records no key for: one it refused to bind?
        found = _unrecorded(kma, agent, wanted)[:limit]
        total = len(found)
    return found, total


def _unrecorded(kma: Appliance, agent: AgentAccess, wanted: LocateFilter) -> list[str]:
    """The keys whose binding to the asked-for tape the cluster refused, for the agent it went
    to (a drive reading that tape finds the key it wrote with), for a plain tape lookup only."""
    tapes = {*wanted.data_units, *wanted.names}  # a tape's Name is its data unit (a tape key group's rule)
    if len(tapes) != 1 or wanted.groups or wanted.key_ids or wanted.custom or wanted.states:
        return []
    rows = kma.store.query(
        "SELECT key_id FROM unrecorded_bindings WHERE agent_id = ? AND data_unit_id = ? ORDER BY id DESC",
        (agent.agent_id, *tapes),
    )
    return [str(r[0]) for r in rows]


def _date_ranges(wanted: LocateFilter) -> dict[str, tuple[int, int]]:
    return {column: (min(dates), max(dates)) for column, dates in wanted.dates.items()}


def _issued_here(kma: Appliance, agent: AgentAccess, now: int, wanted: LocateFilter) -> list[str]:
    """The keys this KMA issued and has not shipped, which `wanted` finds (they have no custom
    attributes and the default usage mask), newest first."""
    found = []
    for s in kma.store.unshipped_all():
        state = 1 if s["activated_at"] is None else (3 if s["deactivate_at"] <= now else 2)
        if (
            all(s["data_unit_id"] == du for du in [*wanted.data_units, *wanted.names])
            and all(s["key_group_id"] == g for g in wanted.groups)
            and all(s["id"] == k for k in wanted.key_ids)
            and not wanted.custom
            and all(t == 2 for t in wanted.object_types)
            and all(b == 256 for b in wanted.bits)
            and not wanted.algorithms
            and not wanted.certificate_types
            and (not wanted.states or state in wanted.states)
            and (wanted.usage_mask is None or (12 & wanted.usage_mask) == wanted.usage_mask)
            and all(s[c] is not None and a <= s[c] <= b for c, (a, b) in _date_ranges(wanted).items())
            and may_see(kma, agent, s["key_group_id"])
        ):
            found.append(s)
    found.sort(key=lambda s: (s["activated_at"] is None, -(s["activated_at"] or 0), s["id"]))
    return [str(s["id"]) for s in found]
