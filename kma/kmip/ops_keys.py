"""Create, Register, Get, Activate, Revoke, Destroy: a key's life as an agent drives it.

Create takes a pre-generated key from this KMA's pool (kma/services/keypool.py) and assigns it
to the agent's key group (its default group unless it names another with Object Group) and, if
the request names one, to a data unit: one guarded UPDATE, committed durably with its audit
event before the agent hears of the key (on a cluster KMA, to its outbox: the cluster gets it
as soon as it can, and this KMA keeps issuing while cut off from the Raft majority). Get sends
the key inside TLS and, when the client asks for it with a Key Wrapping Specification, wrapped
under another key it may use (RFC 3394/5649).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cryptography.hazmat.primitives.keywrap import aes_key_wrap, aes_key_wrap_with_padding

from kma.audit.record import Retention
from kma.kmip import attributes, key_creation, key_view, media, objects, ttlv, wrapping
from kma.kmip.attributes import field_error
from kma.kmip.context import Call
from kma.kmip.enums import (
    BlockCipherMode,
    CryptographicAlgorithm,
    EncodingOption,
    KeyFormatType,
    ObjectType,
    ResultReason,
    RevocationReasonCode,
    State,
    Tag,
    WrappingMethod,
)
from kma.kmip.key_creation import NewKey
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item
from kma.services import key_issue
from kma.services.agent_keys import key_access, key_attributes, key_lifecycle, key_undo
from kma.services.integrity import key_macs
from kma.services.keypool import new_key_id
from kma.store import Stmt, WriteResult

# Key Format Types a Get may name for a symmetric key or secret data.
SENT_IN = (KeyFormatType.RAW, KeyFormatType.OPAQUE, KeyFormatType.TRANSPARENT_SYMMETRIC_KEY)
COMPROMISE_REASONS = (RevocationReasonCode.KEY_COMPROMISE, RevocationReasonCode.CA_COMPROMISE)


def _symmetric_only(payload: Item, spec: NewKey) -> None:
    if payload.get(Tag.OBJECT_TYPE) != ObjectType.SYMMETRIC_KEY or spec.algorithm not in (
        None,
        CryptographicAlgorithm.AES,
    ):
        raise field_error(
            "Create makes AES keys only (secret data, opaque objects, public and private keys and "
            "certificates are registered: this KMA does not generate asymmetric keys)"
        )
    if spec.length is not None and spec.length not in attributes.AES_BITS:
        raise field_error(f"an AES key is 128, 192 or 256 bits long, not {spec.length}")


def settled(call: Call, payload: Item) -> tuple[NewKey, str]:
    """A Create's or Register's attributes as the chosen key group's policy takes them."""
    spec = key_creation.new_key(attributes.request_attributes(payload), call.now)
    group = chosen_group(call, spec.group)
    key_creation.settle(spec, group in call.access.general_groups, group)
    return spec, group


def plain(call: Call, uid: str, row: Any) -> bytes:
    """The object's material, unwrapped (callers checked it is not destroyed)."""
    return objects.material(row, call.kma.vault.master().unwrap(f"key:{uid}", row["material_wrapped"]))


def chosen_group(call: Call, asked: str | None) -> str:
    """The agent's default key group, or the one it names if it may use that one."""
    access = call.access
    group = asked or access.default_group
    if group not in access.groups:
        raise KmipError(
            ResultReason.PERMISSION_DENIED, f"agent '{call.agent_id}' may not use key group '{group[:64]}'"
        )
    return group


def _extras(key_id: str, spec: NewKey) -> list[Stmt]:
    out = [key_lifecycle.set_form(key_id, None, spec.bits, None)] if spec.bits != attributes.KEY_BITS else []
    if spec.usage_mask != attributes.DEFAULT_USAGE:
        out.append(key_lifecycle.set_usage_mask(key_id, spec.usage_mask))
    out += [key_attributes.add_custom_attribute(key_id, k.name, k.text, k.item) for k in spec.kept]
    if spec.protect_stop is not None:
        out.append(key_lifecycle.set_protect_stop(key_id, spec.protect_stop))
    if spec.deactivation is not None:
        out.append(key_lifecycle.set_deactivation(key_id, spec.deactivation))
    if spec.sensitive:
        out.append(key_lifecycle.set_sensitive(key_id))
    return out


