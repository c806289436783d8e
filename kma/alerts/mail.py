"""E-mail: the alert as a plain text message, over SMTP with STARTTLS (never in the clear).

smtplib from the standard library: the protocol is small, and STARTTLS with a pinned CA or the
system's trust store is one `starttls(context=...)`. A server's 250 to the message is the
acknowledgement; a refusal or a broken connection leaves the alert queued."""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage

from kma.alerts.message import Alert, DeliveryFailed, tls_context

TIMEOUT = 10.0


def message(alert: Alert, sender: str, recipients: list[str]) -> EmailMessage:
    msg = EmailMessage()
    first = " ".join(alert.text.split()).split(". ")[0].rstrip(".")  # one line: a header has no breaks
    cluster = " ".join(alert.cluster.split())
    msg["Subject"] = f"[KMA {cluster}] {alert.title.split(' from ')[0]}: {first[:120]}"
    msg["From"] = sender
    msg["To"] = ", ".join(recipients)
    msg["X-KMA-Alert-Id"] = alert.id
    msg.set_content("\n".join(alert.lines()) + "\n")
    return msg


def send(
    host: str,
    port: int,
    ca_pem: str | None,
    username: str | None,
    password: str | None,
    sender: str,
    recipients: list[str],
    alert: Alert,
) -> None:
    send_message(host, port, ca_pem, username, password, message(alert, sender, recipients))


def send_message(
    host: str, port: int, ca_pem: str | None, username: str | None, password: str | None, msg: EmailMessage
) -> None:
    """`msg` over SMTP with STARTTLS (an alert, or the scheduled reports:
    kma/services/reports/report_schedule.py)."""
    try:
        with smtplib.SMTP(host, port, timeout=TIMEOUT) as smtp:
            smtp.ehlo()
            if not smtp.has_extn("starttls"):
                raise DeliveryFailed(f"SMTP server {host}:{port} offers no STARTTLS; nothing was sent")
            smtp.starttls(context=tls_context(ca_pem))
            smtp.ehlo()
            if username:
                smtp.login(username, password or "")
            smtp.send_message(msg)
    except (smtplib.SMTPException, ssl.SSLError, OSError) as exc:
        raise DeliveryFailed(f"SMTP server {host}:{port}: {exc or type(exc).__name__}") from None
