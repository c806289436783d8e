"""A small blocking KMIP client over the same codec: for the drive simulator, the bench and tests.

One TLS connection, one request at a time. Each convenience method is one request message
(`create_and_activate` is one message with two batch items, the second using the ID
placeholder, as tape drives do it). A failed item raises `KmipFailure` with its Result Reason.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kma.kmip import ttlv, v2
from kma.kmip.enums import (
    BlockCipherMode,
    CryptographicAlgorithm,
    ItemType,
    KeyFormatType,
    NameType,
    ObjectType,
    Operation,
    ResultStatus,
    RevocationReasonCode,
    Tag,
    WrappingMethod,
)
from kma.kmip.ttlv import Item


class KmipFailure(Exception):
    def __init__(self, operation: int | None, reason: int | None, message: str) -> None:
        super().__init__(f"KMIP operation failed ({reason}): {message}")
        self.operation = operation
        self.reason = reason
        self.message = message


@dataclass
class ItemResult:
    operation: int | None
    status: int
    reason: int | None
    message: str | None
    payload: Item | None

    def check(self) -> Item:
        if self.status != ResultStatus.SUCCESS or self.payload is None:
            raise KmipFailure(self.operation, self.reason, self.message or "no payload")
        return self.payload


def attribute(name: str, value: bytes, index: int = 0) -> bytes:
    """`value` is an encoded item tagged ATTRIBUTE_VALUE."""
    parts = [ttlv.text(Tag.ATTRIBUTE_NAME, name)]
    if index:
        parts.append(ttlv.integer(Tag.ATTRIBUTE_INDEX, index))
    return ttlv.struct_(Tag.ATTRIBUTE, *parts, value)


def name_attribute(value: str) -> bytes:
    return attribute(
        "Name",
        ttlv.struct_(
            Tag.ATTRIBUTE_VALUE,
            ttlv.text(Tag.NAME_VALUE, value),
            ttlv.enum(Tag.NAME_TYPE, NameType.UNINTERPRETED_TEXT_STRING),
        ),
    )


def text_attribute(name: str, value: str) -> bytes:
    return attribute(name, ttlv.text(Tag.ATTRIBUTE_VALUE, value))


def request_message(
    items: Sequence[tuple[int, bytes]],
    version: tuple[int, int] = (1, 4),
    batch_ids: bool = False,
    continuation: int | None = None,
    max_response_size: int | None = None,
) -> bytes:
    """`continuation`: the Batch Error Continuation Option (the server's default is Stop);
    `max_response_size`: the Maximum Response Size the client asks for, in bytes."""
    option = b"" if continuation is None else ttlv.enum(Tag.BATCH_ERROR_CONTINUATION_OPTION, continuation)
    if max_response_size is not None:
        option = ttlv.integer(Tag.MAXIMUM_RESPONSE_SIZE, max_response_size) + option
    header = ttlv.struct_(
        Tag.REQUEST_HEADER,
        ttlv.struct_(
            Tag.PROTOCOL_VERSION,
            ttlv.integer(Tag.PROTOCOL_VERSION_MAJOR, version[0]),
            ttlv.integer(Tag.PROTOCOL_VERSION_MINOR, version[1]),
        ),
        option,
        ttlv.integer(Tag.BATCH_COUNT, len(items)),
    )
    batch = []
    for i, (operation, payload) in enumerate(items):
        ident = ttlv.byte_string(Tag.UNIQUE_BATCH_ITEM_ID, i.to_bytes(4, "big")) if batch_ids else b""
        batch.append(
            ttlv.struct_(
                Tag.BATCH_ITEM,
                ttlv.enum(Tag.OPERATION, operation),
                ident,
                ttlv.struct_(Tag.REQUEST_PAYLOAD, payload),
            )
        )
    return ttlv.struct_(Tag.REQUEST_MESSAGE, header, *batch)


def parse_response(data: bytes) -> list[ItemResult]:
    message = ttlv.decode(data, max_items=len(data) // ttlv.HEADER_SIZE + 1)  # an answer may list many IDs
    if message.tag != Tag.RESPONSE_MESSAGE:
        raise KmipFailure(None, None, "the server did not answer with a KMIP response message")
    out = []
    for item in message.all(Tag.BATCH_ITEM):
        out.append(
            ItemResult(
                item.get(Tag.OPERATION),
                item.get(Tag.RESULT_STATUS, -1),
                item.get(Tag.RESULT_REASON),
                item.get(Tag.RESULT_MESSAGE),
                item.find(Tag.RESPONSE_PAYLOAD),
            )
        )
    return out


def key_template(
    data_unit: str | None = None,
    group: str | None = None,
    activate_at: int | None = None,
    usage_mask: int | None = None,
) -> bytes:
    attrs = [
        attribute("Cryptographic Algorithm", ttlv.enum(Tag.ATTRIBUTE_VALUE, CryptographicAlgorithm.AES)),
        attribute("Cryptographic Length", ttlv.integer(Tag.ATTRIBUTE_VALUE, 256)),
        attribute("Cryptographic Usage Mask", ttlv.integer(Tag.ATTRIBUTE_VALUE, usage_mask or 12)),
    ]
    if data_unit is not None:
        attrs.append(name_attribute(data_unit))
    if group is not None:
        attrs.append(text_attribute("Object Group", group))
    if activate_at is not None:
        attrs.append(attribute("Activation Date", ttlv.date_time(Tag.ATTRIBUTE_VALUE, activate_at)))
    return ttlv.struct_(Tag.TEMPLATE_ATTRIBUTE, *attrs)


class KmipClient:
    def __init__(
        self, address: str, context: ssl.SSLContext, timeout: float = 10.0, version: tuple[int, int] = (1, 4)
    ) -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port = host.strip("[]"), int(port)
        self.context = context
        self.timeout = timeout
        self.version = version
        self.sock: ssl.SSLSocket | None = None

    def __enter__(self) -> KmipClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), timeout=self.timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self.context.wrap_socket(raw, server_hostname=self.host)

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None

    # --- raw exchange -----------------------------------------------------------------------
    def send_raw(self, data: bytes) -> bytes:
        """Send bytes as they are; return one whole response message's bytes."""
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        self.sock.sendall(data)
        header = self._recv(ttlv.HEADER_SIZE)
        _, _, length = ttlv.read_header(header)
        return header + self._recv(length)

    def _recv(self, n: int) -> bytes:
        assert self.sock is not None
        chunks, remaining = [], n
        while remaining:
            chunk = self.sock.recv(remaining)
            if not chunk:
                raise ConnectionError("the KMA closed the connection")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def batch(self, items: Sequence[tuple[int, bytes]], continuation: int | None = None) -> list[ItemResult]:
        return parse_response(self.send_raw(request_message(items, self.version, continuation=continuation)))

    def call(self, operation: int, payload: bytes = b"") -> Item:
        return self.batch([(operation, payload)])[0].check()

    # --- operations ---------------------------------------------------------------------------
    def discover_versions(self) -> list[tuple[int, int]]:
        payload = self.call(Operation.DISCOVER_VERSIONS)
        return [
            (v.get(Tag.PROTOCOL_VERSION_MAJOR), v.get(Tag.PROTOCOL_VERSION_MINOR))
            for v in payload.all(Tag.PROTOCOL_VERSION)
        ]

    def create(
        self,
        data_unit: str | None = None,
        group: str | None = None,
        activate_at: int | None = None,
        usage_mask: int | None = None,
    ) -> str:
        payload = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + self._in_version(
            key_template(data_unit, group, activate_at, usage_mask)
        )
        return str(self.call(Operation.CREATE, payload).get(Tag.UNIQUE_IDENTIFIER))

    def _in_version(self, template: bytes) -> bytes:
        """A Template-Attribute as the client's version has it: KMIP 2.x sends an Attributes
        structure of tagged attributes instead (a 2.x server refuses a Template-Attribute)."""
        if self.version < v2.VERSION:
            return template
        return ttlv.struct_of(v2.ATTRIBUTES, v2.tagged(list(ttlv.decode(template))))

    def create_and_activate(self, data_unit: str | None = None, group: str | None = None) -> str:
        create = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + self._in_version(
            key_template(data_unit, group)
        )
        results = self.batch([(Operation.CREATE, create), (Operation.ACTIVATE, b"")])
        uid = results[0].check().get(Tag.UNIQUE_IDENTIFIER)
        if len(results) < 2:
            raise KmipFailure(Operation.ACTIVATE, None, "the activation was not processed")
        results[1].check()
        return str(uid)

    def get(self, uid: str, wrap_with: str | None = None, mode: int = BlockCipherMode.NIST_KEY_WRAP) -> bytes:
        payload = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
        if wrap_with is not None:
            payload += ttlv.struct_(
                Tag.KEY_WRAPPING_SPECIFICATION,
                ttlv.enum(Tag.WRAPPING_METHOD, WrappingMethod.ENCRYPT),
                ttlv.struct_(
                    Tag.ENCRYPTION_KEY_INFORMATION,
                    ttlv.text(Tag.UNIQUE_IDENTIFIER, wrap_with),
                    ttlv.struct_(Tag.CRYPTOGRAPHIC_PARAMETERS, ttlv.enum(Tag.BLOCK_CIPHER_MODE, mode)),
                ),
            )
        block = self.call(Operation.GET, payload).find(Tag.SYMMETRIC_KEY)
        block = block.find(Tag.KEY_BLOCK) if block is not None else None
        value = block.find(Tag.KEY_VALUE) if block is not None else None
        if value is None:
            raise KmipFailure(Operation.GET, None, "the response carries no key value")
        if value.type == ItemType.BYTE_STRING:  # wrapped
            return bytes(value.value)
        material = value.find(Tag.KEY_MATERIAL)
        if material is not None and block is not None and block.get(Tag.KEY_FORMAT_TYPE) == KeyFormatType.RAW:
            return bytes(material.value)
        raise KmipFailure(Operation.GET, None, "unexpected key format in the response")

    def activate(self, uid: str) -> None:
        self.call(Operation.ACTIVATE, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid))

    def revoke(
        self, uid: str, reason: int = RevocationReasonCode.CESSATION_OF_OPERATION, message: str = ""
    ) -> None:
        revocation = ttlv.enum(Tag.REVOCATION_REASON_CODE, reason)
        if message:
            revocation += ttlv.text(Tag.REVOCATION_MESSAGE, message)
        self.call(
            Operation.REVOKE,
            ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + ttlv.struct_(Tag.REVOCATION_REASON, revocation),
        )

    def destroy(self, uid: str) -> None:
        self.call(Operation.DESTROY, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid))

    def locate(
        self,
        data_unit: str | None = None,
        state: int | None = None,
        group: str | None = None,
        maximum: int | None = None,
    ) -> list[str]:
        parts = [ttlv.integer(Tag.MAXIMUM_ITEMS, maximum)] if maximum is not None else []
        if data_unit is not None:
            parts.append(name_attribute(data_unit))
        if state is not None:
            parts.append(attribute("State", ttlv.enum(Tag.ATTRIBUTE_VALUE, state)))
        if group is not None:
            parts.append(text_attribute("Object Group", group))
        payload = self.call(Operation.LOCATE, b"".join(parts))
        return [str(i.value) for i in payload.all(Tag.UNIQUE_IDENTIFIER)]

    def get_attributes(self, uid: str, names: Sequence[str] = ()) -> dict[str, Any]:
        payload = ttlv.text(Tag.UNIQUE_IDENTIFIER, uid) + b"".join(
            ttlv.text(Tag.ATTRIBUTE_NAME, n) for n in names
        )
        out: dict[str, Any] = {}
        for attr in self.call(Operation.GET_ATTRIBUTES, payload).all(Tag.ATTRIBUTE):
            value = attr.find(Tag.ATTRIBUTE_VALUE)
            if value is None:
                continue
            out[str(attr.get(Tag.ATTRIBUTE_NAME))] = (
                value.get(Tag.NAME_VALUE) if value.type == ItemType.STRUCTURE else value.value
            )
        return out

    def write_key(self, data_unit: str, group: str | None = None) -> tuple[str, bool]:
        payload = self.call(Operation.WRITE_KEY, self._unit(data_unit, group))
        return str(payload.get(Tag.UNIQUE_IDENTIFIER)), bool(payload.get(Tag.KEY_ISSUED))

    def write_from_beginning(self, data_unit: str, group: str | None = None) -> tuple[str, int]:
        payload = self.call(Operation.WRITE_FROM_BEGINNING, self._unit(data_unit, group))
        return str(payload.get(Tag.UNIQUE_IDENTIFIER)), int(payload.get(Tag.KEYS_RELEASED, 0))

    @staticmethod
    def _unit(data_unit: str, group: str | None) -> bytes:
        return ttlv.text(Tag.DATA_UNIT, data_unit) + (ttlv.text(Tag.OBJECT_GROUP, group) if group else b"")
