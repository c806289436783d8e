"""Key and data unit lifecycles, computed from times and the clock (never stored as a state).

Generated -> Ready -> Protect-and-Process (activated; encryption period runs) -> Process-Only
(read, no new writes) -> Deactivated (cryptoperiod over, or revoked) -> Destroyed. Compromised is
a flag beside the state. Generated and Ready are pool keys only; a key an agent made or registered
waits in its key group as Pre-Active (KMIP's word) until it is activated, and a key a restore held
back (its backup's unassigned keys, which may have been issued after the backup) is Withheld: none
of those is counted as the pool, so every "Ready" on one screen is the same number.

The same rules are written once more as SQL (`key_in_state`, one condition per state, and
`key_state_sql` made of them) so lists can filter and count by state in the store; a test keeps
the two in agreement.
"""

from __future__ import annotations

from enum import StrEnum


class KeyState(StrEnum):
    GENERATED = "generated"
    READY = "ready"
    PRE_ACTIVE = "pre_active"  # an agent's key in its key group, not yet activated
    WITHHELD = "withheld"  # held back by a restore until an agent's read binds it to its group
    PROTECT_AND_PROCESS = "protect_and_process"
    PROCESS_ONLY = "process_only"
    DEACTIVATED = "deactivated"
    DESTROYED = "destroyed"


class DataUnitState(StrEnum):
    NO_KEY = "no_key"
    READABLE_NORMAL = "readable_normal"
    READABLE_NEEDS_REKEY = "readable_needs_rekey"
    SHREDDED = "shredded"


def key_state(
    now: int,
    activated_at: int | None,
    protect_until: int | None,
    deactivate_at: int | None,
    destroyed_at: int | None,
    ready: bool = True,
    *,
    in_key_group: bool = False,
    withheld: bool = False,
) -> KeyState:
    if destroyed_at is not None:
        return KeyState.DESTROYED
    if activated_at is None or protect_until is None or deactivate_at is None:
        return _waiting(ready, in_key_group, withheld)
    if now >= deactivate_at:
        return KeyState.DEACTIVATED
    if now >= protect_until:
        return KeyState.PROCESS_ONLY
    return KeyState.PROTECT_AND_PROCESS


def _waiting(ready: bool, in_key_group: bool, withheld: bool) -> KeyState:
    if in_key_group:
        return KeyState.PRE_ACTIVE
    if withheld:
        return KeyState.WITHHELD
    return KeyState.READY if ready else KeyState.GENERATED


# Each state as a condition on a key row's columns: what lists filter by (an index serves the
# condition; the CASE below could not be), what KMIP's Locate composes its states from, and what
# the CASE itself is made of. `:now` is bound by the caller; `t` is a table alias with its dot.
# A pool key is Ready once it exists on a second KMA, or, in a one-KMA cluster, once a database
# backup holds it (domain.md): a live backup that began at or after the key's backup mark
# (kma/services/backups.py). Until then it is Generated and is not issued.
HELD_OR_REPLICATED = (
    "coalesce((SELECT count(*) FROM kmas) > 1 OR {t}backup_mark <= "
    "(SELECT max(b.created_at) FROM backups b WHERE b.deleted_at IS NULL), 0)"
)
# A live database backup holds a destroyed key's material if it began after the key was marked and
# no later than the key's destruction (the same second counts: when in doubt, it holds it). While
# one does, the destruction is incomplete.
BACKUP_HOLDS_DESTROYED_KEY = (
    "{b}deleted_at IS NULL AND {b}created_at >= {t}backup_mark AND {b}created_at <= {t}destroyed_at"
)
# A live database backup holds a key's material, destroyed or not: one that began after the key
# was marked (and, for a destroyed key, no later than its destruction). A key's details list them.
BACKUP_HOLDS_KEY = (
    "{b}deleted_at IS NULL AND {b}created_at >= {t}backup_mark "
    "AND ({t}destroyed_at IS NULL OR {b}created_at <= {t}destroyed_at)"
)
_WAITING = "{t}destroyed_at IS NULL AND {t}activated_at IS NULL"
_POOL = f"{_WAITING} AND {{t}}key_group_id IS NULL AND {{t}}withheld_at IS NULL"
_LIVE = "{t}destroyed_at IS NULL AND {t}activated_at IS NOT NULL"
_STATE_COLUMNS = {
    # Once an agent's read binds a withheld key to its group it is that group's key (docs/backups.md)
    KeyState.WITHHELD: f"{_WAITING} AND {{t}}withheld_at IS NOT NULL AND {{t}}key_group_id IS NULL",
    KeyState.PRE_ACTIVE: f"{_WAITING} AND {{t}}key_group_id IS NOT NULL",
    KeyState.GENERATED: f"{_POOL} AND NOT {HELD_OR_REPLICATED}",
    KeyState.READY: f"{_POOL} AND {HELD_OR_REPLICATED}",
    # unlikely(): a hint that few keys are Deactivated (they are destroyed once their cryptoperiod
    # is over), so the planner reads them from their own index (migration 0013) and sorts them,
    # also for the page's count, rather than walking every key in the page's order to find them.
    KeyState.DEACTIVATED: f"{_LIVE} AND unlikely({{t}}deactivate_at <= :now)",
    KeyState.PROCESS_ONLY: f"{_LIVE} AND {{t}}deactivate_at > :now AND {{t}}protect_until <= :now",
    KeyState.PROTECT_AND_PROCESS: f"{_LIVE} AND {{t}}deactivate_at > :now AND {{t}}protect_until > :now",
    KeyState.DESTROYED: "{t}destroyed_at IS NOT NULL",
}
# Implied bounds on activated_at, so that a state is a range of the activation-time index rather
# than a walk through every key. They hold because a key's periods are its policy's, counted from
# its activation (policies are never removed and their periods never change), and revocation only
# brings both ends forward to the moment of revocation: a Protect-and-Process key was activated
# less than the longest encryption period ago; a Process-Only key (never revoked, or it would be
# Deactivated) at least the shortest encryption period and less than the longest cryptoperiod ago.
# Revocation can end a key's cryptoperiod at any age, so Deactivated has no such bound: it is a
# range of deactivate_at instead, which activation and revocation both set.
_ACTIVATED_BOUNDS = {
    KeyState.PROCESS_ONLY: (
        "{t}activated_at <= :now - (SELECT min(encryption_period) FROM key_policies) "
        "AND {t}activated_at > :now - (SELECT max(cryptoperiod) FROM key_policies)"
    ),
    KeyState.PROTECT_AND_PROCESS: (
        "{t}activated_at > :now - (SELECT max(encryption_period) FROM key_policies)"
    ),
}


