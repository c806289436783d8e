"""TLS on the agents' side of the service listener; the listeners' own policy is kma/tls.py."""

from __future__ import annotations

import ssl
from pathlib import Path


def agent_context(
    ca: Path, cert: Path | None = None, key: Path | None = None, check_hostname: bool = False
) -> ssl.SSLContext:
    """What `kma agent` (simulator, enrollment) and the bench use to reach the service listener.

    The server is verified against the pinned cluster CA, which certifies KMAs only as servers
    (agents' certificates are for client authentication): any KMA of the cluster may serve the
    agent, under whatever address it is reached by, as with tape drives and PyKMIP's client.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(str(ca))
    ctx.check_hostname = check_hostname
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    return ctx
