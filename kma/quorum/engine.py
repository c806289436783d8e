"""Pending quorum operations: submitted, approved by key split members, run exactly once.

A quorum-protected request carries zero or more key split credentials. With at least M valid
ones it runs at once; with fewer it becomes a pending quorum operation that Quorum Members
approve, one key split member at a time (the primary key `(op_id, member_name)` and a guard in
the INSERT make each member count once). At the M-th approval the shares are combined into the
root secret, and the operation's change is committed in one batch together with
`UPDATE pending_quorum_ops SET state = 'executed' WHERE id = ? AND state = 'pending' AND
expires_at > now` (expect 1): however many approvals race, exactly one batch passes that guard.
Expired and deleted operations leave `pending` for good (a trigger forbids the way back), so they
never run. Shares held between approvals: see `kma.services.quorum.escrow`.

The kinds of operation are data (`OpType`, kma/services/quorum/op_type.py), each defined beside its
feature (users, locking, the key split change, retention, the cluster's membership); protected.py
is the table of them all, which is why this engine sits above every feature, in its own folder.
What the API shows of an operation, and the list of them: pending_ops.py.

Every submission, approval, execution, expiry, deletion and refusal is an audit event.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NoReturn

from kma.appliance import Appliance
from kma.audit.record import Condition
from kma.crypto import CryptoError
from kma.domain.actor import Actor
from kma.errors import Conflict, KmaError, KmaLocked, NotFound
from kma.quorum import pending_ops
from kma.quorum.pending_ops import get_op
from kma.quorum.protected import OP_TYPES
from kma.services.paging import Page, PageRequest
from kma.services.quorum import escrow
from kma.services.quorum.key_split import (
    Credential,
    check_distinct,
    current_split,
    open_credential,
    reconstruct,
)
from kma.services.quorum.op_type import Outcome, Prepared
from kma.store import Batch, Refused, Stmt

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submitted:
    op: dict[str, Any]  # the PendingQuorumOp as the API shows it
    executed: bool  # ran at once (M credentials came with the request)
    handed_out: dict[str, Any] = field(default_factory=dict)  # for the submitter's eyes only


def _subject(op_id: str) -> tuple[str, str]:
    return ("quorum_operation", op_id)


def _when(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def refuse(
    kma: Appliance, actor: Actor, operation: str, exc: KmaError, op_id: str | None = None, what: str = ""
) -> NoReturn:
    """Audit a refusal under the quorum operation it concerns, then raise it (already audited)."""
    if not exc.audited:
        kma.audit(
            actor,
            operation,
            f"refused{what}: {exc.message}",
            condition=Condition.ERROR,
            subject=_subject(op_id) if op_id else None,
            event_class="quorum",
        )
        exc.audited = True
    raise exc


# --- reading (expired operations leave `pending` first) ----------------------------------
def list_ops(kma: Appliance, req: PageRequest) -> Page:
    sweep(kma)
    return pending_ops.op_page(kma, req)


def show_op(kma: Appliance, op_id: str) -> dict[str, Any]:
    sweep(kma)
    return get_op(kma, op_id)


# --- submitting --------------------------------------------------------------------------
def new_op_id() -> str:
    return secrets.token_hex(5)


def submit(
    kma: Appliance,
    actor: Actor,
    op_type: str,
    request: Mapping[str, Any],
    credentials: Sequence[Credential] = (),
) -> Submitted:
    """Run `op_type` now if the credentials reach the threshold, else make it pending."""
    kind = OP_TYPES[op_type]
    sweep(kma)
    op_id = new_op_id()
    try:
        check_distinct(credentials)
        prepared = kind.prepare(kma, op_id, request)
        split = current_split(kma)
        shares = [open_credential(kma, split, c) for c in credentials]
        members = [c.member for c in credentials]
        quorum = reconstruct(split, shares, members) if len(shares) >= split.threshold else None
        runs_now = quorum is not None and not prepared.waits
        outcome = kind.execute(kma, quorum, op_id, prepared.payload) if quorum and runs_now else None
    except KmaError as exc:
        refuse(kma, actor, "quorum.submit", exc, what=f" {op_type}")
    now = kma.clock.now()
    row = {
        "id": op_id,
        "type": op_type,
        "summary": prepared.summary,
        "request": json.dumps(prepared.request, sort_keys=True, separators=(",", ":")),
        "payload": json.dumps(prepared.payload, sort_keys=True),
        "target": prepared.target_kma_id,
        "by": actor.entity_id,
        "from": actor.address,
        "generation": split.generation,
        "threshold": split.threshold,
        "now": now,
        "expires": now + split.lifetime,
    }
    if outcome is not None:
        return _run_at_once(kma, actor, row, members, outcome, prepared.handed_out)
    return _make_pending(kma, actor, row, prepared, list(zip(members, shares, strict=True)))


def _insert_op(
    row: Mapping[str, Any],
    state: str,
    result: str | None,
    holder: str | None,
    wrapped: bytes | None,
    exclusive: bool,
) -> Stmt:
    values = {**row, "state": state, "result": result, "holder": holder, "wrapped": wrapped}
    guard = ""
    if exclusive:  # one pending operation of this type per target KMA
        guard = (
            " WHERE NOT EXISTS (SELECT 1 FROM pending_quorum_ops WHERE state = 'pending' "
            "AND type = :type AND target_kma_id IS :target)"
        )
    return Stmt(
        "INSERT INTO pending_quorum_ops (id, type, summary, request, payload, target_kma_id, requested_by, "
        "requested_from, split_generation, threshold, submitted_at, updated_at, expires_at, state, result, "
        "escrow_holder, escrow_wrapped) "
        "SELECT :id, :type, :summary, :request, :payload, :target, :by, :from, :generation, :threshold, "
        ":now, :now, :expires, :state, :result, :holder, :wrapped" + guard,
        values,
        expect=1,
        refusal=f"a quorum operation of type {row['type']} is already pending for this KMA; approve or "
        "delete that one",
    )


def _insert_approval(op_id: str, member: str, by: str, now: int, share: bytes | None) -> Stmt:
    return Stmt(
        "INSERT INTO quorum_approvals (op_id, member_name, approved_by, approved_at, share_escrowed) "
        "SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS "
        "(SELECT 1 FROM quorum_approvals WHERE op_id = ? AND member_name = ?)",
        (op_id, member, by, now, share, op_id, member),
        expect=1,
        refusal=f"key split member '{member}' has already approved quorum operation {op_id}",
    )


def _run_at_once(
    kma: Appliance,
    actor: Actor,
    row: dict[str, Any],
    members: list[str],
    outcome: Outcome,
    handed_out: dict[str, Any],
) -> Submitted:
    op_id, change = row["id"], outcome.change
    statements = [
        _insert_op(row, "executed", change.message, None, None, exclusive=False),
        *(_insert_approval(op_id, m, actor.entity_id, row["now"], None) for m in members),
        *change.statements,
    ]
    kma.commit(
        actor,
        "quorum.execute",
        statements,
        f"ran quorum operation {op_id} ({row['type']}) at once with the key split credentials of "
        f"{', '.join(members)}: {change.message}",
        change.subject,
    )
    _follow_up(kma, actor, op_id, outcome)
    return Submitted(get_op(kma, op_id), executed=True, handed_out=handed_out)


def _make_pending(
    kma: Appliance,
    actor: Actor,
    row: dict[str, Any],
    prepared: Prepared,
    approved: list[tuple[str, tuple[int, bytes]]],
) -> Submitted:
    op_id, now = row["id"], row["now"]
    try:
        key, holder, wrapped = escrow.new_escrow(kma, op_id)
    except KmaError as exc:
        refuse(kma, actor, "quorum.submit", exc, what=f" {row['type']}")
    statements = [
        _insert_op(row, "pending", None, holder, wrapped, prepared.exclusive),
        *(
            _insert_approval(op_id, member, actor.entity_id, now, escrow.seal(key, op_id, member, share))
            for member, share in approved
        ),
        *prepared.statements,
    ]
    so_far = f"; approved at submission by {', '.join(m for m, _ in approved)}" if approved else ""
    try:
        kma.commit(
            actor,
            "quorum.submit",
            statements,
            f"submitted quorum operation {op_id}: {prepared.summary}{so_far}; needs {row['threshold']} "
            f"approvals by {_when(row['expires'])}",
            _subject(op_id),
        )
    except KmaError:
        escrow.forget(kma, op_id)
        raise
    return Submitted(get_op(kma, op_id), executed=False, handed_out=prepared.handed_out)


# --- approving and running ---------------------------------------------------------------
def _op_row(kma: Appliance, op_id: str) -> Any:
    row = kma.store.query_one("SELECT * FROM pending_quorum_ops WHERE id = ?", (op_id,))
    if row is None:
        raise NotFound(f"There is no quorum operation '{op_id[:64]}'.")
    return row


def approve(kma: Appliance, actor: Actor, op_id: str, credential: Credential) -> dict[str, Any]:
    """Record one key split member's approval; at the M-th, run the operation."""
    sweep(kma)
    row = _op_row(kma, op_id)
    try:
        if row["state"] != "pending":
            raise Conflict(f"Quorum operation {op_id} is {row['state']}; it can no longer be approved.")
        split = current_split(kma)
        share = open_credential(kma, split, credential)
        key = escrow.escrow_key(kma, op_id, row["escrow_holder"], row["escrow_wrapped"])
    except KmaError as exc:
        refuse(
            kma,
            actor,
            "quorum.approve",
            exc,
            op_id,
            f" approval by key split member '{credential.member[:64]}'",
        )
    now = kma.clock.now()
    kma.commit(
        actor,
        "quorum.approve",
        [
            # Counted in the statement: an approval racing past the M-th is refused, not recorded
            # beside an operation that runs (or ran) with the first M.
            Stmt(
                "UPDATE pending_quorum_ops SET updated_at = ? WHERE id = ? AND state = 'pending' "
                "AND expires_at > ? AND split_generation = ? "
                "AND (SELECT count(*) FROM quorum_approvals WHERE op_id = ?) < threshold",
                (now, op_id, now, split.generation, op_id),
                expect=1,
                refusal=f"quorum operation {op_id} is no longer pending, or already has the "
                f"{row['threshold']} approvals it needs: it is executed, or runs when nothing else is due",
            ),
            _insert_approval(
                op_id,
                credential.member,
                actor.entity_id,
                now,
                escrow.seal(key, op_id, credential.member, share),
            ),
        ],
        f"key split member '{credential.member}' approved quorum operation {op_id}: {row['summary']}",
        _subject(op_id),
    )
    run_if_ready(kma, actor, op_id)
    return get_op(kma, op_id)


