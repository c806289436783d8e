"""What `GET /metrics` reports, in the Prometheus text format (prometheus-client): the counters
of kma/metrics.py, and gauges read from the appliance at each scrape (the key pool, locked,
replication lag, audit forwarding).

Reading them needs a metrics token or a signed-in user (any role, like the dashboard). The token
is for a Prometheus server, which cannot sign in: kma.toml names a file in the data directory
that holds it (this account's only: a file other accounts can read or change is refused), and
Prometheus sends it as a bearer token (`authorization: credentials_file`):

    [metrics]
    token_file = "metrics.token"   # at least 32 characters, e.g. `openssl rand -hex 32`

The file is read again at each scrape, so a new token takes effect without a restart (write the
new one to a temporary file and rename it over the old one). A file that became unreadable or
too short admits nobody by token until it is fixed, and says so in the log; a signed-in user
still reads the metrics.
"""

from __future__ import annotations

import hmac
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kma.appliance import Appliance
from kma.errors import ValidationFailed
from kma.metrics import EVENTS
from kma.services.alerts import queued_by_channel
from kma.services.audit.audit_forwarding import audit_forwarder
from kma.services.certificates import certificate_expiry
from kma.services.keypool import key_pool
from kma.services.master_key import master_keys
from kma.services.overview.replication_lag import replication_lags

MIN_TOKEN = 32
log = logging.getLogger(__name__)


class _ApplianceState(Collector):
    """Gauges read at scrape time from one appliance."""

    def __init__(self, kma: Appliance) -> None:
        self.kma = kma

    def collect(self) -> Iterator[GaugeMetricFamily]:
        kma = self.kma
        yield GaugeMetricFamily(
            "kma_pool_ready_keys", "Ready keys in this KMA's pool", value=key_pool(kma).ready()
        )
        yield GaugeMetricFamily("kma_locked", "1 while this KMA is locked", value=int(kma.vault.locked))
        lag = kma.store.replication_lag()
        yield GaugeMetricFamily(
            "kma_replication_lag_writes", "Agent-path writes not yet in the cluster's store", value=lag.depth
        )
        yield GaugeMetricFamily(
            "kma_replication_lag_seconds",
            "Age of the oldest write not yet in the cluster's store",
            value=lag.age_seconds,
        )
        yield from _cluster_lags(kma)
        yield from _master_key(kma)
        yield from _certificates(kma)
        yield from extra_gauges(kma)


def _master_key(kma: Appliance) -> list[GaugeMetricFamily]:
    state = master_keys.get_master_key(kma)
    rotation = state.rotation
    return [
        GaugeMetricFamily(
            "kma_master_key_generation", "The cluster's master key generation", value=state.generation
        ),
        GaugeMetricFamily(
            "kma_master_key_rotating",
            "1 while a master key rotation re-wraps blobs",
            value=int(state.rotating),
        ),
        GaugeMetricFamily(
            "kma_master_key_rotation_blobs_remaining",
            "Blobs still under the old master key generation (0 when no rotation runs)",
            value=(rotation.blobs_total - rotation.blobs_done) if state.rotating and rotation else 0,
        ),
    ]


def _cluster_lags(kma: Appliance) -> list[GaugeMetricFamily]:
    """Every KMA's lag as its shipper last reported it (this KMA's own: live), labelled by KMA."""
    writes = GaugeMetricFamily(
        "kma_cluster_replication_lag_writes",
        "Each KMA's agent-path writes not yet in the cluster's store",
        labels=["kma"],
    )
    seconds = GaugeMetricFamily(
        "kma_cluster_replication_lag_seconds",
        "Each KMA's oldest write not yet in the cluster's store",
        labels=["kma"],
    )
    for kma_id, lag in sorted(replication_lags(kma).items()):
        writes.add_metric([kma_id], lag.depth)
        seconds.add_metric([kma_id], lag.age_seconds)
    return [writes, seconds]


