"""Two-step sign-in: a TOTP code (RFC 6238, pyotp) after the passphrase (docs/directory.md).

A signed-in user enrols themselves: the KMA makes a secret and ten recovery codes, shows them once
(the secret as an otpauth:// URI the manager draws as a QR code), and turns the second factor on
when the user confirms with a first code. From then on every sign-in of theirs needs a code from
the current 30-second step or the one before or after (clocks drift); a code's step must be later
than the last one accepted, so a code seen over a shoulder or replayed is refused. A recovery code
works once in place of a code. A wrong code counts as a failed sign-in (the lockout of
passphrases). A Security Officer turns a user's second factor off under quorum (a lost phone and
no recovery code left).

The secret is wrapped under the master key. A locked KMA cannot read it, and lets a user do
nothing but ask for its unlock, which needs the key split: there the passphrase alone signs in, as
the row MACs (kma/services/integrity/row_macs.py) cannot be checked there either.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyotp

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.errors import Conflict, KmaError, KmaLocked, ValidationFailed
from kma.services import users
from kma.services.change import Change
from kma.services.integrity import row_macs
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt

STEP = 30  # seconds a code lasts (RFC 6238's default, what every authenticator app uses)
SKEW = 1  # steps of clock drift accepted either way
RECOVERY_CODES = 10
ISSUER = "KMS"
COLUMNS = "user_id, secret_wrapped, confirmed, last_step, recovery_hashes, mac"


class SecondFactorRequired(KmaError):
    """The passphrase was right; the user's second factor is on and no code came with it."""

    code, status = "second_factor_required", 401


def context(user_id: str) -> str:
    return f"totp:{user_id}"


def _hash(code: str) -> str:
    return hashlib.sha256(code.replace("-", "").replace(" ", "").upper().encode()).hexdigest()


def _recovery_code() -> str:
    raw = base64.b32encode(secrets.token_bytes(10)).decode()  # 80 bits, 16 letters and digits
    return "-".join(raw[i : i + 4] for i in range(0, 16, 4))


def _seal(kma: Appliance, user_id: str, confirmed: int, recovery_hashes: str) -> Stmt:
    row = {"user_id": user_id, "confirmed": confirmed, "recovery_hashes": recovery_hashes}
    return row_macs.seal(kma.vault.row_mac_key(), row_macs.SECOND_FACTORS, row)


def _row(kma: Appliance, user_id: str) -> Any:
    row = kma.store.query_one(f"SELECT {COLUMNS} FROM second_factors WHERE user_id = ?", (user_id,))
    if row is None or not row_macs.genuine(kma, row_macs.SECOND_FACTORS, row):
        return None
    return row


@dataclass(frozen=True)
class Enrolment:
    """Shown once, never again: the secret (also as an otpauth:// URI, for a QR code) and the
    recovery codes; the API's `SecondFactorEnrolment` reads it."""

    secret: str
    otpauth_uri: str
    recovery_codes: list[str]


def enrol_second_factor(kma: Appliance, actor: Actor) -> Enrolment:
    """A new secret and recovery codes for the signed-in user, shown once; on only once confirmed."""
    user_id = actor.entity_id
    secret = pyotp.random_base32(32)  # 160 bits, RFC 4226's recommended length
    codes = [_recovery_code() for _ in range(RECOVERY_CODES)]
    hashes = json.dumps(sorted(_hash(c) for c in codes))
    blob = kma.vault.master().wrap(context(user_id), secret.encode())
    kma.commit(
        actor,
        "user.second_factor_enrol",
        [
            Stmt(
                "INSERT INTO second_factors (user_id, secret_wrapped, recovery_hashes, created_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(user_id) DO UPDATE SET "
                "secret_wrapped = excluded.secret_wrapped, "
                "recovery_hashes = excluded.recovery_hashes, created_at = excluded.created_at, last_step = 0 "
                "WHERE second_factors.confirmed = 0",
                (user_id, blob, hashes, kma.clock.now()),
                expect=1,
                refusal="two-step sign-in is on already; a Security Officer turns it off before "
                "a new enrolment",
            ),
            _seal(kma, user_id, 0, hashes),
        ],
        f"began two-step sign-in enrolment for user '{user_id}'",
        ("user", user_id),
    )
    uri = pyotp.TOTP(secret, interval=STEP).provisioning_uri(name=user_id, issuer_name=ISSUER)
    return Enrolment(secret, uri, codes)


