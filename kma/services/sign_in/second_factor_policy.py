"""Two-step sign-in required by role (docs/directory.md): which roles must sign in with a second
factor, and what a user of such a role may do before enrolling one.

A Security Officer sets the roles under quorum (`SET_SECOND_FACTOR_ROLES`: lifting the requirement
weakens every sign-in of those roles). A new cluster requires it of Security Officers unless its
installer answered otherwise; a cluster made before this version requires it of no role until a
Security Officer says so.

A user of a required role without a second factor signs in with the passphrase, as before, but the
session may do nothing except enrol one (and read who it is, and sign out): every other route
answers 403 `second_factor_enrolment_required`. Once the first code confirms the enrolment the same
session may act, since that code was the second factor. This is worked out at each request, so a
Security Officer turning a user's second factor off under quorum sends that user back to enrolling,
and a role added to the policy applies to open sessions at once.

A locked KMA cannot read the policy's MAC nor any secret, and lets a user do nothing but ask for
its unlock (which needs the key split): the requirement does not apply there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.domain.roles import Role, format_roles, parse_roles, role_words
from kma.errors import KmaError, ValidationFailed
from kma.services.change import Change
from kma.services.integrity import row_macs
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt

STRICT = frozenset({Role.SECURITY_OFFICER})  # a new cluster's default, and a missing or forged row's
ENROLMENT_ROUTES = "enrol a second factor (POST /auth/second-factor, then .../confirm) or sign out"


class SecondFactorEnrolmentRequired(KmaError):
    """The user's roles require a second factor and they have none yet: only enrolment is open."""

    code, status = "second_factor_enrolment_required", 403


def check_roles(roles: Iterable[Any]) -> frozenset[Role]:
    try:
        return frozenset(Role(str(r)) for r in roles)
    except ValueError:
        raise ValidationFailed(f"Roles must be among: {', '.join(Role)}.") from None


def required_roles(kma: Appliance) -> frozenset[Role]:
    row = kma.store.query_one("SELECT id, roles, mac FROM second_factor_policy WHERE id = 1")
    if row is None or not row_macs.genuine(kma, row_macs.SECOND_FACTOR_POLICY, row):
        return STRICT
    return parse_roles(row["roles"])


def requires(kma: Appliance, roles: frozenset[Role]) -> bool:
    """Whether a user of `roles` must sign in with a second factor here."""
    return bool(roles & required_roles(kma))


def refuse_until_enrolled() -> SecondFactorEnrolmentRequired:
    return SecondFactorEnrolmentRequired(
        "Your role requires two-step sign-in and you have not set it up yet: "
        f"{ENROLMENT_ROUTES} first. The manager shows the QR code to scan."
    )


@dataclass(frozen=True)
class Policy:
    """The roles that must sign in with a second factor; the API's `SecondFactorPolicy` reads it."""

    roles: list[str]
    updated_at: int | None  # None: as the cluster was made or upgraded, never changed since


def get_second_factor_policy(kma: Appliance) -> Policy:
    row = kma.store.query_one("SELECT updated_at FROM second_factor_policy WHERE id = 1")
    return Policy(
        sorted(str(r) for r in required_roles(kma)),
        row["updated_at"] if row is not None and row["updated_at"] else None,
    )


def policy_row(roles: frozenset[Role], now: int, key: bytes) -> list[Stmt]:
    """The statements that set the policy to `roles` and seal it (set-up and the quorum operation)."""
    text = format_roles(roles)
    return [
        Stmt(
            "INSERT INTO second_factor_policy (id, roles, updated_at) VALUES (1, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET roles = excluded.roles, updated_at = excluded.updated_at",
            (text, now),
        ),
        row_macs.seal(key, row_macs.SECOND_FACTOR_POLICY, {"id": 1, "roles": text}),
    ]


def describe(roles: frozenset[Role]) -> str:
    if not roles:
        return "Require two-step sign-in of no role"
    return f"Require two-step sign-in of every {role_words(format_roles(roles))}"


def set_roles_change(kma: Appliance, roles: frozenset[Role]) -> Change:
    return Change(
        "auth.second_factor_policy",
        policy_row(roles, kma.clock.now(), kma.vault.row_mac_key()),
        describe(roles),
        ("second_factor_policy", "roles"),
    )


# --- setting it: a quorum operation (kma/quorum/protected.py lists it) -------------------------
def _prepare_set_roles(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    raw = request.get("roles")
    if not isinstance(raw, list):
        raise ValidationFailed("roles must be a list of role names (empty: no role).")
    roles = check_roles(raw)
    names = sorted(str(r) for r in roles)
    return Prepared(describe(roles), {"roles": names}, {"roles": names})


def _execute_set_roles(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(set_roles_change(kma, check_roles(p["roles"])))


SET_SECOND_FACTOR_ROLES = OpType("set_second_factor_roles", _prepare_set_roles, _execute_set_roles)