def _certificates(kma: Appliance) -> list[GaugeMetricFamily]:
    """Seconds until each certificate expires: the CA's, each KMA's listener and node certificates
    (labelled by KMA), and the soonest of the agents' (owner ""), with how many agents' a warning
    reached: what an alert on `< 30 * 86400` needs."""
    left = GaugeMetricFamily(
        "kma_certificate_expiry_seconds",
        "Seconds until a certificate expires (negative: expired), by kind (ca, listener, node, agent) "
        "and owner (the KMA; the agents' soonest has none)",
        labels=["kind", "owner"],
    )
    for expiry in certificate_expiry.expiries(kma, agents=1, every_agent=True):
        left.add_metric(
            [expiry.kind, "" if expiry.kind in ("ca", "agent") else expiry.owner], expiry.seconds_left
        )
    near, _ = certificate_expiry.agents_warned(kma)
    warned = GaugeMetricFamily(
        "kma_agent_certificates_expiring",
        "Agents whose certificate expires within the first warning (kma.toml [certificates]) or expired",
        value=near,
    )
    return [left, warned]


def extra_gauges(kma: Appliance) -> list[GaugeMetricFamily]:
    """Gauges of optional parts (alert channels, audit forwarding), present only when configured."""
    queued = queued_by_channel(kma)
    out = []
    if queued:
        family = GaugeMetricFamily(
            "kma_alerts_queued", "Alerts this KMA has still to deliver, by channel", labels=["channel"]
        )
        for name, count in sorted(queued.items()):
            family.add_metric([name], count)
        out.append(family)
    lag = audit_forwarder(kma).status()
    if lag.address is None:
        return out
    return out + [
        GaugeMetricFamily(
            "kma_audit_forwarding_lag_events",
            "Committed audit events not yet sent to the syslog collector",
            value=lag.lag_events,
        ),
        GaugeMetricFamily(
            "kma_audit_forwarding_lag_seconds",
            "Age of the oldest audit event not yet sent",
            value=lag.lag_seconds,
        ),
        GaugeMetricFamily(
            "kma_audit_forwarding_connected",
            "1 while the syslog collector takes what is sent",
            value=int(lag.connected),
        ),
    ]


def exposition(kma: Appliance) -> bytes:
    state = CollectorRegistry(auto_describe=False)
    state.register(_ApplianceState(kma))
    return generate_latest(EVENTS) + generate_latest(state)


@dataclass(frozen=True)
class MetricsSettings:
    token_file: Path | None = None

    @classmethod
    def from_table(cls, root: Path, table: dict[str, Any]) -> MetricsSettings:
        """kma.toml's `[metrics]`; a wrong name, a missing or short token file is refused."""
        unknown = sorted(set(table) - {"token_file"})
        if unknown:
            raise ValidationFailed(
                f"kma.toml [metrics]: unknown setting {unknown[0]!r}; the setting is token_file."
            )
        name = table.get("token_file")
        if name is None:
            return cls()
        if not isinstance(name, str) or not name:
            raise ValidationFailed('kma.toml [metrics]: token_file is a file name, e.g. "metrics.token".')
        _read_token(root / name)  # a bad file stops `kma serve` at start, with the fix
        return cls(root / name)

    def admits(self, presented: str) -> bool:
        if self.token_file is None:
            return False
        try:
            token = _read_token(self.token_file)
        except ValidationFailed as exc:
            log.warning("%s Nobody is admitted by token until it is fixed.", exc.message)
            return False
        return hmac.compare_digest(token.encode(), presented.encode())


def _read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"kma.toml [metrics]: cannot read the token file {path}: {exc}.") from None
    if len(token) < MIN_TOKEN:
        raise ValidationFailed(
            f"kma.toml [metrics]: the token in {path} is shorter than {MIN_TOKEN} "
            "characters; make one with `openssl rand -hex 32`."
        )
    if os.name == "posix" and mode & 0o077:  # the data directory's own check does not reach outside it
        raise ValidationFailed(
            f"kma.toml [metrics]: other accounts can read or change the token file {path} "
            f"({stat.S_IMODE(mode):04o}); make it this account's only: chmod 600 {path}"
        )
    return token