async def issue(
    call: Call,
    operation: str,
    group: str,
    spec: NewKey,
    describe: Callable[[str], str],
    before: Sequence[Stmt] = (),
    only_if_no_write_key: bool = False,
) -> tuple[str, WriteResult]:
    """A key from the pool (kma/services/key_issue.py), committed durably with its event."""
    issue = key_issue.prepare(
        call.kma,
        group,
        spec.data_unit,
        call.now,
        agent_id=call.agent_id,
        groups=call.access.groups,
        activate=spec.activate,
        agent_asks=True,
        only_if_no_write_key=only_if_no_write_key,
        before=before,
        keep=lambda key_id: _extras(key_id, spec),
    )
    try:
        message = describe(issue.key_id) + issue.note
        result = await call.commit(
            operation, issue.statements, message, ("key", issue.key_id), deferred=issue.deferred
        )
    except KmipError:
        issue.give_back()
        raise
    call.placeholder = issue.key_id
    return issue.key_id, result


def _where(spec: NewKey, group: str) -> str:
    unit = f"data unit '{spec.data_unit}'" if spec.data_unit else "no data unit"
    state = "active" if spec.activate else "pre-active"
    size = "" if spec.bits == attributes.KEY_BITS else f" (AES-{spec.bits})"
    return f"for {unit} in key group '{group}' ({state}){size}"


async def create(call: Call, payload: Item, activate: bool = False) -> bytes:
    spec, group = settled(call, payload)
    _symmetric_only(payload, spec)
    key_creation.check_quantum_safe(spec, spec.bits)
    spec.activate |= activate
    verdict = None
    if spec.data_unit and group not in call.access.general_groups:  # a tape's new key: a write from BOT
        verdict = await media.judged(call, spec.data_unit, spec.group, True, "kmip.create")
        group = verdict.group or group
    then = " and activated it (Activate in the same request)" if activate else ""
    key_id, _ = await issue(
        call,
        "kmip.create",
        group,
        spec,
        lambda k: f"created key {k} {_where(spec, group)}{then}{verdict.note() if verdict else ''}",
    )
    if verdict is not None and spec.data_unit:
        await media.record_writer(call, spec.data_unit, verdict, True)
    return ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + ttlv.text(Tag.UNIQUE_IDENTIFIER, key_id)


async def create_active(call: Call, payload: Item) -> bytes:
    """Create immediately followed by Activate of the placeholder, as one write."""
    return await create(call, payload, activate=True)


