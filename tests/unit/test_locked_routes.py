"""Which routes a locked KMA answers is declared on each route (`kma: KmaEvenLocked`), not kept in a
list of paths elsewhere: renaming a route cannot change whether it is served while locked."""

from __future__ import annotations

from fastapi.routing import APIRoute

from kma.api.deps import get_appliance, get_appliance_even_locked
from kma.api.routes import ROUTERS

# A locked KMA answers its state, signing in and out, and what a quorum needs to unlock it.
ANSWERED_WHEN_LOCKED = {
    ("GET", "/status"),
    ("GET", "/about"),  # what it offers a manager of another release, asked before sign-in
    ("GET", "/ca"),
    ("POST", "/auth/sign-in"),
    ("POST", "/auth/sign-out"),
    ("GET", "/auth/me"),
    ("GET", "/quorum-operations"),
    ("GET", "/quorum-operations/{op_id}"),
    ("POST", "/quorum-operations/{op_id}/approve"),
    ("POST", "/kmas/{kma_id}/unlock"),
    ("GET", "/cluster/topology"),  # the picture must show a locked KMA too (GET /metrics as well)
}


def test_every_route_decides_about_a_locked_kma_first() -> None:
    answered = set()
    for router in ROUTERS:
        for route in router.routes:
            assert isinstance(route, APIRoute)
            first = route.dependant.dependencies[0].call
            # First, so a locked KMA says "locked" before it asks who is calling.
            assert first in (get_appliance, get_appliance_even_locked), (
                f"{route.path} takes `kma: Kma` (or `kma: KmaEvenLocked`) before anything else"
            )
            if first is get_appliance_even_locked:
                answered |= {(method, route.path) for method in route.methods}
    assert answered == ANSWERED_WHEN_LOCKED
