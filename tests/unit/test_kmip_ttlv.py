"""The TTLV codec: interoperable with PyKMIP's, strict about what it accepts, never crashing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kmip.core import enums as pykmip_enums
from kmip.core import utils as pykmip_utils
from kmip.core.messages import contents as pykmip_contents
from kmip.core.messages import messages as pykmip_messages
from kmip.core.messages import payloads as pykmip_payloads

from kma.kmip import enums, ttlv
from kma.kmip.client import key_template, request_message
from kma.kmip.messages import Result, encode_response, parse_request
from kma.kmip.ttlv import Item, TTLVError


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (enums.Tag, pykmip_enums.Tags),
        (enums.ResultReason, pykmip_enums.ResultReason),
        (enums.ObjectType, pykmip_enums.ObjectType),
        (enums.State, pykmip_enums.State),
        (enums.RevocationReasonCode, pykmip_enums.RevocationReasonCode),
        (enums.QueryFunction, pykmip_enums.QueryFunction),
        (enums.KeyFormatType, pykmip_enums.KeyFormatType),
        (enums.BlockCipherMode, pykmip_enums.BlockCipherMode),
        (enums.ItemType, pykmip_enums.Types),
    ],
)
def test_our_numbers_are_the_specifications(ours: type, theirs: type) -> None:
    by_value = {m.value: m.name for m in theirs}  # type: ignore[attr-defined]
    for member in ours:  # type: ignore[attr-defined]
        if member.value >= 0x540000 and ours is enums.Tag:
            continue  # our vendor extension tags
        assert member.value in by_value, member


def test_operations_match_pykmip() -> None:
    for op in enums.Operation:
        if op < 0x80000000:
            assert pykmip_enums.Operation(op.value).name == op.name


def test_a_request_pykmip_writes_parses_here() -> None:
    batch = pykmip_messages.RequestBatchItem(  # what ProxyKmipClient.get sends
        operation=pykmip_contents.Operation(pykmip_enums.Operation.GET),
        request_payload=pykmip_payloads.GetRequestPayload(unique_identifier="ABCDEF"),
    )
    header = pykmip_messages.RequestHeader(
        protocol_version=pykmip_contents.ProtocolVersion(1, 2), batch_count=pykmip_contents.BatchCount(1)
    )
    message = pykmip_messages.RequestMessage(request_header=header, batch_items=[batch])
    stream = pykmip_utils.BytearrayStream()
    message.write(stream, kmip_version=pykmip_enums.KMIPVersion.KMIP_1_2)
    request = parse_request(ttlv.decode(bytes(stream.buffer)))
    assert request.version == (1, 2)
    [item] = request.items
    assert item.operation == enums.Operation.GET
    assert item.payload.get(enums.Tag.UNIQUE_IDENTIFIER) == "ABCDEF"


def test_a_response_written_here_parses_in_pykmip() -> None:
    payload = ttlv.text(enums.Tag.UNIQUE_IDENTIFIER, "KEY-1")
    results = [
        Result(enums.Operation.ACTIVATE, None, payload=payload),
        Result(
            enums.Operation.REVOKE,
            None,
            enums.ResultStatus.OPERATION_FAILED,
            enums.ResultReason.PERMISSION_DENIED,
            "not allowed",
        ),
    ]
    raw = encode_response((1, 2), results, 1_700_000_000)
    response = pykmip_messages.ResponseMessage()
    response.read(pykmip_utils.BytearrayStream(raw), kmip_version=pykmip_enums.KMIPVersion.KMIP_1_2)
    assert response.batch_items[0].response_payload.unique_identifier.value == "KEY-1"
    assert response.batch_items[1].result_reason.value == pykmip_enums.ResultReason.PERMISSION_DENIED
    assert response.batch_items[1].result_message.value == "not allowed"


def test_every_type_round_trips() -> None:
    message = ttlv.struct_(
        0x420001,
        ttlv.integer(0x420002, -5),
        ttlv.long_integer(0x420003, -(2**40)),
        ttlv.big_integer(0x420004, -(2**70) + 3),
        ttlv.enum(0x420005, 0xFFFFFFFF),
        ttlv.boolean(0x420006, True),
        ttlv.text(0x420007, "volser É00001"),
        ttlv.byte_string(0x420008, b"\x00\x01\x02"),
        ttlv.date_time(0x420009, 1_700_000_000),
        ttlv.interval(0x42000A, 86400),
        ttlv.struct_(0x540001, ttlv.text(0x540002, "")),
    )
    item = ttlv.decode(message)
    assert [c.value for c in item][:9] == [
        -5,
        -(2**40),
        -(2**70) + 3,
        0xFFFFFFFF,
        True,
        "volser É00001",
        b"\x00\x01\x02",
        1_700_000_000,
        86400,
    ]
    assert item.encode() == message


BAD = {
    "truncated item header": ttlv.struct_(0x420001)[:5],
    "claims 4 bytes, 0 remain": ttlv.integer(0x420001, 1)[:8],
    "has length 8, not 4": bytes.fromhex("4200010200000008") + bytes(8),
    "non-zero padding": bytes.fromhex("420001020000000400000001") + b"\x00\x00\x00\x01",
    "not UTF-8": bytes.fromhex("4200010700000002") + b"\xff\xfe" + bytes(6),
    "unknown item type 0x0B": bytes.fromhex("4200010B00000000"),
    "neither a KMIP nor an extension tag": bytes.fromhex("1200010200000004") + bytes(8),
    "not a multiple of 8": bytes.fromhex("4200010100000004") + bytes(8),
    "is 2, not 0 or 1": bytes.fromhex("4200010600000008") + (2).to_bytes(8, "big"),
    "bytes follow the message": ttlv.integer(0x420001, 1) + bytes(8),
}


@pytest.mark.parametrize("why", BAD)
def test_strict_decoding_says_what_is_wrong(why: str) -> None:
    with pytest.raises(TTLVError, match=why):
        ttlv.decode(BAD[why])


def test_nesting_and_item_count_are_bounded() -> None:
    deep = ttlv.integer(0x420001, 1)
    for _ in range(ttlv.MAX_DEPTH + 1):
        deep = ttlv.struct_(0x420001, deep)
    with pytest.raises(TTLVError, match="nest too deeply"):
        ttlv.decode(deep)
    wide = ttlv.struct_(0x420001, *[ttlv.boolean(0x420002, False)] * (ttlv.MAX_ITEMS + 1))
    with pytest.raises(TTLVError, match="too many items"):
        ttlv.decode(wide)


VALID = request_message(
    [(enums.Operation.CREATE, ttlv.enum(enums.Tag.OBJECT_TYPE, 2) + key_template("E00001"))]
)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=512))
def test_random_bytes_are_refused_cleanly(data: bytes) -> None:
    try:
        ttlv.decode(data)
    except TTLVError:
        pass


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=len(VALID) - 1),
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=len(VALID) - 1), st.integers(min_value=0, max_value=255)
        ),
        max_size=4,
    ),
)
def test_truncated_or_flipped_messages_are_refused_cleanly(cut: int, flips: list[tuple[int, int]]) -> None:
    data = bytearray(VALID)
    for at, value in flips:
        data[at] = value
    try:
        item = ttlv.decode(bytes(data[: cut or len(data)]))
    except TTLVError:
        return
    assert isinstance(item, Item)
    try:
        parse_request(item)
    except Exception as exc:  # the envelope check refuses with a KMIP error, nothing else
        assert type(exc).__name__ == "KmipError"
