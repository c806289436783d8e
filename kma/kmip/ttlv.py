"""TTLV, KMIP's wire encoding: Tag (3 bytes), Type (1), Length (4), Value padded to 8 bytes.

Decoding is strict because the listener faces the network: every length is checked against the
bytes that remain, primitive lengths must be exactly what the type requires, padding must be
zero, text must be UTF-8, tags must be KMIP (0x42xxxx) or extension (0x54xxxx) tags, and both
nesting depth and item count are bounded. Anything else raises `TTLVError`; nothing is ever read
outside the buffer.

Encoding goes straight to bytes, bottom-up (`struct_(tag, text(...), enum(...))`): a response is
built without an intermediate tree, which is what keeps the protocol path cheap in Python.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kma.kmip.enums import ItemType

MAX_DEPTH = 16  # KMIP 1.x messages nest about 8 deep
MAX_ITEMS = 4096  # items in one message
HEADER_SIZE = 8

_HEADER = struct.Struct(">II")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_ZEROS = bytes(8)
# Item types as plain ints: compared once per item, faster than enum members.
_STRUCTURE, _INTEGER, _LONG, _BIG, _ENUM, _BOOL, _TEXT, _BYTES, _DATE, _INTERVAL = range(1, 11)


class TTLVError(ValueError):
    """The bytes are not well-formed TTLV (the message says where and why)."""


class Item:
    """One decoded TTLV item; a structure's value is the list of its children."""

    __slots__ = ("tag", "type", "value")

    def __init__(self, tag: int, type_: int, value: Any) -> None:
        self.tag = tag
        self.type = type_
        self.value = value

    def __repr__(self) -> str:
        return f"Item(0x{self.tag:06X}, {ItemType(self.type).name}, {self.value!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Item)
            and self.tag == other.tag
            and self.type == other.type
            and self.value == other.value
        )

    __hash__ = None  # type: ignore[assignment]

    # --- navigating a structure ---------------------------------------------------------
    def __iter__(self) -> Iterator[Item]:
        return iter(self.value if self.type == _STRUCTURE else ())

    def find(self, tag: int) -> Item | None:
        """The first child with `tag`, or None (also when this is not a structure)."""
        if self.type == _STRUCTURE:
            for child in self.value:
                if child.tag == tag:
                    return child  # type: ignore[no-any-return]
        return None

    def all(self, tag: int) -> list[Item]:
        if self.type != _STRUCTURE:
            return []
        return [child for child in self.value if child.tag == tag]

    def get(self, tag: int, default: Any = None) -> Any:
        child = self.find(tag)
        return default if child is None else child.value

    def encode(self) -> bytes:
        if self.type == _STRUCTURE:
            return struct_(self.tag, *(child.encode() for child in self.value))
        return _ENCODERS[self.type](self.tag, self.value)


# --- decoding -------------------------------------------------------------------------------
_LENGTHS = {_INTEGER: 4, _LONG: 8, _ENUM: 4, _BOOL: 8, _DATE: 8, _INTERVAL: 4}  # fixed-size types


def decode(data: bytes, max_depth: int = MAX_DEPTH, max_items: int = MAX_ITEMS) -> Item:
    """Decode exactly one item that fills `data` (header included)."""
    data = bytes(data)
    budget = [max_items]
    item, end = _item(data, 0, len(data), max_depth, budget)
    if end != len(data):
        raise TTLVError(f"{len(data) - end} bytes follow the message")
    return item


def read_header(header: bytes) -> tuple[int, int, int]:
    """(tag, type, length) of an 8-byte item header."""
    if len(header) != HEADER_SIZE:
        raise TTLVError("an item header is 8 bytes")
    tag_type, length = _HEADER.unpack(header)
    return tag_type >> 8, tag_type & 0xFF, length


