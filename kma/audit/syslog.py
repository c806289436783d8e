"""An audit event as an RFC 5424 syslog message, framed for TLS transport (RFC 5425/6587).

Octet counting (`LEN SP MSG`) rather than newline framing: a message may hold any character, and
the collector never has to guess where one ends. Facility 13 ("log audit"); the severity follows
the event's (info 6, warning 4, error 3). Every field of the event travels in one structured data
element, so a SIEM can check the hash chain from what it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

FACILITY_LOG_AUDIT = 13
SEVERITY = {"info": 6, "warning": 4, "error": 3}
# 32473 is the private enterprise number IANA keeps for examples (RFC 5612); a site that has its
# own may say so in its collector's parsing rules. The element's name is what matters there.
SD_ID = "kma@32473"
FIELDS = (
    "kma_id",
    "site_id",
    "chain_seq",
    "condition",
    "event_class",
    "entity_id",
    "entity_address",
    "retention",
    "subject_type",
    "subject_id",
    "prev_hash",
    "hash",
)
BOM = "\ufeff"


def _header_token(text: str, limit: int) -> str:
    """PRINTUSASCII without spaces, as the header's fields must be; '-' when nothing is left."""
    kept = "".join(c for c in text if 33 <= ord(c) <= 126)[:limit]
    return kept or "-"


def _param(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def message(event: Mapping[str, Any]) -> bytes:
    """One RFC 5424 message for one audit event (a row of audit_events)."""
    pri = FACILITY_LOG_AUDIT * 8 + SEVERITY.get(str(event["severity"]), 5)
    stamp = datetime.fromtimestamp(int(event["created_at"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    params = " ".join(f'{name}="{_param(event[name])}"' for name in FIELDS if event[name] is not None)
    header = (
        f"<{pri}>1 {stamp} {_header_token(str(event['kma_id']), 255)} kma - "
        f"{_header_token(str(event['operation']), 32)} [{SD_ID} {params}]"
    )
    return f"{header} {BOM}{event['message']}".encode()


def frame(msg: bytes) -> bytes:
    """RFC 6587 octet counting: the message's length in bytes, a space, the message."""
    return b"%d %s" % (len(msg), msg)
