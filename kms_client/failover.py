"""The cluster's KMAs as a manager reaches them, and the order it tries them in when its KMA goes.

A client that knows the cluster (`KmsClient(cluster=...)`, `learn_cluster()`) goes on with another
KMA when the one it talks to stops answering: the others of its own site first, then the other
sites. Trust does not change (every KMA's certificate is from the pinned cluster CA) and neither
does the session (sessions are in the replicated store, so a token is good on every KMA).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import KmaUnreachable


@dataclass(frozen=True)
class KnownKma:
    """One KMA of the cluster: its ID, name, site and management address (host:port)."""

    id: str
    name: str
    site_id: str
    address: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "site_id": self.site_id, "address": self.address}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KnownKma:
        return cls(str(d["id"]), str(d.get("name") or d["id"]), str(d.get("site_id", "")), str(d["address"]))


@dataclass(frozen=True)
class Failover:
    """The client left `gone` (it stopped answering) and now talks to `now`."""

    gone: str  # the name of the KMA that stopped answering (its address if it is not known)
    now: KnownKma

    @property
    def message(self) -> str:
        return f"{called(self.gone)} stopped answering; now connected to {self.now.name}"


def called(name: str) -> str:
    """ "KMA dal-1", and a name that says KMA already ("KMA Dallas 1") as it is."""
    return name if name.upper().startswith("KMA ") else f"KMA {name}"


def failover_order(cluster: Sequence[KnownKma], gone_address: str) -> list[KnownKma]:
    """The KMAs to try instead of the one at `gone_address`: its own site's first, then the
    others, each in the order the cluster lists them."""
    gone = next((k for k in cluster if k.address == gone_address), None)
    others = [k for k in cluster if k.address != gone_address]
    if gone is None:
        return others
    return sorted(others, key=lambda k: k.site_id != gone.site_id)


def never_sent(lost: KmaUnreachable) -> bool:
    """True if the request never reached the KMA (refused or no connection made in time), so
    sending it again elsewhere cannot apply a change twice."""
    return isinstance(lost.__cause__, (httpx.ConnectError, httpx.ConnectTimeout))
