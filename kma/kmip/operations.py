"""The dispatch table (operation -> handler) and running one request's batch items.

A handler is `async (call, payload) -> bytes` returning the encoded children of its Response
Payload, or raising `KmipError`. Here every refusal becomes a failed batch item with a clear
message and an audit event (unless the handler's refused commit already wrote one), and an
unexpected failure becomes General Failure: logged with its traceback, audited, and never
allowed to take the connection or the server down.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from kma.audit.record import Condition, Retention
from kma.crypto.hsm_settings import HsmUnavailable
from kma.errors import ClusterUnavailable, KmaLocked, NoReadyKey
from kma.kmip import (
    fields,
    ops_attributes,
    ops_keys,
    ops_locate,
    ops_rekey,
    ops_server,
    ops_tape,
    ops_transfer,
    ttlv,
    undo,
    v2,
)
from kma.kmip.context import Call, Compensation
from kma.kmip.enums import BatchErrorContinuation, Operation, ResultReason, ResultStatus, Tag
from kma.kmip.messages import RETRY_LATER, SUPPORTED_VERSIONS, KmipError, Request, RequestItem, Result
from kma.kmip.ttlv import Item

log = logging.getLogger(__name__)
Handler = Callable[[Call, Item], Awaitable[bytes]]

HANDLERS: dict[int, Handler] = {
    Operation.DISCOVER_VERSIONS: ops_server.discover_versions,
    Operation.QUERY: ops_server.query,
    Operation.LOG: ops_server.log,
    Operation.INTEROP: ops_server.interop,
    Operation.CREATE: ops_keys.create,
    Operation.REKEY: ops_rekey.rekey,
    Operation.REGISTER: ops_keys.register,
    Operation.GET: ops_keys.get,
    Operation.ACTIVATE: ops_keys.activate,
    Operation.REVOKE: ops_keys.revoke,
    Operation.DESTROY: ops_keys.destroy,
    Operation.CHECK: ops_keys.check,
    Operation.GET_ATTRIBUTES: ops_attributes.get_attributes,
    Operation.GET_ATTRIBUTE_LIST: ops_attributes.get_attribute_list,
    Operation.ADD_ATTRIBUTE: ops_attributes.add_attribute,
    Operation.MODIFY_ATTRIBUTE: ops_attributes.modify_attribute,
    Operation.DELETE_ATTRIBUTE: ops_attributes.delete_attribute,
    Operation.LOCATE: ops_locate.locate,
    Operation.SET_ATTRIBUTE: ops_attributes.set_attribute,
    Operation.ADJUST_ATTRIBUTE: ops_attributes.adjust_attribute,
    Operation.EXPORT: ops_transfer.export,
    Operation.IMPORT: ops_transfer.import_,
    Operation.SET_ENDPOINT_ROLE: ops_server.set_endpoint_role,
    Operation.WRITE_KEY: ops_tape.write_key,
    Operation.WRITE_FROM_BEGINNING: ops_tape.write_from_beginning,
}
# Needs no enrolled agent's permissions: a client may learn what the server speaks.
LOCKED = "This KMA is locked; use another KMA of the cluster until a quorum unlocks it."
OPEN_OPERATIONS = frozenset({Operation.DISCOVER_VERSIONS, Operation.QUERY})


_NAMES = {int(op): op.name.lower() for op in Operation}  # looked up per batch item


def operation_name(code: int) -> str:
    return _NAMES.get(code) or f"0x{code:08X}"


def _creates_then_activates(item: RequestItem, following: RequestItem | None) -> bool:
    """Create, then Activate of the ID placeholder: how drives ask for a new tape key."""
    return (
        item.operation == Operation.CREATE
        and following is not None
        and following.operation == Operation.ACTIVATE
        and following.payload.find(Tag.UNIQUE_IDENTIFIER) is None
    )


async def run(call: Call, request: Request) -> list[Result]:
    """The batch items in order. A Create followed by an Activate of its placeholder is done as
    one durable write (the key is created active), answered as the two items it was."""
    if request.continuation == BatchErrorContinuation.UNDO:
        return await _run_undoable(call, request)
    results: list[Result] = []
    items = request.items
    index = 0
    while index < len(items):
        item = items[index]
        following = items[index + 1] if index + 1 < len(items) else None
        fused = _creates_then_activates(item, following)
        result = await run_item(call, request, item, ops_keys.create_active if fused else None)
        results.append(result)
        index += 1
        if fused and following is not None and result.status == ResultStatus.SUCCESS:
            results.append(
                Result(
                    following.operation,
                    following.batch_id,
                    payload=ttlv.text(Tag.UNIQUE_IDENTIFIER, call.placeholder or ""),
                )
            )
            index += 1
        if result.status != ResultStatus.SUCCESS and request.continuation != BatchErrorContinuation.CONTINUE:
            break  # Stop (the default)
    return results


async def _run_undoable(call: Call, request: Request) -> list[Result]:
    """Batch Error Continuation Option Undo (kma/kmip/undo.py): refused whole unless every item
    can be put back; when an item fails, the ones before it are undone, those after not run."""
    items = request.items
    index = undo.first_not_undoable(items)
    if index is not None:
        message = (
            f"nothing was run: item {index + 1} ({operation_name(items[index].operation)}) cannot be "
            f"undone, and this batch asks for Undo; {undo.OFFERED}"
        )
        await call.audit("kmip.undo", message, condition=Condition.ERROR, retention=Retention.MEDIUM)
        return [
            Result(
                i.operation,
                i.batch_id,
                ResultStatus.OPERATION_FAILED,
                ResultReason.OPERATION_NOT_SUPPORTED,
                message,
            )
            for i in items
        ]
    done: list[tuple[Result, list[Compensation]]] = []
    for item in items:
        call.compensations = []
        result = await run_item(call, request, item)
        compensations, call.compensations = call.compensations, None
        if result.status != ResultStatus.SUCCESS:
            return [*await undo.put_back(call, done), result]
        done.append((result, compensations))
    return [result for result, _ in done]


async def run_item(call: Call, request: Request, item: RequestItem, handler: Handler | None = None) -> Result:
    name = operation_name(item.operation)
    call.subject = None
    if call.budget.full:  # the answer reached its limit: not run (one event for them all, at the end)
        call.budget.not_run += 1
        message = f"not run: the answer had reached its limit of {call.budget.limit:,} bytes"
        reason = ResultReason.RESPONSE_TOO_LARGE
        return Result(item.operation, item.batch_id, ResultStatus.OPERATION_FAILED, reason, message)
    try:
        summarised, started = call.budget.summarised.total(), time.perf_counter()
        result = await _run_item(call, request, item, name, handler)
        call.budget.spend(len(result.payload or b""))
        # A read past a message's first few waits for no audit event of its own: it rests as long as
        # it worked, so that one message of a thousand reads takes no more than half the KMA from
        # the other agents (kma/pacing.py does the same for a backup).
        if call.budget.summarised.total() > summarised:
            await asyncio.sleep(time.perf_counter() - started)
        return result
    except KmipError as error:  # Response Too Large: the item ran, its answer is not sent
        said = f"refused {name}: {error.message}; its answer was not sent"
        await call.audit(f"kmip.{name}", said, condition=Condition.ERROR, retention=Retention.MEDIUM)
        return Result(
            item.operation, item.batch_id, ResultStatus.OPERATION_FAILED, error.reason, error.message
        )


async def _run_item(
    call: Call, request: Request, item: RequestItem, name: str, handler: Handler | None
) -> Result:
    try:
        handler = handler or HANDLERS.get(item.operation)
        if handler is None or request.version < ops_server.since(item.operation):
            raise KmipError(
                ResultReason.OPERATION_NOT_SUPPORTED, f"operation {name} is not supported by this KMA"
            )
        if request.version not in SUPPORTED_VERSIONS and item.operation != Operation.DISCOVER_VERSIONS:
            raise KmipError(
                ResultReason.INVALID_MESSAGE,
                f"KMIP {request.version[0]}.{request.version[1]} is not supported; this KMA speaks "
                "KMIP 1.0 to 1.4, 2.0 and 2.1",
            )
        if item.operation not in OPEN_OPERATIONS:
            call.session.access()
            if call.kma.vault.locked:
                raise KmaLocked(LOCKED)
        fields.check(item.operation, item.payload, request.version)
        if not v2.is_v2(request.version):
            return Result(item.operation, item.batch_id, payload=await handler(call, item.payload))
        # one implementation of each operation: 2.x in, run as 1.4, answered in 2.x
        answer = await handler(call, v2.request_payload(item.operation, item.payload))
        return Result(item.operation, item.batch_id, payload=v2.response_payload(item.operation, answer))
    except KmipError as error:
        reason, message, audited = error.reason_in(request.version), error.message, error.audited
    except (KmaLocked, NoReadyKey) as refused:
        reason, message, audited = ResultReason.GENERAL_FAILURE, refused.message, False
    except HsmUnavailable as failed:  # never a software fallback: the agent is told, the trail records it
        reason, message, audited = ResultReason.GENERAL_FAILURE, str(failed), False
    except ClusterUnavailable as unavailable:  # e.g. a new key while a Raft leader is being elected
        reason, audited = ResultReason.GENERAL_FAILURE, False
        message = f"{RETRY_LATER}: {unavailable.message}"
    except Exception:
        log.exception("KMIP %s by %s failed", name, call.agent_id)
        reason, message, audited = (
            ResultReason.GENERAL_FAILURE,
            "internal error; it is logged on the KMA",
            False,
        )
    if not audited:
        await call.audit(
            f"kmip.{name}" if item.operation in HANDLERS else "kmip.unsupported",
            f"refused {name}: {message}",
            condition=Condition.ERROR,
            retention=Retention.MEDIUM,
        )
    return Result(item.operation, item.batch_id, ResultStatus.OPERATION_FAILED, reason, message)
