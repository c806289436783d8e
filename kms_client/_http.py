"""HTTP plumbing shared by `Trust.fetch`, `KmsClient` and its audit methods: encoding a request's
query and credentials, and turning httpx outcomes into kms_client errors."""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote

import httpx

from .errors import ApiError, InternalError, KmaUnreachable, TrustError, api_error
from .models import Credential

FilterValue = str | int | bool | datetime | None
Order = Literal["asc", "desc"]
Credentials = Iterable[Credential | tuple[str, str]] | Mapping[str, str]


def base_url(address: str) -> str:
    """`https://ADDRESS/api/v1` for a `host:port` address (a leading `https://` is accepted)."""
    addr = address.strip()
    if addr.lower().startswith("https://"):
        addr = addr[len("https://") :]
    addr = addr.rstrip("/")
    if not addr or "://" in addr or "/" in addr:
        raise ValueError(f"not a KMA address (expected host:port): {address!r}")
    return f"https://{addr}/api/v1"


def segment(value: str) -> str:
    """One URL path segment: every reserved character quoted, and never `.` or `..`."""
    text = str(value)
    if not text:
        raise ValueError("an ID cannot be empty")
    quoted = quote(text, safe="")
    if quoted in {".", ".."}:
        # Unquoted, these would be resolved as relative paths and hit another route.
        quoted = quoted.replace(".", "%2E")
    return quoted


def _cert_verification_failure(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ssl.SSLCertVerificationError):
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


@contextmanager
def translated_transport_errors(address: str, timeout: float) -> Iterator[None]:
    """Raise `TrustError` for a certificate failure, `KmaUnreachable` for any other network
    failure, each with a message that says what to do."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise KmaUnreachable(
            f"The KMA at {address} did not answer within {timeout:g} seconds. It may be down or "
            "overloaded, or a firewall may be dropping the connection; check the address and "
            "try again."
        ) from exc
    except httpx.TransportError as exc:
        failure = _cert_verification_failure(exc)
        if failure is not None or "CERTIFICATE_VERIFY_FAILED" in str(exc):
            detail = (getattr(failure, "verify_message", None) or str(failure or exc)).strip()
            raise TrustError(
                f"The certificate of the KMA at {address} does not verify against the pinned "
                f"cluster CA ({detail}). This may be a different cluster or someone "
                "intercepting the connection; do not sign in. If the cluster CA really "
                "changed, confirm its new fingerprint with the KMA's administrator."
            ) from exc
        raise KmaUnreachable(
            f"Could not reach the KMA at {address} ({exc or type(exc).__name__}). Check the "
            "address and port; the KMA may be down or not reachable from this network."
        ) from exc


def error_from_response(response: httpx.Response) -> ApiError:
    """The typed error for a 4xx/5xx response; a body not in the contract's error shape gives
    an `InternalError` (code `internal`) with a plain message."""
    try:
        body: Any = response.json()
        err = body["error"]
        code, message = err["code"], err["message"]
        if not isinstance(code, str) or not isinstance(message, str):
            raise TypeError("error code and message must be strings")
    except (ValueError, TypeError, KeyError):
        reason = response.reason_phrase or "error"
        return InternalError(
            response.status_code,
            "internal",
            f"The KMA answered HTTP {response.status_code} ({reason}) without an error "
            "description. Try again; if it persists, check the KMA's log.",
        )
    return api_error(response.status_code, code, message)


def unreadable_response(response: httpx.Response, problem: Exception) -> InternalError:
    return InternalError(
        response.status_code,
        "internal",
        f"The KMA sent a response this client cannot read ({type(problem).__name__}: "
        f"{problem}). The KMA may be a newer or older version than this manager.",
    )


def _query_value(value: str | int | bool | datetime) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return str(value)


def query(filters: dict[str, FilterValue], /, **common: FilterValue) -> dict[str, str]:
    """Query parameters of a list call: None values are left out, bools sent as true/false."""
    return {k: _query_value(v) for k, v in {**common, **filters}.items() if v is not None}


def credentials_body(credentials: Credentials | None) -> list[dict[str, str]] | None:
    """Key split credentials as the body's `credentials` list: `{"member", "passphrase"}` each."""
    if credentials is None:
        return None
    pairs = credentials.items() if isinstance(credentials, Mapping) else credentials
    out = []
    for item in pairs:
        cred = item if isinstance(item, Credential) else Credential(str(item[0]), str(item[1]))
        out.append(cred.to_json())
    return out


def present(**fields: Any) -> dict[str, Any]:
    """A JSON body of the fields that were given: None means "leave unchanged / default"."""
    return {k: v for k, v in fields.items() if v is not None}
