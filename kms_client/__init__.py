"""Typed client for the KMA management API (docs/api.md). No Qt: used by the GUI and scripts.

from kms_client import KmsClient, Trust
trust = Trust.fetch("127.0.0.1:8443")   # first contact: show trust.fingerprint to the user
client = KmsClient("127.0.0.1:8443", ca_pem=trust.ca_pem, ca_fingerprint=trust.fingerprint)
client.sign_in("so", "passphrase")
for key in client.iter_keys(state="deactivated"): ...
"""

from __future__ import annotations

from .client import FilterValue, KmsClient, Order
from .errors import (
    ERROR_CLASSES,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    InternalError,
    KmaLocked,
    KmaUnreachable,
    KmsError,
    LockedOut,
    NotFound,
    PayloadTooLarge,
    TrustError,
    Unauthenticated,
    ValidationFailed,
    api_error,
)
from .models import (
    CONDITIONS,
    DATA_UNIT_STATES,
    KEY_STATES,
    RETENTIONS,
    ROLES,
    SEVERITIES,
    Agent,
    AuditEvent,
    CaInfo,
    ChainReport,
    Dashboard,
    DataUnit,
    EnrollmentPassphrase,
    Key,
    KeyGroup,
    KeyPolicy,
    Kma,
    Page,
    Session,
    Site,
    Status,
    User,
)
from .paging import iter_all, iter_pages
from .trust import Trust, fingerprint_of, ssl_context_for

__all__ = [
    "CONDITIONS",
    "DATA_UNIT_STATES",
    "ERROR_CLASSES",
    "KEY_STATES",
    "RETENTIONS",
    "ROLES",
    "SEVERITIES",
    "Agent",
    "ApiError",
    "AuditEvent",
    "BadRequest",
    "CaInfo",
    "ChainReport",
    "Conflict",
    "Dashboard",
    "DataUnit",
    "EnrollmentPassphrase",
    "FilterValue",
    "Forbidden",
    "InternalError",
    "Key",
    "KeyGroup",
    "KeyPolicy",
    "Kma",
    "KmaLocked",
    "KmaUnreachable",
    "KmsClient",
    "KmsError",
    "LockedOut",
    "NotFound",
    "Order",
    "Page",
    "PayloadTooLarge",
    "Session",
    "Site",
    "Status",
    "Trust",
    "TrustError",
    "Unauthenticated",
    "User",
    "ValidationFailed",
    "api_error",
    "fingerprint_of",
    "iter_all",
    "iter_pages",
    "ssl_context_for",
]
