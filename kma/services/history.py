"""One key's, one data unit's or one agent's life: states over time, boundaries, and its events.

What an auditor asks is "what happened to this tape / key / drive, when, and who did it". The
states come from the object's own times (a key's activation, encryption period end, cryptoperiod
end, destruction), which the lifecycle computes rather than stores; the "who" comes from the
audit events that caused each change. The timeline is drawn by the manager from `lanes`
(state spans) and `boundaries` (period ends and flags), beside `events`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kma.appliance import Appliance
from kma.domain.lifecycle import DataUnitState, KeyState, data_unit_state
from kma.errors import NotFound

EVENT_LIMIT = 1000
Events = Sequence[Mapping[str, Any]]
KEY_COLUMNS = (
    "id, kma_id, key_group_id, data_unit_id, agent_id, created_at, activated_at, protect_until, "
    "deactivate_at, compromised_at, destroyed_at, destroy_comment, registered_by, withheld_at"
)
RELEASED_KEY_COLUMNS = ", ".join(f"k.{c.strip()}" for c in KEY_COLUMNS.split(","))
KEY_LANES = 24  # a data unit has a handful of keys; more would not be readable as lanes


@dataclass
class Span:
    state: str
    start: int
    end: int | None = None
    by: str | None = None
    note: str | None = None


@dataclass
class Boundary:
    kind: str  # encryption_period_end | cryptoperiod_end | compromised | created | enrolled ...
    at: int
    label: str
    planned: bool = False  # still in the future
    by: str | None = None
    lane: int = 0


@dataclass
class Lane:
    label: str
    subject_type: str
    subject_id: str
    spans: list[Span] = field(default_factory=list)


@dataclass(frozen=True)
class History:
    """One key's, data unit's or agent's life: its lanes of states, boundaries and audit events (the
    newest EVENT_LIMIT of `events_total`); the API's `History` reads it."""

    subject_type: str
    subject_id: str
    title: str
    now: int
    state: str
    lanes: list[Lane]
    boundaries: list[Boundary]  # in time order
    events: list[dict[str, Any]]
    events_total: int
    events_truncated: bool
    facts: dict[str, Any]


def _spans(points: Iterable[tuple[int, str, str | None, str | None]], now: int) -> list[Span]:
    """Spans from (start, state, by, note) change points; points in the future are left out."""
    spans: list[Span] = []
    for start, state, by, note in sorted(points, key=lambda p: p[0]):
        if start > now:
            break
        if spans and spans[-1].state == state:
            continue
        if spans:
            spans[-1].end = start
        spans.append(Span(state, start, None, by, note))
    return spans


def _first_actor(events: Events, operation: str, subject_id: str | None = None) -> str | None:
    for event in events:
        if (
            event["operation"] == operation
            and event["condition"] == "success"
            and (subject_id is None or event["subject_id"] == subject_id)
        ):
            return str(event["entity_id"])
    return None