def repeats_a_short_pattern(raw: bytes) -> bool:
    """All one value, or a pattern of up to half the key's length repeated (zeros, 0xFF, "ABAB...",
    a 16-byte key twice): no real key generator makes these, a mistake or a plant does."""
    return any(raw == (raw[:n] * (len(raw) // n + 1))[: len(raw)] for n in range(1, len(raw) // 2 + 1))


async def register(
    call: Call, payload: Item, key_id: str | None = None, event: str = "kmip.register"
) -> bytes:
    """Register, and Import (`key_id`: the Unique Identifier the client gave, checked unused).
    Material wrapped under a key of the agent's is unwrapped first (kma/kmip/wrapping.py)."""
    payload, wrapped_by = wrapping.unwrapped(call, payload)
    sent = objects.registered(payload)
    kind, raw = sent.kind, sent.raw
    spec, group = settled(call, payload)
    _as_described(spec, sent)
    key_creation.check_quantum_safe(spec, len(raw) * 8 if kind == ObjectType.SYMMETRIC_KEY else None)
    form, tape_key = _registrable(call, sent, group)
    if spec.data_unit:
        call.cannot_undo(f"binding the new object to data unit '{spec.data_unit}'")
    kma = call.kma
    key_id = key_id or new_key_id()
    wrapped = kma.vault.master().wrap(f"key:{key_id}", raw)
    note = key_lifecycle.shredded_note(kma, spec.data_unit)
    statements = [key_lifecycle.register_data_unit(spec.data_unit, call.now)] if spec.data_unit else []
    statements.append(
        key_lifecycle.insert_registered_key(
            key_id,
            kma.kma_id,
            wrapped,
            call.access,
            group,
            spec.data_unit,
            call.now,
            spec.activate,
            key_macs.mac(
                kma.vault.row_mac_key(),
                key_id,
                key_group_id=group,
                data_unit_id=spec.data_unit,
                agent_id=call.access.agent_id,
                registered_by=call.access.agent_id,
            ),
        )
    )
    spec.bits = attributes.KEY_BITS  # what the object is comes from its material, just below
    statements += _extras(key_id, spec)
    if not tape_key or sent.key_format not in (None, KeyFormatType.RAW):
        statements.append(
            key_lifecycle.set_form(
                key_id, form["object_type"], form["bits"], sent.data_type, sent.key_format, sent.algorithm
            )
        )
    what = objects.what(form)
    await call.commit(
        event,
        statements,
        f"registered {what} {key_id} supplied by the agent {_where(spec, group)}{note}"
        + (f" (unwrapped under key {wrapped_by})" if wrapped_by else ""),
        ("key", key_id),
    )
    call.placeholder = key_id
    if call.undoing:
        call.undoable(
            key_id,
            f"registered {what} {key_id} (removed as if never made; its material was never sent)",
            *key_undo.unregister(call.access, key_id, call.now, spec.activate),
        )
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, key_id)


def _registrable(call: Call, sent: objects.Registered, group: str) -> tuple[dict[str, Any], bool]:
    """What the registered object is (its form), and whether it is a tape key, once the object and
    its key group's policy allow it here."""
    kind, raw = sent.kind, sent.raw
    general = group in call.access.general_groups
    # a tape key may become another drive's write key; a general key is its client's own business
    if kind == ObjectType.SYMMETRIC_KEY and not general and repeats_a_short_pattern(raw):
        raise field_error(
            "the key material is one byte value or a short pattern repeated; register a random key"
        )
    symmetric = kind == ObjectType.SYMMETRIC_KEY
    form = {
        "object_type": None if symmetric else kind,
        "bits": len(raw) * 8 if symmetric else sent.bits,
        "algorithm": sent.algorithm,
    }
    tape_key = symmetric and form["bits"] == attributes.KEY_BITS
    if not tape_key and not general:
        raise field_error(
            f"the policy of key group '{group}' keeps tape keys (AES-256); secret data, opaque objects, "
            "public and private keys, certificates and other AES sizes go to a key group whose policy "
            "keeps general keys"
        )
    policy = key_access.group_policy(call.kma, group)
    if policy is None or not policy["allow_import"]:
        name = policy["id"] if policy is not None else "?"
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key policy '{name}' of key group '{group}' does not allow import: Register is refused",
        )
    return form, tape_key


def _as_described(spec: NewKey, sent: objects.Registered) -> None:
    """Attributes that describe the object must say what its own block says; an asymmetric key is
    never quantum safe (Shor's algorithm breaks RSA, DSA and ECDSA)."""
    symmetric = sent.kind == ObjectType.SYMMETRIC_KEY
    own = CryptographicAlgorithm.AES if symmetric else sent.algorithm
    if None not in (spec.algorithm, own) and spec.algorithm != own:
        raise field_error("the Cryptographic Algorithm attribute differs from the object's own")
    bits = len(sent.raw) * 8 if symmetric else sent.bits
    if None not in (spec.length, bits) and spec.length != bits:
        raise field_error("the Cryptographic Length attribute differs from the object's own")
    if spec.certificate_type is not None and spec.certificate_type != sent.data_type:
        raise field_error("the Certificate Type attribute differs from the certificate's own")
    if spec.quantum_safe and sent.kind in objects.ASYMMETRIC:
        raise KmipError(
            ResultReason.GENERAL_FAILURE,
            "NOT_SAFE: an RSA, DSA or ECDSA key is not quantum safe (a quantum computer breaks it)",
        )


def _sendable(row: Any, fmt: int | None, payload: Item) -> None:
    """A symmetric key or secret data is sent Raw, Opaque or as Transparent Symmetric Key; a public
    or private key or a certificate as it was registered: in its own Key Format Type (no
    conversion), unwrapped (inside TLS)."""
    if objects.object_type(row) not in (ObjectType.CERTIFICATE, *objects.ASYMMETRIC):
        if fmt not in (None, *SENT_IN):
            raise KmipError(
                ResultReason.KEY_FORMAT_TYPE_NOT_SUPPORTED,
                "objects are sent Raw, Opaque or as Transparent Symmetric Key",
            )
        return
    if fmt is not None and fmt != objects.key_format(row):
        raise KmipError(
            ResultReason.KEY_FORMAT_TYPE_NOT_SUPPORTED,
            f"{objects.what(row)} is sent in the Key Format Type it was registered in only",
        )
    if payload.find(Tag.KEY_WRAPPING_SPECIFICATION) is not None:
        raise KmipError(
            ResultReason.FEATURE_NOT_SUPPORTED, f"{objects.what(row)} is sent unwrapped only, inside TLS"
        )


async def get(call: Call, payload: Item, event: str = "kmip.get") -> bytes:
    uid = call.uid(payload)
    fmt = payload.get(Tag.KEY_FORMAT_TYPE)
    if payload.find(Tag.KEY_COMPRESSION_TYPE) is not None:
        raise KmipError(
            ResultReason.KEY_COMPRESSION_TYPE_NOT_SUPPORTED, "key compression does not apply to AES keys"
        )
    row = call.key(uid, material=True)
    if row["material_wrapped"] is None:
        raise KmipError(
            ResultReason.KEY_VALUE_NOT_PRESENT,
            f"key {uid} was destroyed",
            v2_reason=ResultReason.OBJECT_DESTROYED,
        )
    if row["sensitive"]:
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"{objects.what(row)} {uid} is Sensitive: its material does not leave the KMA in the clear",
            v2_reason=ResultReason.SENSITIVE,
        )
    if row["imported_at"] is not None and not key_access.held(call.kma, uid):
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key {uid} came from a transfer partner and is sent once a database backup of this KMA holds "
            "it; ask a Backup Operator for one, then try again",
        )
    _sendable(row, fmt, payload)
    material = plain(call, uid, row)
    fmt = fmt if fmt is not None else objects.key_format(row)
    spec = payload.find(Tag.KEY_WRAPPING_SPECIFICATION)
    if spec is None:
        value, wrapping_data, how = material, b"", ""
    else:
        wrap_id, kek, mode = wrapping.wrapping_key(call, spec)
        wrap = aes_key_wrap if mode == BlockCipherMode.NIST_KEY_WRAP else aes_key_wrap_with_padding
        value = wrap(kek, material)
        wrapping_data = ttlv.struct_(
            Tag.KEY_WRAPPING_DATA,
            ttlv.enum(Tag.WRAPPING_METHOD, WrappingMethod.ENCRYPT),
            ttlv.struct_(
                Tag.ENCRYPTION_KEY_INFORMATION,
                ttlv.text(Tag.UNIQUE_IDENTIFIER, wrap_id),
                ttlv.struct_(Tag.CRYPTOGRAPHIC_PARAMETERS, ttlv.enum(Tag.BLOCK_CIPHER_MODE, mode)),
            ),
            ttlv.enum(Tag.ENCODING_OPTION, EncodingOption.NO_ENCODING),
        )
        how = f", wrapped under key {wrap_id}"
    what = objects.what(row)
    # The first send ends the object's Fresh days (KMIP Fresh): that event is kept long.
    first = not key_access.material_sent(call.kma, uid)
    await call.audit(
        event,
        f"sent {what} {uid} to agent '{call.agent_id}'{how}{' (its first send)' if first else ''}",
        subject=("key", uid),
        retention=Retention.LONG if first else Retention.SHORT,
    )
    return (
        ttlv.enum(Tag.OBJECT_TYPE, objects.object_type(row))
        + ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
        + objects.encode_object(row, fmt, value, wrapping_data)
    )


