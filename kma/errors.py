"""Errors a KMA operation can end in, each with a stable code and HTTP status.

Clients see the code and a plain message; details go to the log and the audit trail.
"""

from __future__ import annotations


class KmaError(Exception):
    code = "internal"
    status = 500

    def __init__(self, message: str, audited: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.audited = audited  # its refusal is already in the audit trail


class BadRequest(KmaError):
    code, status = "bad_request", 400


class ValidationFailed(KmaError):
    code, status = "validation_failed", 422


class Unauthenticated(KmaError):
    code, status = "unauthenticated", 401


class Forbidden(KmaError):
    code, status = "forbidden", 403


class NotFound(KmaError):
    code, status = "not_found", 404


class Conflict(KmaError):
    code, status = "conflict", 409


class NoReadyKey(Conflict):
    """A one-KMA cluster whose pool holds no key a backup holds yet: it issues none (409)."""


class PayloadTooLarge(KmaError):
    code, status = "payload_too_large", 413


class LockedOut(KmaError):
    code, status = "locked_out", 429


class UnsafePermissions(KmaError):
    code, status = "unsafe_permissions", 500


class KmaLocked(KmaError):
    code, status = "kma_locked", 503

    def __init__(
        self, message: str = "This KMA is locked; a quorum must unlock it.", audited: bool = False
    ) -> None:
        super().__init__(message, audited)


class HsmFailed(KmaError):
    """The HSM that holds the master key is missing, refuses the PIN or failed (docs/hsm.md)."""

    code, status = "hsm_unavailable", 503


class Busy(KmaError):
    """This KMA cannot serve the request now but another KMA can (it is catching up after its start)."""

    code, status = "busy", 503


class ClusterUnavailable(KmaError):
    """The cluster's store takes no writes now (no leader: this KMA is on the minority side, or an
    election is under way); nothing was changed, try again."""

    code, status = "cluster_unavailable", 503


class VerificationRunning(KmaError):
    """The audit chain's verification goes on in the background and had not ended within the time
    an old client's request may wait (GET /audit-events/verify); asked again, it answers once done."""

    code, status = "verification_running", 503