def key_in_state(state: KeyState, t: str = "") -> str:
    """SQL: the key row (alias `t`, with its dot) is in `state` at :now; plain column conditions."""
    bound = _ACTIVATED_BOUNDS.get(state)
    return "(" + (_STATE_COLUMNS[state] + (f" AND {bound}" if bound else "")).format(t=t) + ")"


# The order in which the states are decided: the first whose condition holds.
_DECIDED = (
    KeyState.DESTROYED,
    KeyState.PRE_ACTIVE,
    KeyState.WITHHELD,
    KeyState.GENERATED,
    KeyState.READY,
    KeyState.DEACTIVATED,
    KeyState.PROCESS_ONLY,
)


def key_state_sql(t: str = "") -> str:
    """The state of a key row as an SQL expression (a column to show, not to filter by)."""
    whens = " ".join(f"WHEN {_STATE_COLUMNS[s].format(t=t)} THEN '{s}'" for s in _DECIDED)
    return f"CASE {whens} ELSE '{KeyState.PROTECT_AND_PROCESS}' END"


# What may be destroyed, as a condition inside the UPDATE itself.
DESTROYABLE_SQL = "destroyed_at IS NULL AND (compromised_at IS NOT NULL OR deactivate_at <= :now)"


def data_unit_state(key_states: list[KeyState]) -> DataUnitState:
    if not key_states:
        return DataUnitState.NO_KEY
    if all(s is KeyState.DESTROYED for s in key_states):
        return DataUnitState.SHREDDED
    if KeyState.PROTECT_AND_PROCESS in key_states:
        return DataUnitState.READABLE_NORMAL
    return DataUnitState.READABLE_NEEDS_REKEY


# A data unit's state as conditions on its keys, decided in this order; `unit` is the SQL of the
# data unit's ID in the query that uses them.
def _unit_has_key(unit: str, condition: str = "1") -> str:
    return f"EXISTS (SELECT 1 FROM keys k WHERE k.data_unit_id = {unit} AND {condition})"


# A Shredded unit has a Destroyed key, and one that needs rekeying a live key that is not
# Protect-and-Process: few keys are in those states and each has an index, so these units are
# named from those keys first (one list, read once) instead of testing every data unit in turn.
# Quick while those keys are few; many Process-Only keys make a long list to read for each page.
def _units_with_key_in(unit: str, conditions: tuple[str, ...]) -> str:
    either = " OR ".join(conditions)
    return f"{unit} IN (SELECT k.data_unit_id FROM keys k WHERE {either})"


# A waiting key (Generated, Ready, Pre-active or Withheld: the four states together) bound to a data
# unit, read from the small index of just those (migration 0107): as four states, each was a walk
# of the whole key pool, whose keys are bound to no unit.
_WAITING_ON_UNIT = f"({_WAITING.format(t='k.')} AND k.data_unit_id IS NOT NULL)"


def data_unit_conditions(unit: str = "data_units.id") -> dict[DataUnitState, str]:
    has_key, has_live_key = _unit_has_key(unit), _unit_has_key(unit, "k.destroyed_at IS NULL")
    has_write_key = _unit_has_key(unit, key_in_state(KeyState.PROTECT_AND_PROCESS, "k."))
    destroyed = _units_with_key_in(unit, (key_in_state(KeyState.DESTROYED, "k."),))
    not_writing = _units_with_key_in(
        unit,
        (
            _WAITING_ON_UNIT,
            key_in_state(KeyState.DEACTIVATED, "k."),
            key_in_state(KeyState.PROCESS_ONLY, "k."),
        ),
    )
    return {
        DataUnitState.NO_KEY: f"NOT {has_key}",
        DataUnitState.SHREDDED: f"{destroyed} AND NOT {has_live_key}",
        DataUnitState.READABLE_NORMAL: has_write_key,
        DataUnitState.READABLE_NEEDS_REKEY: f"{not_writing} AND NOT {has_write_key}",
    }


DATA_UNIT_IN_STATE = data_unit_conditions()
# One named data unit (:id) is Shredded, tested by its own keys (its Destroyed keys' index, migration
# 0049, then its live ones'): the lists' form above reads every Destroyed key once per query, which a
# single unit's test on the issuing path must not (issue 33: a tenth of a Create's CPU).
DATA_UNIT_SHREDDED = (
    f"{_unit_has_key(':id', 'k.destroyed_at IS NOT NULL')} "
    f"AND NOT {_unit_has_key(':id', 'k.destroyed_at IS NULL')}"
)
*_FIRST, _LAST = DATA_UNIT_IN_STATE  # the last needs no test of its own
DATA_UNIT_STATE_SQL = (
    "(CASE " + " ".join(f"WHEN {DATA_UNIT_IN_STATE[s]} THEN '{s}'" for s in _FIRST) + f" ELSE '{_LAST}' END)"
)
