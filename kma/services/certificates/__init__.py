"""The cluster's certificates: when each expires, and their renewal (KMA, agent, cluster CA)."""
