"""Key and data unit lifecycles, computed from times and the clock (never stored as a state).

Generated -> Ready -> Protect-and-Process (activated; encryption period runs) -> Process-Only
(read, no new writes) -> Deactivated (cryptoperiod over, or revoked) -> Destroyed. Compromised is
a flag beside the state. The same rules are written once more as SQL (`KEY_STATE_SQL`) so lists
can filter and count by state in the store; a test keeps the two in agreement.
"""

from __future__ import annotations

from enum import StrEnum


class KeyState(StrEnum):
    GENERATED = "generated"
    READY = "ready"
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
) -> KeyState:
    if destroyed_at is not None:
        return KeyState.DESTROYED
    if activated_at is None or protect_until is None or deactivate_at is None:
        return KeyState.READY if ready else KeyState.GENERATED
    if now >= deactivate_at:
        return KeyState.DEACTIVATED
    if now >= protect_until:
        return KeyState.PROCESS_ONLY
    return KeyState.PROTECT_AND_PROCESS


# `:now` is bound by the caller. A one-KMA cluster without backups treats new keys as Ready
# (domain.md); `kma status` warns that they exist on this KMA only.
def key_state_sql(t: str = "") -> str:
    """The state of a key row as an SQL expression; `t` is a table alias with its dot."""
    return f"""CASE
    WHEN {t}destroyed_at IS NOT NULL THEN 'destroyed'
    WHEN {t}activated_at IS NULL THEN 'ready'
    WHEN {t}deactivate_at <= :now THEN 'deactivated'
    WHEN {t}protect_until <= :now THEN 'process_only'
    ELSE 'protect_and_process' END"""


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


DATA_UNIT_STATE_SQL = f"""(SELECT CASE
    WHEN count(*) = 0 THEN 'no_key'
    WHEN sum(k.destroyed_at IS NULL) = 0 THEN 'shredded'
    WHEN sum(({key_state_sql("k.")}) = 'protect_and_process') > 0 THEN 'readable_normal'
    ELSE 'readable_needs_rekey' END
    FROM keys k WHERE k.data_unit_id = data_units.id)"""
