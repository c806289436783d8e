"""Sign-in, sessions and lockout.

Tokens are random and kept only as their SHA-256 in the store, so a stolen database holds no
usable session. Failed sign-ins are bounded per user ID and source address, and per user ID
over all addresses (`kma.services.sign_in.lockout`): a slot is taken before each passphrase check, so
parallel guesses cannot slip past the limit.

A wrong passphrase for a user who exists is audited one by one (the lockout bounds how many).
Sign-ins as users who do not exist (or are disabled), and any try while locked out, are not
bounded by a lockout: every new user ID is a new count. Those are audited as refusals without a
session, at the bounded rate (kma/services/refusals.py).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import weakref
from dataclasses import dataclass
from typing import Any, NoReturn

from kma.appliance import Appliance
from kma.audit.record import Retention
from kma.crypto import hash_passphrase, verify_passphrase
from kma.directory import ldap
from kma.domain.actor import Actor
from kma.domain.roles import Role, parse_roles, role_words
from kma.errors import Forbidden, KmaLocked, LockedOut, Unauthenticated
from kma.metrics import SIGN_INS
from kma.services import refusals, users
from kma.services.integrity import row_macs
from kma.services.sign_in import directory, lockout, second_factor, second_factor_policy
from kma.store import Stmt

SESSION_SECONDS = 30 * 60
CATCH_UP_WAIT_S = 5.0  # how long a session not found waits for a rebuilt replica to catch up
WRONG = "The user ID or passphrase is wrong."
LOCKED = "Too many failed sign-ins; try again in 15 minutes or ask a Security Officer."
_DUMMY_HASH = hash_passphrase("timing equaliser for unknown users")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Session:
    token: str
    expires_at: int
    user: users.UserRow


class _Gate:
    """One sign-in at a time per client address (weakly held: gone when nobody waits on it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


class Gates:
    """This KMA's sign-in gates, by client address. They bound the cores of the process that
    serves the KMA, and `kma serve` serves one KMA a process: per KMA is per process."""

    def __init__(self, kma: Appliance) -> None:
        self._lock = threading.Lock()
        self._by_address: weakref.WeakValueDictionary[str, _Gate] = weakref.WeakValueDictionary()

    def of(self, address: str) -> _Gate:
        with self._lock:
            gate = self._by_address.get(address)
            if gate is None:
                gate = self._by_address[address] = _Gate()
            return gate


def sign_in(kma: Appliance, user_id: str, passphrase: str, address: str, code: str | None = None) -> Session:
    """Sign-ins from one address run one after another, so a flood of guesses from one place
    (unknown user IDs never lock out) uses at most one core and the KMA keeps serving."""
    gate = kma.part(Gates).of(address)
    with gate.lock:
        return _sign_in(kma, user_id, passphrase, address, code)


def _sign_in(kma: Appliance, user_id: str, passphrase: str, address: str, code: str | None) -> Session:
    name = user_id[:64]
    who = Actor(name, address)
    counters = lockout.for_sign_in(name, address)
    # The slot comes before looking the user up: unknown and known IDs count and answer alike.
    if not lockout.take_slots(kma, counters):
        why = f"refused: locked out after failed sign-ins (from {address} or from everywhere)"
        refusals.audit_anonymous(kma, address, "auth.sign_in", why, "security", ("user", name))
        SIGN_INS.labels("locked_out").inc()
        raise LockedOut(LOCKED, audited=True)
    row = kma.store.query_one("SELECT * FROM users WHERE id = ?", (user_id,))
    if row is None or directory.is_directory_account(row["passphrase_hash"]):
        settings = directory.get_directory(kma)
        if settings is not None and settings.enabled and _may_use_directory(kma, user_id, row):
            row_now, said = _sign_in_with_directory(kma, settings, user_id, passphrase, who)
            return _open_session(kma, who, user_id, counters, code, row_now, said)
    if row is None or not row["enabled"] or not row_macs.genuine(kma, row_macs.USERS, row):
        verify_passphrase(passphrase, _DUMMY_HASH)  # same time as a real check
        why = f"refused: unknown or disabled user '{name}'"
        refusals.audit_anonymous(kma, address, "auth.sign_in", why, "security", ("user", name))
        SIGN_INS.labels("refused").inc()
        raise Unauthenticated(WRONG, audited=True)
    if not verify_passphrase(passphrase, row["passphrase_hash"]):
        _refuse(kma, who, "wrong passphrase", counters)
    return _open_session(kma, who, user_id, counters, code, [], "signed in")


def _may_use_directory(kma: Appliance, user_id: str, row: Any) -> bool:
    """Not for a disabled account, nor for an ID that another user has in another case ("SO" when
    "so" is local): the audit trail must never show two people as one."""
    if row is not None:
        return bool(row["enabled"])
    twin = kma.store.query_one(
        "SELECT 1 FROM users WHERE id = ? COLLATE NOCASE AND id <> ?", (user_id, user_id)
    )
    return twin is None


def _open_session(
    kma: Appliance,
    who: Actor,
    user_id: str,
    counters: tuple[lockout.Counter, ...],
    code: str | None,
    first: list[Stmt],
    said: str,
) -> Session:
    """A new session for `user_id` once its second factor (if on) takes `code`, in one batch after
    the statements `first` (a directory account's row as the directory has it now)."""
    here, everywhere = counters
    try:
        used = second_factor.check(kma, user_id, code)
    except second_factor.SecondFactorRequired:
        # The passphrase was right: its slots go back while the person fetches the code.
        back = [lockout.give_back(here), lockout.give_back(everywhere)]
        asked = "passphrase right; asked for the second factor"
        kma.commit(who, "auth.sign_in", back, asked, ("user", user_id), retention=Retention.MEDIUM)
        raise
    if used is None:
        _refuse(kma, who, "wrong second-factor code", counters)
    now = kma.clock.now()
    token = secrets.token_urlsafe(32)
    expires = now + SESSION_SECONDS
    kma.commit(
        who,
        "auth.sign_in",
        [
            *first,
            *used,
            Stmt(
                "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) "
                "SELECT ?, id, ?, ? FROM users WHERE id = ? AND enabled = 1",
                (token_hash(token), now, expires, user_id),
                expect=1,
                refusal="the user was disabled",
            ),
            *row_macs.seal_session(kma, token_hash(token), user_id, expires),
            lockout.forget(here),
            lockout.give_back(everywhere),
            Stmt("DELETE FROM sessions WHERE expires_at <= ?", (now,)),
        ],
        said,
        ("user", user_id),
        retention=Retention.MEDIUM,
    )
    SIGN_INS.labels("signed_in").inc()
    return Session(token, expires, users.get_user(kma, user_id))


def _sign_in_with_directory(
    kma: Appliance,
    settings: directory.DirectoryRow,
    user_id: str,
    passphrase: str,
    who: Actor,
) -> tuple[list[Stmt], str]:
    """The directory checks the passphrase (the KMA binds as the person) and its groups give the
    roles, as they are now: the statements that make the user's row follow them, and what the audit
    event says."""
    url = settings.url
    try:
        account = ldap.authenticate(directory.directory_of(settings), user_id, passphrase)
    except ldap.DirectoryUnreachable as exc:
        why = f"refused: the directory {url} cannot be reached ({exc})"  # at the bounded rate, as above
        refusals.audit_anonymous(kma, who.address, "auth.sign_in", why, "security", ("user", who.entity_id))
        SIGN_INS.labels("refused").inc()
        raise directory.DirectoryUnavailable(
            f"The directory ({url}) cannot be reached, so directory accounts cannot sign in now; "
            "local accounts still can. Ask a Security Officer.",
            audited=True,
        ) from None
    if account is None:
        # Audited at the bounded rate of unknown users: any user ID may reach the directory, and a
        # flood of new ones must not flood the trail (the lockout slot is taken all the same).
        why = f"refused: the directory {url} refused user '{who.entity_id}' or their passphrase"
        refusals.audit_anonymous(kma, who.address, "auth.sign_in", why, "security", ("user", who.entity_id))
        SIGN_INS.labels("refused").inc()
        raise Unauthenticated(WRONG, audited=True)
    roles = directory.roles_of(settings, account)
    if not roles:
        why = f"refused: directory account '{account.dn}' is in no group mapped to a role"
        kma.audit(who, "auth.sign_in", why, event_class="security", subject=("user", who.entity_id))
        SIGN_INS.labels("refused").inc()
        raise Forbidden(
            "Your directory account is in no group that grants a role on this KMS; ask a Security Officer.",
            audited=True,
        )
    try:
        key = kma.vault.row_mac_key()
    except KmaLocked:
        raise KmaLocked(
            "This KMA is locked: directory accounts sign in once a quorum has unlocked it; "
            "local accounts can now.",
            audited=False,
        ) from None
    marked, now = directory.DIRECTORY_MARK + account.dn, kma.clock.now()
    row = [
        Stmt(
            "INSERT INTO users (id, name, roles, passphrase_hash, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET name = excluded.name, roles = excluded.roles, "
            "passphrase_hash = excluded.passphrase_hash, updated_at = excluded.updated_at "
            "WHERE users.passphrase_hash LIKE 'directory:%' AND users.enabled = 1",
            (user_id, account.name[:200], roles, marked, now, now),
        ),
        users.seal_user(key, user_id, roles, 1, marked),
    ]
    return row, f"signed in with directory account '{account.dn}' as {role_words(roles)}"


def _refuse(kma: Appliance, who: Actor, reason: str, counters: tuple[lockout.Counter, ...]) -> NoReturn:
    """The failure keeps its slot; the event says how far each count has got."""
    counts = []
    for counter in counters:
        failures, until = lockout.standing(kma, counter)
        where = "everywhere" if counter.address == lockout.EVERYWHERE else f"from {counter.address}"
        locked = " (now locked out)" if until is not None and until > kma.clock.now() else ""
        counts.append(f"{failures} of {counter.limit} {where}{locked}")
    kma.audit(
        who,
        "auth.sign_in",
        f"refused: {reason}; failed sign-ins {', '.join(counts)}",
        event_class="security",
        subject=("user", who.entity_id),
    )
    SIGN_INS.labels("refused").inc()
    raise Unauthenticated(WRONG, audited=True)


def _session(kma: Appliance, token: str) -> Any:
    return kma.store.query_one(
        "SELECT u.id, u.roles, u.enabled, u.passphrase_hash, u.mac, s.token_hash, s.user_id, s.expires_at, "
        "s.mac AS session_mac FROM sessions s JOIN users u ON u.id = s.user_id "
        "WHERE s.token_hash = ? AND s.expires_at > ? AND u.enabled = 1",
        (token_hash(token), kma.clock.now()),
    )


def authenticate(kma: Appliance, token: str, address: str) -> Actor:
    row = _session(kma, token)
    # Not found while this KMA's replica is being rebuilt (its rqlited restarted): perhaps only not
    # there yet. Believed once the replica has caught up again, or after CATCH_UP_WAIT_S.
    if row is None and not kma.store.caught_up():
        kma.store.caught_up(wait=CATCH_UP_WAIT_S)
        row = _session(kma, token)
    if (
        row is None
        or not row_macs.genuine(kma, row_macs.USERS, row)
        or not row_macs.session_genuine(kma, {**dict(row), "mac": row["session_mac"]})
    ):
        raise Unauthenticated("Your session has expired or is not valid; sign in again.")
    roles = parse_roles(row["roles"])
    return Actor(row["id"], address, "user", roles, _enrolment_pending(kma, row["id"], roles))


def _enrolment_pending(kma: Appliance, user_id: str, roles: frozenset[Role]) -> bool:
    """Whether this user's roles require a second factor they have not enrolled yet: their session
    may do nothing else until they do (kma/services/sign_in/second_factor_policy.py)."""
    if kma.vault.locked or not second_factor_policy.requires(kma, roles):
        return False
    return not second_factor.is_on(kma, user_id)


def sign_out(kma: Appliance, actor: Actor, token: str) -> None:
    kma.commit(
        actor,
        "auth.sign_out",
        [Stmt("DELETE FROM sessions WHERE token_hash = ?", (token_hash(token),))],
        "signed out",
        ("user", actor.entity_id),
        retention=Retention.MEDIUM,
    )
