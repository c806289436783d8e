"""The cluster at a glance: the dashboard, its series and warnings, replication lag, metrics."""
