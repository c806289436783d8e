"""Webhooks: the alert as JSON, POSTed over HTTPS, signed with the channel's shared secret.

The signature is HMAC-SHA256 over the exact bytes of the body, in hex, in the header
`X-KMA-Signature-256: sha256=<hex>` (GitHub's scheme, which receivers already know how to check).
The body carries the alert's id and time, so a receiver can refuse a replay. The receiver's
certificate is checked against the channel's pinned CA, or the system's trust store when none is
given; a 2xx answer is the acknowledgement, anything else is sent again later."""

from __future__ import annotations

import hashlib
import hmac
import ssl

import httpx

from kma.alerts.message import Alert, DeliveryFailed, tls_context

SIGNATURE_HEADER = "X-KMA-Signature-256"
TIMEOUT = 10.0


def signature(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def send(url: str, ca_pem: str | None, secret: bytes, alert: Alert) -> None:
    body = alert.to_json().encode()
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: signature(secret, body),
        "User-Agent": "kma-alerts",
    }
    try:
        with httpx.Client(verify=tls_context(ca_pem), timeout=TIMEOUT) as client:
            answer = client.post(url, content=body, headers=headers)
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        raise DeliveryFailed(f"webhook {url}: {exc or type(exc).__name__}") from None
    if not answer.is_success:
        raise DeliveryFailed(f"webhook {url} answered {answer.status_code} {answer.reason_phrase}")
