"""The Cluster page's parts: the drawn cluster, the master key, the CA's renewal, the upgrade check."""