async def activate(call: Call, payload: Item) -> bytes:
    uid = call.uid(payload)
    row = call.key(uid)
    state = key_view.KeyView(row, call.now).state
    if state != State.PRE_ACTIVE:
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key {uid} is {state.name.lower().replace('_', '-')}; only a pre-active key can be activated",
            v2_reason=ResultReason.WRONG_KEY_LIFECYCLE_STATE,
        )
    await call.commit(
        "kmip.activate",
        [key_lifecycle.activate(call.access, uid, call.now)],
        f"activated key {uid} (encryption period and cryptoperiod start now)",
    )
    if call.undoing:
        call.undoable(
            uid,
            f"activated key {uid} (back to pre-active)",
            key_undo.unactivate(uid, call.now, row["protect_until"], row["deactivate_at"]),
        )
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)


def _may_revoke(call: Call, row: Any, what: str) -> None:
    policy = key_access.group_policy(call.kma, row["key_group_id"])
    if policy is None or not policy["agents_may_revoke"]:
        name = policy["id"] if policy is not None else "?"
        raise KmipError(
            ResultReason.PERMISSION_DENIED, f"key policy '{name}' does not allow agents to {what} keys"
        )


async def revoke(call: Call, payload: Item) -> bytes:
    uid = call.uid(payload)
    row = call.key(uid)
    reason_item = payload.find(Tag.REVOCATION_REASON)
    code = reason_item.get(Tag.REVOCATION_REASON_CODE) if reason_item is not None else None
    if not isinstance(code, int):
        raise KmipError(ResultReason.MISSING_DATA, "Revoke needs a Revocation Reason")
    message = reason_item.get(Tag.REVOCATION_MESSAGE) if reason_item is not None else None
    message = message[:500] if isinstance(message, str) else None
    _may_revoke(call, row, "revoke")
    compromised = code in COMPROMISE_REASONS
    occurred = payload.get(Tag.COMPROMISE_OCCURRENCE_DATE)
    occurred = occurred if compromised and isinstance(occurred, int) else None
    what = "compromised" if compromised else "deactivated"
    detail = f"; compromise occurred at {occurred}" if compromised and isinstance(occurred, int) else ""
    await call.commit(
        "kmip.revoke",
        key_lifecycle.revoke(
            call.kma, call.access, row, call.now, call.now if compromised else None, code, message, occurred
        ),
        f"revoked key {uid}: {what} (reason {code}{': ' + message if message else ''}{detail})",
    )
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)