def run_if_ready(kma: Appliance, actor: Actor, op_id: str) -> None:
    """Run the operation if it has M escrowed shares; any number of callers may race here."""
    with kma.store.snapshot() as conn:
        row = conn.execute("SELECT * FROM pending_quorum_ops WHERE id = ?", (op_id,)).fetchone()
        approvals = conn.execute(
            "SELECT member_name, share_escrowed FROM quorum_approvals WHERE op_id = ? "
            "AND share_escrowed IS NOT NULL ORDER BY approved_at, member_name",
            (op_id,),
        ).fetchall()
    if row is None or row["state"] != "pending" or len(approvals) < row["threshold"]:
        return
    ready = OP_TYPES[row["type"]].ready
    if ready is not None and not ready(kma, op_id):
        return  # e.g. new key split members still to set their passphrases; they run it then
    try:
        key = escrow.escrow_key(kma, op_id, row["escrow_holder"], row["escrow_wrapped"])
        shares = [escrow.unseal(key, op_id, a["member_name"], a["share_escrowed"]) for a in approvals]
        quorum = reconstruct(current_split(kma), shares, [a["member_name"] for a in approvals])
        outcome = OP_TYPES[row["type"]].execute(kma, quorum, op_id, json.loads(row["payload"]))
    except KmaLocked:
        raise  # transient: it stays pending and runs once this KMA is unlocked (see `sweep`)
    except (KmaError, CryptoError) as exc:
        fail(kma, actor, op_id, getattr(exc, "message", "its approvals could not be opened"))
        return
    now, change = kma.clock.now(), outcome.change
    statements = [
        Stmt(
            "UPDATE pending_quorum_ops SET state = 'executed', result = ?, updated_at = ? "
            "WHERE id = ? AND state = 'pending' AND expires_at > ?",
            (change.message, now, op_id, now),
            expect=1,
        ),
        *change.statements,
    ]
    approvers = ", ".join(a["member_name"] for a in approvals)
    event = kma.record(
        actor,
        "quorum.execute",
        f"ran quorum operation {op_id} ({row['type']}) approved by {approvers}: {change.message}",
        subject=change.subject,
    )
    try:
        kma.store.write(Batch(statements, event))
    except Refused as refusal:
        if refusal.index != 0:  # the change itself was refused: the operation failed for good
            fail(kma, actor, op_id, refusal.message)
        return  # index 0: another approval ran it first, or it has just expired
    escrow.forget(kma, op_id)
    _follow_up(kma, actor, op_id, outcome)


