"""The counters and histograms of `GET /metrics`, kept in this process as things happen: key
requests on the service listener, audit events as they commit, refused TLS handshakes. They start
at zero when the KMA starts, as Prometheus expects of a counter. Gauges read at each scrape, and
who may read them, are in kma/services/metrics.py. Imports nothing of the KMA's own, so the store
and the listeners can count without an import cycle."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

# Kept as things happen, for the life of this KMA process.
EVENTS = CollectorRegistry(auto_describe=True)
KEY_REQUESTS = Counter(
    "kma_key_requests", "KMIP operations on the service listener, by operation and result",
    ["operation", "result"], registry=EVENTS,
)  # fmt: skip
KEY_REQUEST_SECONDS = Histogram(
    "kma_key_request_seconds", "Time to answer a KMIP request message, by its first operation",
    ["operation"], registry=EVENTS,
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)  # fmt: skip
AUDIT_EVENTS = Counter(
    "kma_audit_events", "Audit events committed by this KMA, by severity", ["severity"], registry=EVENTS
)
TLS_REFUSALS = Counter(
    "kma_tls_refusals", "TLS handshakes refused or timed out, by listener", ["listener"], registry=EVENTS
)
for _listener in ("management", "service"):
    TLS_REFUSALS.labels(_listener)  # present at zero from the start, so a rate() has a base
# Present at zero from the start too; looked up here once rather than by label on every event.
AUDIT_EVENTS_BY_SEVERITY = {
    severity: AUDIT_EVENTS.labels(severity) for severity in ("info", "warning", "error")
}
