"""A new key split member sets their own passphrase for a pending key split change.

The member proves who they are with the one-time enrolment code the change handed out for them
(see `kma.services.quorum.key_split_change`); no session is needed, since a member need not be a user of
the KMA. The code is checked (a SHA-256 comparison, cheap) before any passphrase work, and is
spent by the same statement that stores the sealed share, so it enrols once. With 120 random
bits a code cannot be guessed, but anyone can try: until the code is right the caller is a
stranger, refused and audited at the bounded rate of refusals without a session
(kma/services/refusals.py). Once the code is right, every refusal (a weak passphrase) is audited
under the member.
"""

from __future__ import annotations

import hmac
from typing import Any

from kma.appliance import Appliance
from kma.crypto import CryptoError, seal_share
from kma.domain.actor import Actor
from kma.domain.strength import check_strength
from kma.domain.validation import check_passphrase
from kma.errors import Conflict, KmaError, NotFound, ValidationFailed
from kma.quorum import engine, pending_ops
from kma.services import refusals
from kma.services.quorum.key_split_change import code_hash, new_code, unwrap_share
from kma.store import Stmt

WRONG_CODE = "The enrolment code is wrong, already used, or not for this member of this key split change."


def enrol(
    kma: Appliance, address: str, op_id: str, member: str, code: str, passphrase: str
) -> dict[str, Any]:
    actor = Actor(member[:64], address)
    engine.sweep(kma)
    row = kma.store.query_one(
        "SELECT o.state, o.type, e.code_hash, e.share_wrapped FROM pending_quorum_ops o "
        "LEFT JOIN key_split_enrolments e ON e.op_id = o.id AND e.member_name = ? WHERE o.id = ?",
        (member, op_id),
    )
    given = code_hash(code)
    try:
        if row is None:
            raise NotFound(f"There is no quorum operation '{op_id[:64]}'.")
        if row["type"] != "change_key_split":
            raise Conflict(f"Quorum operation {op_id} is not a key split change; nobody enrols for it.")
        if row["state"] != "pending":
            raise Conflict(f"Quorum operation {op_id} is {row['state']}; nobody can enrol for it any more.")
        if row["code_hash"] is None or not hmac.compare_digest(row["code_hash"], given):
            raise ValidationFailed(WRONG_CODE)
    except KmaError as exc:
        refusals.audit_anonymous(
            kma,
            address,
            "quorum.enrol",
            f"refused enrolment of key split member '{member[:64]}': {exc.message}",
            "quorum",
            ("quorum_operation", op_id[:64]),
        )
        exc.audited = True
        raise
    try:
        check_passphrase(passphrase, f"The passphrase of key split member '{member}'")
        check_strength(passphrase, f"The passphrase of key split member '{member}'", [member])
        try:
            share = unwrap_share(kma.vault.master(), op_id, member, row["share_wrapped"])
        except (CryptoError, ValueError):
            raise KmaError(f"The new share of key split member '{member}' cannot be opened.") from None
    except KmaError as exc:
        engine.refuse(
            kma, actor, "quorum.enrol", exc, op_id, f" enrolment of key split member '{member[:64]}'"
        )
    now = kma.clock.now()
    kma.commit(
        actor,
        "quorum.enrol",
        [
            Stmt(
                "UPDATE key_split_enrolments SET share_sealed = ?, share_wrapped = NULL, code_hash = NULL, "
                "enrolled_at = ?, enrolled_from = ? WHERE op_id = ? AND member_name = ? AND code_hash = ? "
                "AND EXISTS (SELECT 1 FROM pending_quorum_ops WHERE id = ? AND state = 'pending')",
                (seal_share(share, member, passphrase), now, address, op_id, member, given, op_id),
                expect=1,
                refusal=f"member '{member}' has enrolled already, or operation {op_id} is no longer pending",
            ),
        ],
        f"new key split member '{member}' set their own passphrase for quorum operation {op_id}",
        ("quorum_operation", op_id),
    )
    engine.run_if_ready(kma, actor, op_id)  # the last enrolment may complete it
    return pending_ops.get_op(kma, op_id)


def new_codes(kma: Appliance, actor: Actor, op_id: str) -> dict[str, str]:
    """New one-time codes for the members of a pending key split change who have not enrolled yet
    (a ceremony interrupted, its codes lost); each earlier code stops working. The operation's
    approvals and the members who have enrolled stay as they are."""
    engine.sweep(kma)
    op = kma.store.query_one("SELECT state, type FROM pending_quorum_ops WHERE id = ?", (op_id,))
    if op is None:
        raise NotFound(f"There is no quorum operation '{op_id[:64]}'.")
    if op["type"] != "change_key_split":
        raise Conflict(f"Quorum operation {op_id} is not a key split change; nobody enrols for it.")
    if op["state"] != "pending":
        raise Conflict(f"Quorum operation {op_id} is {op['state']}; nobody can enrol for it any more.")
    waiting = [
        row["member_name"]
        for row in kma.store.query(
            "SELECT member_name FROM key_split_enrolments WHERE op_id = ? AND enrolled_at IS NULL "
            "ORDER BY position",
            (op_id,),
        )
    ]
    if not waiting:
        raise Conflict(f"Every new member of quorum operation {op_id} has set their passphrase already.")
    codes = {name: new_code() for name in waiting}
    kma.commit(
        actor,
        "quorum.enrolment_codes",
        [
            Stmt(
                "UPDATE key_split_enrolments SET code_hash = ? WHERE op_id = ? AND member_name = ? "
                "AND enrolled_at IS NULL "
                "AND EXISTS (SELECT 1 FROM pending_quorum_ops WHERE id = ? AND state = 'pending')",
                (code_hash(code), op_id, name, op_id),
                expect=1,
                refusal=f"member '{name}' has enrolled meanwhile, or operation {op_id} is no longer pending",
            )
            for name, code in codes.items()
        ],
        f"new enrolment codes for {', '.join(repr(n) for n in waiting)} of quorum operation {op_id}",
        ("quorum_operation", op_id),
    )
    return codes