def _follow_up(kma: Appliance, actor: Actor, op_id: str, outcome: Outcome) -> None:
    """The step after the commit (e.g. writing this KMA's unlock key file); if it fails, the
    operation still ran, so say so plainly rather than pretend nothing happened."""
    if outcome.after is None:
        return
    try:
        outcome.after()
    except OSError as exc:
        log.exception("quorum operation %s ran, but its follow-up on this KMA failed", op_id)
        kma.audit(
            actor,
            "quorum.execute",
            f"quorum operation {op_id} ran, but its follow-up on this KMA failed: {exc.strerror or exc}",
            condition=Condition.ERROR,
            subject=_subject(op_id),
            event_class="quorum",
        )
        raise KmaError(
            f"Quorum operation {op_id} ran, but this KMA could not finish it locally "
            "(see its log); run the operation again once that is fixed.",
            audited=True,
        ) from None


def fail(kma: Appliance, actor: Actor, op_id: str, reason: str) -> None:
    now = kma.clock.now()
    try:
        kma.store.write(
            Batch(
                [
                    Stmt(
                        "UPDATE pending_quorum_ops SET state = 'failed', result = ?, updated_at = ? "
                        "WHERE id = ? AND state = 'pending'",
                        (reason, now, op_id),
                        expect=1,
                    )
                ],
                kma.record(
                    actor,
                    "quorum.execute",
                    f"quorum operation {op_id} failed and will not run: {reason}",
                    subject=_subject(op_id),
                    condition=Condition.ERROR,
                ),
            )
        )
    except Refused:
        pass  # it ended some other way meanwhile
    escrow.forget(kma, op_id)


