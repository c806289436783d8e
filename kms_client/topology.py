"""The cluster at a glance: a part of `KmsClient`, given its connection (same threading rule:
network I/O, never on the GUI thread)."""

from __future__ import annotations

from .connection import Connection
from .reader import reader
from .wire import AuditForwarding, Topology


class TopologyCalls:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def cluster_topology(self) -> Topology:
        """Sites, KMAs (leader, voter, responding, locked, lag), agents per site, failure tolerance.
        Any signed-in user; a locked KMA answers it too."""
        return self._connection.call("GET", "/cluster/topology", reader(Topology))

    def audit_forwarding(self) -> AuditForwarding:
        """Where the audit trail is copied to (syslog over TLS); auditors and Security Officers."""
        return self._connection.call("GET", "/audit-forwarding", reader(AuditForwarding))

    def set_audit_forwarding(self, address: str, ca_pem: str, *, enabled: bool = True) -> AuditForwarding:
        """Security Officer: send every committed audit event to the collector at HOST:PORT."""
        body = {"address": address, "ca_pem": ca_pem, "enabled": enabled}
        return self._connection.call("PUT", "/audit-forwarding", reader(AuditForwarding), body=body)
