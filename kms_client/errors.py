"""Exceptions raised by kms_client.

Every failure a caller can act on is a `KmsError`. `ApiError` carries the KMA's stable error code
(docs/api.md "Conventions"); its subclasses let a caller catch one situation (`except Conflict`)
without comparing strings. `str(error)` is the KMA's plain sentence, fit to show to a user.
"""

from __future__ import annotations


class KmsError(Exception):
    """Base class of every error kms_client raises on purpose."""


class ApiError(KmsError):
    """The KMA answered with an error status and an `{"error": {code, message}}` body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class BadRequest(ApiError):
    """400 `bad_request`: the request was malformed."""


class ValidationFailed(ApiError):
    """422 `validation_failed`: a field value was refused (the message says which)."""


class Unauthenticated(ApiError):
    """401 `unauthenticated`: no session, an expired token, or a wrong user ID/passphrase."""


class Forbidden(ApiError):
    """403 `forbidden`: the signed-in user lacks the role this needs."""


class NotFound(ApiError):
    """404 `not_found`."""


class Conflict(ApiError):
    """409 `conflict`: the object's state does not allow this."""


class PayloadTooLarge(ApiError):
    """413 `payload_too_large`: the body exceeds its limit (64 KiB; a transfer upload 256 MiB)."""


class LockedOut(ApiError):
    """429 `locked_out`: too many failed sign-ins; the user is locked out for a while."""


class KmaLocked(ApiError):
    """503 `kma_locked`: the KMA is locked and serves nothing secret until a quorum unlocks it."""


class ClusterUnavailable(ApiError):
    """503 `cluster_unavailable`: the cluster takes no changes now (no Raft majority reachable from
    this KMA, or a leader election under way); nothing was changed, try again or another KMA."""


class SecondFactorRequired(Unauthenticated):
    """401 `second_factor_required`: the passphrase was right and the user's two-step sign-in is
    on: sign in again with the code from their authenticator app (or a recovery code)."""


class SecondFactorEnrolmentRequired(Forbidden):
    """403 `second_factor_enrolment_required`: the user's role requires two-step sign-in and it is
    not set up: the session may only enrol one (`enrol_second_factor`, `confirm_second_factor`)."""


class DirectoryUnavailable(ApiError):
    """503 `directory_unavailable`: the directory (LDAP, Active Directory) cannot be reached or
    verified, so directory accounts cannot sign in now; local accounts can."""


class NotSetUp(ApiError):
    """503 `setup_mode`: the KMA has not been set up yet and answers only its set-up API."""


class InternalError(ApiError):
    """500 `internal`, or a response this client could not read."""


ERROR_CLASSES: dict[str, type[ApiError]] = {
    "bad_request": BadRequest,
    "validation_failed": ValidationFailed,
    "unauthenticated": Unauthenticated,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "method_not_allowed": BadRequest,  # a client calling a route the wrong way: a bug of the caller
    "conflict": Conflict,
    "payload_too_large": PayloadTooLarge,
    "locked_out": LockedOut,
    "kma_locked": KmaLocked,
    "cluster_unavailable": ClusterUnavailable,
    "setup_mode": NotSetUp,
    "directory_unavailable": DirectoryUnavailable,
    "second_factor_required": SecondFactorRequired,
    "second_factor_enrolment_required": SecondFactorEnrolmentRequired,
    "internal": InternalError,
}


def api_error(status: int, code: str, message: str) -> ApiError:
    """The typed error for a KMA error code; a code this client does not know gives `ApiError`."""
    cls = ERROR_CLASSES.get(code, ApiError)
    return cls(status, code, message)


class KmaUnreachable(KmsError):
    """No answer from the KMA: refused connection, unknown host, timeout or a dropped link."""


class IncompatibleKma(KmsError):
    """The KMA runs a release this client cannot manage: one too old to say what it offers (no
    GET /about: release 0.1.0), or one whose management API major version this client does not
    know. `str(error)` names the KMA's release and what to install."""

    def __init__(self, message: str, release: str) -> None:
        super().__init__(message)
        self.release = release


class TrustError(KmsError):
    """The KMA's CA is not the pinned one, or its certificate failed TLS verification."""
