"""Transfer partners: this cluster's transfer identity and the clusters it exchanges keys with.

Registering a partner is a quorum operation: whoever holds a partner's identity can read every
tape exported to it, so one Security Officer alone never decides whom to trust. The approvers see
the partner's fingerprint in "what will run", the one the two sides read to each other out of band.
Disabling (which only takes power away) and removing are a Security Officer's, audited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kma.appliance import Appliance
from kma.crypto.transfer import PRIVATE_CONTEXT, Identity, fingerprint, identity_text, parse_identity
from kma.domain.actor import Actor
from kma.domain.validation import check_id, check_text
from kma.errors import Conflict, NotFound, ValidationFailed
from kma.services.change import Change
from kma.services.common import typed_row
from kma.services.integrity import row_macs
from kma.services.paging import ListQuery, Page, PageRequest, list_page
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.store import Stmt

LIST = ListQuery(
    select=(
        "SELECT id, name, contact, fingerprint, public_identity, may_send, may_receive, enabled, "
        "registered_by_op, created_at, updated_at, mac FROM transfer_partners"
    ),
    sort_fields={"id": "id", "name": "name", "created_at": "created_at"},
    default_sort="id",
    search=("id", "name", "contact", "fingerprint"),
)


@dataclass(frozen=True)
class TransferIdentityRow:
    """This cluster's transfer identity as partners register it; the API's `TransferIdentity` reads it."""

    identity: str  # the line partners register: kms-transfer-identity-v1:...
    fingerprint: str
    created_at: int | None


@dataclass(frozen=True)
class TransferPartnerRow:
    """A transfer partner as registered (times in seconds since the epoch); the API's
    `TransferPartner` reads it."""

    id: str
    name: str
    contact: str
    identity: str
    fingerprint: str
    may_send: bool  # its files are imported here
    may_receive: bool  # keys are exported to it
    enabled: bool
    registered_by_op: str
    created_at: int
    updated_at: int


def _row(row: Any) -> dict[str, Any]:
    out = dict(row)
    del out["mac"]
    out["identity"] = identity_text(bytes(out.pop("public_identity")))
    for flag in ("may_send", "may_receive", "enabled"):
        out[flag] = bool(out[flag])
    return out


# --- this cluster's identity ---------------------------------------------------------------
def identity(kma: Appliance) -> Identity:
    """The identity, made at first use (by the first KMA of the cluster that needs it); raises
    KmaLocked on a locked KMA."""
    master = kma.vault.master()
    row = kma.store.query_one("SELECT private_wrapped FROM transfer_identity WHERE id = 1")
    if row is None:
        new = Identity.generate()
        kma.commit(
            kma.itself,
            "transfer.identity.create",
            [
                Stmt(
                    "INSERT INTO transfer_identity (id, public_identity, private_wrapped, created_at) "
                    "VALUES (1, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                    (new.public, master.wrap(PRIVATE_CONTEXT, new.private_raw), kma.clock.now()),
                )
            ],
            f"made the cluster's transfer identity {fingerprint(new.public)}",
            ("transfer", "identity"),
        )
        row = kma.store.query_one("SELECT private_wrapped FROM transfer_identity WHERE id = 1")
        assert row is not None
    return Identity(master.unwrap(PRIVATE_CONTEXT, bytes(row["private_wrapped"])))


def get_transfer_identity(kma: Appliance) -> TransferIdentityRow:
    public = identity(kma).public
    created = kma.store.scalar("SELECT created_at FROM transfer_identity WHERE id = 1")
    return TransferIdentityRow(identity_text(public), fingerprint(public), created)


# --- partners ------------------------------------------------------------------------------
def list_transfer_partners(kma: Appliance, req: PageRequest) -> Page:
    page = list_page(kma.store, LIST, req)
    return page.with_items([_row(r) for r in page.items])


def get_transfer_partner(kma: Appliance, partner_id: str) -> TransferPartnerRow:
    row = kma.store.query_one(LIST.select + " WHERE id = ?", (partner_id,))
    if row is None:
        raise NotFound(f"There is no transfer partner '{partner_id}'.")
    return typed_row(TransferPartnerRow, _row(row))


def _genuine(kma: Appliance, row: Any) -> bool:
    """The row a quorum registered (its MAC verifies, its public keys are the fingerprint's): a row
    written into the store behind the KMA's back neither receives keys nor sends them."""
    public = bytes(row["public_identity"])
    return fingerprint(public) == row["fingerprint"] and row_macs.genuine(
        kma, row_macs.TRANSFER_PARTNERS, row
    )


def partner_by_identity(kma: Appliance, public_identity: bytes) -> TransferPartnerRow | None:
    row = kma.store.query_one(LIST.select + " WHERE public_identity = ?", (public_identity,))
    if row is None or not _genuine(kma, row):
        return None
    return typed_row(TransferPartnerRow, _row(row))


def partner_public(kma: Appliance, partner_id: str) -> bytes:
    """The public keys of a partner keys may be exported to; a forged row is refused."""
    row = kma.store.query_one(LIST.select + " WHERE id = ?", (partner_id,))
    if row is None:
        raise NotFound(f"There is no transfer partner '{partner_id}'.")
    if not _genuine(kma, row):
        raise Conflict(
            f"Transfer partner '{partner_id}' was not registered through this cluster (its row does not "
            "verify): nothing is exported to it. See the audit trail's security events."
        )
    return bytes(row["public_identity"])


def _prepare_register(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    partner_id = check_id(str(request["id"]), "The partner ID")
    name = check_text(str(request["name"]), "The name", required=True)
    contact = check_text(str(request.get("contact", "")), "The contact")
    try:
        public = parse_identity(str(request["identity"]))
    except ValueError as bad:
        raise ValidationFailed(str(bad)) from None
    shown_fingerprint = fingerprint(public)
    expected = str(request.get("fingerprint") or "").replace(" ", "").replace(":", "").upper()
    if expected and expected != shown_fingerprint.replace(" ", ""):
        raise ValidationFailed(
            f"The fingerprint read out of band ({request['fingerprint']}) is not the identity's "
            f"({shown_fingerprint}): do not register this identity."
        )
    if public == identity(kma).public:
        raise ValidationFailed("That is this cluster's own transfer identity.")
    if kma.store.query_one("SELECT 1 FROM transfer_partners WHERE id = ? COLLATE NOCASE", (partner_id,)):
        raise Conflict(f"There is already a transfer partner '{partner_id}'.")
    taken = kma.store.scalar("SELECT id FROM transfer_partners WHERE public_identity = ?", (public,))
    if taken is not None:
        raise Conflict(f"Transfer partner '{taken}' has this identity already.")
    may_send, may_receive = bool(request.get("may_send", True)), bool(request.get("may_receive", True))
    shown = {
        "id": partner_id,
        "name": name,
        "contact": contact,
        "fingerprint": shown_fingerprint,
        "may_send": may_send,
        "may_receive": may_receive,
    }
    directions = " and ".join(
        w for w, on in (("send keys here", may_send), ("receive keys from here", may_receive)) if on
    )
    summary = (
        f"Register transfer partner '{partner_id}' ({name}), fingerprint {shown_fingerprint}; "
        f"it may {directions or 'do nothing yet'}"
    )
    return Prepared(summary, shown, {**shown, "identity": identity_text(public)})


def _execute_register(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    now = kma.clock.now()
    stmt = Stmt(
        "INSERT INTO transfer_partners (id, name, contact, public_identity, fingerprint, may_send, "
        "may_receive, enabled, registered_by_op, created_at, updated_at) "
        "SELECT ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM transfer_partners "
        "WHERE id = ? COLLATE NOCASE OR public_identity = ?)",
        (
            p["id"],
            p["name"],
            p["contact"],
            parse_identity(p["identity"]),
            p["fingerprint"],
            int(p["may_send"]),
            int(p["may_receive"]),
            op_id,
            now,
            now,
            p["id"],
            parse_identity(p["identity"]),
        ),
        expect=1,
        refusal=f"a transfer partner '{p['id']}' or one with this identity was registered meanwhile",
    )
    sealed = _seal(kma, p["id"], p["fingerprint"], bool(p["may_send"]), bool(p["may_receive"]), True)
    message = f"registered transfer partner '{p['id']}' ({p['name']}), fingerprint {p['fingerprint']}"
    return Outcome(
        Change("transfer.partner.register", [stmt, sealed], message, ("transfer_partner", p["id"]))
    )


def _seal(
    kma: Appliance, partner_id: str, print_: str, may_send: bool, may_receive: bool, enabled: bool
) -> Stmt:
    row = {
        "id": partner_id,
        "fingerprint": print_,
        "may_send": int(may_send),
        "may_receive": int(may_receive),
        "enabled": int(enabled),
    }
    return row_macs.seal(kma.vault.row_mac_key(), row_macs.TRANSFER_PARTNERS, row)


REGISTER_TRANSFER_PARTNER = OpType("register_transfer_partner", _prepare_register, _execute_register)


def enable_transfer_partner(kma: Appliance, actor: Actor, partner_id: str) -> TransferPartnerRow:
    """Only a partner whose row verifies (the one a quorum registered) is enabled again."""
    return _set_enabled(kma, actor, partner_id, True)


def disable_transfer_partner(kma: Appliance, actor: Actor, partner_id: str) -> TransferPartnerRow:
    """Takes power away only, so a Security Officer does it alone."""
    return _set_enabled(kma, actor, partner_id, False)


def _set_enabled(kma: Appliance, actor: Actor, partner_id: str, enabled: bool) -> TransferPartnerRow:
    now, word = kma.clock.now(), "enabled" if enabled else "disabled"
    row = kma.store.query_one(LIST.select + " WHERE id = ?", (partner_id,))
    if row is None:
        raise NotFound(f"There is no transfer partner '{partner_id}'.")
    if enabled and not _genuine(kma, row):
        raise Conflict(f"Transfer partner '{partner_id}' does not verify: register it again under quorum.")
    kma.commit(
        actor,
        f"transfer.partner.{'enable' if enabled else 'disable'}",
        [
            Stmt(
                "UPDATE transfer_partners SET enabled = ?, updated_at = ? WHERE id = ?",
                (int(enabled), now, partner_id),
                expect=1,
                missing=True,
                refusal=f"there is no transfer partner '{partner_id}'",
            ),
            _seal(kma, partner_id, row["fingerprint"], row["may_send"], row["may_receive"], enabled),
        ],
        f"{word} transfer partner '{partner_id}'"
        + ("" if enabled else ": nothing is exported to it or imported from it until it is enabled"),
        ("transfer_partner", partner_id),
    )
    return get_transfer_partner(kma, partner_id)


def remove_transfer_partner(kma: Appliance, actor: Actor, partner_id: str) -> None:
    """The partner's row goes; the files exchanged with it stay listed under its ID."""
    kma.commit(
        actor,
        "transfer.partner.remove",
        [
            Stmt(
                "DELETE FROM transfer_partners WHERE id = ?",
                (partner_id,),
                expect=1,
                missing=True,
                refusal=f"there is no transfer partner '{partner_id}'",
            )
        ],
        f"removed transfer partner '{partner_id}'",
        ("transfer_partner", partner_id),
    )


def usable_partner(
    kma: Appliance, partner: TransferPartnerRow, direction: Literal["may_send", "may_receive"]
) -> None:
    """Refuses a disabled partner, or one not registered to send or to receive (`direction`)."""
    if not partner.enabled:
        raise Conflict(f"Transfer partner '{partner.id}' is disabled.")
    if not (partner.may_send if direction == "may_send" else partner.may_receive):
        what = "send keys to this cluster" if direction == "may_send" else "receive keys from this cluster"
        raise Conflict(f"Transfer partner '{partner.id}' is not registered to {what}.")
