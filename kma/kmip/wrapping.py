"""Keys that wrap keys (AES Key Wrap, RFC 3394 / 5649): the key a Get's Key Wrapping
Specification names, and the key a Register's wrapped material was wrapped under.

Either must be an active key of the agent's groups whose usage mask allows it (Wrap Key to send
wrapped, Unwrap Key to receive wrapped). A Register of wrapped material is unwrapped here and
kept like any object (wrapped under the master key); the KMA keeps no material it cannot read: one
wrapped under a key it does not hold, or for the agent's eyes only, is refused.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.keywrap import InvalidUnwrap, aes_key_unwrap, aes_key_unwrap_with_padding

from kma.kmip import key_view, objects
from kma.kmip.attributes import field_error
from kma.kmip.context import Call
from kma.kmip.enums import (
    BlockCipherMode,
    EncodingOption,
    ItemType,
    ResultReason,
    State,
    Tag,
    UsageMask,
    WrappingMethod,
)
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item

MODES = (BlockCipherMode.NIST_KEY_WRAP, BlockCipherMode.AES_KEY_WRAP_PADDING)


def wrapping_key(call: Call, spec: Item, usage: int = UsageMask.WRAP_KEY) -> tuple[str, bytes, int]:
    """(wrapping key ID, its material, block cipher mode) for a Key Wrapping Specification or Data."""
    if spec.get(Tag.WRAPPING_METHOD) != WrappingMethod.ENCRYPT:
        raise KmipError(ResultReason.FEATURE_NOT_SUPPORTED, "only the Encrypt wrapping method is supported")
    if spec.find(Tag.MAC_SIGNATURE_KEY_INFORMATION) is not None:
        raise KmipError(ResultReason.FEATURE_NOT_SUPPORTED, "MAC/signature key wrapping is not supported")
    if spec.get(Tag.ENCODING_OPTION, EncodingOption.NO_ENCODING) != EncodingOption.NO_ENCODING:
        raise KmipError(ResultReason.ENCODING_OPTION_ERROR, "only the No Encoding option is supported")
    info = spec.find(Tag.ENCRYPTION_KEY_INFORMATION)
    uid = info.get(Tag.UNIQUE_IDENTIFIER) if info is not None else None
    if not isinstance(uid, str):
        raise KmipError(ResultReason.MISSING_DATA, "the key wrapping names no wrapping key")
    params = info.find(Tag.CRYPTOGRAPHIC_PARAMETERS) if info is not None else None
    mode = (
        params.get(Tag.BLOCK_CIPHER_MODE, BlockCipherMode.NIST_KEY_WRAP)
        if params
        else BlockCipherMode.NIST_KEY_WRAP
    )
    if mode not in MODES:
        raise KmipError(
            ResultReason.FEATURE_NOT_SUPPORTED, "keys are wrapped with AES Key Wrap (RFC 3394 or 5649) only"
        )
    row = call.key(uid, material=True)
    view = key_view.KeyView(row, call.now)
    if view.state != State.ACTIVE or row["material_wrapped"] is None:
        raise KmipError(ResultReason.PERMISSION_DENIED, f"wrapping key {uid} is not active")
    if not view.usage_mask & usage:
        what = "wrapping" if usage == UsageMask.WRAP_KEY else "unwrapping"
        named = "Wrap Key" if usage == UsageMask.WRAP_KEY else "Unwrap Key"
        raise KmipError(ResultReason.PERMISSION_DENIED, f"key {uid} is not for {what} (no {named} usage)")
    if not objects.is_symmetric(row):
        raise KmipError(ResultReason.PERMISSION_DENIED, f"{uid} is not a key: it cannot wrap keys")
    kek = objects.material(row, call.kma.vault.master().unwrap(f"key:{uid}", row["material_wrapped"]))
    return uid, kek, int(mode)


def unwrapped(call: Call, payload: Item) -> tuple[Item, str | None]:
    """A Register payload whose key material is wrapped, with its material unwrapped (and the
    wrapping key's ID); any other payload as it is."""
    for holder in payload:
        block = holder.find(Tag.KEY_BLOCK) if holder.type == ItemType.STRUCTURE else None
        data = block.find(Tag.KEY_WRAPPING_DATA) if block is not None else None
        if block is None or data is None:
            continue
        uid, kek, mode = wrapping_key(call, data, UsageMask.UNWRAP_KEY)
        value = block.find(Tag.KEY_VALUE)
        wrapped = value.value if value is not None and value.type == ItemType.BYTE_STRING else None
        if value is not None and wrapped is None:  # a Key Value structure holding the wrapped bytes
            wrapped = value.get(Tag.KEY_MATERIAL)
        if not isinstance(wrapped, bytes):
            raise KmipError(ResultReason.MISSING_DATA, "the wrapped Key Value holds no wrapped bytes")
        unwrap = aes_key_unwrap if mode == BlockCipherMode.NIST_KEY_WRAP else aes_key_unwrap_with_padding
        try:
            material = unwrap(kek, wrapped)
        except (InvalidUnwrap, ValueError):
            raise field_error(f"the key material does not unwrap under key {uid}") from None
        plain = Item(
            Tag.KEY_VALUE, ItemType.STRUCTURE, [Item(Tag.KEY_MATERIAL, ItemType.BYTE_STRING, material)]
        )
        kept = [plain if i.tag == Tag.KEY_VALUE else i for i in block if i.tag != Tag.KEY_WRAPPING_DATA]
        opened = Item(
            holder.tag,
            ItemType.STRUCTURE,
            [Item(Tag.KEY_BLOCK, ItemType.STRUCTURE, kept) if i.tag == Tag.KEY_BLOCK else i for i in holder],
        )
        return Item(payload.tag, payload.type, [opened if i is holder else i for i in payload]), uid
    return payload, None


def _struct(tag: int, items: list[Item]) -> Item:
    return Item(tag, ItemType.STRUCTURE, items)
