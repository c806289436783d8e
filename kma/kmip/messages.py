"""KMIP request and response messages: the envelope around each batch of operations.

`parse_request` checks the envelope strictly (a header, a batch count that matches the batch
items, each with an operation); what is inside a payload is the operation handler's business.
`encode_response` builds the response bytes directly. `KmipError` is how any layer says "this
item fails with that Result Reason and this plain message".
"""

from __future__ import annotations

from dataclasses import dataclass

from kma.kmip import ttlv
from kma.kmip.enums import BatchErrorContinuation, ItemType, ResultReason, ResultStatus, Tag
from kma.kmip.ttlv import Item

# Newest first: the order Discover Versions answers in. 2.x requests are translated to 1.4's
# attribute encoding and their answers back (kma/kmip/v2.py).
SUPPORTED_VERSIONS: tuple[tuple[int, int], ...] = ((2, 1), (2, 0), (1, 4), (1, 3), (1, 2), (1, 1), (1, 0))
FALLBACK_VERSION = (1, 0)  # used to answer a message whose own version cannot be read

# How a refusal that a moment may cure begins (a drive retries it; `kma agent simulate` does): the
# cluster has no Raft leader for a moment, and the request needed a change through it.
RETRY_LATER = "The cluster cannot take this change now; nothing was changed, try again"
# How a refusal begins that another KMA can serve at once (a drive goes on to the next KMA of its
# list; `kma agent simulate` does): this KMA has just started and its replica is catching up.
BUSY = "This KMA is busy, try another KMA"
CATCHING_UP = f"{BUSY}: it is catching up with the cluster after its start (or its rqlited's restart)"


# Result Reasons a later 1.x version added, with what a client of an older version is told instead
# in its own version's words (a 1.0 client cannot decode Key Value Not Present).
_OLDER_REASON: dict[ResultReason, tuple[tuple[int, int], ResultReason]] = {
    ResultReason.ENCODING_OPTION_ERROR: ((1, 1), ResultReason.FEATURE_NOT_SUPPORTED),
    ResultReason.KEY_VALUE_NOT_PRESENT: ((1, 2), ResultReason.ITEM_NOT_FOUND),
}


