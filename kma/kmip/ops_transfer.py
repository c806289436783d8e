"""Export and Import (KMIP 2.x): an object with all its attributes, out of one key manager and
into another.

Export is Get with the object's attributes beside it: the same rules (the agent sees the key,
its material is live and not Sensitive, the formats and wrapping Get offers), and a key group
whose policy allows export, audited as `kmip.export`. Import is Register with the Unique
Identifier the client gives (one this KMA does not hold: an object is never replaced, it goes
through its lifecycle), under Register's rules (a policy that allows import, tape or general
keys). The attributes an Export carries that the KMA keeps itself are taken as a description to
check, not as values to copy: the identifier and object type must be the request's, the State
must follow from the dates given (Pre-Active, Active, Deactivated); dates of creation and change,
Digest and the like are the KMA's own again. A compromised, revoked or destroyed object is not
imported: it would come back to life.
"""

from __future__ import annotations

import re

from kma.domain.validation import ID_PATTERN
from kma.kmip import attributes, key_view, ops_attributes, ops_keys, ttlv, v2
from kma.kmip.attributes import Attr, field_error
from kma.kmip.context import Call
from kma.kmip.enums import ItemType, KeyWrapType, ResultReason, State, Tag
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item
from kma.services.agent_keys import key_access

# What an Export carries that this KMA sets itself: read again from the object and its own clock.
RECOMPUTED = frozenset(
    {
        "Digest",
        "Initial Date",
        "Last Change Date",
        "Original Creation Date",
        "Process Start Date",
        "Random Number Generator",
        "Key Format Type",
        "Certificate Length",
        "Certificate Subject CN",
        "x-Key-State",
        "x-KMA",
        "Short Unique Identifier",
        "Always Sensitive",
        "Never Extractable",
        "Protection Storage Mask",
    }
)
# An object that was compromised, revoked or destroyed stays so: it is not imported (it would
# come back to life here).
ENDED = {
    "Compromise Date": "compromised",
    "Compromise Occurrence Date": "compromised",
    "Revocation Reason": "revoked",
    "Destroy Date": "destroyed",
}
_ID = re.compile(ID_PATTERN)


async def export(call: Call, payload: Item) -> bytes:
    _may_export(call, call.uid(payload))
    sent = list(
        ttlv.decode(ttlv.struct_(Tag.RESPONSE_PAYLOAD, await ops_keys.get(call, payload, "kmip.export")))
    )
    kind, uid, obj = sent
    key = ops_attributes.view(call, str(uid.value), material=True)
    listed = ttlv.decode(
        ttlv.struct_(Tag.RESPONSE_PAYLOAD, *key_view.encode_attributes(key, None, call.version))
    )
    return (
        kind.encode() + uid.encode() + ttlv.struct_of(v2.ATTRIBUTES, v2.tagged(list(listed))) + obj.encode()
    )


def _may_export(call: Call, uid: str) -> None:
    """Export is refused, with its reason, for a key whose group's policy does not allow export
    (as Register is without allow_import): the policy's word holds on every way out, KMIP's too."""
    group = call.key(uid)["key_group_id"]
    policy = None if group is None else key_access.group_policy(call.kma, group)
    if policy is None or not policy["allow_export"]:
        name = policy["id"] if policy is not None else "?"
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key policy '{name}' of key group '{group}' does not allow export: Export is refused "
            "(Get still serves the agent's own use of the key)",
        )


def _checked(payload: Item, uid: str) -> list[Item]:
    """The request's attributes a Register takes, the rest checked against the object."""
    kept: list[Item] = []
    state: int | None = None
    activated = deactivated = False
    for item in payload.all(Tag.ATTRIBUTE):
        attr = attributes.parse_attribute(item)
        if attr.name in RECOMPUTED:
            continue
        if attr.name in ENDED:
            raise KmipError(
                ResultReason.PERMISSION_DENIED,
                f"object {uid[:64]} has a {attr.name}: a {ENDED[attr.name]} object is not imported",
            )
        if attr.name == "Unique Identifier":
            _same(attr, uid)
        elif attr.name == "Object Type":
            _same(attr, payload.get(Tag.OBJECT_TYPE))
        elif attr.name == "State":
            state = attr.value.value
        else:
            activated |= attr.name == "Activation Date"
            deactivated |= attr.name == "Deactivation Date"
            kept.append(item)
    follows: dict[int, bool] = {
        State.PRE_ACTIVE: not activated,
        State.ACTIVE: activated,
        State.DEACTIVATED: deactivated,
    }
    if state is not None and not follows.get(state, False):
        raise field_error(
            "the State does not follow from the dates given (Pre-Active: no Activation Date; Active: "
            "an Activation Date; Deactivated: a Deactivation Date); a compromised or destroyed object "
            "is not imported"
        )
    return kept


def _same(attr: Attr, expected: object) -> None:
    if attr.value.value != expected:
        raise field_error(f"the {attr.name} attribute differs from the request's")


async def import_(call: Call, payload: Item) -> bytes:
    uid = payload.get(Tag.UNIQUE_IDENTIFIER)
    if not isinstance(uid, str) or not _ID.match(uid):
        raise KmipError(
            ResultReason.MISSING_DATA if uid is None else ResultReason.INVALID_FIELD,
            "Import needs a Unique Identifier of 1-64 letters, digits, '.', '_', '-'",
        )
    call.subject = ("key", uid)
    wrap = payload.get(Tag.KEY_WRAP_TYPE, KeyWrapType.NOT_WRAPPED)
    if wrap not in (KeyWrapType.NOT_WRAPPED, KeyWrapType.AS_REGISTERED):
        raise KmipError(ResultReason.INVALID_FIELD, "Key Wrap Type is Not Wrapped or As Registered")
    taken = key_access.key_id_taken(call.kma, uid)
    if taken is not None:
        if key_access.visible_key(call.kma, call.access, taken) is None:  # answered as Get answers
            raise KmipError(ResultReason.ITEM_NOT_FOUND, f"no key '{uid[:64]}' that this agent may see")
        replace = (
            " (Replace Existing: an object is never replaced)" if payload.get(Tag.REPLACE_EXISTING) else ""
        )
        raise KmipError(
            ResultReason.ILLEGAL_OPERATION,
            f"an object {taken} exists already{replace}",
            v2_reason=ResultReason.OBJECT_ALREADY_EXISTS,
        )
    kept = _checked(payload, uid)
    rest = [i for i in payload if i.tag not in (Tag.ATTRIBUTE, Tag.UNIQUE_IDENTIFIER, Tag.REPLACE_EXISTING)]
    as_register = Item(payload.tag, ItemType.STRUCTURE, [*rest, *kept])
    return await ops_keys.register(call, as_register, key_id=uid, event="kmip.import")
