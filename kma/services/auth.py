"""Sign-in, sessions and lockout.

Tokens are random and kept only as their SHA-256 in the store, so a stolen database holds no
usable session. Five failures in a row lock a user out for 15 minutes; the counter moves inside
the UPDATE itself, so parallel guesses cannot slip past it.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.crypto import hash_passphrase, verify_passphrase
from kma.domain.actor import Actor
from kma.domain.roles import parse_roles
from kma.errors import LockedOut, Unauthenticated
from kma.services.users import user_row
from kma.store import Batch, Stmt

SESSION_SECONDS = 30 * 60
MAX_FAILURES = 5
LOCKOUT_SECONDS = 15 * 60
WRONG = "The user ID or passphrase is wrong."
_DUMMY_HASH = hash_passphrase("timing equaliser for unknown users")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Session:
    token: str
    expires_at: int
    user: dict[str, Any]


class _Gate:
    """One sign-in at a time per client address (weakly held: gone when nobody waits on it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


_GATES: weakref.WeakValueDictionary[str, _Gate] = weakref.WeakValueDictionary()
_GATES_LOCK = threading.Lock()


def _gate(address: str) -> _Gate:
    with _GATES_LOCK:
        gate = _GATES.get(address)
        if gate is None:
            gate = _GATES[address] = _Gate()
        return gate


def sign_in(kma: Appliance, user_id: str, passphrase: str, address: str) -> Session:
    """Sign-ins from one address run one after another, so a flood of guesses from one place
    (unknown user IDs never lock out) uses at most one core and the KMA keeps serving."""
    gate = _gate(address)
    with gate.lock:
        return _sign_in(kma, user_id, passphrase, address)


def _sign_in(kma: Appliance, user_id: str, passphrase: str, address: str) -> Session:
    now = kma.clock.now()
    who = Actor(user_id[:64], address)
    row = kma.store.query_one("SELECT * FROM users WHERE id = ?", (user_id,))
    if row is None or not row["enabled"]:
        verify_passphrase(passphrase, _DUMMY_HASH)  # same time as a real check
        kma.audit(
            who,
            "auth.sign_in",
            "refused: unknown or disabled user",
            event_class="security",
            subject=("user", user_id[:64]),
        )
        raise Unauthenticated(WRONG, audited=True)
    if row["locked_until"] is not None and row["locked_until"] > now:
        kma.audit(
            who,
            "auth.sign_in",
            "refused: user is locked out after failed sign-ins",
            event_class="security",
            subject=("user", user_id),
        )
        raise LockedOut(
            "Too many failed sign-ins; try again in 15 minutes or ask a Security Officer.", audited=True
        )
    if not verify_passphrase(passphrase, row["passphrase_hash"]):
        _record_failure(kma, who, user_id, now)
        raise Unauthenticated(WRONG, audited=True)
    token = secrets.token_urlsafe(32)
    expires = now + SESSION_SECONDS
    kma.commit(who, "auth.sign_in", [
        Stmt(
            "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) "
            "SELECT ?, id, ?, ? FROM users WHERE id = ? AND enabled = 1 "
            "AND (locked_until IS NULL OR locked_until <= ?)",
            (token_hash(token), now, expires, user_id, now), expect=1,
            refusal="the user was disabled or locked out",
        ),
        Stmt("UPDATE users SET failed_sign_ins = 0, locked_until = NULL WHERE id = ?", (user_id,)),
        Stmt("DELETE FROM sessions WHERE expires_at <= ?", (now,)),
    ], "signed in", ("user", user_id), retention=Retention.MEDIUM)  # fmt: skip
    return Session(token, expires, user_row(row))


def _record_failure(kma: Appliance, who: Actor, user_id: str, now: int) -> None:
    kma.store.write(Batch(
        [Stmt(
            "UPDATE users SET failed_sign_ins = failed_sign_ins + 1, locked_until = CASE "
            "WHEN failed_sign_ins + 1 >= ? THEN ? ELSE locked_until END WHERE id = ?",
            (MAX_FAILURES, now + LOCKOUT_SECONDS, user_id),
        )],
        kma.record(who, "auth.sign_in", "refused: wrong passphrase", ("user", user_id),
                   Condition.ERROR, Retention.MEDIUM, "security"),
    ))  # fmt: skip


def authenticate(kma: Appliance, token: str, address: str) -> Actor:
    row = kma.store.query_one(
        "SELECT u.id, u.roles FROM sessions s JOIN users u ON u.id = s.user_id "
        "WHERE s.token_hash = ? AND s.expires_at > ? AND u.enabled = 1",
        (token_hash(token), kma.clock.now()),
    )
    if row is None:
        raise Unauthenticated("Your session has expired or is not valid; sign in again.")
    return Actor(row["id"], address, "user", parse_roles(row["roles"]))


def sign_out(kma: Appliance, actor: Actor, token: str) -> None:
    kma.commit(
        actor,
        "auth.sign_out",
        [Stmt("DELETE FROM sessions WHERE token_hash = ?", (token_hash(token),))],
        "signed out",
        ("user", actor.entity_id),
        retention=Retention.MEDIUM,
    )