class KmipError(Exception):
    """One batch item fails: a KMIP Result Reason and a message the client may show."""

    def __init__(
        self, reason: ResultReason, message: str, audited: bool = False, v2_reason: ResultReason | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.audited = audited  # the refusal is already in the audit trail
        self.v2_reason = v2_reason  # what KMIP 2.x says instead (e.g. Wrong Key Lifecycle State)

    def reason_in(self, version: tuple[int, int]) -> ResultReason:
        """The Result Reason in `version`: 2.x has its own where 1.x answers generally; a 1.x
        version older than the reason answers with one it defines."""
        if version < (2, 0):
            since, older = _OLDER_REASON.get(self.reason, ((1, 0), self.reason))
            return self.reason if version >= since else older
        if self.v2_reason is not None:
            return self.v2_reason
        return ResultReason.OBJECT_NOT_FOUND if self.reason == ResultReason.ITEM_NOT_FOUND else self.reason


def invalid(message: str) -> KmipError:
    return KmipError(ResultReason.INVALID_MESSAGE, message)


@dataclass(slots=True)
class RequestItem:
    operation: int
    batch_id: bytes | None
    payload: Item


@dataclass(slots=True)
class Request:
    version: tuple[int, int]
    items: list[RequestItem]
    continuation: int = BatchErrorContinuation.STOP
    max_response_size: int | None = None


@dataclass(slots=True)
class Result:
    operation: int | None
    batch_id: bytes | None
    status: int = ResultStatus.SUCCESS
    reason: int | None = None
    message: str | None = None
    payload: bytes = b""  # the encoded children of the Response Payload


def _expect(item: Item | None, tag: Tag, typ: ItemType, what: str) -> Item:
    if item is None:
        raise invalid(f"the request has no {what}")
    if item.tag != tag or item.type != typ:
        raise invalid(f"{what} is not a {ItemType(typ).name.lower().replace('_', ' ')}")
    return item


def request_version(message: Item) -> tuple[int, int] | None:
    """The protocol version a request states, if it can be read at all (to answer in kind)."""
    header = message.find(Tag.REQUEST_HEADER)
    version = header.find(Tag.PROTOCOL_VERSION) if header is not None else None
    if version is None:
        return None
    major, minor = version.get(Tag.PROTOCOL_VERSION_MAJOR), version.get(Tag.PROTOCOL_VERSION_MINOR)
    return (major, minor) if isinstance(major, int) and isinstance(minor, int) else None


def parse_request(message: Item) -> Request:
    _expect(message, Tag.REQUEST_MESSAGE, ItemType.STRUCTURE, "request message")
    children = message.value
    header = _expect(
        children[0] if children else None, Tag.REQUEST_HEADER, ItemType.STRUCTURE, "request header"
    )
    version = request_version(message)
    if version is None:
        raise invalid("the request header has no readable protocol version")
    count = header.find(Tag.BATCH_COUNT)
    if count is None or count.type != ItemType.INTEGER:
        raise invalid("the request header has no batch count")
    items = []
    for child in children[1:]:
        batch = _expect(child, Tag.BATCH_ITEM, ItemType.STRUCTURE, "batch item")
        operation = batch.find(Tag.OPERATION)
        if operation is None or operation.type != ItemType.ENUMERATION:
            raise invalid("a batch item has no operation")
        batch_id = batch.find(Tag.UNIQUE_BATCH_ITEM_ID)
        if batch_id is not None and batch_id.type != ItemType.BYTE_STRING:
            raise invalid("a unique batch item ID is not a byte string")
        payload = batch.find(Tag.REQUEST_PAYLOAD)
        if payload is not None and payload.type != ItemType.STRUCTURE:
            raise invalid("a request payload is not a structure")
        items.append(
            RequestItem(
                operation.value,
                None if batch_id is None else batch_id.value,
                payload or Item(Tag.REQUEST_PAYLOAD, ItemType.STRUCTURE, []),
            )
        )
    if not items or count.value != len(items):
        raise invalid(f"the batch count ({count.value}) does not match the {len(items)} batch items")
    continuation = header.get(Tag.BATCH_ERROR_CONTINUATION_OPTION, BatchErrorContinuation.STOP)
    max_size = header.get(Tag.MAXIMUM_RESPONSE_SIZE)
    if header.find(Tag.ASYNCHRONOUS_INDICATOR) is not None and header.get(Tag.ASYNCHRONOUS_INDICATOR):
        raise KmipError(ResultReason.FEATURE_NOT_SUPPORTED, "asynchronous operations are not supported")
    return Request(version, items, continuation, max_size if isinstance(max_size, int) else None)


def _protocol_version(version: tuple[int, int]) -> bytes:
    return ttlv.struct_(
        Tag.PROTOCOL_VERSION,
        ttlv.integer(Tag.PROTOCOL_VERSION_MAJOR, version[0]),
        ttlv.integer(Tag.PROTOCOL_VERSION_MINOR, version[1]),
    )


# Encoded once: every answer carries its version, and most items succeed (the listener's thread
# encodes every answer, issue 47). Only the versions this KMA speaks: a client names any it likes.
_PROTOCOL_VERSIONS = {version: _protocol_version(version) for version in SUPPORTED_VERSIONS}
_SUCCESS = ttlv.enum(Tag.RESULT_STATUS, ResultStatus.SUCCESS)


def encode_response(version: tuple[int, int], results: list[Result], now: int) -> bytes:
    items = []
    for r in results:
        parts = []
        if r.operation is not None:
            parts.append(ttlv.enum(Tag.OPERATION, r.operation))
        if r.batch_id is not None:
            parts.append(ttlv.byte_string(Tag.UNIQUE_BATCH_ITEM_ID, r.batch_id))
        parts.append(_SUCCESS if r.status == ResultStatus.SUCCESS else ttlv.enum(Tag.RESULT_STATUS, r.status))
        if r.status == ResultStatus.OPERATION_FAILED:
            parts.append(ttlv.enum(Tag.RESULT_REASON, r.reason or ResultReason.GENERAL_FAILURE))
            parts.append(ttlv.text(Tag.RESULT_MESSAGE, r.message or "the operation failed"))
        elif r.operation is not None:  # succeeded, or undone (Batch Error Continuation Option Undo)
            parts.append(ttlv.struct_(Tag.RESPONSE_PAYLOAD, r.payload))
        items.append(ttlv.struct_(Tag.BATCH_ITEM, *parts))
    header = ttlv.struct_(
        Tag.RESPONSE_HEADER,
        _PROTOCOL_VERSIONS.get(version) or _protocol_version(version),
        ttlv.date_time(Tag.TIME_STAMP, now),
        ttlv.integer(Tag.BATCH_COUNT, len(items)),
    )
    return ttlv.struct_(Tag.RESPONSE_MESSAGE, header, *items)


def error_response(version: tuple[int, int] | None, reason: ResultReason, message: str, now: int) -> bytes:
    """A whole-message failure (no operation could be read): one batch item, no operation."""
    result = Result(None, None, ResultStatus.OPERATION_FAILED, reason, message)
    return encode_response(version or FALLBACK_VERSION, [result], now)