def _matching_step(kma: Appliance, row: Any, code: str) -> int | None:
    """The time step `code` is for, within the skew window; None if it is for none."""
    secret = kma.vault.master().unwrap(context(row["user_id"]), bytes(row["secret_wrapped"])).decode()
    totp = pyotp.TOTP(secret, interval=STEP)
    now = kma.clock.now() // STEP
    digits = code.replace(" ", "")
    for step in range(now + SKEW, now - SKEW - 1, -1):
        if hmac.compare_digest(totp.at(step * STEP).encode(), digits.encode()):  # str: ASCII only
            return step
    return None


def _take_step(row: Any, step: int) -> Stmt:
    """A code's step, taken once: a second use of it (or of an earlier one) refuses the batch."""
    return Stmt(
        "UPDATE second_factors SET last_step = ? WHERE user_id = ? AND last_step < ?",
        (step, row["user_id"], step),
        expect=1,
        refusal="that code was used already; wait for the next one",
    )


def confirm(kma: Appliance, actor: Actor, code: str) -> None:
    """The first code from the authenticator: from now on the user's sign-ins need one."""
    row = _row(kma, actor.entity_id)
    if row is None or row["confirmed"]:
        raise Conflict("There is no two-step sign-in enrolment waiting for a first code.")
    step = _matching_step(kma, row, code)
    if step is None:
        raise ValidationFailed("That code is not the authenticator's current one; check the phone's clock.")
    kma.commit(
        actor,
        "user.second_factor_confirm",
        [
            _take_step(row, step),
            Stmt(
                "UPDATE second_factors SET confirmed = 1 WHERE user_id = ? AND confirmed = 0",
                (row["user_id"],),
                expect=1,
            ),
            _seal(kma, row["user_id"], 1, row["recovery_hashes"]),
        ],
        f"turned two-step sign-in on for user '{row['user_id']}'",
        ("user", row["user_id"]),
    )


def check(kma: Appliance, user_id: str, code: str | None) -> list[Stmt] | None:
    """At sign-in, after the passphrase: the statements that use `code` up (for the session's
    batch); [] when the user has no second factor (or this KMA is locked); None for a wrong code.
    Raises SecondFactorRequired when a code is needed and none came."""
    try:
        kma.vault.master()
    except KmaLocked:
        return []
    row = kma.store.query_one(
        f"SELECT {COLUMNS} FROM second_factors WHERE user_id = ? AND confirmed = 1", (user_id,)
    )
    if row is None:
        return []
    if not row_macs.genuine(kma, row_macs.SECOND_FACTORS, row):
        return None  # a forged row lets nobody in
    if not code:
        raise SecondFactorRequired(
            "Enter the code from your authenticator app, or a recovery code.", audited=True
        )
    step = _matching_step(kma, row, code)
    if step is not None:
        return [_take_step(row, step)] if step > row["last_step"] else None
    hashes = json.loads(row["recovery_hashes"])
    if _hash(code) not in hashes:
        return None
    left = json.dumps([h for h in hashes if h != _hash(code)])
    return [
        Stmt(
            "UPDATE second_factors SET recovery_hashes = ? WHERE user_id = ? AND recovery_hashes = ?",
            (left, user_id, row["recovery_hashes"]),
            expect=1,
            refusal="that recovery code was used already",
        ),
        _seal(kma, user_id, 1, left),
    ]


def is_on(kma: Appliance, user_id: str) -> bool:
    """Whether the user's second factor is enrolled, confirmed and its row genuine."""
    row = _row(kma, user_id)
    return row is not None and bool(row["confirmed"])


def recovery_codes_left(kma: Appliance, user_id: str) -> int:
    row = _row(kma, user_id)
    return len(json.loads(row["recovery_hashes"])) if row is not None and row["confirmed"] else 0


def turn_off_change(kma: Appliance, user_id: str) -> Change:
    """The user signs in with the passphrase alone again, and may enrol anew."""
    return Change(
        "user.second_factor_off",
        [
            Stmt(
                "DELETE FROM second_factors WHERE user_id = ?",
                (user_id,),
                expect=1,
                missing=True,
                refusal=f"user '{user_id}' has no two-step sign-in",
            ),
        ],
        f"turned two-step sign-in off for user '{user_id}'",
        ("user", user_id),
    )


# --- turning it off: a quorum operation (kma/quorum/protected.py lists it) ---------------------
def _prepare_turn_off(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id = str(request["id"])
    if not users.get_user(kma, user_id).second_factor:
        raise ValidationFailed(f"User '{user_id}' has no two-step sign-in to turn off.")
    return Prepared(f"Turn two-step sign-in off for user '{user_id}'", {"id": user_id}, {"id": user_id})


def _execute_turn_off(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(turn_off_change(kma, p["id"]))


TURN_OFF_SECOND_FACTOR = OpType("turn_off_second_factor", _prepare_turn_off, _execute_turn_off)
