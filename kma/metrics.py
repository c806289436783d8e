"""The counters and histograms of `GET /metrics`, kept in this process as things happen: key
requests on the service listener, management API requests, sign-ins, refusals, audit events as they
commit, audit forwarding errors, refused TLS handshakes; with the build and the process's own
figures. They start at zero when the KMA starts, as Prometheus expects of a counter. Gauges read at
each scrape, and who may read them, are in kma/services/overview/metrics.py. Imports nothing of the KMA's own
but its version, so the store and the listeners can count without an import cycle."""

from __future__ import annotations

import platform

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)

from kma import __version__

# A `_created` series beside every counter doubles the series for a timestamp Prometheus does not
# use (the process's start time is process_start_time_seconds).
disable_created_metrics()  # type: ignore[no-untyped-call]

# Kept as things happen, for the life of this KMA process.
EVENTS = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=EVENTS)  # process_cpu_seconds_total, resident memory, open fds, start time
BUILD_INFO = Gauge(
    "kma_build_info", "Always 1: the KMA's version and Python", ["version", "python"], registry=EVENTS
)
BUILD_INFO.labels(__version__, platform.python_version()).set(1)
API_REQUESTS = Counter(
    "kma_api_requests",
    "Management API requests, by route template (unmatched: no route), method and status",
    ["route", "method", "status"],
    registry=EVENTS,
)
SIGN_INS = Counter(
    "kma_sign_ins",
    "Sign-ins to the management API, by result (signed_in, refused, locked_out)",
    ["result"],
    registry=EVENTS,
)
API_REFUSALS = Counter(
    "kma_api_refusals", "Management API requests refused, by error code", ["code"], registry=EVENTS
)
JOIN_CHECKS = Counter(
    "kma_join_passphrase_checks",
    "KMA passphrase checks (Argon2id) of POST /cluster/join, by result: checked, or busy (refused: "
    "another from the same address was being checked)",
    ["result"],
    registry=EVENTS,
)
JOIN_CHECKS_PEAK = Gauge(
    "kma_join_passphrase_checks_concurrent_peak",
    "The most KMA passphrase checks from one address that ran at once since the KMA started",
    registry=EVENTS,
)
AUDIT_FORWARDING_ERRORS = Counter(
    "kma_audit_forwarding_errors", "Failures to connect or send to the syslog collector", registry=EVENTS
)
ALERTS_DELIVERED = Counter(
    "kma_alerts_delivered", "Alerts a receiver took, by channel kind", ["kind"], registry=EVENTS
)
ALERT_ERRORS = Counter(
    "kma_alert_errors",
    "Failed attempts to deliver an alert (it stays queued), by channel kind",
    ["kind"],
    registry=EVENTS,
)
ALERTS_DROPPED = Counter(
    "kma_alerts_dropped",
    "Alerts dropped from a full queue (the oldest first), by channel kind",
    ["kind"],
    registry=EVENTS,
)
KEY_REQUESTS = Counter(
    "kma_key_requests",
    "KMIP operations on the service listener, by operation and result",
    ["operation", "result"],
    registry=EVENTS,
)
KEY_REQUEST_SECONDS = Histogram(
    "kma_key_request_seconds",
    "Time to answer a KMIP request message, by its first operation",
    ["operation"],
    registry=EVENTS,
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
AUDIT_EVENTS = Counter(
    "kma_audit_events", "Audit events committed by this KMA, by severity", ["severity"], registry=EVENTS
)
TLS_REFUSALS = Counter(
    "kma_tls_refusals", "TLS handshakes refused or timed out, by listener", ["listener"], registry=EVENTS
)
for _listener in ("management", "service"):
    TLS_REFUSALS.labels(_listener)  # present at zero from the start, so a rate() has a base
for _result in ("signed_in", "refused", "locked_out"):
    SIGN_INS.labels(_result)
# Present at zero from the start too; looked up here once rather than by label on every event.
AUDIT_EVENTS_BY_SEVERITY = {
    severity: AUDIT_EVENTS.labels(severity) for severity in ("info", "warning", "error")
}
