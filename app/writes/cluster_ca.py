"""The cluster CA certificate's renewal (Security Officer, quorum-protected): a new certificate for
the same name and key (docs/security.md#the-cluster-ca-over-decades)."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

renew_cluster_ca = Write(KmsClient.renew_cluster_ca, {"kmas", "quorum"})
