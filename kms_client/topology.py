"""The cluster at a glance: a mixin of `KmsClient` (same threading rule: network I/O, never on
the GUI thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .reader import JsonObject, reader
from .wire import AuditForwarding, Topology

T = TypeVar("T")


class TopologyMethods:
    if TYPE_CHECKING:

        def _call(self, method: str, path: str, parse: Callable[[JsonObject], T], *,
                  params: dict[str, str] | None = None, body: dict[str, Any] | None = None,
                  auth: bool = True) -> T: ...  # fmt: skip

    def cluster_topology(self) -> Topology:
        """Sites, KMAs (leader, voter, responding, locked, lag), agents per site, failure tolerance.
        Any signed-in user; a locked KMA answers it too."""
        return self._call("GET", "/cluster/topology", reader(Topology))

    def audit_forwarding(self) -> AuditForwarding:
        """Where the audit trail is copied to (syslog over TLS); auditors and Security Officers."""
        return self._call("GET", "/audit-forwarding", reader(AuditForwarding))

    def set_audit_forwarding(self, address: str, ca_pem: str, *, enabled: bool = True) -> AuditForwarding:
        """Security Officer: send every committed audit event to the collector at HOST:PORT."""
        body = {"address": address, "ca_pem": ca_pem, "enabled": enabled}
        return self._call("PUT", "/audit-forwarding", reader(AuditForwarding), body=body)