def _item(buf: bytes, off: int, end: int, depth: int, budget: list[int]) -> tuple[Item, int]:
    """The item at `off` (which must end by `end`) and where the next one starts."""
    if end - off < HEADER_SIZE:
        raise TTLVError(f"truncated item header at byte {off}")
    budget[0] -= 1
    if budget[0] < 0:
        raise TTLVError("too many items in one message")
    tag_type, length = _HEADER.unpack_from(buf, off)
    tag = tag_type >> 8
    typ = tag_type & 0xFF
    if not (0x420000 <= tag <= 0x42FFFF or 0x540000 <= tag <= 0x54FFFF):
        raise TTLVError(f"tag 0x{tag:06X} at byte {off} is neither a KMIP nor an extension tag")
    start = off + HEADER_SIZE
    padded = (length + 7) & ~7
    if padded > end - start:
        raise TTLVError(f"item 0x{tag:06X} at byte {off} claims {length} bytes, {end - start} remain")
    if typ == _STRUCTURE:
        return Item(tag, typ, _children(buf, start, length, tag, depth, budget)), start + length
    read = _PRIMITIVES.get(typ)
    if read is None:
        raise TTLVError(f"unknown item type 0x{typ:02X} at byte {off}")
    fixed = _LENGTHS.get(typ)
    if fixed is not None and length != fixed:
        raise TTLVError(f"item 0x{tag:06X} of type {ItemType(typ).name} has length {length}, not {fixed}")
    if padded != length and buf[start + length : start + padded] != _ZEROS[: padded - length]:
        raise TTLVError(f"item 0x{tag:06X} has non-zero padding")
    return Item(tag, typ, read(buf, start, length, tag)), start + padded


def _children(buf: bytes, start: int, length: int, tag: int, depth: int, budget: list[int]) -> list[Item]:
    """A structure's items, each checked as `_item` checks it. Structures, enumerations,
    integers and text (most of a drive's request) are read here without a call to `_item` each: the
    listener's thread decodes every request (issue 47); any other item, or one that is not
    well-formed, goes through `_item`, which reads it or says what is wrong."""
    if length & 7:
        raise TTLVError(f"structure 0x{tag:06X} has a length of {length}, not a multiple of 8")
    if depth <= 0:
        raise TTLVError("structures nest too deeply")
    children: list[Item] = []
    append = children.append
    unpack = _HEADER.unpack_from
    pos, stop = start, start + length
    while pos < stop:
        if stop - pos < HEADER_SIZE or budget[0] <= 0 or not 0x42 <= buf[pos] <= 0x54:
            child, pos = _item(buf, pos, stop, depth - 1, budget)  # says what is wrong
            append(child)
            continue
        tag_type, size = unpack(buf, pos)
        typ = tag_type & 0xFF
        at = pos + HEADER_SIZE
        if typ in (_ENUM, _INTEGER):
            if size != 4 or stop - at < 8 or tag_type >> 8 & 0xFF0000 not in (0x420000, 0x540000):
                child, pos = _item(buf, pos, stop, depth - 1, budget)
                append(child)
                continue
            if buf[at + 4 : at + 8] != _ZEROS[:4]:
                raise TTLVError(f"item 0x{tag_type >> 8:06X} has non-zero padding")
            budget[0] -= 1
            value = _U32.unpack_from(buf, at)[0] if typ == _ENUM else _I32.unpack_from(buf, at)[0]
            append(Item(tag_type >> 8, typ, value))
            pos = at + 8
        elif (
            typ == _STRUCTURE
            and not size & 7
            and size <= stop - at
            and tag_type >> 8 & 0xFF0000 in (0x420000, 0x540000)
        ):
            budget[0] -= 1
            child_tag = tag_type >> 8
            append(Item(child_tag, typ, _children(buf, at, size, child_tag, depth - 1, budget)))
            pos = at + size
        elif (
            typ == _TEXT and (size + 7) & ~7 <= stop - at and tag_type >> 8 & 0xFF0000 in (0x420000, 0x540000)
        ):
            end, padded = at + size, at + ((size + 7) & ~7)
            if padded != end and buf[end:padded] != _ZEROS[: padded - end]:
                raise TTLVError(f"item 0x{tag_type >> 8:06X} has non-zero padding")
            budget[0] -= 1
            append(Item(tag_type >> 8, typ, _text(buf, at, size, tag_type >> 8)))
            pos = padded
        else:
            child, pos = _item(buf, pos, stop, depth - 1, budget)
            append(child)
    return children


