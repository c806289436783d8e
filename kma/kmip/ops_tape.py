"""Tape semantics as two vendor operations (KMIP extension range 0x8xxxxxxx).

Write Key (0x80000001): a drive mounts a data unit to write. It gets the data unit's current
key (activated, inside its encryption period, not compromised); when there is none (a new tape,
or the key's encryption period ended) a new key is issued for it in the same request. Older
keys stay readable (Process-Only) through Get.

Write From Beginning (0x80000002): the drive relabels or erases the tape. The data unit's keys
(those the agent sees) let go of it, and a new write key is issued; both in one atomic batch.

Both are judged by the media rules first (kma/kmip/media.py): the volser's media pool, the
drive's generation, a relabel before reuse.

Request payload: Data Unit (0x540001, text) and optionally Object Group (text, the key group).
Response payload: Unique Identifier, Data Unit, and Key Issued (0x540002, boolean) or Keys
Released (0x540003, integer).
"""

from __future__ import annotations

from kma.kmip import media, ttlv
from kma.kmip.attributes import field_error, is_data_unit
from kma.kmip.context import Call
from kma.kmip.enums import ResultReason, Tag
from kma.kmip.key_creation import NewKey
from kma.kmip.messages import KmipError
from kma.kmip.ops_keys import chosen_group, issue
from kma.kmip.ttlv import Item
from kma.services.agent_keys import key_access, key_lifecycle
from kma.services.media.media_rules import Verdict


async def _request(call: Call, payload: Item, from_bot: bool, operation: str) -> tuple[str, str, Verdict]:
    unit = payload.get(Tag.DATA_UNIT)
    if not isinstance(unit, str):
        raise KmipError(ResultReason.MISSING_DATA, "the request names no Data Unit")
    if not is_data_unit(unit):
        raise field_error(f"'{unit[:80]}' is not a data unit ID (a volser)")
    call.subject = ("data_unit", unit)
    asked = payload.get(Tag.OBJECT_GROUP)
    asked = asked if isinstance(asked, str) else None
    verdict = await media.judged(call, unit, asked, from_bot, operation)  # kma/kmip/media.py
    return unit, chosen_group(call, verdict.group or asked), verdict


def _answer(key_id: str, unit: str, tail: bytes) -> bytes:
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, key_id) + ttlv.text(Tag.DATA_UNIT, unit) + tail


async def write_key(call: Call, payload: Item) -> bytes:
    unit, group, verdict = await _request(call, payload, False, "kmip.write_key")
    for _ in range(2):  # a second look if another drive issued one at the same moment
        current = key_access.current_write_key(call.kma, call.access, unit, call.now)
        if current is not None:
            await call.audit(
                "kmip.write_key",
                f"data unit '{unit}' mounted for writing with key {current}{verdict.note()}",
                subject=("key", current),
            )
            call.placeholder = current
            await media.record_writer(call, unit, verdict, False)
            return _answer(current, unit, ttlv.boolean(Tag.KEY_ISSUED, False))
        spec = NewKey(data_unit=unit, activate=True)
        try:
            key_id, _ = await issue(
                call,
                "kmip.write_key",
                group,
                spec,
                lambda k: (
                    f"issued write key {k} for data unit '{unit}' in key group "
                    f"'{group}' (no key in its encryption period){verdict.note()}"
                ),
                only_if_no_write_key=True,
            )
        except KmipError as error:
            if "a moment ago" not in error.message:
                raise
            continue
        await media.record_writer(call, unit, verdict, False)
        return _answer(key_id, unit, ttlv.boolean(Tag.KEY_ISSUED, True))
    raise KmipError(ResultReason.PERMISSION_DENIED, f"no write key could be settled for data unit '{unit}'")


async def write_from_beginning(call: Call, payload: Item) -> bytes:
    unit, group, verdict = await _request(call, payload, True, "kmip.write_from_beginning")
    release = key_lifecycle.release_data_unit(call.kma, call.access, unit, call.now)
    spec = NewKey(data_unit=unit, activate=True)
    key_id, result = await issue(
        call,
        "kmip.write_from_beginning",
        group,
        spec,
        lambda k: (
            f"data unit '{unit}' written from beginning of tape: its keys "
            f"let go of it; new write key {k} in key group '{group}'{verdict.note()}"
        ),
        before=release,
    )
    released = result.rowcounts[1]
    await media.record_writer(call, unit, verdict, True)
    return _answer(key_id, unit, ttlv.integer(Tag.KEYS_RELEASED, released))
