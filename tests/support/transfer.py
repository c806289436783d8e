"""Transfer partners for tests: a partner cluster's identity held by the test itself (to write a
file as a partner, or a stranger, would) and the quorum registration both sides go through."""

from __future__ import annotations

import time
import uuid
from typing import Any

from kma.crypto.transfer import Identity, identity_text, parse_identity
from kms_client import KmsClient
from kms_client.wire import TransferPartner
from tests.support.kma_process import RunningKma


def quorum(kma: RunningKma) -> list[tuple[str, str]]:
    """The demo's first M key split members' credentials."""
    split = kma.demo["key_split"]
    return [(m["name"], m["passphrase"]) for m in split["members"][: split["threshold"]]]


def register(so: KmsClient, kma: RunningKma, partner_id: str, identity: str) -> TransferPartner:
    """A partner registered at once, with a quorum's credentials."""
    registered = so.register_transfer_partner(
        partner_id, f"Partner {partner_id}", identity, credentials=quorum(kma)
    )
    assert isinstance(registered, TransferPartner), registered
    return registered


def file_from(
    sender: Identity, recipient_identity: str, units: list[dict[str, Any]], valid_s: int = 86400
) -> str:
    """A transfer file as a partner's KMA writes it, from `sender` to the cluster of that identity."""
    now = int(time.time())
    header = {
        "file_id": uuid.uuid4().hex,
        "sender_name": "test partner",
        "created_at": now,
        "expires_at": now + valid_s,
        "data_units": len(units),
        "keys": sum(len(u["keys"]) for u in units),
    }
    return sender.seal(parse_identity(recipient_identity), header, {"data_units": units}).decode()


def one_tape(volser: str, material: bytes, key_id: str | None = None) -> dict[str, Any]:
    now = int(time.time())
    key = {
        "id": key_id or f"TK-{uuid.uuid4().hex[:20]}",
        "material": material.hex(),
        "created_at": now - 60,
        "activated_at": now - 60,
        "protect_until": now + 86400,
        "deactivate_at": now + 365 * 86400,
        "compromised_at": None,
    }
    return {"id": volser, "description": f"Cartridge {volser}", "created_at": now - 60, "keys": [key]}


def text_of(identity: Identity) -> str:
    return identity_text(identity.public)