def _text(buf: bytes, start: int, length: int, tag: int) -> str:
    try:
        return buf[start : start + length].decode("utf-8")
    except UnicodeDecodeError:
        raise TTLVError(f"text 0x{tag:06X} is not UTF-8") from None


def _boolean(buf: bytes, start: int, length: int, tag: int) -> bool:
    flag = _I64.unpack_from(buf, start)[0]
    if flag not in (0, 1):
        raise TTLVError(f"boolean 0x{tag:06X} is {flag}, not 0 or 1")
    return bool(flag)


def _big(buf: bytes, start: int, length: int, tag: int) -> int:
    """Two's complement, a whole number of 8-byte words."""
    if length == 0 or length & 7:
        raise TTLVError(f"big integer 0x{tag:06X} has length {length}, not a multiple of 8")
    return int.from_bytes(buf[start : start + length], "big", signed=True)


_PrimitiveReader = Callable[[bytes, int, int, int], Any]
_PRIMITIVES: dict[int, _PrimitiveReader] = {
    _INTEGER: lambda buf, start, length, tag: _I32.unpack_from(buf, start)[0],
    _LONG: lambda buf, start, length, tag: _I64.unpack_from(buf, start)[0],
    _BIG: _big,
    _ENUM: lambda buf, start, length, tag: _U32.unpack_from(buf, start)[0],
    _BOOL: _boolean,
    _TEXT: _text,
    _BYTES: lambda buf, start, length, tag: buf[start : start + length],
    _DATE: lambda buf, start, length, tag: _I64.unpack_from(buf, start)[0],
    _INTERVAL: lambda buf, start, length, tag: _U32.unpack_from(buf, start)[0],
}


# --- encoding -------------------------------------------------------------------------------
def _head(tag: int, typ: int, length: int) -> bytes:
    return _HEADER.pack(tag << 8 | typ, length)


def struct_(tag: int, *parts: bytes) -> bytes:
    body = b"".join(parts)
    return _HEADER.pack(tag << 8 | _STRUCTURE, len(body)) + body


def struct_of(tag: int, parts: Iterable[bytes]) -> bytes:
    return struct_(tag, *parts)


def integer(tag: int, value: int) -> bytes:
    return _HEADER.pack(tag << 8 | _INTEGER, 4) + _I32.pack(value) + _ZEROS[:4]


def enum(tag: int, value: int) -> bytes:
    return _HEADER.pack(tag << 8 | _ENUM, 4) + _U32.pack(value) + _ZEROS[:4]


def interval(tag: int, value: int) -> bytes:
    return _HEADER.pack(tag << 8 | _INTERVAL, 4) + _U32.pack(value) + _ZEROS[:4]


def long_integer(tag: int, value: int) -> bytes:
    return _HEADER.pack(tag << 8 | _LONG, 8) + _I64.pack(value)


def date_time(tag: int, seconds: int) -> bytes:
    return _HEADER.pack(tag << 8 | _DATE, 8) + _I64.pack(seconds)


def boolean(tag: int, value: bool) -> bytes:
    return _HEADER.pack(tag << 8 | _BOOL, 8) + _I64.pack(1 if value else 0)


def byte_string(tag: int, value: bytes) -> bytes:
    n = len(value)
    return _HEADER.pack(tag << 8 | _BYTES, n) + value + _ZEROS[: -n % 8]


def text(tag: int, value: str) -> bytes:
    raw = value.encode("utf-8")
    n = len(raw)
    return _HEADER.pack(tag << 8 | _TEXT, n) + raw + _ZEROS[: -n % 8]


def big_integer(tag: int, value: int) -> bytes:
    size = max(8, (value.bit_length() + 8 + 63) // 64 * 8)
    return _head(tag, _BIG, size) + value.to_bytes(size, "big", signed=True)


_ENCODERS: dict[int, Callable[[int, Any], bytes]] = {
    ItemType.INTEGER: integer,
    ItemType.LONG_INTEGER: long_integer,
    ItemType.BIG_INTEGER: big_integer,
    ItemType.ENUMERATION: enum,
    ItemType.BOOLEAN: boolean,
    ItemType.TEXT_STRING: text,
    ItemType.BYTE_STRING: byte_string,
    ItemType.DATE_TIME: date_time,
    ItemType.INTERVAL: interval,
}