async def destroy(call: Call, payload: Item) -> bytes:
    uid = call.uid(payload)
    row = call.key(uid)
    _may_revoke(call, row, "destroy")
    state = key_view.KeyView(row, call.now).state
    if state not in (State.PRE_ACTIVE, State.DEACTIVATED, State.COMPROMISED):
        raise KmipError(
            ResultReason.PERMISSION_DENIED,
            f"key {uid} is {state.name.lower().replace('_', '-')}; only pre-active, deactivated or "
            "compromised keys can be destroyed (revoke it first)",
            v2_reason=ResultReason.WRONG_KEY_LIFECYCLE_STATE,
        )
    comment = f"destroyed by agent '{call.agent_id}' over KMIP"
    with_material = call.key(uid, material=True)
    kept = []
    if with_material["material_wrapped"] is not None:
        kept.append(key_lifecycle.keep_digest(uid, key_view.digest(plain(call, uid, with_material))))
    await call.commit(
        "kmip.destroy",
        [*key_lifecycle.destroy(call.kma, call.access, row, call.now, comment), *kept],
        f"destroyed key {uid}: {comment}",
    )
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)


async def check(call: Call, payload: Item) -> bytes:
    """Check: may the client use the key for what it names (its usage mask)? Usage limits and
    leases are not kept here, so a visible, live key with the usage asked for passes."""
    uid = call.uid(payload)
    view = key_view.KeyView(call.key(uid), call.now)
    if view.state not in (State.PRE_ACTIVE, State.ACTIVE, State.DEACTIVATED):
        raise KmipError(
            ResultReason.PERMISSION_DENIED, f"key {uid} is {view.state.name.lower().replace('_', '-')}"
        )
    asked = payload.get(Tag.CRYPTOGRAPHIC_USAGE_MASK)
    if isinstance(asked, int) and asked & ~view.usage_mask:
        raise KmipError(
            ResultReason.INCOMPATIBLE_CRYPTOGRAPHIC_USAGE_MASK,
            f"key {uid} is not for usage {asked:#x} (its usage mask is {view.usage_mask:#x})",
        )
    await call.audit("kmip.check", f"checked key {uid}: it may be used as asked", subject=("key", uid))
    return ttlv.text(Tag.UNIQUE_IDENTIFIER, uid)
