"""Ports for the servers a test starts (KMAs' rqlited nodes, receivers, slapd).

A port the kernel picks (bind to port 0) comes from the ephemeral range, the same range every
outgoing connection's local port comes from: on a busy machine, with several workers, another
process's client connection can take it between the pick and the server's bind (CI saw a joining
KMA's rqlited exit at start). These ports come from below that range instead, from a band of its
own for each xdist worker, handed out in turn, each checked free when handed out.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

BAND = 4000
FIRST = 12000  # 12000-31999: five workers' bands, below Linux's ephemeral range (32768-60999)


def _worker() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw0", "gw1", … (one process: gw0)
    return int(name.removeprefix("gw") or 0) % 5


def _band() -> itertools.cycle[int]:
    start = FIRST + _worker() * BAND
    offset = random.randrange(BAND)  # a second run on the same worker band starts elsewhere
    return itertools.cycle([start + (offset + n) % BAND for n in range(BAND)])


_next = _band()


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A loopback port nothing listens on now, of this worker's band (TCP unless `kind`)."""
    for _ in range(BAND):
        port = next(_next)
        with socket.socket(socket.AF_INET, kind) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in this worker's band of {BAND}")
