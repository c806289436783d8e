"""What `GET /metrics` reports, in the Prometheus text format (prometheus-client).

Counters and histograms are kept in this process as things happen (key requests on the service
listener, audit events as they commit, refused TLS handshakes); gauges that describe state (the
key pool, locked, replication lag, audit forwarding) are read from the appliance at each scrape.
Counters start at zero when the KMA starts, as Prometheus expects of a counter.

Reading them needs a metrics token or a signed-in user (any role, like the dashboard). The token
is for a Prometheus server, which cannot sign in: kma.toml names a file in the data directory
that holds it, and Prometheus sends it as a bearer token (`authorization: credentials_file`):

    [metrics]
    token_file = "metrics.token"   # at least 32 characters, e.g. `openssl rand -hex 32`
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kma.errors import ValidationFailed

if TYPE_CHECKING:
    from kma.appliance import Appliance
    from kma.store.batch import Batch

MIN_TOKEN = 32

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
for _severity in ("info", "warning", "error"):
    AUDIT_EVENTS.labels(_severity)


def key_request(operation: str, result: str) -> None:
    KEY_REQUESTS.labels(operation, result).inc()


def count_committed(batch: Batch, outcome: object) -> None:
    """The writer thread's tally: a committed batch's event, or the refusal event written instead."""
    from kma.store.batch import Refused, WriteResult

    if isinstance(outcome, WriteResult) and batch.event is not None:
        AUDIT_EVENTS.labels(batch.event.severity).inc()
    elif isinstance(outcome, Refused) and batch.on_refusal is not None:
        AUDIT_EVENTS.labels("error").inc()


class _ApplianceState(Collector):
    """Gauges read at scrape time from one appliance."""

    def __init__(self, kma: Appliance) -> None:
        self.kma = kma

    def collect(self) -> Iterator[GaugeMetricFamily]:
        kma = self.kma
        yield GaugeMetricFamily(
            "kma_pool_ready_keys", "Ready keys in this KMA's pool", value=kma.pool.ready()
        )
        yield GaugeMetricFamily("kma_locked", "1 while this KMA is locked", value=int(kma.vault.locked))
        lag = kma.store.replication_lag()
        yield GaugeMetricFamily(
            "kma_replication_lag_writes", "Agent-path writes not yet in the cluster's store", value=lag.depth
        )
        yield GaugeMetricFamily(
            "kma_replication_lag_seconds", "Age of the oldest write not yet in the cluster's store",
            value=lag.age_seconds,
        )  # fmt: skip
        yield from extra_gauges(kma)


def extra_gauges(kma: Appliance) -> list[GaugeMetricFamily]:
    """Gauges of optional parts (audit forwarding), present only when configured."""
    lag = kma.forwarder.status()
    if lag.address is None:
        return []
    return [
        GaugeMetricFamily("kma_audit_forwarding_lag_events", "Committed audit events not yet sent to the "
                          "syslog collector", value=lag.lag_events),
        GaugeMetricFamily("kma_audit_forwarding_lag_seconds", "Age of the oldest audit event not yet sent",
                          value=lag.lag_seconds),
        GaugeMetricFamily("kma_audit_forwarding_connected", "1 while the syslog collector is connected",
                          value=int(lag.connected)),
    ]  # fmt: skip


def exposition(kma: Appliance) -> bytes:
    state = CollectorRegistry(auto_describe=False)
    state.register(_ApplianceState(kma))
    return generate_latest(EVENTS) + generate_latest(state)


@dataclass(frozen=True)
class MetricsSettings:
    token: str | None = None

    @classmethod
    def from_table(cls, root: Path, table: dict[str, Any]) -> MetricsSettings:
        """kma.toml's `[metrics]`; a wrong name, a missing or short token file is refused."""
        unknown = sorted(set(table) - {"token_file"})
        if unknown:
            raise ValidationFailed(f"kma.toml [metrics]: unknown setting {unknown[0]!r}; the setting is "
                                   "token_file.")  # fmt: skip
        name = table.get("token_file")
        if name is None:
            return cls()
        if not isinstance(name, str) or not name:
            raise ValidationFailed('kma.toml [metrics]: token_file is a file name, e.g. "metrics.token".')
        path = root / name
        try:
            token = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationFailed(f"kma.toml [metrics]: cannot read the token file {path}: {exc}.") from None
        if len(token) < MIN_TOKEN:
            raise ValidationFailed(f"kma.toml [metrics]: the token in {path} is shorter than {MIN_TOKEN} "
                                   "characters; make one with `openssl rand -hex 32`.")  # fmt: skip
        return cls(token)

    def admits(self, presented: str) -> bool:
        return self.token is not None and hmac.compare_digest(self.token.encode(), presented.encode())
