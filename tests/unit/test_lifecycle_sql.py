"""The lifecycle rules are written twice, in Python and in SQL (lists filter and count by state
in the store): for any times, both must give the same state, or a key would show one state in
its details and be counted under another on the dashboard."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kma.domain.lifecycle import (
    DATA_UNIT_IN_STATE,
    DATA_UNIT_STATE_SQL,
    DESTROYABLE_SQL,
    DataUnitState,
    KeyState,
    data_unit_state,
    key_in_state,
    key_state,
    key_state_sql,
)

KEYS_TABLE = """CREATE TABLE keys (id INTEGER PRIMARY KEY, data_unit_id TEXT, activated_at INTEGER,
    protect_until INTEGER, deactivate_at INTEGER, compromised_at INTEGER, destroyed_at INTEGER,
    backup_mark INTEGER, key_group_id TEXT, withheld_at INTEGER)"""
BACKUP_AT = 10  # the one live database backup of the one-KMA cluster began then
TIME = st.integers(min_value=0, max_value=2**40)
PERIOD = st.integers(min_value=1, max_value=200 * 365 * 86400)


@dataclass(frozen=True)
class KeyTimes:
    activated_at: int | None
    protect_until: int | None
    deactivate_at: int | None
    compromised_at: int | None
    destroyed_at: int | None
    periods: tuple[int, int] = (1, 1)  # its policy's encryption period and cryptoperiod
    backup_mark: int | None = None  # marked by a backup that began then (kma/services/backups.py)
    key_group_id: str | None = None  # an agent's key (made, registered, or issued) is in a group
    withheld_at: int | None = None  # held back by a restore

    @property
    def held_by_backup(self) -> bool:
        return self.backup_mark is not None and self.backup_mark <= BACKUP_AT


@st.composite
def key_times(draw: st.DrawFn) -> KeyTimes:
    """A key as the store can hold it: in the pool (no times), or activated with both period ends
    from its policy, perhaps brought forward since by a revocation (KMIP Revoke)."""
    compromised_at = draw(st.none() | TIME)
    destroyed_at = draw(st.none() | TIME)
    encryption_period = draw(PERIOD)
    cryptoperiod = encryption_period + draw(st.integers(min_value=0, max_value=100 * 365 * 86400))
    periods = (encryption_period, cryptoperiod)
    if draw(st.booleans()):
        mark = draw(st.sampled_from([None, BACKUP_AT - 1, BACKUP_AT, BACKUP_AT + 1]))
        group = draw(st.sampled_from([None, "drives"]))
        withheld_at = draw(st.none() | TIME)
        return KeyTimes(None, None, None, compromised_at, destroyed_at, periods, mark, group, withheld_at)
    activated = draw(TIME)
    protect_until, deactivate_at = activated + encryption_period, activated + cryptoperiod
    revoked = draw(st.none() | st.integers(min_value=activated, max_value=deactivate_at))
    if revoked is not None:
        protect_until, deactivate_at = min(protect_until, revoked), min(deactivate_at, revoked)
    return KeyTimes(
        activated, protect_until, deactivate_at, compromised_at, destroyed_at, periods, None, "drives"
    )


@st.composite
def moments(draw: st.DrawFn, key: KeyTimes) -> int:
    """Any time, but often right on (or one second either side of) a period's end."""
    edges = [t for t in (key.activated_at, key.protect_until, key.deactivate_at) if t is not None]
    if edges and draw(st.booleans()):
        return draw(st.sampled_from(edges)) + draw(st.integers(min_value=-1, max_value=1))
    return draw(TIME)


def memory_db(keys: list[KeyTimes], data_unit: str = "E00001") -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(KEYS_TABLE)
    db.execute("CREATE TABLE data_units (id TEXT PRIMARY KEY)")
    db.execute("INSERT INTO data_units VALUES (?)", (data_unit,))
    # Every key's policy is in the store (policies are never removed), beside a default one.
    db.execute("CREATE TABLE key_policies (encryption_period INTEGER, cryptoperiod INTEGER)")
    db.executemany(
        "INSERT INTO key_policies VALUES (?, ?)", [(86400, 365 * 86400), *(k.periods for k in keys)]
    )
    db.executemany(
        "INSERT INTO keys (data_unit_id, activated_at, protect_until, deactivate_at, compromised_at, "
        "destroyed_at, backup_mark, key_group_id, withheld_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                data_unit,
                k.activated_at,
                k.protect_until,
                k.deactivate_at,
                k.compromised_at,
                k.destroyed_at,
                k.backup_mark,
                k.key_group_id,
                k.withheld_at,
            )
            for k in keys
        ],
    )
    db.execute("CREATE TABLE kmas (id TEXT)")
    db.execute("INSERT INTO kmas VALUES ('kma-1')")
    db.execute("CREATE TABLE backups (created_at INTEGER, deleted_at INTEGER)")
    db.executemany("INSERT INTO backups VALUES (?, ?)", [(BACKUP_AT, None), (BACKUP_AT + 5, BACKUP_AT + 6)])
    return db