# --- deleting, expiring ------------------------------------------------------------------
def delete(kma: Appliance, actor: Actor, op_id: str) -> None:
    sweep(kma)
    row = _op_row(kma, op_id)
    kma.commit(
        actor,
        "quorum.delete",
        [
            Stmt(
                "UPDATE pending_quorum_ops SET state = 'deleted', result = ?, updated_at = ? "
                "WHERE id = ? AND state = 'pending'",
                (f"deleted by {actor.entity_id}", kma.clock.now(), op_id),
                expect=1,
                refusal=f"quorum operation {op_id} is {row['state']}; only a pending one can be deleted",
            ),
        ],
        f"deleted quorum operation {op_id}: {row['summary']}; it will never run",
        _subject(op_id),
    )
    escrow.forget(kma, op_id)


def sweep(kma: Appliance) -> None:
    """Expire what is past its time, and settle operations this KMA can no longer finish."""
    now = kma.clock.now()
    for row in kma.store.query(
        "SELECT o.id, o.summary, o.threshold, (SELECT count(*) FROM quorum_approvals a WHERE a.op_id = o.id) "
        "AS approvals FROM pending_quorum_ops o WHERE o.state = 'pending' AND o.expires_at <= ?",
        (now,),
    ):
        op_id = row["id"]
        try:
            kma.store.write(
                Batch(
                    [
                        Stmt(
                            "UPDATE pending_quorum_ops SET state = 'expired', "
                            "result = 'expired before the quorum approved it', updated_at = ? "
                            "WHERE id = ? AND state = 'pending' AND expires_at <= ?",
                            (now, op_id, now),
                            expect=1,
                        )
                    ],
                    kma.record(
                        kma.itself,
                        "quorum.expire",
                        f"quorum operation {op_id} expired with {row['approvals']} "
                        f"of {row['threshold']} approvals and will never run: {row['summary']}",
                        subject=_subject(op_id),
                        condition=Condition.WARNING,
                    ),
                )
            )
        except Refused:
            pass  # it ended otherwise meanwhile
        escrow.forget(kma, op_id)
    _settle_memory_escrow(kma)
    for row in kma.store.query(
        "SELECT o.id FROM pending_quorum_ops o WHERE o.state = 'pending' AND o.threshold <= (SELECT count(*) "
        "FROM quorum_approvals a WHERE a.op_id = o.id AND a.share_escrowed IS NOT NULL)"
    ):
        try:
            run_if_ready(kma, kma.itself, row["id"])  # its M-th approval came while it could not run
        except KmaLocked:
            pass


def _settle_memory_escrow(kma: Appliance) -> None:
    """An escrow key held in memory is gone after a restart: an operation without shares yet gets
    a new one; one with shares can no longer be finished and fails."""
    for row in kma.store.query(
        "SELECT o.id, EXISTS (SELECT 1 FROM quorum_approvals a WHERE a.op_id = o.id "
        "AND a.share_escrowed IS NOT NULL) AS has_shares FROM pending_quorum_ops o "
        "WHERE o.state = 'pending' AND o.escrow_holder = 'memory' AND o.target_kma_id = ?",
        (kma.kma_id,),
    ):
        if escrow.in_memory(kma, row["id"]) is not None:
            continue
        if not kma.vault.locked:
            fail(kma, kma.itself, row["id"], f"KMA '{kma.kma_id}' is no longer locked")
        elif row["has_shares"]:
            fail(
                kma,
                kma.itself,
                row["id"],
                "its approvals were held in the memory of this KMA, which has "
                "restarted since; submit it again",
            )
        else:
            escrow.new_escrow(kma, row["id"])
