"""The cluster CA certificate's renewal (Security Officer, quorum-protected): a new certificate for
the same name and key (docs/security.md#the-cluster-ca-over-decades)."""

from __future__ import annotations

from app.writes import Write

renew_cluster_ca = Write("renew_cluster_ca", {"kmas", "quorum"})
