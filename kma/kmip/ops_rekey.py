"""Re-Key: a general key's successor, as KMIP 1.x and 2.x define it.

The new key is a fresh key from this KMA's pool in the existing key's key group, with its
attributes: the same size, Cryptographic Usage Mask, Sensitive and client attributes; its Names
move to it (KMIP: they are removed from the existing key). Its dates follow the spec: without an
Offset they are the existing key's; with one, the new key is active from its Initial Date plus
the Offset and keeps the existing key's periods (Protect Stop and Deactivation shifted by as
much). Links are made both ways: the existing key's Replacement Object Link names the new key,
the new key's Replaced Object Link the existing one. The existing key's state does not change:
the client revokes it when it no longer needs it, as KMIP leaves that to the client.

Tape keys keep their per-tape model (a tape gets its new key when written from the beginning):
Re-Key of a key in a key group whose policy keeps tape keys is refused.
"""

from __future__ import annotations

from typing import Any

from kma.audit.record import Retention
from kma.kmip import attributes, key_view, objects, ttlv
from kma.kmip.context import Call
from kma.kmip.enums import ResultReason, State, Tag
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item
from kma.services import key_issue, successors
from kma.services.agent_keys import key_lifecycle


def _replaceable(call: Call, uid: str, row: Any) -> None:
    """Only a live AES key of a general key group, not yet replaced, is re-keyed."""
    group = row["key_group_id"]
    if group not in call.access.general_groups:
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key {uid} is a tape key (the policy of key group '{group}' keeps tape keys: a tape gets "
            "its new key when it is written from the beginning); Re-Key serves key groups whose "
            "policy keeps general keys",
        )
    state = key_view.KeyView(row, call.now).state
    if state in (State.DESTROYED, State.DESTROYED_COMPROMISED):
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key {uid} was destroyed; it has no successor",
            v2_reason=ResultReason.WRONG_KEY_LIFECYCLE_STATE,
        )
    if not objects.is_symmetric(row):
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"{objects.what(row)} {uid} is not a symmetric key: Re-Key makes AES keys only "
            "(registered objects are replaced by registering their successor)",
        )
    if row["data_unit_id"] is not None:
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key {uid} is bound to data unit '{row['data_unit_id']}', whose keys change when it is "
            "written from the beginning; Re-Key serves keys bound to no data unit",
        )
    if row["replacement_id"] is not None:
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key {uid} was already replaced by key {row['replacement_id']}; re-key that one",
        )


def _dates(call: Call, row: Any, offset: int | None) -> successors.Dates:
    """The new key's dates, as KMIP Re-Key's table says."""
    if offset is None or row["activated_at"] is None:  # no Offset, or no dates to shift: the same
        return successors.Dates(row["activated_at"], row["protect_until"], row["deactivate_at"])
    if offset < 0 or offset > attributes.ACTIVATION_SKEW:
        raise KmipError(
            ResultReason.INVALID_FIELD,
            f"an Offset of {offset} seconds asks for an Activation Date later than now; this KMA "
            "activates a key at once or when Activate is sent: Re-Key with Offset 0 (the new key "
            "active from now, for the existing key's periods) or without an Offset (its dates)",
        )
    return successors.shifted(row, call.now + offset)


async def rekey(call: Call, payload: Item) -> bytes:
    uid = call.uid(payload)
    row = call.key(uid)
    _replaceable(call, uid, row)
    if attributes.request_attributes(payload):
        raise attributes.field_error(
            "Re-Key gives the new key the existing key's attributes (its dates through the Offset); "
            "change them afterwards with Add or Modify Attribute"
        )
    offset = payload.get(Tag.OFFSET)
    offset = int(offset) if isinstance(offset, int) else None
    group = row["key_group_id"]
    dates = _dates(call, row, offset)
    issue = key_issue.prepare(
        call.kma,
        group,
        None,
        call.now,
        agent_id=call.agent_id,
        groups=call.access.groups,
        activate=False,
        agent_asks=True,
        keep=lambda new: [
            key_lifecycle.guard_key(call.access, uid, call.now),
            *successors.statements(uid, row, new, call.now, dates),
        ],
    )
    new = issue.key_id
    size = f"AES-{objects.bits(row)}"
    how = "its dates" if offset is None else f"Offset {offset} s"
    try:
        await call.commit(
            "kmip.rekey",
            issue.statements,
            f"re-keyed key {uid}: created key {new} ({size}, key group '{group}', {how}) to replace it; "
            f"links: {uid} replaced by {new}",
            ("key", new),
        )
    except KmipError:
        issue.give_back()
        raise
    await call.audit(
        "kmip.rekey",
        f"key {uid} replaced by key {new} (Re-Key); it keeps its state until it is revoked",
        subject=("key", uid),
        retention=Retention.LONG,
    )
    call.placeholder = new
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, new)
