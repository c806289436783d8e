"""The dashboard's warnings about what falls behind: a KMA's writes that have not reached the
cluster, and the audit trail's copy that has not reached the syslog collector. Shown on the
dashboard and sent by the alert channels (kma/services/alerts.py) like every other warning.

The thresholds are well above a moment's delay (the topology shows a KMA lagging from 10 s): a
warning is for what a person should look at, and an alert that starts and ends with every hiccup
would teach the on-call to ignore it."""

from __future__ import annotations

from kma.appliance import Appliance
from kma.services.audit.audit_forwarding import audit_forwarder
from kma.services.backups import describe_duration
from kma.services.overview.replication_lag import replication_lags

REPLICATION_WARNING_SECONDS = 60
FORWARDING_WARNING_SECONDS = 300


def replication_warnings(kma: Appliance) -> list[str]:
    """Each KMA's writes that wait to reach the cluster: the cluster's warnings, every KMA sees them."""
    out = []
    if kma.store.cluster is not None:
        for kma_id, lag in sorted(replication_lags(kma).items()):
            if lag.depth and lag.age_seconds >= REPLICATION_WARNING_SECONDS:
                out.append(
                    f"KMA {kma_id} has {lag.depth} writes (key assignments, audit events) that have waited "
                    f"{describe_duration(int(lag.age_seconds))} to reach the cluster."
                )
    return out


def forwarding_warnings(kma: Appliance) -> list[str]:
    """This KMA's copy of the audit trail that has not reached the syslog collector."""
    forwarding = audit_forwarder(kma).status()
    if forwarding.address is not None and forwarding.lag_seconds >= FORWARDING_WARNING_SECONDS:
        return [
            f"Audit forwarding to {forwarding.address} is behind: {forwarding.lag_events} events not yet "
            f"sent, the oldest {describe_duration(int(forwarding.lag_seconds))} old."
        ]
    return []
