"""Turn any failure into a message a security officer can act on.

Every error shown by the manager says what happened and what to do next. The mapping is a dispatch
table over ``kms_client`` exception types (most specific first), not an if/elif chain. Session-level
failures (expired session, lost KMA) are classified separately because the session controller
handles them instead of a message box.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import kms_client

log = logging.getLogger(__name__)


class ErrorKind(Enum):
    """How the application reacts to an error."""

    MESSAGE = "message"  # show what happened and what to do; the app carries on
    SESSION_EXPIRED = "session_expired"  # back to sign-in, keep the current page
    UNREACHABLE = "unreachable"  # reconnecting banner with retry and backoff
    TRUST = "trust"  # the KMA's certificate does not match the pinned CA


@dataclass(frozen=True)
class UserMessage:
    """A failure as the user reads it."""

    title: str
    what: str
    todo: str
    kind: ErrorKind = ErrorKind.MESSAGE
    detail: str = ""

    @property
    def text(self) -> str:
        return f"{self.what}\n\n{self.todo}"


def _server_text(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return str(message).strip().rstrip(".") + "." if message else ""


def _unauthenticated(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Session ended",
        "Your session with the KMA has ended (sessions last 30 minutes) or was signed out.",
        "Sign in again to continue; the page you were on stays open.",
        ErrorKind.SESSION_EXPIRED,
    )


def _forbidden(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Not allowed",
        f"The KMA refused this operation for your roles. {_server_text(exc)}".strip(),
        "Sign in as a user who holds the needed role, or ask a Security Officer to grant it. "
        "The refusal is recorded in the audit log.",
    )


def _not_found(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Not found",
        f"The KMA no longer has this item. {_server_text(exc)}".strip(),
        "Refresh the list (F5): someone may have removed or changed it.",
    )


def _conflict(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Not possible in the current state",
        _server_text(exc) or "The item's current state does not allow this change.",
        "Refresh (F5) to see the current state, then try again if it still applies.",
    )


def _validation(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Value not accepted",
        _server_text(exc) or "The KMA did not accept one of the values.",
        "Correct the value and try again.",
    )


def _kma_locked(exc: BaseException) -> UserMessage:
    return UserMessage(
        "KMA is locked",
        "The KMA is locked and serves nothing secret until it is unlocked.",
        "A quorum of key split members must unlock it (Lock/unlock), or connect to another KMA.",
    )


def _locked_out(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Too many failed sign-ins",
        "This user is locked out after five failed sign-ins in a row.",
        "Wait 15 minutes and try again, or ask a Security Officer to check the account.",
    )


def _unreachable(exc: BaseException) -> UserMessage:
    return UserMessage(
        "KMA not reachable",
        f"The manager cannot reach the KMA. {_server_text(exc)}".strip(),
        "Check that the KMA is running and the address is right; the manager keeps retrying.",
        ErrorKind.UNREACHABLE,
    )


def _trust(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Certificate does not match",
        "The KMA presented a certificate that is not signed by the cluster CA you pinned for "
        "this connection. Someone may be intercepting the connection.",
        "Do not continue unless you know the cluster CA was replaced. If it was, remove the pin "
        "in Settings > Connection profiles and connect again to review the new fingerprint.",
        ErrorKind.TRUST,
    )


def _api_error(exc: BaseException) -> UserMessage:
    status = getattr(exc, "status", "")
    return UserMessage(
        "The KMA reported an error",
        f"{_server_text(exc)} (HTTP {status})".strip(),
        "Try again. If it keeps happening, check the KMA's audit log and service logs.",
    )


def _unexpected(exc: BaseException) -> UserMessage:
    return UserMessage(
        "Unexpected error",
        f"Something went wrong inside the manager: {type(exc).__name__}: {exc}",
        "Try again. If it keeps happening, report it with the manager's log.",
    )


def _not_set_up(exc: BaseException) -> UserMessage:
    return UserMessage(
        "KMA not set up yet",
        "This KMA has not been set up yet: it answers only its set-up.",
        "Choose Set up a new KMA… on the sign-in window, with the set-up code its console shows.",
    )


def _incompatible(exc: BaseException) -> UserMessage:
    return UserMessage(
        "KMA of another release",
        str(exc),
        "docs/upgrades.md says which releases of the manager and the KMA work together.",
    )


# Most specific first: the first class `exc` is an instance of decides its message.
_TABLE: list[tuple[type[BaseException], Callable[[BaseException], UserMessage]]] = [
    (kms_client.Unauthenticated, _unauthenticated),
    (kms_client.Forbidden, _forbidden),
    (kms_client.NotFound, _not_found),
    (kms_client.Conflict, _conflict),
    (kms_client.ValidationFailed, _validation),
    (kms_client.KmaLocked, _kma_locked),
    (kms_client.NotSetUp, _not_set_up),
    (kms_client.LockedOut, _locked_out),
    (kms_client.TrustError, _trust),
    (kms_client.KmaUnreachable, _unreachable),
    (kms_client.IncompatibleKma, _incompatible),
    (kms_client.ApiError, _api_error),
]


def describe(exc: BaseException) -> UserMessage:
    """The message for ``exc``; unknown exceptions are logged with their traceback."""
    for cls, fn in _TABLE:
        if isinstance(exc, cls):
            return fn(exc)
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return _unreachable(exc)
    log.error("unexpected error in a background operation", exc_info=exc)
    return _unexpected(exc)