def _events(kma: Appliance, where: str, params: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
    total = int(kma.store.scalar(f"SELECT count(*) FROM audit_events WHERE {where}", params) or 0)
    rows = kma.store.query(  # the newest EVENT_LIMIT, shown oldest first
        f"SELECT * FROM (SELECT * FROM audit_events WHERE {where} ORDER BY id DESC "
        f"LIMIT {EVENT_LIMIT}) ORDER BY id",
        params,
    )
    return [dict(r) for r in rows], total


# --- keys ----------------------------------------------------------------------------------
def _key_row(kma: Appliance, key_id: str) -> dict[str, Any]:
    row = kma.store.query_one(f"SELECT {KEY_COLUMNS} FROM keys WHERE id = ?", (key_id,))
    if row is None:
        raise NotFound(f"There is no key '{key_id}'.")
    return dict(row)


def key_state_at(key: Mapping[str, Any], t: int) -> KeyState | None:
    """The key's state at time `t`, or None before it existed (time-aware, unlike `key_state`)."""
    if key["created_at"] > t:
        return None
    if key["destroyed_at"] is not None and key["destroyed_at"] <= t:
        return KeyState.DESTROYED
    if key["activated_at"] is None or key["activated_at"] > t:
        return _waiting_state(key)
    if t >= key["deactivate_at"]:
        return KeyState.DEACTIVATED
    if t >= key["protect_until"]:
        return KeyState.PROCESS_ONLY
    return KeyState.PROTECT_AND_PROCESS


def _waiting_state(key: Mapping[str, Any]) -> KeyState:
    """A key before its activation: an agent's key (registered or made) waits in its key group; a
    pool key waits in the pool until issued, or is held back by a restore until an agent reads it."""
    if key.get("registered_by") is not None:
        return KeyState.PRE_ACTIVE
    if key["activated_at"] is not None:  # issued later: until then a pool key
        return KeyState.READY
    if key.get("key_group_id") is not None:
        return KeyState.PRE_ACTIVE
    return KeyState.WITHHELD if key.get("withheld_at") is not None else KeyState.READY


def _first_point(key: Mapping[str, Any]) -> tuple[int, str, str | None, str | None]:
    if key.get("registered_by"):
        return (
            key["created_at"],
            KeyState.PRE_ACTIVE,
            key["registered_by"],
            "registered or made by the agent",
        )
    return (key["created_at"], KeyState.READY, f"KMA {key['kma_id']}", "generated into the key pool")


def _key_lane(key: Mapping[str, Any], events: Events, now: int) -> Lane:
    kid = key["id"]
    tape = key["data_unit_id"] or key.get("released_from")
    issued_for = f"data unit {tape}" if tape else "no data unit"
    points: list[tuple[int, str, str | None, str | None]] = [_first_point(key)]
    if key["activated_at"] is not None:
        points += [
            (
                key["activated_at"],
                KeyState.PROTECT_AND_PROCESS,
                _first_actor(events, "key.issue", kid),
                f"issued for {issued_for} in key group {key['key_group_id']}",
            ),
            (key["protect_until"], KeyState.PROCESS_ONLY, None, "encryption period ended: read only"),
            (key["deactivate_at"], KeyState.DEACTIVATED, None, "cryptoperiod ended"),
        ]
    if key["destroyed_at"] is not None:
        points = [p for p in points if p[0] < key["destroyed_at"]]
        points.append(
            (
                key["destroyed_at"],
                KeyState.DESTROYED,
                _first_actor(events, "key.destroy", kid),
                key["destroy_comment"],
            )
        )
    return Lane(f"Key {kid}", "key", kid, _spans(points, now))


def _key_boundaries(key: Mapping[str, Any], events: Events, now: int, lane: int) -> list[Boundary]:
    out = []
    if key["activated_at"] is not None:
        for kind, at, label in (
            ("encryption_period_end", key["protect_until"], "encryption period ends"),
            ("cryptoperiod_end", key["deactivate_at"], "cryptoperiod ends"),
        ):
            out.append(Boundary(kind, at, label, at > now, None, lane))
    if key["compromised_at"] is not None:
        out.append(
            Boundary(
                "compromised",
                key["compromised_at"],
                "marked compromised",
                False,
                _first_actor(events, "key.compromise", key["id"]),
                lane,
            )
        )
    if key.get("released_at") is not None:
        out.append(
            Boundary(
                "released",
                key["released_at"],
                f"let go of data unit {key['released_from']} (written from beginning of tape)",
                False,
                key["released_by"],
                lane,
            )
        )
    return out


# Writing from beginning of tape lets a data unit's keys go (keys.data_unit_id becomes NULL); the
# tape each key was issued for, and when and by which agent it let go, stay here.
RELEASE = (
    "SELECT data_unit_id AS released_from, released_at, agent_id AS released_by "
    "FROM data_unit_released_keys WHERE key_id = ? ORDER BY released_at DESC, id DESC LIMIT 1"
)


NOT_RELEASED = {"released_from": None, "released_at": None, "released_by": None}


def _with_release(kma: Appliance, key: dict[str, Any]) -> dict[str, Any]:
    row = kma.store.query_one(RELEASE, (key["id"],))
    return {**key, **(dict(row) if row else NOT_RELEASED)}


def key_history(kma: Appliance, key_id: str) -> History:
    key = _with_release(kma, _key_row(kma, key_id))
    now = kma.clock.now()
    events, total = _events(kma, "subject_type = 'key' AND subject_id = :id", {"id": key_id})
    lane = _key_lane(key, events, now)
    state = key_state_at(key, now)
    return _result(
        "key",
        key_id,
        f"Key {key_id}",
        now,
        str(state),
        [lane],
        _key_boundaries(key, events, now, 0),
        events,
        total,
        {
            "compromised": key["compromised_at"] is not None,
            "data_unit_id": key["data_unit_id"],
            "key_group_id": key["key_group_id"],
            "released_from": key["released_from"],
            "released_at": key["released_at"],
        },
    )


# --- data units ----------------------------------------------------------------------------
def data_unit_history(kma: Appliance, unit_id: str) -> History:
    """The tape's state over time and a lane per key, including the keys that let go of it when it
    was written from beginning (each with its release): they stay in the tape's history."""
    unit = kma.store.query_one("SELECT id, description, created_at FROM data_units WHERE id = ?", (unit_id,))
    if unit is None:
        raise NotFound(f"There is no data unit '{unit_id}'.")
    now = kma.clock.now()
    current = [
        {**dict(r), **NOT_RELEASED}
        for r in kma.store.query(f"SELECT {KEY_COLUMNS} FROM keys WHERE data_unit_id = ?", (unit_id,))
    ]
    released = [
        dict(r)
        for r in kma.store.query(
            f"SELECT {RELEASED_KEY_COLUMNS}, r.data_unit_id AS released_from, r.released_at, "
            "r.agent_id AS released_by FROM data_unit_released_keys r JOIN keys k ON k.id = r.key_id "
            "WHERE r.data_unit_id = ?",
            (unit_id,),
        )
    ]
    keys = sorted(current + released, key=lambda k: (k["activated_at"] or 0, k["released_at"] or now))
    tape_keys = (
        "SELECT id FROM keys WHERE data_unit_id = :id UNION "
        "SELECT key_id FROM data_unit_released_keys WHERE data_unit_id = :id"
    )
    where = (
        "(subject_type = 'data_unit' AND subject_id = :id) OR "
        f"(subject_type = 'key' AND subject_id IN ({tape_keys}))"
    )
    events, total = _events(kma, where, {"id": unit_id})

    def state_at(t: int) -> DataUnitState:
        held = [k for k in keys if (k["activated_at"] or t + 1) <= t and (k["released_at"] or t + 1) > t]
        return data_unit_state([s for s in (key_state_at(k, t) for k in held) if s])

    moments = ("activated_at", "protect_until", "deactivate_at", "destroyed_at", "released_at")
    changes = {unit["created_at"]} | {k[f] for k in keys for f in moments if k[f]}
    points = [(t, str(state_at(t)), _by_at(events, t), None) for t in sorted(changes)]
    lanes = [Lane(f"Data unit {unit_id}", "data_unit", unit_id, _spans(points, now))]
    boundaries = [
        Boundary(
            "created", unit["created_at"], "registered", False, _first_actor(events, "data_unit.create"), 0
        )
    ]
    boundaries += _transfers(kma, unit_id)
    for index, key in enumerate(keys[-KEY_LANES:], start=1):
        lane = _key_lane(key, events, now)
        if key["released_at"] is not None:
            lane.label += " (released)"
        lanes.append(lane)
        boundaries += _key_boundaries(key, events, now, index)
    return _result(
        "data_unit",
        unit_id,
        f"Data unit {unit_id}",
        now,
        str(state_at(now)),
        lanes,
        boundaries,
        events,
        total,
        {"description": unit["description"], "keys": len(current), "released_keys": len(released)},
    )


def _transfers(kma: Appliance, unit_id: str) -> list[Boundary]:
    """Where the tape's keys went to and came from: each transfer file naming it (docs/transfer.md)."""
    rows = kma.store.query(
        "SELECT f.id, f.partner_id, f.direction, f.done_by, f.done_at FROM data_unit_transfers t "
        "JOIN transfer_files f ON f.id = t.file_id WHERE t.data_unit_id = ? ORDER BY f.done_at",
        (unit_id,),
    )
    words = {"export": "keys exported to partner", "import": "keys imported from partner"}
    return [
        Boundary(
            f"{r['direction']}ed",
            r["done_at"],
            f"{words[r['direction']]} '{r['partner_id']}' (transfer file {r['id']})",
            False,
            r["done_by"],
            0,
        )
        for r in rows
    ]


def _by_at(events: Events, t: int) -> str | None:
    """Who caused a change at `t`: the user behind a successful event at that second, if any."""
    for event in events:
        if event["created_at"] == t and event["condition"] == "success":
            return str(event["entity_id"])
    return None


# --- agents --------------------------------------------------------------------------------
ENABLED = re.compile(r"\benabled=(0|1|False|True)\b")


def agent_history(kma: Appliance, agent_id: str) -> History:
    agent = kma.store.query_one(
        "SELECT id, site_id, enabled, enrolled_at, enrollment_passphrase_hash IS NOT NULL AS pending, "
        "created_at FROM agents WHERE id = ?",
        (agent_id,),
    )
    if agent is None:
        raise NotFound(f"There is no agent '{agent_id}'.")
    now = kma.clock.now()
    where = "(subject_type = 'agent' AND subject_id = :id) OR entity_id = :id"
    events, total = _events(kma, where, {"id": agent_id})
    enrolled_at = agent["enrolled_at"]
    if not agent["enabled"]:
        current = "disabled"
    elif enrolled_at:
        current = "enrolled"
    else:
        current = "enrollment_pending" if agent["pending"] else "not_enrolled"
    created_by = _first_actor(events, "agent.create")
    boundaries = [Boundary("created", agent["created_at"], "created", False, created_by, 0)]
    if enrolled_at is not None:
        boundaries.append(Boundary("enrolled", enrolled_at, "enrolled", False, agent_id, 0))
    lanes = [Lane(f"Agent {agent_id}", "agent", agent_id, _spans(_agent_points(dict(agent), events), now))]
    issued = int(kma.store.scalar("SELECT count(*) FROM keys WHERE agent_id = ?", (agent_id,)) or 0)
    return _result(
        "agent",
        agent_id,
        f"Agent {agent_id}",
        now,
        current,
        lanes,
        boundaries,
        events,
        total,
        {"site_id": agent["site_id"], "keys_issued": issued},
    )


def _agent_changes(agent: Mapping[str, Any], events: Events) -> list[tuple[int, str, str | None, str]]:
    """(time, kind, by, note) of each change: from its events, plus enrollment from the agent row."""
    changes: list[tuple[int, str, str | None, str]] = []
    for event in events:
        if event["condition"] != "success" or event["subject_id"] != agent["id"]:
            continue
        op, at, by = event["operation"], event["created_at"], event["entity_id"]
        if op == "agent.create":
            changes.append((at, "create", by, "created"))
        elif op == "agent.enrollment_passphrase":
            changes.append((at, "passphrase", by, "one-time enrollment passphrase set"))
        elif op.startswith("agent.enroll"):
            changes.append((at, "enroll", by, "enrolled"))
        elif op == "agent.update" and (m := ENABLED.search(event["message"])):
            kind = "enable" if m.group(1) in ("1", "True") else "disable"
            changes.append((at, kind, by, f"{kind}d"))
    if not any(kind == "create" for _, kind, _, _ in changes):
        changes.append((agent["created_at"], "create", None, "created"))
    if agent["enrolled_at"] is not None:
        changes.append((agent["enrolled_at"], "enroll", agent["id"], "enrolled"))
    return sorted(changes, key=lambda c: c[0])


def _agent_points(agent: Mapping[str, Any], events: Events) -> list[tuple[int, str, str | None, str | None]]:
    enrollment, enabled = "not_enrolled", True
    points: list[tuple[int, str, str | None, str | None]] = []
    for at, kind, by, note in _agent_changes(agent, events):
        if kind == "passphrase" and enrollment == "not_enrolled":
            enrollment = "enrollment_pending"
        elif kind == "enroll":
            enrollment = "enrolled"
        elif kind in ("enable", "disable"):
            enabled = kind == "enable"
        points.append((at, enrollment if enabled else "disabled", by, note))
    return points


def _result(
    subject_type: str,
    subject_id: str,
    title: str,
    now: int,
    state: str,
    lanes: list[Lane],
    boundaries: list[Boundary],
    events: list[dict[str, Any]],
    total: int,
    facts: dict[str, Any],
) -> History:
    return History(
        subject_type,
        subject_id,
        title,
        now,
        state,
        lanes,
        sorted(boundaries, key=lambda b: b.at),
        events,
        total,
        total > len(events),
        facts,
    )