def count(db: sqlite3.Connection, table: str, condition: str, now: int) -> int:
    return int(db.execute(f"SELECT count(*) FROM {table} WHERE {condition}", {"now": now}).fetchone()[0])


def python_state(key: KeyTimes, now: int) -> KeyState:
    return key_state(
        now,
        key.activated_at,
        key.protect_until,
        key.deactivate_at,
        key.destroyed_at,
        ready=key.held_by_backup,
        in_key_group=key.key_group_id is not None,
        withheld=key.withheld_at is not None,
    )


@given(data=st.data(), key=key_times())
@settings(max_examples=500, deadline=None)
def test_key_state_in_python_and_in_sql_agree(data: st.DataObject, key: KeyTimes) -> None:
    now = data.draw(moments(key))
    db = memory_db([key])
    (sql_state,) = db.execute(f"SELECT {key_state_sql()} FROM keys", {"now": now}).fetchone()
    (aliased,) = db.execute(f"SELECT {key_state_sql('k.')} FROM keys k", {"now": now}).fetchone()
    assert sql_state == aliased == python_state(key, now)


@given(data=st.data(), key=key_times())
@settings(max_examples=500, deadline=None)
def test_each_state_condition_holds_exactly_for_keys_in_its_state(data: st.DataObject, key: KeyTimes) -> None:
    """What a list filters by (one condition per state) says what the Python rules say."""
    now = data.draw(moments(key))
    db = memory_db([key])
    matching = {state for state in KeyState if count(db, "keys k", key_in_state(state, "k."), now)}
    assert matching == {python_state(key, now)}, (key, now)


@given(data=st.data(), key=key_times())
@settings(max_examples=300, deadline=None)
def test_only_deactivated_or_compromised_keys_are_destroyable_in_sql(
    data: st.DataObject, key: KeyTimes
) -> None:
    now = data.draw(moments(key))
    db = memory_db([key])
    (destroyable,) = db.execute(f"SELECT count(*) FROM keys WHERE {DESTROYABLE_SQL}", {"now": now}).fetchone()
    state = python_state(key, now)
    expected = state is not KeyState.DESTROYED and (
        key.compromised_at is not None or state is KeyState.DEACTIVATED
    )
    assert bool(destroyable) == expected, (state, key, now)


@given(data=st.data(), keys=st.lists(key_times(), max_size=5))
@settings(max_examples=300, deadline=None)
def test_data_unit_state_in_python_and_in_sql_agree(data: st.DataObject, keys: list[KeyTimes]) -> None:
    now = data.draw(moments(keys[0]) if keys else TIME)
    db = memory_db(keys)
    (sql_state,) = db.execute(f"SELECT {DATA_UNIT_STATE_SQL} FROM data_units", {"now": now}).fetchone()
    assert sql_state == data_unit_state([python_state(k, now) for k in keys])
    matching = {state for state in DataUnitState if count(db, "data_units", DATA_UNIT_IN_STATE[state], now)}
    assert matching == {sql_state}


def test_the_edges_of_the_periods() -> None:
    """At the very second a period ends, the next state has begun."""
    assert key_state(99, 0, 100, 200, None) is KeyState.PROTECT_AND_PROCESS
    assert key_state(100, 0, 100, 200, None) is KeyState.PROCESS_ONLY
    assert key_state(200, 0, 100, 200, None) is KeyState.DEACTIVATED
    assert key_state(0, None, None, None, None) is KeyState.READY
    assert key_state(0, None, None, None, None, ready=False) is KeyState.GENERATED
    assert key_state(0, 0, 100, 200, 50) is KeyState.DESTROYED
