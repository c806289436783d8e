"""MACs on the rows that grant power, so that a row written straight into a store grants nothing.

A leaked replica file or node credential lets someone write rows without the KMA's API. The rows
that grant power (a user's roles, passphrase and whether it is enabled; a session; an agent's
membership of a key group; a key split member's sealed share; where alerts go; which directory
groups grant which roles; a user's recovery codes) therefore carry an HMAC-SHA256
under a key derived from the master key (`kma.vault.row_mac_key`), which only an unlocked KMA
holds. Each write path
adds `seal(...)` to its own audited batch: an UPDATE that sets the MAC only if the row still holds
exactly the values it was computed from, so a concurrent change refuses the batch instead of
sealing values nobody checked.

Where a row is used, `genuine` checks it: a row whose MAC is missing or wrong grants nothing and
raises a `security.tamper` audit event (once per row per hour per KMA). A locked KMA has no MAC key
and cannot check: it serves no keys and lets a user do nothing but ask for its unlock, which needs
the key split, and `genuine` answers True there; every row is checked again at each unlock.

At the first unlock on this version rows without a MAC are sealed, trusted on first use, in one
audited batch; from then on a row without a MAC is tampered with. `DataDir.rows_sealed` lists the
tables sealed so, so a table a later version seals (its rows written by a migration) is trusted on
first use at the first unlock on that version in the same way.
Each unlock also sweeps every sealed table, so `kma audit verify` and the dashboard report what was
forged while the KMA was stopped, not only what someone tried to use.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.errors import KmaError, KmaLocked
from kma.store import Stmt

log = logging.getLogger(__name__)

TAMPER = "security.tamper"
REPORT_EVERY = 3600  # seconds between two tamper events about one row on one KMA


@dataclass(frozen=True)
class Sealed:
    """A table whose rows carry a MAC: its primary key and the columns that grant power."""

    table: str
    key: tuple[str, ...]
    fields: tuple[str, ...]
    subject: str  # the audit subject type of a row

    def row_id(self, row: Mapping[str, Any] | sqlite3.Row) -> str:
        return "/".join(str(row[k]) for k in self.key)


USERS = Sealed("users", ("id",), ("roles", "enabled", "passphrase_hash"), "user")
MEMBERSHIP = Sealed("key_group_agents", ("key_group_id", "agent_id"), (), "agent")
SPLIT_MEMBERS = Sealed("key_split_members", ("name",), ("share_sealed", "generation"), "key_split_member")
# Where the cluster's warnings and chosen audit events go: a forged one would send them elsewhere.
ALERT_CHANNEL_FIELDS = ("name", "kind", "enabled", "settings", "warnings", "audit_classes")
ALERT_CHANNELS = Sealed("alert_channels", ("id",), ALERT_CHANNEL_FIELDS, "alert_channel")
# Whom keys are exported to and whose files are imported: a forged partner would receive them. The
# fingerprint stands for the public keys (the partner's use checks it is theirs, transfer_partners.py).
TRANSFER_PARTNERS = Sealed(
    "transfer_partners", ("id",), ("fingerprint", "may_send", "may_receive", "enabled"), "transfer_partner"
)
# Which directory groups grant which roles: a forged one would make anybody a Security Officer.
DIRECTORY = Sealed("directory_settings", ("id",), ("settings",), "directory")
# A user's second factor: a forged recovery code would let its holder past it. The secret is under
# the master key, bound to the user (kma/services/sign_in/second_factor.py), so it needs no MAC.
SECOND_FACTORS = Sealed("second_factors", ("user_id",), ("confirmed", "recovery_hashes"), "user")
# Which roles must sign in with a second factor: a forged row would let them in with a passphrase.
SECOND_FACTOR_POLICY = Sealed("second_factor_policy", ("id",), ("roles",), "second_factor_policy")
# Sealed at the first unlock and checked at each:
TABLES = (
    USERS,
    MEMBERSHIP,
    SPLIT_MEMBERS,
    ALERT_CHANNELS,
    TRANSFER_PARTNERS,
    DIRECTORY,
    SECOND_FACTORS,
    SECOND_FACTOR_POLICY,
)
# What a `rows_sealed` file without a list of tables sealed (those written before the list was kept).
FIRST_SEALED = frozenset(s.table for s in TABLES[:7])
# Sessions come and go: not swept; one made while this KMA was locked is sealed when it unlocks.
SESSIONS = Sealed("sessions", ("token_hash",), ("user_id", "expires_at"), "session")


# json.dumps with these arguments, made once (a new encoder per call costs a key's issue more than
# its HMAC does; issue 47).
_CANONICAL = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)


def mac(key: bytes, sealed: Sealed, row: Mapping[str, Any] | sqlite3.Row) -> str:
    """HMAC-SHA256 of the table's name, the row's primary key and its power-granting fields
    (`hmac.digest`: OpenSSL's one-shot HMAC, the same bytes as hmac.new's without its Python)."""
    canonical = _CANONICAL.encode(
        [sealed.table, [row[k] for k in sealed.key], [row[f] for f in sealed.fields]]
    )
    return hmac.digest(key, canonical.encode(), "sha256").hex()


def matches(stored: object, expected: str) -> bool:
    """Whether a row's stored MAC is `expected`, compared in constant time; whatever was written
    into the column (NULL, not ASCII) is simply no match."""
    return stored is not None and hmac.compare_digest(str(stored).encode(), expected.encode())


def seal(key: bytes, sealed: Sealed, row: Mapping[str, Any] | sqlite3.Row) -> Stmt:
    """The statement that sets the row's MAC, for the batch that writes the row (after its write).

    `row` holds the primary key and power-granting fields as the row has them once written."""
    columns = (*sealed.key, *sealed.fields)
    where = " AND ".join(f"{c} IS :{c}" for c in columns)
    return Stmt(
        f"UPDATE {sealed.table} SET mac = :mac WHERE {where}",
        {**{c: row[c] for c in columns}, "mac": mac(key, sealed, row)},
        expect=1,
        refusal=f"the {sealed.subject.replace('_', ' ')} '{sealed.row_id(row)}' changed meanwhile; try again",
    )


def member_of(kma: Appliance, group_id: str, agent_id: str) -> list[Stmt]:
    """The statements that make the agent a member of the key group (if it is not yet), sealed."""
    row = {"key_group_id": group_id, "agent_id": agent_id}
    return [
        Stmt(
            "INSERT OR IGNORE INTO key_group_agents (key_group_id, agent_id) "
            "VALUES (:key_group_id, :agent_id)",
            row,
        ),
        seal(kma.vault.row_mac_key(), MEMBERSHIP, row),
    ]


class _Reports:
    """When each tampered row was last reported on this KMA (bounds the tamper events)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}

    def due(self, table: str, row_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            last = self._last.get((table, row_id))
            if last is not None and now - last < REPORT_EVERY:
                return False
            self._last[(table, row_id)] = now
            return True

    def forget(self, table: str, row_id: str) -> None:
        with self._lock:
            self._last.pop((table, row_id), None)


_REPORTS = _Reports()


def genuine(kma: Appliance, sealed: Sealed, row: Mapping[str, Any] | sqlite3.Row) -> bool:
    """Whether the row's MAC verifies (True on a locked KMA, which cannot tell); a row that fails is
    reported as tampered with."""
    try:
        key = kma.vault.row_mac_key()
    except KmaLocked:
        return True
    stored = row["mac"]
    if stored is None and not _sealed_here(kma, sealed):
        return True  # a row from before this version, sealed by `after_unlock` in a moment
    if matches(stored, mac(key, sealed, row)):
        return True
    # During a master key rotation a row not sealed again yet verifies under the old generation's key,
    # and one sealed again by another KMA under the new generation before this KMA took it up, once
    # it has.
    if any(matches(stored, mac(k, sealed, row)) for k in kma.vault.row_mac_keys()[1:]):
        return True
    if kma.vault.caught_up() and any(matches(stored, mac(k, sealed, row)) for k in kma.vault.row_mac_keys()):
        return True
    report_tamper(kma, sealed, row)
    return False


def _sealed_here(kma: Appliance, sealed: Sealed) -> bool:
    """Whether this KMA sealed the rows of `sealed` at an unlock, so that one without a MAC is
    forged. The tables of TABLES are listed in `rows_sealed` as each is sealed; the others (keys,
    sessions) have rules of their own before this one, and count as sealed from the first unlock
    with row MACs on."""
    if sealed in TABLES:
        return sealed.table in sealed_tables(kma.data_dir.rows_sealed)
    return kma.data_dir.rows_sealed.exists()


class _MadeWhileLocked:
    """Sessions this KMA made while locked (no MAC key then): it seals them when it unlocks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._rows.append(row)

    def take(self) -> list[dict[str, Any]]:
        with self._lock:
            rows, self._rows = self._rows, []
            return rows


_LOCKED_SESSIONS = _MadeWhileLocked()


def seal_session(kma: Appliance, token_hash: str, user_id: str, expires_at: int) -> list[Stmt]:
    """The statement that seals a new session (after its INSERT); none on a locked KMA, which
    seals it when it unlocks."""
    row = {"token_hash": token_hash, "user_id": user_id, "expires_at": expires_at}
    try:
        key = kma.vault.row_mac_key()
    except KmaLocked:
        _LOCKED_SESSIONS.add(row)
        return []
    return [seal(key, SESSIONS, row)]


def session_genuine(kma: Appliance, row: Mapping[str, Any] | sqlite3.Row) -> bool:
    """Whether a session may act: any on a locked KMA; else only with a MAC that verifies. One
    without a MAC (made on another KMA while it was locked, or before this version) is refused
    quietly: its user signs in again. A wrong MAC is tampering."""
    if row["mac"] is None:
        return kma.vault.locked
    return genuine(kma, SESSIONS, row)


class _Verified:
    """Membership rows whose MAC verified, so the agent path computes each MAC once: a row is its
    key, group and agent and MAC, so a changed row is a new entry (nothing to invalidate)."""

    MOST = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: set[tuple[str, str, str]] = set()

    def __contains__(self, row: tuple[str, str, str]) -> bool:
        return row in self._rows

    def add(self, row: tuple[str, str, str]) -> None:
        with self._lock:
            if len(self._rows) >= self.MOST:
                self._rows.clear()
            self._rows.add(row)


_MEMBERS = _Verified()


def member_genuine(kma: Appliance, group_id: str, agent_id: str, stored: str | None) -> bool:
    """`genuine` for an agent's membership of a key group, remembered once verified."""
    if stored is not None and (group_id, agent_id, stored) in _MEMBERS:
        return True
    row = {"key_group_id": group_id, "agent_id": agent_id, "mac": stored}
    ok = genuine(kma, MEMBERSHIP, row)
    if ok and stored is not None and not kma.vault.locked:
        _MEMBERS.add((group_id, agent_id, stored))
    return ok


def report_tamper(
    kma: Appliance, sealed: Sealed, row: Mapping[str, Any] | sqlite3.Row, why: str | None = None
) -> None:
    """A `security.tamper` event about the row (at most one per row per hour on this KMA). `why`:
    what is wrong with it; by default, its MAC."""
    row_id = sealed.row_id(row)
    if not _REPORTS.due(sealed.table, row_id):
        return
    if why is None:
        why = "has no MAC" if row["mac"] is None else "has a MAC that does not verify"
    log.error("tampered row: %s '%s' %s", sealed.table, row_id, why)
    try:
        kma.audit(
            kma.itself,
            TAMPER,
            f"tampered row: {sealed.table} '{row_id}' {why}; it grants nothing "
            "(written into the store without the KMA, or altered there)",
            condition=Condition.ERROR,
            subject=(sealed.subject, row_id),
            event_class="security",
        )
    except KmaError as exc:  # no cluster majority now: the row still grants nothing; said again later
        _REPORTS.forget(sealed.table, row_id)
        log.error("the tamper event could not be recorded: %s", exc)


def _select(sealed: Sealed) -> str:
    return f"SELECT {', '.join((*sealed.key, *sealed.fields, 'mac'))} FROM {sealed.table}"


def _rows(kma: Appliance, sealed: Sealed) -> list[Any]:
    return kma.store.query(_select(sealed))


def sealed_tables(rows_sealed: Path) -> frozenset[str]:
    """The tables whose rows this KMA sealed at an unlock (`DataDir.rows_sealed`): a row of theirs
    without a MAC is tampered with; one of another table is from before its version."""
    try:
        text = rows_sealed.read_text(encoding="utf-8")
    except FileNotFoundError:
        return frozenset()
    listed = [line.removeprefix("table:").strip() for line in text.splitlines() if line.startswith("table:")]
    return frozenset(listed) if listed else FIRST_SEALED


def tampered_rows(conn: sqlite3.Connection, key: bytes, sealed: frozenset[str]) -> list[str]:
    """Offline (`kma audit verify`): the rows whose MAC does not verify, described. `sealed`: the
    tables this KMA has sealed at an unlock (`sealed_tables`), where a row without a MAC is tampered
    with too."""
    out = []
    for table in TABLES:
        for row in conn.execute(_select(table)):
            stored = row["mac"]
            if stored is None and table.table not in sealed:
                continue
            if not matches(stored, mac(key, table, row)):
                why = "has no MAC" if stored is None else "has a MAC that does not verify"
                out.append(f"{table.table} '{table.row_id(row)}' {why}")
    return out


def recorded_tamper(conn: sqlite3.Connection) -> int:
    """How many tamper events the audit trail holds."""
    return int(conn.execute(TAMPER_COUNT).fetchone()[0])


def after_unlock(kma: Appliance) -> None:
    """Seal rows from before this version (first unlock only), then check every sealed row. A
    failure (no cluster majority now) is logged: the next unlock tries again, and until then rows
    without a MAC still count as older ones (`genuine`)."""
    try:
        _seal_and_sweep(kma)
    except KmaError as exc:
        log.error("the rows that grant power could not be sealed or checked after the unlock: %s", exc)


def _seal_and_sweep(kma: Appliance) -> None:
    key = kma.vault.row_mac_key()
    made = _LOCKED_SESSIONS.take()
    if made:  # those signed out or expired meanwhile are simply not there any more
        kma.commit(
            kma.itself,
            "auth.sessions_sealed",
            [dataclasses.replace(seal(key, SESSIONS, row), expect=None) for row in made],
            f"sealed {len(made)} sessions made while this KMA was locked",
            retention=Retention.MEDIUM,
        )
    done = sealed_tables(kma.data_dir.rows_sealed)
    new = [s for s in TABLES if s.table not in done]
    if new:
        unsealed = [(s, r) for s in new for r in _rows(kma, s) if r["mac"] is None]
        if unsealed:
            kma.commit(
                kma.itself,
                "security.rows_sealed",
                [seal(key, s, r) for s, r in unsealed],
                f"sealed {len(unsealed)} rows that grant power ({', '.join(s.table for s in new)}) "
                "written before their row MACs, trusting them on first use",
            )
        tables = "".join(f"table: {s.table}\n" for s in TABLES)
        kma.data_dir.rows_sealed.write_text(f"rows that grant power carry a MAC\n{tables}", encoding="utf-8")
    for sealed in TABLES:
        for row in _rows(kma, sealed):
            genuine(kma, sealed, row)


TAMPER_COUNT = "SELECT count(*), max(created_at) FROM audit_events WHERE operation = 'security.tamper'"


def tamper_warning(kma: Appliance) -> str | None:
    """The dashboard's warning while the audit trail holds tamper events."""
    row = kma.store.query_one(TAMPER_COUNT)
    if row is None or not row[0]:
        return None
    return (
        f"{row[0]} tamper events: rows that grant power (users, key group members, key split members, "
        "keys, KMA entries, alert channels) were written or altered in the store without the KMA; they "
        "grant nothing. See the audit trail's 'security.tamper' events, find how the store was reached, "
        "and remove or re-create those rows."
    )
