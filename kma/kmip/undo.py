"""Batch Error Continuation Option Undo: when an item of the batch fails, what the items before
it wrote is put back.

Every item stays durable with its own audit event as it runs (the store commits one event per
write). In a batch with Undo, each write also records its compensation (`Call.undoable`):
Activate -> Pre-Active again with the periods it had; Register or Import -> the object removed as
if never made (its material never left: the response goes out only at the end of the batch);
Add Attribute -> the value removed; Modify, Set, Adjust and Delete Attribute -> the value it
had. When an item fails, the compensations run newest first, each its own audited write
("undone: ..." by the same agent), and those items are answered Operation Undone with their
Unique Identifier only (an undone Get sends no material). A compensation applies only while the
object still holds what the batch wrote: when someone changed it meanwhile, the refusal is
audited and the item answered failed, never silently. Nor once anyone else used the object since
the batch began (another drive's Get or Write Key of it, a user's change: each an audit event naming
the key), and not when the agent may no longer use the key: both checked in the compensation's own
batch.

A batch with Undo holding an operation the KMA cannot put back (Create from the key pool,
Revoke, Destroy, a tape's Write Key...) is refused before any of its items runs: never half-undone.
"""

from __future__ import annotations

import logging
from collections import Counter

from kma.audit.record import Condition, Retention
from kma.kmip import ttlv
from kma.kmip.context import Call, Compensation
from kma.kmip.enums import Operation, ResultReason, ResultStatus, Tag
from kma.kmip.messages import KmipError, RequestItem, Result
from kma.services.agent_keys import key_access, key_lifecycle, key_undo
from kma.store import Stmt

log = logging.getLogger(__name__)

# Reads, and Log and Interop, which only add to the audit trail (which no undo rewrites).
NOTHING_TO_UNDO = frozenset(
    {
        Operation.DISCOVER_VERSIONS,
        Operation.QUERY,
        Operation.GET,
        Operation.CHECK,
        Operation.GET_ATTRIBUTES,
        Operation.GET_ATTRIBUTE_LIST,
        Operation.LOCATE,
        Operation.LOG,
        Operation.INTEROP,
    }
)
UNDOABLE = NOTHING_TO_UNDO | {
    Operation.ACTIVATE,
    Operation.REGISTER,
    Operation.IMPORT,
    Operation.ADD_ATTRIBUTE,
    Operation.MODIFY_ATTRIBUTE,
    Operation.SET_ATTRIBUTE,
    Operation.ADJUST_ATTRIBUTE,
    Operation.DELETE_ATTRIBUTE,
}
OFFERED = (
    "a batch with Undo may hold Activate, Register, Import and Add, Modify, Set, Adjust and Delete "
    "Attribute (not binding a data unit) besides reads, Log and Interop; send the others in a batch "
    "without Undo"
)


def first_not_undoable(items: list[RequestItem]) -> int | None:
    """The index of the first item whose operation cannot be put back, if any."""
    return next((i for i, item in enumerate(items) if item.operation not in UNDOABLE), None)


async def put_back(call: Call, done: list[tuple[Result, list[Compensation]]]) -> list[Result]:
    """Undo `done` (the items before the failed one, in order), newest first; their answers."""
    answers = []
    # The undone Gets' keys: one event each, where its newest Get is undone, however many Gets.
    unsent = Counter(uid for result, _ in done if (uid := _got(result)) is not None)
    for result, compensations in reversed(done):
        failures = [f for c in reversed(compensations) if (f := await _compensate(call, c)) is not None]
        if failures:
            answers.append(
                Result(
                    result.operation,
                    result.batch_id,
                    ResultStatus.OPERATION_FAILED,
                    ResultReason.GENERAL_FAILURE,
                    "; ".join(failures),
                )
            )
        else:
            answers.append(await _undone(call, result, unsent))
    return answers[::-1]


def _got(result: Result) -> str | None:
    """The key a Get item sent, None for any other item."""
    if result.operation != Operation.GET:
        return None
    uid = ttlv.decode(ttlv.struct_(Tag.RESPONSE_PAYLOAD, result.payload)).get(Tag.UNIQUE_IDENTIFIER)
    return None if uid is None else str(uid)


async def _undone(call: Call, result: Result, unsent: Counter[str]) -> Result:
    """Operation Undone, with the item's Unique Identifier only: an undone Get sends no material
    (the trail, which said "sent", says so once per key: `unsent` counts its Gets)."""
    uid = ttlv.decode(ttlv.struct_(Tag.RESPONSE_PAYLOAD, result.payload)).find(Tag.UNIQUE_IDENTIFIER)
    if (key_id := _got(result)) is not None and (gets := unsent.pop(key_id, 0)):
        times = f" ({gets} Gets)" if gets > 1 else ""
        said = f"undone: the material of {key_id} was not sent after all{times}"
        await call.audit("kmip.undo", said, subject=("key", key_id))
    payload = uid.encode() if uid is not None else b""
    return Result(result.operation, result.batch_id, ResultStatus.OPERATION_UNDONE, payload=payload)


def _guards(call: Call, compensation: Compensation) -> list[Stmt]:
    """What a compensation checks in its own batch, on the cluster's newest state: the agent may still
    use the key (its access read again), and nobody else used the key since the batch began (then
    putting it back would contradict what they were told, and the audit trail with it)."""
    kind, key_id = compensation.subject
    if kind != "key":
        return []
    agent_id = call.agent_id
    params = {"id": key_id, "agent": agent_id, "since": call.now}
    used = call.kma.store.query_one(key_undo.USED_BY_OTHERS, params)
    who = "another agent or user" if used is None else f"'{used['entity_id']}' ({used['operation']})"
    access = key_access.agent_access(call.kma, agent_id) or call.access
    return [
        key_lifecycle.guard_key(access, key_id, call.now),
        key_undo.unused_by_others(agent_id, key_id, call.now, who),
    ]


async def _compensate(call: Call, compensation: Compensation) -> str | None:
    """Run one compensation; None, or why it could not be undone (audited)."""
    try:
        statements = [*_guards(call, compensation), *compensation.statements]
        await call.commit("kmip.undo", statements, f"undone: {compensation.message}", compensation.subject)
        return None
    except KmipError as refused:  # its guard: the object changed since (the refusal is the event)
        message, audited = f"could not undo: {refused.message}", refused.audited
    except Exception:
        log.exception("undoing %s failed", compensation.message)
        message, audited = (
            f"could not undo {compensation.message}: internal error; it is logged on the KMA",
            False,
        )
    if not audited:
        await call.audit(
            "kmip.undo",
            message,
            subject=compensation.subject,
            condition=Condition.ERROR,
            retention=Retention.LONG,
        )
    return message
