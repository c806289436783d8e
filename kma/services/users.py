"""Users and their roles (Security Officer's area).

Creating, changing and setting the passphrase of a user are quorum-protected through the API:
each has a `*_change` builder that its quorum operation type (`CREATE_USER`, `UPDATE_USER`,
`SET_USER_PASSPHRASE`, at the end) commits together with its pending quorum operation. The plain
functions commit at once, for first set-up and the demo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kma.appliance import Appliance
from kma.crypto import hash_passphrase
from kma.domain.actor import Actor
from kma.domain.roles import Role, format_roles, parse_roles, permissions_of, role_words
from kma.domain.strength import check_user_passphrase
from kma.domain.validation import check_id, check_text
from kma.errors import NotFound, ValidationFailed
from kma.services.change import Change
from kma.services.common import refuse_taken
from kma.services.integrity.row_macs import USERS, seal
from kma.services.paging import (
    Filter,
    ListQuery,
    Page,
    PageRequest,
    SearchIndex,
    boolean,
    indexed_rows,
    list_page,
    one_of,
)
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import KEPT_AS_HASH, OpType, Outcome, Prepared
from kma.services.sign_in import lockout, second_factor_policy
from kma.store import Stmt

# A user's `locked_until` is the lockout over all addresses (kma.services.sign_in.lockout); a lockout of one
# source address shows in the audit trail, not here.
SELECT = (
    "SELECT id, name, roles, enabled, created_at, updated_at, (SELECT l.locked_until FROM lockouts l "
    "WHERE l.kind = 'user' AND l.name = users.id AND l.address = '*') AS locked_until, "
    "CASE WHEN passphrase_hash LIKE 'directory:%' THEN substr(passphrase_hash, 11) END AS directory_account, "
    "EXISTS (SELECT 1 FROM second_factors f WHERE f.user_id = users.id AND f.confirmed = 1) AS second_factor "
    "FROM users"
)
LIST = ListQuery(
    select=SELECT,
    sort_fields={"id": "id", "name": "name", "created_at": "created_at"},
    default_sort="id",
    search=("id", "name"),
    search_index=SearchIndex("id", indexed_rows("users_text", "id")),
    filters={
        "role": Filter("(',' || roles || ',') LIKE '%,' || :value || ',%'", one_of(*Role)),
        "enabled": Filter("enabled = :value", boolean),
    },
    filtered_sorts={"name": frozenset({"role", "enabled"}), "created_at": frozenset({"role", "enabled"})},
)
# A batch that touches users ends with this guard, so no change leaves the cluster without an
# enabled local Security Officer (checked on the state after the change, inside the same batch): a
# directory account cannot be the last, since the directory may be down when one is needed.
KEEP_A_SECURITY_OFFICER = Stmt(
    "UPDATE cluster SET id = id WHERE EXISTS (SELECT 1 FROM users WHERE enabled = 1 "
    "AND (',' || roles || ',') LIKE '%,security_officer,%' AND passphrase_hash NOT LIKE 'directory:%')",
    expect=1,
    refusal="the cluster must keep at least one enabled local Security Officer",
)


@dataclass(frozen=True)
class UserRow:
    """A user as the API shows it (times in seconds since the epoch); the API's `User` reads it."""

    id: str
    name: str
    roles: list[str]
    enabled: bool
    locked_until: int | None  # locked out over all addresses until then (kma.services.sign_in.lockout)
    created_at: int
    updated_at: int
    directory_account: str | None  # the directory entry (DN) of a directory account; None: local
    second_factor: bool  # the user's sign-ins need a code from their authenticator app
    second_factor_required: bool  # the user's roles require it (second_factor_policy)
    permissions: list[str]  # what the roles allow, by the grant table's names


def user_row(row: Any, second_factor_roles: frozenset[Role] = frozenset()) -> UserRow:
    """A user as the API shows it; `second_factor_roles`: the roles that require a second factor."""
    roles = parse_roles(row["roles"])
    return UserRow(
        id=row["id"],
        name=row["name"],
        roles=[r for r in row["roles"].split(",") if r],
        enabled=bool(row["enabled"]),
        locked_until=row["locked_until"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        directory_account=row["directory_account"],
        second_factor=bool(row["second_factor"]),
        second_factor_required=bool(roles & second_factor_roles),
        permissions=permissions_of(roles),
    )


def check_roles(roles: Sequence[str]) -> str:
    if not roles:
        raise ValidationFailed("A user needs at least one role.")
    try:
        return format_roles([Role(r) for r in roles])
    except ValueError:
        raise ValidationFailed(f"Roles must be among: {', '.join(Role)}.") from None


def list_users(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req)
    required = second_factor_policy.required_roles(kma)
    return page.with_items([asdict(user_row(r, required)) for r in page.items])


def get_user(kma: Appliance, user_id: str) -> UserRow:
    row = kma.store.query_one(f"{SELECT} WHERE id = ?", (user_id,))
    if row is None:
        raise NotFound(f"There is no user '{user_id}'.")
    return user_row(row, second_factor_policy.required_roles(kma))


def get_me(kma: Appliance, actor: Actor) -> UserRow:
    """The signed-in user's own row, with their permissions: what the manager shows and allows."""
    return get_user(kma, actor.entity_id)


def check_new_user(user_id: str, name: str, roles: Sequence[str], passphrase: str) -> str:
    """Validate a new user; returns the roles as stored."""
    check_id(user_id, "The user ID")
    check_text(name, "The name", required=True)
    role_text = check_roles(roles)
    check_user_passphrase(passphrase, user_id, name)
    return role_text


def create_user_change(
    kma: Appliance, user_id: str, name: str, role_text: str, passphrase_hash: str
) -> Change:
    now = kma.clock.now()
    return Change(
        "user.create",
        [
            Stmt(
                "INSERT INTO users (id, name, roles, passphrase_hash, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (user_id, name, role_text, passphrase_hash, now, now),
            ),
            seal_user(kma.vault.row_mac_key(), user_id, role_text, 1, passphrase_hash),
        ],
        f"created user '{user_id}' with roles {role_words(role_text)}",
        ("user", user_id),
    )


def seal_user(key: bytes, user_id: str, roles: str, enabled: int, passphrase_hash: str) -> Stmt:
    """The statement that sets the MAC of a user row as written (kma/services/integrity/row_macs.py)."""
    row = {"id": user_id, "roles": roles, "enabled": enabled, "passphrase_hash": passphrase_hash}
    return seal(key, USERS, row)


def _sealed_after(kma: Appliance, user_id: str, changes: dict[str, Any]) -> list[Stmt]:
    """The MAC of the user as `changes` leave it; seals nothing for a user who does not exist (the
    change's own statement refuses that)."""
    row = kma.store.query_one("SELECT roles, enabled, passphrase_hash FROM users WHERE id = ?", (user_id,))
    if row is None:
        return []
    after = {**dict(row), **changes}
    key = kma.vault.row_mac_key()
    return [seal_user(key, user_id, after["roles"], after["enabled"], after["passphrase_hash"])]


def create_user(
    kma: Appliance, actor: Actor, user_id: str, name: str, roles: Sequence[str], passphrase: str
) -> UserRow:
    role_text = check_new_user(user_id, name, roles, passphrase)
    refuse_taken(kma, "user", user_id)
    change = create_user_change(kma, user_id, name, role_text, hash_passphrase(passphrase))
    kma.commit(actor, change.operation, change.statements, change.message, change.subject)
    return get_user(kma, user_id)


def _check_changes(
    name: str | None = None, roles: Sequence[str] | None = None, enabled: bool | None = None
) -> dict[str, Any]:
    """The columns a user update sets, validated; empty when nothing changes."""
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = check_text(name, "The name", required=True)
    if roles is not None:
        changes["roles"] = check_roles(roles)
    if enabled is not None:
        changes["enabled"] = int(enabled)
    return changes


def update_user_change(kma: Appliance, user_id: str, changes: dict[str, Any]) -> Change:
    values = {**changes, "updated_at": kma.clock.now()}
    sets = ", ".join(f"{k} = :{k}" for k in values)
    statements = [
        Stmt(
            f"UPDATE users SET {sets} WHERE id = :id",
            {**values, "id": user_id},
            expect=1,
            missing=True,
            refusal=f"there is no user '{user_id}'",
        ),
        *_sealed_after(kma, user_id, changes),
        KEEP_A_SECURITY_OFFICER,
    ]
    if changes.get("enabled") == 0:
        statements.append(Stmt("DELETE FROM sessions WHERE user_id = ?", (user_id,)))
    described = ", ".join(
        f"roles={role_words(v)}" if k == "roles" else f"{k}={v}" for k, v in changes.items()
    )
    return Change("user.update", statements, f"changed user '{user_id}': {described}", ("user", user_id))


def update_user(
    kma: Appliance,
    actor: Actor,
    user_id: str,
    name: str | None = None,
    roles: Sequence[str] | None = None,
    enabled: bool | None = None,
) -> UserRow:
    changes = _check_changes(name, roles, enabled)
    if not changes:
        return get_user(kma, user_id)
    change = update_user_change(kma, user_id, changes)
    kma.commit(actor, change.operation, change.statements, change.message, change.subject)
    return get_user(kma, user_id)


def set_passphrase_change(kma: Appliance, user_id: str, passphrase_hash: str) -> Change:
    return Change(
        "user.set_passphrase",
        [
            Stmt(
                "UPDATE users SET passphrase_hash = ?, updated_at = ? WHERE id = ?",
                (passphrase_hash, kma.clock.now(), user_id),
                expect=1,
                missing=True,
                refusal=f"there is no user '{user_id}'",
            ),
            *_sealed_after(kma, user_id, {"passphrase_hash": passphrase_hash}),
            lockout.clear("user", user_id),  # a new passphrase lifts every lockout of the user
            Stmt("DELETE FROM sessions WHERE user_id = ?", (user_id,)),
        ],
        f"set the passphrase of user '{user_id}'",
        ("user", user_id),
    )


# --- the quorum operations that protect them ---------------------------------------------
def _refuse_directory_account(kma: Appliance, user_id: str, what: str) -> None:
    """A directory account's passphrase and roles are the directory's (docs/directory.md)."""
    if get_user(kma, user_id).directory_account:
        raise ValidationFailed(f"'{user_id}' is a directory account: {what}.")


def _user_must_exist(kma: Appliance, user_id: str) -> None:
    get_user(kma, user_id)  # NotFound with a plain message


def _prepare_create_user(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id, name, roles = str(request["id"]), str(request["name"]), list(request["roles"])
    role_text = check_new_user(user_id, name, roles, str(request["passphrase"]))
    refuse_taken(kma, "user", user_id)
    shown = {"id": user_id, "name": name, "roles": role_text.split(","), "passphrase": KEPT_AS_HASH}
    payload = {
        "id": user_id,
        "name": name,
        "roles": role_text,
        "passphrase_hash": hash_passphrase(str(request["passphrase"])),
    }
    return Prepared(f"Create user '{user_id}' ({name}) with roles {role_words(role_text)}", shown, payload)


def _execute_create_user(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(create_user_change(kma, p["id"], p["name"], p["roles"], p["passphrase_hash"]))


def _prepare_update_user(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id = str(request["id"])
    changes = _check_changes(request.get("name"), request.get("roles"), request.get("enabled"))
    if not changes:
        raise ValidationFailed("The request changes nothing.")
    _user_must_exist(kma, user_id)
    if "roles" in changes:
        _refuse_directory_account(kma, user_id, "its roles follow its directory groups at each sign-in")
    shown: dict[str, Any] = {"id": user_id}
    shown.update(
        {k: (v.split(",") if k == "roles" else bool(v) if k == "enabled" else v) for k, v in changes.items()}
    )
    described = "; ".join(
        f"roles {role_words(changes['roles'])}" if k == "roles" else f"{k} {v!r}"
        for k, v in shown.items()
        if k != "id"
    )
    return Prepared(f"Change user '{user_id}': {described}", shown, {"id": user_id, "changes": changes})


def _execute_update_user(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(update_user_change(kma, p["id"], dict(p["changes"])))


def _prepare_set_passphrase(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id, passphrase = str(request["id"]), str(request["passphrase"])
    check_user_passphrase(passphrase, user_id)
    _user_must_exist(kma, user_id)
    _refuse_directory_account(kma, user_id, "its passphrase is set in the directory")
    return Prepared(
        f"Set the passphrase of user '{user_id}'",
        {"id": user_id, "passphrase": KEPT_AS_HASH},
        {"id": user_id, "passphrase_hash": hash_passphrase(passphrase)},
    )


def _execute_set_passphrase(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(set_passphrase_change(kma, p["id"], p["passphrase_hash"]))


CREATE_USER = OpType("create_user", _prepare_create_user, _execute_create_user)
UPDATE_USER = OpType("update_user", _prepare_update_user, _execute_update_user)
SET_USER_PASSPHRASE = OpType("set_user_passphrase", _prepare_set_passphrase, _execute_set_passphrase)
